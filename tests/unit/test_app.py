"""The app's pages under Streamlit's AppTest, with a scripted model and a fake graph store
(control flow only: what each page shows and asks, never answer quality). No network."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import app.state
from app.asking import ReasoningSource
from app.render import escape_md
from kgrag.config import Settings
from kgrag.errors import Neo4jUnavailable
from kgrag.platform import Platform
from kgrag.store import QueryStats
from kgrag.types import Choice, Prediction, Question, TraceStep
from tests.doubles.scripted import ScriptedModel
from tests.e2e.synthetic import write_synthetic_run
from tests.unit.test_app_render import REFINEMENT, kg_fused_trace

MAIN = str(Path(app.state.__file__).parent / "main.py")
CSQA = [{"id": "c1", "answerKey": "B", "question": {
    "stem": "Where would you keep milk so that it stays cold?", "question_concept": "milk",
    "choices": [{"label": "A", "text": "cupboard"}, {"label": "B", "text": "refrigerator"},
                {"label": "C", "text": "oven"}]}}]


class FakeStore:
    """Canned rows per statement name; records what was asked."""

    def __init__(self, rows: dict[str, list[dict[str, Any]]]) -> None:
        self.rows, self.asked, self.stats = rows, [], QueryStats()

    def read(self, name: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        self.asked.append((name, dict(params or {})))
        return self.rows.get(name, [])

    run = read

    def stream(self, name: str, params: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        yield from self.read(name, params)

    def close(self) -> None:
        pass


GRAPH_ROWS = {
    "kg/domains": [{"name": "toy"}],
    "kg/stats": [{"entities": 3, "relations": 2, "with_provenance": 2, "orphans": 0,
                  "chunks": 1, "without_embedding": 0}],
    "kg/edges": [{"h": "milk", "t": "fridge", "k": "spatial"},
                 {"h": "cow", "t": "milk", "k": "function"}],
    "graph/fingerprint": [{"entities": ["milk", "fridge", "cow"],
                           "facts": ["4:milk7:kept infridge", "3:cow5:givesmilk"], "chunks": 1}],
    "browser/entity_search": [{"key": "milk", "name": "milk", "degree": 2}],
    "browser/entity_neighbourhood": [
        {"head": "milk", "head_name": "milk", "predicate": "kept in", "tail": "fridge",
         "tail_name": "fridge", "sources": 1},
        {"head": "cow", "head_name": "cow", "predicate": "gives", "tail": "milk",
         "tail_name": "milk", "sources": 1}],
    "browser/triple_provenance": [{"chunk_id": "c1", "text": "Milk is kept in the fridge.",
                                   "file": "t.jsonl", "line": 3}],
}


class NoEmbedder:
    """Stands in for the sentence-transformers model, which unit tests never load."""

    name, dimensions = "none", 384

    def embed(self, texts: list[str]) -> Any:
        raise AssertionError("a unit test of the app tried to embed text")


class DownPlatform(Platform):
    @property
    def store(self):  # type: ignore[override]
        raise Neo4jUnavailable("Neo4j at bolt://127.0.0.1:7687 is not reachable",
                               hint="run `kgrag neo4j start`")


def make_platform(tmp_path: Path, replies: list[str], *, down: bool = False,
                  rows: dict[str, list[dict[str, Any]]] | None = None) -> Platform:
    data = tmp_path / "data"
    (data / "commonsense").mkdir(parents=True, exist_ok=True)
    (data / "commonsense" / "csqa_dev300.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in CSQA))
    settings = Settings(home=tmp_path / "home", data_dir=data)
    p = DownPlatform(settings) if down else Platform(settings)
    p.__dict__["chat_model"] = ScriptedModel(replies)
    p.__dict__["embedder"] = NoEmbedder()
    if not down:
        p.__dict__["store"] = FakeStore(GRAPH_ROWS if rows is None else rows)
    return p


@pytest.fixture()
def use(monkeypatch: pytest.MonkeyPatch):
    """use(platform) makes the app build that platform; caches start empty."""
    def install(p: Platform) -> Platform:
        monkeypatch.setattr(app.state, "build_platform", lambda: p)
        return p

    st.cache_resource.clear()
    st.cache_data.clear()
    yield install
    st.cache_resource.clear()
    st.cache_data.clear()


def page(name: str, **state: Any) -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=60)
    for k, v in state.items():
        at.session_state[k] = v
    at.run()
    if name != "ask":
        at.switch_page(f"views/{name}.py").run()
    assert not at.exception, at.exception
    return at


def texts(at: AppTest, kind: str) -> list[str]:
    return [e.value for e in getattr(at, kind)]


def ask(at: AppTest, question: str, methods: list[str] | None = None) -> AppTest:
    at.text_area(key="ask_text").input(question)
    if methods:
        at.multiselect(key="ask_methods").set_value(methods)
    at.button(key="ask_button").click().run()
    assert not at.exception, at.exception
    return at


# ---------------------------------------------------------------------- Ask
def test_a_typed_question_is_answered_once(tmp_path: Path, use) -> None:
    p = use(make_platform(tmp_path, ["It is Paris."]))
    at = ask(page("ask"), "What is the capital of France?")
    assert "It is Paris\\." in texts(at, "markdown")
    assert any(s.label.startswith("Answered in") for s in at.status)
    model = p.chat_model
    assert model.remaining == 0 and len(model.prompts) == 1
    assert "What is the capital of France?" in model.prompts[0][-1].content
    assert not at.info  # a typed question has no gold answer to show
    assert "reasoning" in at.session_state


def test_a_dataset_question_shows_its_verdict_and_then_the_gold(tmp_path: Path, use) -> None:
    use(make_platform(tmp_path, [{"A": -3.0, "B": -0.1, "C": -4.0, "D": -4.0, "E": -4.0}]))
    at = page("ask")
    at.radio(key="ask_source").set_value("Dataset question").run()
    at.selectbox(key="ask_dataset").set_value("csqa").run()
    assert not at.info  # the gold answer is not shown before answering
    at.button(key="ask_button").click().run()
    assert not at.exception, at.exception
    assert "correct" in texts(at, "success")
    assert any("Gold answer: B. refrigerator" in v for v in texts(at, "info"))


def test_an_empty_question_is_refused_without_calling_the_model(tmp_path: Path, use) -> None:
    p = use(make_platform(tmp_path, []))
    at = ask(page("ask"), "   ")
    assert any("The question is empty" in w for w in texts(at, "warning"))
    assert p.chat_model.prompts == []


def test_a_very_long_question_is_capped_and_the_user_told(tmp_path: Path, use) -> None:
    p = use(make_platform(tmp_path, ["ok"]))
    at = ask(page("ask"), "a" * 5_000 + "b" * 5_050)
    assert any("10,050 characters; only the first 10,000" in w for w in texts(at, "warning"))
    sent = p.chat_model.prompts[0][-1].content
    # the app keeps the first 10,000 characters; the method then cuts the middle to fit
    # the model's context (kgrag.method.fit_question) and says so in the trace
    assert "a" * 2_048 in sent and " … " in sent and "b" * 2_048 in sent
    assert "b" * 2_049 not in sent


def test_a_second_session_sees_busy_while_the_model_answers(tmp_path: Path, use,
                                                            monkeypatch) -> None:
    p = use(make_platform(tmp_path, []))
    monkeypatch.setattr(app.state, "BUSY_WAIT_S", 0.6)
    gate = app.state.resources().gate
    assert gate.acquire("other-session", "llm on “something”", wait_s=0)
    try:
        at = ask(page("ask"), "Is anyone there?")
    finally:
        gate.release()
    assert any(w.startswith("Busy — another question is") for w in texts(at, "warning"))
    assert not at.error and p.chat_model.prompts == []


def test_with_neo4j_down_llm_still_answers_and_graphs_say_why(tmp_path: Path, use) -> None:
    use(make_platform(tmp_path, ["Paris."], down=True))
    at = ask(page("ask"), "Capital of France?")
    assert any("Neo4j is not reachable" in w for w in texts(at, "warning"))
    assert "Paris\\." in texts(at, "markdown")
    assert any(e.startswith("Neo4j: Neo4j at bolt://") for e in texts(at, "error"))  # sidebar
    at = page("graphs")
    assert any("is not reachable" in e for e in texts(at, "error"))
    assert "→ run `kgrag neo4j start`" in texts(at, "caption")


def test_a_kg_method_on_an_unknown_domain_reports_the_problem(tmp_path: Path, use) -> None:
    use(make_platform(tmp_path, [], rows={"kg/domains": []}))
    at = ask(page("ask"), "Where is the fox?", ["metakgrag"])
    assert any("metakgrag answers from a domain graph" in e for e in texts(at, "error"))


# ---------------------------------------------------------------------- Reasoning
def test_reasoning_without_an_answer_says_where_to_start(tmp_path: Path, use) -> None:
    use(make_platform(tmp_path, []))
    at = page("reasoning")
    assert any(v.startswith("Nothing to show yet") for v in texts(at, "info"))


def metakg_prediction() -> Prediction:
    trace = [
        TraceStep(stage="domain", summary="toy", data={"domain": "toy"}),
        TraceStep(stage="concepts", summary="2 concepts", data={"concepts": ["fox", "forest"]}),
        TraceStep(stage="match", summary="start entities: Fox", data={"matches": [
            {"concept": "fox", "key": "fox", "name": "Fox", "similarity": 0.9, "kept": True}]}),
        TraceStep(stage="refine", summary="Fox: 2 cycles", data=REFINEMENT),
        TraceStep(stage="evidence", summary="2 evidence triples", data={
            "triples": [["fox", "lives_in", "den"], ["forest", "contains", "den"]],
            "lines": ["Evidence 1: Fox lives_in den", "Evidence 2: Forest contains den"],
            "names": {}, "browser_params": None, "browser_query": None,
            "retrieval_ms": 12.0, "cypher_ms": 3.0}),
        TraceStep(stage="mystery", summary="a stage the app does not know", data={"k": [1, 2]}),
        TraceStep(stage="generate", summary="In a den.", data={}),
    ]
    return Prediction(question_id="q", method="metakgrag", answer="In a den.", trace=trace)


def test_reasoning_draws_paths_links_and_every_step(tmp_path: Path, use) -> None:
    use(make_platform(tmp_path, []))
    src = ReasoningSource(Question(id="q", text="Where does a fox live?"), "toy",
                          {"metakgrag": metakg_prediction()}, "the Ask page")
    at = page("reasoning", reasoning=src)
    charts = at.get("graphviz_chart")
    assert len(charts) == 1  # one start entity; its default view is the final path
    assert "lives_in" in charts[0].proto.spec
    links = [b for b in at.get("link_button") if b.proto.label == "Open in Neo4j Browser"]
    assert len(links) == 2  # the path shown and the integrated evidence
    assert all(b.proto.url.startswith("http://127.0.0.1:7474/browser/?cmd=edit&arg=WITH")
               for b in links)
    code = [c.value for c in at.code]
    assert any(c.startswith('WITH "toy" AS domain, [["fox", "lives_in", "den"]') for c in code)
    assert any('"k": [' in c for c in code)  # the unknown stage, as JSON
    titles = [e.label for e in at.expander]
    assert len([t for t in titles if re.match(r"^\d+\. \[", t)]) == 7
    assert any("[mystery]" in t for t in titles)


def test_reasoning_cycle_view_has_a_coverage_chart(tmp_path: Path, use) -> None:
    use(make_platform(tmp_path, []))
    src = ReasoningSource(Question(id="q", text="?"), "toy", {"metakgrag": metakg_prediction()},
                          "the Ask page")
    at = page("reasoning", reasoning=src)
    at.get("button_group")[0].set_value("cycle 1").run()
    assert not at.exception, at.exception
    assert at.get("vega_lite_chart")
    note = escape_md("misleading entities: pet (GS 0.20)")
    assert any(note in m for m in texts(at, "markdown"))


def test_reasoning_shows_reader_and_graph_per_option_for_kg_fused(tmp_path: Path, use) -> None:
    use(make_platform(tmp_path, []))
    q = Question(id="q1", text="Where would you find a fox?", kind="multiple_choice",
                 choices=[Choice(label="A", text="forest"), Choice(label="B", text="oven"),
                          Choice(label="C", text="zzz")])
    pred = Prediction(question_id="q1", method="kg-fused", answer="A. forest",
                      trace=kg_fused_trace(), setting="kg")
    at = page("reasoning", reasoning=ReasoningSource(q, "commonsense", {"kg-fused": pred},
                                                     "the Ask page"))
    assert "Reader and graph per option" in texts(at, "subheader")
    table = at.dataframe[0].value
    assert list(table["option"]) == ["A", "B", "C"] and list(table["chosen"]) == [
        True, False, False]
    assert list(table["reader p"]) == [0.2, 0.5, 0.3]
    assert len(at.get("vega_lite_chart")) == 2  # probabilities, graph scores
    assert any(m.startswith("Fusion weight λ = 1:") for m in texts(at, "markdown"))
    titles = [e.label for e in at.expander]
    assert "A. forest — 2 path(s) · chosen" in titles and "C. zzz — 0 path(s)" in titles
    assert "- fox —AtLocation→ forest\n- den – burrow —AtLocation— forest" in texts(
        at, "markdown")
    assert "Evidence sets in the trace" not in texts(at, "subheader")
    assert len([t for t in titles if re.match(r"^\d+\. \[", t)]) == 3  # every step


# ---------------------------------------------------------------------- Graphs
def test_graphs_show_sizes_quality_and_an_entity_neighbourhood(tmp_path: Path, use) -> None:
    p = use(make_platform(tmp_path, []))
    at = page("graphs")
    assert at.dataframe and not at.error
    assert "3" in [m.value for m in at.metric]  # entities of the quality report
    at.text_input(key="entity_search").input("mil").run()
    assert not at.exception, at.exception
    assert "kept in" in at.get("graphviz_chart")[0].proto.spec
    asked = [name for name, _ in p.store.asked]
    assert {"browser/entity_search", "browser/entity_neighbourhood",
            "browser/triple_provenance"} <= set(asked)
    assert "> Milk is kept in the fridge\\." in texts(at, "markdown")


def test_graphs_without_any_domain_say_how_to_build_one(tmp_path: Path, use) -> None:
    use(make_platform(tmp_path, [], rows={"kg/domains": []}))
    at = page("graphs")
    assert any("No domain graph yet" in v for v in texts(at, "info"))


# ---------------------------------------------------------------------- Results
def test_results_without_runs_say_how_to_make_one(tmp_path: Path, use) -> None:
    use(make_platform(tmp_path, []))
    at = page("results")
    at.text_input(key="runs_root").input(str(tmp_path / "runs")).run()
    assert any(v.startswith("No runs yet") for v in texts(at, "info"))


def test_results_table_filter_and_reasoning_link(tmp_path: Path, use) -> None:
    from app import results

    use(make_platform(tmp_path, []))
    run = write_synthetic_run(tmp_path / "runs" / "syn-20", n=20)
    at = page("results")
    at.text_input(key="runs_root").input(str(tmp_path / "runs")).run()
    assert not at.exception, at.exception
    assert any("| llm |" in m for m in texts(at, "markdown"))  # eval.report.markdown table
    at.selectbox(key="res_filter").set_value("disagree").run()
    from eval.runner import read_run
    rows = results.question_rows(read_run(run)[1], ["llm", "cot"])
    expected = len(results.filter_rows(rows, "disagree", "llm", "cot"))
    assert 0 < expected < 20
    assert f"{expected} of 20 questions" in texts(at, "caption")
    at.button(key="res_reasoning").click().run()
    assert not at.exception, at.exception
    assert at.session_state["reasoning"].origin == "run syn-20"


def test_app_command_line() -> None:
    from app.cli import MAIN as main_file
    from app.cli import streamlit_argv

    argv = streamlit_argv(8765, "0.0.0.0", Path("my-runs"))
    assert argv[1:5] == ["-m", "app.serve", "run", str(main_file)]
    assert argv[argv.index("--server.port") + 1] == "8765"
    assert argv[argv.index("--server.address") + 1] == "0.0.0.0"
    assert argv[-3:] == ["--", "--runs", "my-runs"]
    assert app.state.app_args(["--runs", "x"]).runs == Path("x")


# ---------------------------------------------------------------------- Compare
@pytest.mark.results
def test_compare_renders_the_committed_hotpotqa_run(tmp_path: Path, use) -> None:
    """The committed HotpotQA dev run: every method's row with its setting, the score
    against seconds plot, and one question's answers beside their passages and paths."""
    root = Path(__file__).resolve().parents[2] / "docs" / "results"
    use(make_platform(tmp_path, []))
    at = page("compare", cmp_root=str(root))
    assert at.selectbox(key="cmp_run").value == str(root / "hotpotqa-dev")
    table = at.dataframe[0].value
    settings = dict(zip(table["method"], table["setting"], strict=True))
    assert settings["llm"] == "closed-book" and settings["rag"] == "open"
    assert settings["rag-gold"] == "gold" and settings["metakgrag"] == "kg"
    assert table["F1 %"].notna().all() and (table["s/question"] > 0).all()
    assert len(at.get("image")) == 1  # the scatter
    # by question type, on the run's same 300 questions (the report's section too)
    types = [m for m in texts(at, "markdown") if m.startswith("F1 % by `type`")]
    assert len(types) == 1 and "| bridge | 255 |" in types[0] and "| comparison | 45 |" in types[0]
    at.multiselect(key="cmp_methods").set_value(["llm", "rag", "metakgrag"]).run()
    assert not at.exception, at.exception
    shown = texts(at, "markdown")
    assert any(m.startswith("**Q:** The director of the romantic comedy") for m in shown)
    assert "_Evidence: 3 passages_" in shown  # rag's top 3
    assert any(m.startswith("_Evidence:") and m.endswith(" paths_") for m in shown)
    assert "no evidence (closed-book, or nothing retrieved)" in texts(at, "caption")
    assert any(m.startswith("- **Big Stone Gap") and "is a 2014 American" in m for m in shown)


def test_compare_shows_rouge_l_for_an_open_ended_run(tmp_path: Path, use) -> None:
    root = Path(__file__).resolve().parents[2] / "docs" / "results"
    use(make_platform(tmp_path, []))
    at = page("compare", cmp_root=str(root))
    at.selectbox(key="cmp_run").set_value(str(root / "medquad-dev")).run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    assert list(table["method"]) == ["llm", "metakgrag"] and "ROUGE-L %" in table.columns
    assert list(table["setting"]) == ["closed-book", "kg"]
