"""The app's pure parts: Neo4j Browser links, trace renderers, question checks, the model
gate, the answer job, and the Results page's rows and filters. No Streamlit, no network."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote

import pytest

import cypher
from app import browser_links as bl
from app import render, render_options, render_text, results
from app.asking import (
    MAX_QUESTION_CHARS,
    AnswerJob,
    ModelGate,
    check_question_text,
    parse_choices,
    user_question,
    verdict,
)
from eval.runner import RunConfig, RunLine
from kgrag.config import Settings
from kgrag.platform import Platform
from kgrag.types import Choice, Prediction, Question, TraceStep, Usage
from metakg.trace import RefinementView
from tests.doubles.scripted import Scripted, ScriptedModel

BASE = "http://127.0.0.1:7474/browser/"


# ---------------------------------------------------------------------- Browser links
def browser_editor_text(url: str) -> str:
    """What Neo4j Browser 5.x puts in its editor for `?cmd=edit&arg=...` (its own steps:
    '+' → ' ', decodeURIComponent of the whole URL, every `[?&]arg=([^&#]*)` joined by
    newlines; neo4j-browser src/shared/modules/editor/editorDuck.ts)."""
    decoded = unquote(url.replace("+", " "))
    return "\n".join(re.findall(r"[?&]arg=([^&#]*)", decoded))


@pytest.mark.parametrize("name", cypher.names("browser"))
def test_saved_queries_read_parameters_only_in_their_header(name: str) -> None:
    params = bl.header_params(name)
    assert params, name
    body = "\n".join(bl.body_lines(name)[1:])
    assert "$" not in body, f"{name}: parameters must be read in the header line only"
    assert not set("&#;") & set(body), f"{name}: would cut a Browser link short"


@pytest.mark.parametrize("value", [
    'plain', 'say "hi"', "back\\slash", "AT&T #1; DROP", "new\nline", "emoji 🦊 ü",
    "}) DETACH DELETE n //", "`tick`", "%41 + 50%"])
def test_a_link_puts_exactly_the_statement_in_the_browser_editor(value: str) -> None:
    q = bl.evidence_query(BASE, "dom", [[value, "rel " + value, "tail"]])
    assert browser_editor_text(q.url) == q.statement
    header = q.statement.splitlines()[0]
    assert header.startswith('WITH "dom" AS domain, [[')
    assert header.endswith("]] AS triples")


def test_literals_are_json_with_url_unsafe_characters_escaped() -> None:
    assert bl.literal('a "b" & c # d ; e') == '"a \\"b\\" \\u0026 c \\u0023 d \\u003B e"'
    assert bl.literal({"x": [1, 2.5, True, None], "odd key": "v"}) == \
        '{x: [1, 2.5, true, null], `odd key`: "v"}'
    with pytest.raises(TypeError):
        bl.literal(object())


def test_statement_keeps_the_body_and_needs_every_parameter() -> None:
    s = bl.statement("browser/entity_neighbourhood", {"domain": "d", "key": "k", "limit": 5})
    assert s.splitlines()[0] == 'WITH "d" AS domain, "k" AS key, 5 AS lim'
    assert s.splitlines()[1:] == bl.body_lines("browser/entity_neighbourhood")[1:]
    with pytest.raises(KeyError, match="limit"):
        bl.statement("browser/entity_neighbourhood", {"domain": "d", "key": "k"})


def test_params_command_matches_the_parameters() -> None:
    q = bl.browser_query(BASE, "browser/domain_overview", {"domain": "d", "limit": 25})
    assert q.params_command == ':params {domain: "d", limit: 25}'
    assert q.url.startswith(BASE + "?cmd=edit&arg=WITH%20")


# ---------------------------------------------------------------------- MetaKGRAG traces
def hop(h: str, r: str, t: str, target: str, w: float, adj: float | None = None) -> dict:
    return {"triple": [h, r, t], "text": f"{h} {r} {t}", "target": target, "weight": w,
            "adjusted": w if adj is None else adj}


INITIAL = {"start": "fox", "entities": ["fox", "animal", "pet"],
           "hops": [hop("fox", "is_a", "animal", "animal", 0.5),
                    hop("animal", "kept_as", "pet", "pet", 0.3)]}
NEW = {"start": "fox", "entities": ["fox", "den", "forest"],
       "hops": [hop("fox", "lives_in", "den", "den", 0.4, 0.6),
                hop("forest", "contains", "den", "forest", 0.55, 0.75)]}  # walked backwards
REFINEMENT = {
    "start": "fox", "initial": INITIAL, "final": NEW, "stop": "no_issue", "changed": True,
    "names": {"fox": 'Fox "Vulpes"', "animal": "animal", "pet": "pet", "den": "den",
              "forest": "Forest"},
    "cycles": [
        {"iteration": 1, "coverage": {"fox": 0.85, "forest": 0.2}, "missing": ["forest"],
         "support": {"fox": 0.6, "animal": 0.4, "pet": 0.2}, "misleading": {"pet": 0.2},
         "issue": "completeness", "pivot": "fox", "pivot_score": 0.2,
         "adjustments": {"forest": 0.2, "den": 0.2, "pet": -0.2}, "new_path": NEW,
         "similarity": 0.2, "accepted": True},
        {"iteration": 2, "coverage": {"fox": 0.85, "forest": 0.8}, "missing": [],
         "support": {"fox": 0.6, "den": 0.5, "forest": 0.7}, "misleading": {},
         "accepted": False},
    ],
}


def refinement_step() -> TraceStep:
    return TraceStep(stage="refine", summary="Fox: 2 cycles", data=REFINEMENT)


def node_line(dot: str, label_start: str) -> str:
    return next(line for line in dot.splitlines() if f'label="{label_start}' in line)


def test_the_fixture_is_a_valid_metakgrag_refinement() -> None:
    assert RefinementView.model_validate(REFINEMENT).cycles[0].pivot == "fox"


def test_refinement_stages_initial_each_cycle_and_final() -> None:
    (ref,) = render.refinements([refinement_step()])
    stages = render.refinement_stages(ref)
    assert [s.title for s in stages] == ["initial path", "cycle 1", "cycle 2", "final path"]
    assert stages[0].triples == [["fox", "is_a", "animal"], ["animal", "kept_as", "pet"]]
    assert stages[1].triples == [["fox", "lives_in", "den"], ["forest", "contains", "den"]]
    assert stages[2].triples == stages[1].triples  # no issue: the accepted path is kept
    assert "no issue found: the path is kept" in stages[2].notes
    assert any("missing concepts: forest" in n for n in stages[1].notes)
    assert any("pet (GS 0.20)" in n for n in stages[1].notes)
    assert any(n.startswith("path similarity 0.20: accepted") for n in stages[1].notes)


def test_cycle_graph_marks_pivot_misleading_boosted_and_weights() -> None:
    (ref,) = render.refinements([refinement_step()])
    dot = render.refinement_stages(ref)[1].dot
    assert dot.startswith("digraph path {") and dot.endswith("}")
    assert render.PIVOT in node_line(dot, 'Fox \\"Vulpes\\"')  # quotes escaped for DOT
    assert "pivot · f=0.20" in node_line(dot, 'Fox \\"Vulpes\\"')
    pet = node_line(dot, "pet")
    assert render.MISLEADING in pet and "misleading · GS 0.20" in pet
    assert render.BOOSTED in node_line(dot, "Forest") and "+δ +0.20" in node_line(dot, "Forest")
    assert 'label="lives_in\\nw 0.40 → 0.60"' in dot  # original and adjusted weight
    backwards = next(line for line in dot.splitlines() if "contains" in line)
    assert "dir=back" in backwards and render.NEW_EDGE in backwards
    dropped = next(line for line in dot.splitlines() if "kept_as" in line)
    assert "style=dashed" in dropped
    assert 'label="missing concepts:\\nforest (0.20)"' in dot


def test_initial_graph_has_plain_weights_and_no_diagnosis() -> None:
    (ref,) = render.refinements([refinement_step()])
    dot = render.refinement_stages(ref)[0].dot
    assert 'label="is_a\\nw 0.50"' in dot
    assert render.PIVOT not in dot and "missing" not in dot and "dashed" not in dot


def test_a_step_that_does_not_validate_is_left_to_the_generic_view() -> None:
    broken = TraceStep(stage="refine", summary="from a newer version", data={"start": 1})
    trace = [broken, refinement_step(), TraceStep(stage="mystery", summary="?", data={"a": 1})]
    assert len(render.refinements(trace)) == 1
    assert render.known_stages(trace) == {1}
    g = render.generic_step(trace[2])
    assert (g.stage, g.summary) == ("mystery", "?") and '"a": 1' in g.data_json


def test_coverage_chart_colours_concepts_below_tau() -> None:
    spec = render.coverage_spec({"fox": 0.85, "forest": 0.2}, 0.6)
    bars, rule = spec["layer"]
    assert [(r["concept"], r["covered"]) for r in bars["data"]["values"]] == [
        ("fox", True), ("forest", False)]
    assert rule["data"]["values"] == [{"tau": 0.6}]


def test_evidence_sets_are_found_in_any_step_shape() -> None:
    step = TraceStep(stage="tog", summary="", data={
        "paths": [[["a", "r", "b"]], [["b", "s", "c"], ["c", "t", "d"]]],
        "triples": [["x", "y", "z"]], "facts": [{"triple": ["f", "g", "h"], "score": 1}]})
    sets = render.triple_sets(step)
    assert [label for label, _ in sets] == ["tog", "tog path 1", "tog path 2", "tog"]
    assert sets[2][1] == [["b", "s", "c"], ["c", "t", "d"]]
    assert render.triple_sets(TraceStep(stage="x", summary="", data={"triples": [["a", 1]]})) \
        == []


def test_neighbourhood_graph_draws_stored_directions() -> None:
    facts = [{"head": "milk", "head_name": "milk", "predicate": "kept in", "tail": "fridge",
              "tail_name": "Fridge"},
             {"head": "cow", "head_name": "cow", "predicate": "gives", "tail": "milk",
              "tail_name": "milk"}]
    dot = render.neighbourhood_dot("milk", facts)
    assert 'n0 -> n1 [label="kept in"]' in dot and 'n2 -> n0 [label="gives"]' in dot
    assert render.START in node_line(dot, "milk")


def test_markdown_escaping_shows_model_output_literally() -> None:
    assert render.escape_md("*x* $y$ <b>#") == "\\*x\\* \\$y\\$ \\<b\\>\\#"


def test_a_real_metakgrag_trace_renders(tmp_path: Path) -> None:
    from metakg.graph import Triple
    from metakg.methods import MetaKGRAG
    from tests.doubles.memory import MemoryBackend

    class Embedder:  # "fox"-ness and "forest"-ness: enough for a walk to exist
        name, dimensions = "two", 2

        def embed(self, texts):
            import numpy as np
            return np.array([[1.0 if "fox" in t.lower() else 0.2,
                              1.0 if "forest" in t.lower() else 0.3] for t in texts])

    backend = MemoryBackend({"fox": "Fox", "den": "den", "forest": "Forest"},
                            [Triple("fox", "lives in", "den"), Triple("den", "in", "forest")],
                            Embedder())
    model = ScriptedModel(['{"concepts": ["fox", "forest"]}', "In a den in the forest."])
    pred = MetaKGRAG(model, backend, domain="toy").answer(Question(id="q", text="Fox home?"))
    assert pred.error is None, pred.error
    refs = render.refinements(pred.trace)
    assert refs, [s.stage for s in pred.trace]
    for stage in render.refinement_stages(refs[0]):
        assert stage.dot.startswith("digraph")
    ev = render.evidence_view(pred.trace)
    assert ev is not None and ev.triples
    assert render.concepts(pred.trace) == ["fox", "forest"]
    assert {m["concept"] for m in render.matches(pred.trace)} == {"fox", "forest"}


# ---------------------------------------------------------------------- kg-paths, kg-fused
PATHS_STEP = TraceStep(stage="paths", summary="2 question entities; options linked: A 2, B 1, C 0",
                       data={"seeds": ["fox", "den"], "options": {
                           "A": {"entities": ["forest"], "score": 1.25, "paths": [
                               "fox -[AtLocation]-> forest", "den – burrow -[AtLocation]- forest"]},
                           "B": {"entities": ["oven"], "score": -0.5,
                                 "paths": ["oven -[UsedFor]-> bake"]},
                           "C": {"entities": [], "score": 0.0, "paths": []}}})
CHOICES = {"A": "forest", "B": "oven", "C": "zzz"}


def kg_fused_trace() -> list[TraceStep]:
    """The steps `metakg.kg_paths.KGFused` records: the reader's read, paths, the choice."""
    return [TraceStep(stage="reader", summary="B. oven (p=0.50, 1 pass, bias none)",
                      data={"label": "B", "letters": {"A": 0.2, "B": 0.5, "C": 0.3}}),
            PATHS_STEP,
            TraceStep(stage="choose", summary="A. forest (p=0.54, weight 1)", data={
                "label": "A", "letters": {"A": 0.5366, "B": 0.2329, "C": 0.2305},
                "reader": {"A": 0.2, "B": 0.5, "C": 0.3},
                "graph": {"A": 1.25, "B": -0.5, "C": 0.0}, "weight": 1.0})]


def test_kg_fused_rows_show_reader_graph_and_fused_per_option() -> None:
    assert render_options.option_rows(kg_fused_trace(), CHOICES) == [
        {"option": "A", "text": "forest", "reader p": 0.2, "graph score": 1.25,
         "final p": 0.5366, "paths shown": 2, "chosen": True},
        {"option": "B", "text": "oven", "reader p": 0.5, "graph score": -0.5,
         "final p": 0.2329, "paths shown": 1, "chosen": False},
        {"option": "C", "text": "zzz", "reader p": 0.3, "graph score": 0.0,
         "final p": 0.2305, "paths shown": 0, "chosen": False}]
    assert render_options.fusion_weight(kg_fused_trace()) == 1.0
    assert render_options.path_seeds(kg_fused_trace()) == ["fox", "den"]
    assert render.known_stages(kg_fused_trace()) == {1}  # the paths step, not the reader's
    assert render.triple_sets(PATHS_STEP) == []  # not dumped again as an evidence set


def test_kg_paths_rows_have_no_reader_and_no_weight() -> None:
    choose = TraceStep(stage="choose", summary="A. forest (p=0.71)", data={
        "label": "A", "letters": {"A": 0.7054, "B": 0.1226, "C": 0.172}})
    rows = render_options.option_rows([PATHS_STEP, choose])
    assert [(r["option"], r["text"], r["reader p"], r["graph score"], r["final p"],
             r["chosen"]) for r in rows] == [
        ("A", "", None, 1.25, 0.7054, True), ("B", "", None, -0.5, 0.1226, False),
        ("C", "", None, 0.0, 0.172, False)]
    assert render_options.fusion_weight([PATHS_STEP, choose]) is None
    # the last "choose" before the paths (another method's read) is not the choice
    assert not any(r["chosen"] for r in render_options.option_rows([choose, PATHS_STEP]))


def test_option_paths_read_with_relations_on_the_arrows() -> None:
    assert render_options.option_paths(kg_fused_trace()) == [
        ("A", ["fox —AtLocation→ forest", "den – burrow —AtLocation— forest"]),
        ("B", ["oven —UsedFor→ bake"]), ("C", [])]
    assert render_options.readable_path("forest <-[AtLocation]- fox") == "forest ←AtLocation— fox"
    assert render_options.readable_path([["a", "r", "b"], ["c", "s", "b"], ["x", "t", "y"]]) \
        == "a —r→ b ←s— c; x —t→ y"


@pytest.mark.parametrize("trace", [
    [],
    [TraceStep(stage="choose", summary="B", data={"label": "B", "letters": {"B": 1.0}})],
    [TraceStep(stage="paths", summary="old layout", data={"paths": [["a", "r", "b"]]})],
    [TraceStep(stage="paths", summary="", data={"options": ["A", "B"]})],
    [TraceStep(stage="paths", summary="", data={"options": {"A": 1.25}})],
    [TraceStep(stage="paths", summary="", data={"options": {}})],
])
def test_a_trace_without_a_well_formed_paths_step_has_no_option_rows(
        trace: list[TraceStep]) -> None:
    assert render_options.option_rows(trace, CHOICES) == []
    assert render_options.option_paths(trace) == []
    assert render_options.fusion_weight(trace) is None and render_options.path_seeds(trace) == []


def test_odd_values_inside_a_paths_step_are_read_leniently() -> None:
    paths = TraceStep(stage="paths", summary="", data={"options": {
        "A": {"score": "high", "paths": "fox -[IsA]-> animal"}, "B": {}}})
    choose = TraceStep(stage="choose", summary="", data={
        "label": "B", "letters": {"A": "x", "B": 0.9}, "graph": {"A": 0.4}, "weight": True})
    rows = render_options.option_rows([paths, choose])
    assert [(r["graph score"], r["final p"], r["paths shown"], r["chosen"]) for r in rows] \
        == [(0.4, None, 0, False), (None, 0.9, 0, True)]
    assert render_options.option_paths([paths, choose]) == [("A", []), ("B", [])]
    assert render_options.fusion_weight([paths, choose]) is None


def test_a_real_kg_fused_trace_renders() -> None:
    import math

    import numpy as np

    from metakg.kg_paths import KGFused, PathScorer
    from metakg.path_features import FEATURES
    from metakg.paths import Hood, PathModel
    from metakg.seeds import EntityMatcher
    from tests.unit.test_kg_paths import Q, hood

    class Hoods:
        def read(self, keys: Sequence[str], seeds: Sequence[str] = ()) -> Hood:
            return hood(leak=False)

    matcher = EntityMatcher(lambda ks: {k for k in ks if k in {"fox", "forest", "oven"}})
    weights = np.zeros(len(FEATURES))
    weights[FEATURES.index("h1_back:AtLocation")] = 10.0  # the graph says A strongly
    script = [{"A": math.log(0.2), "B": math.log(0.5), "C": math.log(0.3)}]
    pred = KGFused(ScriptedModel(script), PathScorer(Hoods(), matcher, PathModel(weights)),
                   weight=1.0).answer(Q)
    assert pred.error is None, pred.error
    rows = render_options.option_rows(pred.trace, {c.label: c.text for c in Q.choices})
    assert [(r["option"], r["text"], r["chosen"]) for r in rows] == [
        ("A", "forest", True), ("B", "oven", False), ("C", "zzz", False)]
    assert [r["reader p"] for r in rows] == pytest.approx([0.2, 0.5, 0.3], abs=1e-3)
    assert rows[0]["graph score"] > 0 and rows[2]["graph score"] == 0.0  # C: no entity
    assert rows[0]["final p"] > rows[0]["reader p"] and rows[0]["paths shown"] >= 1
    assert render_options.fusion_weight(pred.trace) == 1.0
    paths = dict(render_options.option_paths(pred.trace))
    assert paths["C"] == [] and all("—" in p and "-[" not in p for p in paths["A"])


# ---------------------------------------------------------------------- text methods
SEAKR = [
    TraceStep(stage="step", summary="U=-7.1 vs δ=-6.0: keep", data={
        "step": 1, "uncertainty": -7.1, "threshold": -6.0, "retrieve": False}),
    TraceStep(stage="step", summary="U=-4.2 vs δ=-6.0: retrieve", data={
        "step": 2, "uncertainty": -4.2, "threshold": -6.0, "retrieve": True}),
    TraceStep(stage="retrieve", summary="q → B", data={
        "query": "q", "chosen": "p2", "candidates": [
            {"id": "p1", "title": "A", "rank": 1, "score": 9.0, "uncertainty": -5.0,
             "step": "x"},
            {"id": "p2", "title": "B", "rank": 2, "score": 7.5, "uncertainty": -6.5,
             "step": "y"}]}),
]
METARAG = [
    TraceStep(stage="answer", summary="Paris", data={"round": 0, "reason": "r"}),
    TraceStep(stage="round", summary="retrieve: Lyon", data={
        "round": 1, "monitor": {"similarity": 0.3, "accept": False},
        "diagnosis": {"feedback": "missing fact"},
        "action": {"category": "retrieve", "sub_query": "capital"}, "answer": "Lyon"}),
    TraceStep(stage="stop", summary="converged", data={"round": 1, "jaccard": 1.0}),
]


def test_uncertainty_rows_and_chart_follow_the_trace() -> None:
    rows = render_text.uncertainty_rows(SEAKR)
    assert [(r["step"], r["uncertainty"], r["above threshold"], r["decision"]) for r in rows] \
        == [(1, -7.1, False, "no retrieval"), (2, -4.2, True, "retrieve")]
    spec = render_text.uncertainty_spec(rows)
    assert spec["layer"][-1]["data"]["values"] == [{"threshold": -6.0}]
    stop = TraceStep(stage="step", summary="answer", data={
        "step": 3, "uncertainty": -2.0, "threshold": -6.0, "retrieve": False,
        "decision": "answer, stop"})
    assert render_text.uncertainty_rows([stop])[0]["decision"] == "answer, stop"


def test_candidates_mark_the_re_ranked_choice() -> None:
    (c,) = render_text.candidate_sets(SEAKR)
    assert [(r["candidate"], r["chosen"], r["uncertainty"]) for r in c["rows"]] == [
        ("A", False, -5.0), ("B", True, -6.5)]
    assert c["rows"][1]["continuation"] == "y"


def test_rounds_show_monitor_diagnosis_and_plan_in_order() -> None:
    rows = render_text.rounds(METARAG)
    assert [(r["round"], r["stage"]) for r in rows] == [(0, "answer"), (1, "round"),
                                                        (1, "stop")]
    assert rows[1]["diagnosis"] == "feedback: missing fact"
    assert "sub_query: capital" in rows[1]["action"]
    assert render_text.rounds(SEAKR) == []  # no monitor/diagnosis/plan anywhere


# ---------------------------------------------------------------------- asking
def test_question_text_checks() -> None:
    assert check_question_text(" \n ").problem is not None
    exact = check_question_text("y" * MAX_QUESTION_CHARS)
    assert exact.notice is None and len(exact.text) == MAX_QUESTION_CHARS
    long = check_question_text(" " + "y" * (MAX_QUESTION_CHARS + 5))
    assert len(long.text) == MAX_QUESTION_CHARS and "10,005" in (long.notice or "")


def test_answer_options_parse_or_say_why_not() -> None:
    assert [(c.label, c.text) for c in parse_choices("a) oven\nB: fridge\n")] == [
        ("A", "oven"), ("B", "fridge")]
    for bad, why in [("A oven", "write each option"), ("A.", "has no text"),
                     ("A. x\na) y", "same label")]:
        with pytest.raises(ValueError, match=why):
            parse_choices(bad)


def test_gate_refuses_a_second_holder_and_reports_who_waits() -> None:
    gate = ModelGate()
    assert gate.acquire("s1", "llm on q", wait_s=0)
    seen: list[str] = []
    t0 = time.monotonic()
    assert not gate.acquire("s2", "cot", wait_s=0.3, poll_s=0.05,
                            on_wait=lambda h, w: seen.append(h.owner if h else "?"))
    assert time.monotonic() - t0 >= 0.3
    assert seen and set(seen) == {"s1"}
    threading.Thread(target=gate.release).start()  # the worker thread releases
    assert gate.acquire("s2", "cot", wait_s=2)
    assert gate.holder is not None and gate.holder.owner == "s2"
    gate.release()
    assert not gate.busy()


def scripted_platform(tmp_path: Path, replies: list[Scripted]) -> Platform:
    p = Platform(Settings(home=tmp_path / "home", data_dir=tmp_path / "data"))
    p.__dict__["chat_model"] = ScriptedModel(replies)
    return p


def test_answer_job_runs_each_method_scores_it_and_frees_the_gate(tmp_path: Path) -> None:
    p = scripted_platform(tmp_path, [{"A": -3.0, "B": -0.1}, "Let me think. So the answer is: A.",
                                     {"A": -0.1, "B": -3.0}])
    gate = ModelGate()
    q = Question(id="q", text="Where is milk kept?", kind="multiple_choice",
                 choices=[Choice(label="A", text="oven"), Choice(label="B", text="fridge")],
                 answers=["B"])
    assert gate.acquire("me", "test", wait_s=0)
    job = AnswerJob(p, gate, q, ["llm", "cot", "no-such-method"], domain=None).start()
    assert job.wait(10)
    assert not gate.busy()
    assert list(job.outcomes) == ["llm", "cot", "no-such-method"]
    assert verdict(q, job.outcomes["llm"]) == "correct"
    assert verdict(q, job.outcomes["cot"]) == "wrong"
    assert job.outcomes["no-such-method"].prediction is None
    assert "unknown method" in (job.outcomes["no-such-method"].problem or "")
    assert job.progress().method is None and job.progress().done == tuple(job.outcomes)


def test_a_typed_question_has_no_gold_and_no_verdict(tmp_path: Path) -> None:
    p = scripted_platform(tmp_path, ["Paris"])
    gate = ModelGate()
    gate.acquire("me", "t", wait_s=0)
    q = user_question("Capital of France?", None)
    job = AnswerJob(p, gate, q, ["llm"], None).start()
    assert job.wait(10)
    assert job.outcomes["llm"].scores == {} and verdict(q, job.outcomes["llm"]) == ""


# ---------------------------------------------------------------------- results
def mcq(i: int) -> Question:
    return Question(id=f"q{i}", text=f"question {i}", kind="multiple_choice",
                    choices=[Choice(label="A", text="a"), Choice(label="B", text="b")],
                    answers=["A"])


def line(i: int, method: str, answer: str, error: str | None = None) -> RunLine:
    return RunLine(question=mcq(i), prediction=Prediction(
        question_id=f"q{i}", method=method, answer=answer, error=error, usage=Usage(seconds=1)))


LINES = [line(1, "llm", "A"), line(1, "cot", "So the answer is B"),   # llm right only
         line(2, "llm", "B"), line(2, "cot", "B"),                     # both wrong, same
         line(3, "llm", "A"), line(3, "cot", "The answer is A"),       # both right
         line(4, "llm", "B"), line(4, "cot", "", error="boom")]        # cot failed


def test_question_rows_and_filters() -> None:
    rows = results.question_rows(LINES, ["llm", "cot"])
    assert [r.id for r in rows] == ["q1", "q2", "q3", "q4"]
    assert rows[0].cells["llm"].parsed == "A" and rows[0].cells["cot"].parsed == "B"

    def ids(mode: str) -> list[str]:
        return [r.id for r in results.filter_rows(rows, mode, "llm", "cot")]

    assert ids("all") == ["q1", "q2", "q3", "q4"]
    assert ids("disagree") == ["q1", "q4"]  # q4: an error parses to no answer
    assert ids("a_only") == ["q1"]
    assert ids("b_only") == []
    assert ids("both_wrong") == ["q2", "q4"]
    assert ids("errors") == ["q4"]
    assert [r.id for r in results.filter_rows(rows, "all", text="QUESTION 3")] == ["q3"]
    table = results.table(rows, ["llm", "cot"])
    assert table[3]["cot"].startswith("⚠ boom") and table[0]["llm score"] == 1.0


def write_run(d: Path, lines: list[RunLine]) -> Path:
    d.mkdir(parents=True)
    cfg = RunConfig(dataset="toy", dataset_path="toy.jsonl", domain=None, methods=["llm", "cot"],
                    n=None, model="m", model_backend="llama", model_sha256=None,
                    embedding_model="e", seed=1, kgrag_version="0", git_revision="",
                    prompts_digest="", cypher_digest="")
    (d / "config.json").write_text(cfg.model_dump_json())
    (d / "predictions.jsonl").write_text("".join(ln.model_dump_json() + "\n" for ln in lines))
    return d


def test_runs_are_found_and_scored_once(tmp_path: Path) -> None:
    run = write_run(tmp_path / "runs" / "toy-4", LINES)
    (tmp_path / "runs" / "notes").mkdir()
    (tmp_path / "runs" / "broken").mkdir()
    (tmp_path / "runs" / "broken" / "config.json").write_text("{not json")
    found = results.find_runs(tmp_path / "runs")
    assert [r.path for r in found] == [run]
    assert results.find_runs(tmp_path / "missing") == []
    metrics, now = results.run_metrics(run)
    assert now and (run / "metrics.json").is_file()
    assert metrics.methods["llm"].correct == 2
    again, now = results.run_metrics(run)
    assert not now and again.methods["llm"].correct == 2
    time.sleep(0.01)
    (run / "predictions.jsonl").write_text((run / "predictions.jsonl").read_text())
    assert results.run_metrics(run)[1]  # predictions newer than metrics: scored again
