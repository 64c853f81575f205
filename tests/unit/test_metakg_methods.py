"""Control flow of the KG methods (MetaKGRAG and its ablations, kg-vanilla, ToG) with a
scripted LLM and the in-memory graph backend. These tests never judge answer quality.

The embedder is a table: the question, each concept and each entity name get a unit
vector built so that its cosines to the axes below are exactly the numbers written in
SIMS, so every walk can be derived by hand from the comments.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from types import SimpleNamespace

import numpy as np
import pytest

from kgrag.answers import reply_answer
from kgrag.errors import KgragError
from kgrag.types import Choice, Prediction, Question
from metakg.config import Ablation, MetaKGConfig
from metakg.graph import Triple
from metakg.kg_method import NO_EVIDENCE
from metakg.methods import (
    FACTORIES,
    KGNoEvidence,
    KGVanilla,
    MetaKGRAG,
    MetaKGRAGNoCycle,
    MetaKGRAGNoRestart,
)
from metakg.neo4j_source import browser_query
from metakg.tog import ThinkOnGraph
from metakg.trace import EvidenceView, RefinementView
from tests.doubles.memory import MemoryBackend
from tests.doubles.scripted import ScriptedModel

QTEXT = "Where does a fox live?"
AXES = [QTEXT, "fox", "forest", "unicorn"]  # the question and the concept texts
# cosines of each entity name to the axes (a private axis takes the rest)
SIMS: dict[str, dict[str, float]] = {
    "Fox": {QTEXT: 0.45, "fox": 0.85, "forest": 0.2},
    "animal": {QTEXT: 0.5, "fox": 0.2, "forest": 0.1},
    "pet": {QTEXT: 0.3},
    "den": {QTEXT: 0.4, "forest": 0.4},
    "Forest": {QTEXT: 0.55, "forest": 0.8},
}
KEYS = {"fox": "Fox", "animal": "animal", "pet": "pet", "den": "den", "forest": "Forest"}
TRIPLES = [Triple("fox", "is_a", "animal"), Triple("animal", "kept_as", "pet"),
           Triple("fox", "lives_in", "den"), Triple("den", "found_in", "forest")]
QUESTION = Question(id="q1", text=QTEXT)
CONCEPTS_FOX = '{"concepts": ["fox"]}'


class TableEmbedder:
    """Unit vectors with exact cosines to the axes; unknown texts are an error."""

    name, dimensions = "table", len(AXES) + len(SIMS)

    def __init__(self) -> None:
        dim = self.dimensions
        self.vectors = {axis: np.eye(dim)[i] for i, axis in enumerate(AXES)}
        for j, (text, cosines) in enumerate(SIMS.items()):
            v = np.zeros(dim)
            for axis, c in cosines.items():
                v[AXES.index(axis)] = c
            v[len(AXES) + j] = math.sqrt(1.0 - float(np.dot(v, v)))
            self.vectors[text] = v

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.array([self.vectors[t] for t in texts])


def backend(entities: Mapping[str, str] = KEYS) -> MemoryBackend:
    return MemoryBackend(entities, TRIPLES if entities else [], TableEmbedder())


def steps(pred: Prediction, stage: str) -> list[dict]:
    return [s.data for s in pred.trace if s.stage == stage]


def only(pred: Prediction, stage: str) -> dict:
    found = steps(pred, stage)
    assert len(found) == 1, [s.stage for s in pred.trace]
    return found[0]


ONE_START = MetaKGConfig(n_starts=1)


# --- MetaKGRAG -------------------------------------------------------------------------
# Concepts (fox, forest): MatchEntities keeps Fox (.85) and Forest (.8), both > τ_entity .6;
# n_starts = 1 keeps the best, Fox.
# Initial walk (weight = sim(e, Q)): fox: animal .5 > den .4 -> animal; animal: pet .3;
#   pet: dead end. Path fox -> animal -> pet.
# Cycle 1: coverage fox .85; forest = max(.2, .1, 0) = .2 < .6 -> missing; GlobalSupport:
#   fox .5·.5+.5·.45 = .475; animal 0+.25 = .25 and pet 0+.15 = .15 are misleading (< .3).
#   Completeness pivot: max sim(e, forest) over fox .2, animal .1, pet 0 -> fox.
#   Adjustments: +.2 for den (.4) and Forest (.8), the external entities with sim > τ_c .3
#   to "forest"; -.2 for animal and pet.
#   Re-search from fox: den .4+.2 = .6 > animal .5-.2 = .3 -> den; den: Forest .55+.2.
#   New path fox -> den -> Forest; Jaccard with the old one 1/5 = .2 -> accepted.
# Cycle 2: coverage fox .85, forest .8; support fox .475, den .25+.2 = .45, Forest
#   .25+.275 = .525: no issue, stop.
CONCEPTS_BOTH = '{"concepts": ["fox", "forest"]}'


def test_metakgrag_refines_the_path_and_traces_every_cycle() -> None:
    model = ScriptedModel([CONCEPTS_BOTH, "In a den in the forest."])
    pred = MetaKGRAG(model, backend(), "woods", ONE_START).answer(QUESTION)
    assert pred.error is None and model.remaining == 0
    assert [s.stage for s in pred.trace] == [
        "domain", "concepts", "match", "refine", "evidence", "generate"]
    ref = RefinementView.model_validate(only(pred, "refine"))
    assert ref.initial.entities == ["fox", "animal", "pet"]
    assert ref.stop == "no_issue" and ref.changed
    first, second = ref.cycles
    assert first.missing == ["forest"] and first.coverage["forest"] == pytest.approx(0.2)
    assert first.misleading == pytest.approx({"animal": 0.25, "pet": 0.15})
    assert (first.issue, first.pivot) == ("completeness", "fox")
    assert first.adjustments == pytest.approx(
        {"den": 0.2, "forest": 0.2, "animal": -0.2, "pet": -0.2})
    assert first.new_path is not None and first.new_path.entities == ["fox", "den", "forest"]
    assert [h.adjusted for h in first.new_path.hops] == pytest.approx([0.6, 0.75])
    assert first.similarity == pytest.approx(0.2) and first.accepted
    assert second.issue is None and second.missing == []
    assert pred.evidence == ["Evidence 1: Fox lives_in den", "Evidence 2: den found_in Forest"]
    assert pred.setting == "kg"
    answer_prompt = model.prompts[-1][-1].content
    assert "Evidence 1: Fox lives_in den\nEvidence 2: den found_in Forest" in answer_prompt
    json.dumps(pred.model_dump(mode="json"))  # the whole trace is JSON


def test_the_trace_records_matches_evidence_and_usage_per_stage() -> None:
    model = ScriptedModel([CONCEPTS_BOTH, "In a den."])
    pred = MetaKGRAG(model, backend(), "woods", ONE_START).answer(QUESTION)
    match = only(pred, "match")
    assert match["starts"] == ["fox"]
    assert [(m["concept"], m["key"], m["similarity"], m["kept"]) for m in match["matches"]] == [
        ("fox", "fox", 0.85, True), ("forest", "forest", 0.8, True)]
    ev = EvidenceView.model_validate(only(pred, "evidence"))
    assert ev.triples == [["fox", "lives_in", "den"], ["den", "found_in", "forest"]]
    assert ev.browser_params is None  # the memory backend has no Neo4j Browser
    assert only(pred, "concepts")["llm_calls"] == 1
    assert only(pred, "generate")["llm_calls"] == 1
    assert pred.usage.llm_calls == 2 and pred.usage.cypher_queries == 0


def test_no_cycle_ablation_answers_from_the_initial_path() -> None:
    model = ScriptedModel([CONCEPTS_BOTH, "A pet."])
    pred = MetaKGRAGNoCycle(model, backend(), "woods", ONE_START).answer(QUESTION)
    assert pred.method == "metakgrag-no-cycle"
    assert pred.evidence == ["Evidence 1: Fox is_a animal", "Evidence 2: animal kept_as pet"]
    assert only(pred, "refine")["stop"] == "no_cycle"


def test_a_malformed_concept_reply_is_retried_with_the_error() -> None:
    model = ScriptedModel(["Concepts: fox, forest", CONCEPTS_FOX, "A den."])
    pred = MetaKGRAG(model, backend(), "woods").answer(QUESTION)
    concepts = only(pred, "concepts")
    assert concepts["concepts"] == ["fox"] and concepts["retried"] and not concepts["failed"]
    assert concepts["errors"] == ["no JSON object in the reply"]
    retry_prompt = model.prompts[1][-1].content
    assert retry_prompt.startswith(model.prompts[0][-1].content)
    assert "could not be used (no JSON object in the reply)" in retry_prompt
    assert pred.usage.llm_calls == 3 and pred.setting == "kg"


def test_two_bad_concept_replies_fall_back_to_no_concepts_and_no_evidence() -> None:
    model = ScriptedModel(['{"concepts": "fox"}', '{"concepts": [', "Somewhere."])
    pred = MetaKGRAG(model, backend(), "woods").answer(QUESTION)
    concepts = only(pred, "concepts")
    assert concepts["failed"] and concepts["concepts"] == [] and len(concepts["errors"]) == 2
    assert "without concepts" in pred.trace[1].summary
    assert "no concepts" in pred.trace[2].summary
    assert pred.setting == "kg-none" and pred.evidence == [] and pred.answer == "Somewhere."
    assert NO_EVIDENCE in model.prompts[-1][-1].content


def test_a_question_matching_no_entity_is_answered_without_kg_evidence() -> None:
    model = ScriptedModel(['{"concepts": ["unicorn"]}', "Nowhere."])
    pred = MetaKGRAG(model, backend(), "woods").answer(QUESTION)
    match = only(pred, "match")
    assert match["starts"] == [] and match["matches"][0]["kept"] is False
    assert "no entity matched" in pred.trace[2].summary
    assert steps(pred, "refine") == []
    assert pred.setting == "kg-none" and pred.answer == "Nowhere."
    assert NO_EVIDENCE in model.prompts[-1][-1].content


def test_kg_no_evidence_asks_the_answer_prompt_alone() -> None:
    q = Question(id="q2", text=QTEXT, choices=[Choice(label="A", text="forest"),
                                               Choice(label="B", text="sea")])
    model = ScriptedModel([{"A": -0.2, "B": -2.0}])  # one pass: no concepts are asked for
    b = backend()
    b.embedder.vectors[QTEXT + " forest sea"] = b.embedder.vectors[QTEXT]
    pred = KGNoEvidence(model, b, "woods").answer(q)
    assert pred.answer == "A. forest" and pred.setting == "kg-none" and pred.evidence == []
    (prompt,) = model.prompts
    assert NO_EVIDENCE in prompt[-1].content
    assert prompt[-1].content.endswith("Options:\nA. forest\nB. sea\nAnswer:")  # options last
    assert only(pred, "match")["starts"] == [] and steps(pred, "refine") == []
    assert only(pred, "choose")["label"] == "A" and pred.usage.llm_calls == 1


def test_multiple_choice_prompts_carry_the_options() -> None:
    q = Question(id="q2", text=QTEXT, choices=[Choice(label="A", text="forest"),
                                               Choice(label="B", text="sea")])
    b = backend()
    b.embedder.vectors[QTEXT + " forest sea"] = b.embedder.vectors[QTEXT]
    model = ScriptedModel([CONCEPTS_FOX, {"A": -3.0, "B": -0.1}])
    pred = MetaKGRAG(model, b, "woods").answer(q)
    assert "Options:\nA. forest\nB. sea" in model.prompts[0][-1].content
    assert "A. forest\nB. sea" in model.prompts[-1][-1].content
    assert pred.answer == "B. sea"
    choose = only(pred, "choose")
    assert choose["label"] == "B" and choose["prompt"] == "answer_choose"
    assert sum(choose["letters"].values()) == pytest.approx(1.0, abs=1e-3)


def test_the_explanation_is_generated_after_the_choice_when_asked() -> None:
    q = Question(id="q2", text=QTEXT, choices=[Choice(label="A", text="forest"),
                                               Choice(label="B", text="sea")])
    b = backend()
    b.embedder.vectors[QTEXT + " forest sea"] = b.embedder.vectors[QTEXT]
    model = ScriptedModel([CONCEPTS_FOX, {"A": -0.1, "B": -3.0}, "Foxes den in woods."])
    method = MetaKGRAG(model, b, "woods")
    method.reader = method.reader.model_copy(update={"explain": True})
    pred = method.answer(q)
    assert pred.answer == "A. forest\nFoxes den in woods."
    assert "The chosen answer is A. forest" in model.prompts[-1][-1].content
    assert [s.stage for s in pred.trace][-2:] == ["choose", "explain"]


# --- domains ---------------------------------------------------------------------------
def test_an_unbuilt_domain_is_a_clear_error_naming_the_build_command() -> None:
    with pytest.raises(KgragError, match="'medical' has no entities") as e:
        MetaKGRAG(ScriptedModel([]), backend({}), "medical").answer(QUESTION)
    assert "kgrag build --domain medical" in e.value.hint
    assert "kgrag graph import data/graphs/medical.jsonl.gz" in e.value.hint


def test_the_domain_is_checked_once_per_method_instance() -> None:
    b = backend()
    method = MetaKGRAG(ScriptedModel([CONCEPTS_FOX, "x", CONCEPTS_FOX, "y"]), b, "woods")
    first, second = method.answer(QUESTION), method.answer(QUESTION)
    assert b.checks == 1
    assert steps(first, "domain") and not steps(second, "domain")


def test_a_missing_or_conflicting_domain_is_a_clear_error() -> None:
    with pytest.raises(KgragError, match="none was given") as e:
        MetaKGRAG(ScriptedModel([]), backend()).answer(QUESTION)
    assert "--domain" in e.value.hint
    with pytest.raises(KgragError, match="is for domain 'legal'"):
        MetaKGRAG(ScriptedModel([]), backend(), "woods").answer(
            QUESTION.model_copy(update={"domain": "legal"}))
    # a domain on the question alone is enough
    pred = MetaKGRAG(ScriptedModel([CONCEPTS_FOX, "x"]), backend()).answer(
        QUESTION.model_copy(update={"domain": "woods"}))
    assert pred.error is None and only(pred, "domain")["domain"] == "woods"


# --- factories -------------------------------------------------------------------------
def test_factories_build_each_method_with_its_ablation_switches() -> None:
    settings = SimpleNamespace(metakg=MetaKGConfig(delta=0.3))
    platform = SimpleNamespace(chat_model=ScriptedModel([]), store=object(),
                               embedder=TableEmbedder(), settings=settings)
    expected = {
        "metakgrag": Ablation(),
        "metakgrag-oa": Ablation(),
        "metakgrag-oa-trust": Ablation(),
        "metakgrag-no-cycle": Ablation(cycle=False),
        "metakgrag-no-completeness": Ablation(completeness_check=False),
        "metakgrag-no-relevance": Ablation(relevance_check=False),
        "metakgrag-no-restart": Ablation(strategic_restart=False),
        "kg-vanilla": Ablation(),
        "tog": Ablation(),
        "kg-no-evidence": Ablation(),
    }
    assert set(FACTORIES) - {"kg-paths", "kg-fused"} == set(expected)  # ours: no ablations
    assert FACTORIES["kg-paths"](platform, "woods").name == "kg-paths"  # type: ignore[arg-type]
    for name, ablation in expected.items():
        method = FACTORIES[name](platform, "woods")  # type: ignore[arg-type]
        assert method.name == name and method.domain == "woods"
        assert method.config.ablation == ablation, name
        assert method.config.delta == 0.3  # the rest of the settings is kept


def test_an_ablation_variant_overrides_an_ablation_from_the_settings() -> None:
    cfg = MetaKGConfig(ablation=Ablation(cycle=False))
    assert MetaKGRAG(ScriptedModel([]), backend(), "w", cfg).config.ablation.cycle is False
    variant = MetaKGRAGNoRestart(ScriptedModel([]), backend(), "w", cfg)
    assert variant.config.ablation == Ablation(strategic_restart=False)


# --- kg-vanilla ------------------------------------------------------------------------
def test_kg_vanilla_gives_each_start_its_facts_closest_to_the_question() -> None:
    model = ScriptedModel([CONCEPTS_FOX, "In a den."])
    pred = KGVanilla(model, backend(), "woods").answer(QUESTION)
    # fox's facts by sim(other end, Q): animal .5, den .4 (3 allowed, 2 exist)
    assert pred.evidence == ["Evidence 1: Fox is_a animal", "Evidence 2: Fox lives_in den"]
    assert [f["score"] for f in only(pred, "facts")["facts"]] == pytest.approx([0.5, 0.4])
    assert pred.usage.llm_calls == 2 and pred.usage.retrievals == 1


# --- Think-on-Graph --------------------------------------------------------------------
# Beam [fox]. Depth 1 relations of fox, by best neighbour cosine to Q:
#   1. Fox --is_a--> ? (animal .5), 2. Fox --lives_in--> ? (den .4).
# Depth 2 from den (fox visited): 1. den --found_in--> ? (Forest .55).
def test_tog_prunes_with_the_llm_and_stops_when_the_evidence_suffices() -> None:
    model = ScriptedModel([
        CONCEPTS_FOX,
        '{"relations": [2]}', '{"facts": [1]}', '{"sufficient": false}',  # depth 1
        '{"relations": [1]}', '{"facts": [1]}', '{"sufficient": true}',  # depth 2
        "In a den in the forest."])
    pred = ThinkOnGraph(model, backend(), "woods").answer(QUESTION)
    assert pred.error is None and model.remaining == 0  # no call beyond the script
    first_relations = model.prompts[1][-1].content
    assert "1. Fox --is_a--> ?\n2. Fox --lives_in--> ?" in first_relations
    assert "(none yet)" in first_relations
    assert "1. Fox lives_in den" in model.prompts[2][-1].content
    assert "Evidence 1: Fox lives_in den" in model.prompts[3][-1].content
    assert [d["sufficient"] for d in steps(pred, "tog-reason")] == [False, True]
    assert "sufficient at depth 2" in only(pred, "tog")["stop"]
    assert pred.evidence == ["Evidence 1: Fox lives_in den", "Evidence 2: den found_in Forest"]
    assert pred.usage.retrievals == 2


def test_tog_skips_the_sufficiency_call_at_the_last_depth() -> None:
    class OneDeep(ThinkOnGraph):
        depth = 1

    model = ScriptedModel([CONCEPTS_FOX, '{"relations": [1]}', '{"facts": [1]}', "A pet?"])
    pred = OneDeep(model, backend(), "woods").answer(QUESTION)
    assert pred.error is None and model.remaining == 0
    assert steps(pred, "tog-reason") == []
    assert pred.evidence == ["Evidence 1: Fox is_a animal"]


def test_tog_falls_back_to_cosine_ranking_after_two_bad_picks() -> None:
    class OneDeep(ThinkOnGraph):
        depth = 1

    model = ScriptedModel([CONCEPTS_FOX, "relation two", '{"relations": [7]}',
                           '{"facts": []}', "No idea."])
    pred = OneDeep(model, backend(), "woods").answer(QUESTION)
    rel = only(pred, "tog-relations")
    assert rel["fallback"] and rel["errors"][1] == "relations: [7] not among the options 1..2"
    # the fallback keeps the best `width` (3) relations by cosine: both
    assert rel["kept"] == ["Fox --is_a--> ?", "Fox --lives_in--> ?"]
    # the LLM then keeps no fact: exploration ends with no evidence
    assert "kept no candidate fact" in only(pred, "tog")["stop"]
    assert pred.setting == "kg-none"


# --- Neo4j Browser command -------------------------------------------------------------
def test_browser_params_are_a_json_literal_whatever_the_names() -> None:
    hostile = ['}) DETACH DELETE n //', 'O\'Brien "the" `tick`', "line\nbreak", "🧠 \\"]
    triples = [Triple(hostile[0], hostile[1], hostile[2]), Triple(hostile[2], "r", hostile[3])]
    b = browser_query("d'); DROP", triples)
    assert b.params.startswith(":params {domain: ")
    domain_json, _, triples_json = b.params.removeprefix(":params {domain: ").partition(
        ", triples: ")
    assert json.loads(domain_json) == "d'); DROP"
    assert json.loads(triples_json.removesuffix("}")) == [[t.head, t.relation, t.tail]
                                                           for t in triples]
    assert "\n" not in b.params  # one line, newlines escaped
    assert "$triples" in b.query and "$domain" in b.query and "//" not in b.query


def test_reasoning_without_its_answer_line_gets_the_forced_completion() -> None:
    """As the text methods do (DRAGIN's fallback): reasoning that stops before "So the
    answer is" is completed by a 20-token call; a one-line reply is the answer itself."""
    model = ScriptedModel([CONCEPTS_FOX, "Foxes dig dens.\nDens are in", "  a den.\n"])
    pred = KGVanilla(model, backend(), "woods").answer(QUESTION)
    assert pred.answer == "Foxes dig dens.\nDens are in\nSo the answer is: a den"
    forced = only(pred, "answer")
    assert forced["forced"] is True and pred.usage.llm_calls == 3
    user = model.prompts[-1][-1].content
    assert "Evidence 1: Fox is_a animal" in user and "Dens are in" in user
    assert user.rstrip().endswith("So the answer is:")
    done = ScriptedModel([CONCEPTS_FOX, "I think so.\nSo the answer is: den"])
    assert KGVanilla(done, backend(), "woods").answer(QUESTION).usage.llm_calls == 2


def test_a_short_answer_that_runs_on_into_a_description_is_asked_for_again() -> None:
    """Ours: an EM/F1 answer line of more than eight words is completed again by the
    forced call; a short one stays, with no extra call."""
    long_line = "The answer is: a den, a hole that foxes dig under trees to raise their cubs"
    model = ScriptedModel([CONCEPTS_FOX, long_line, " a den\n"])
    pred = KGVanilla(model, backend(), "woods").answer(QUESTION)
    assert reply_answer(pred.answer) == "a den" and pred.usage.llm_calls == 3
    assert only(pred, "answer")["forced"] is True
    short = ScriptedModel([CONCEPTS_FOX, "The answer is: a den under a tree"])
    assert KGVanilla(short, backend(), "woods").answer(QUESTION).usage.llm_calls == 2
