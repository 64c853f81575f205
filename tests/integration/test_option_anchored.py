"""Option-anchored retrieval (`metakgrag-oa`) against the real Neo4j with real MiniLM
vectors: paths from the question's entity to each option's entities, one Cypher round
trip per hop (counted), evidence grouped by option, and the evidence gate."""

from __future__ import annotations

import math

import pytest

from kg_builder.graph_io import GraphWriter, WriteReport
from kgrag.types import Choice, Question
from metakg.anchored import search_anchored
from metakg.methods import MetaKGRAGOptionAnchored
from metakg.neo4j_source import CypherBackend
from tests.doubles.scripted import ScriptedModel

pytestmark = pytest.mark.integration

NAMES = ["Milk", "Dairy", "Cold", "Heat", "Refrigerator", "Oven", "Garage", "Car", "Kitchen"]
FACTS = [
    ("Milk", "is_a", "Dairy"),
    ("Dairy", "stored_in", "Refrigerator"),
    ("Milk", "needs", "Cold"),
    ("Refrigerator", "produces", "Cold"),
    ("Milk", "spoils_with", "Heat"),
    ("Oven", "produces", "Heat"),
    ("Garage", "stores", "Car"),
]
QUESTION = Question(
    id="milk", text="Where should milk be kept so that it stays fresh?", dataset="toy",
    kind="multiple_choice", answers=["B"],
    choices=[Choice(label="A", text="oven"), Choice(label="B", text="refrigerator"),
             Choice(label="C", text="garage")])


def key(name: str) -> str:
    return name.lower()


@pytest.fixture()
def toy(platform, test_domain) -> str:  # type: ignore[no-untyped-def]
    chunk = f"{test_domain}:c1"
    GraphWriter(platform.store, platform.embedder, test_domain).write(
        [{"id": chunk, "doc": f"{test_domain}:d1", "text": "toy", "source": "test",
          "title": "toy", "line": 1}],
        [{"key": key(n), "name": n, "aliases": []} for n in NAMES],
        [{"h": key(h), "r": r, "t": key(t), "k": "conceptual", "chunks": [chunk], "conf": 1.0}
         for h, r, t in FACTS],
        WriteReport(test_domain))
    return test_domain


def test_option_paths_cost_one_round_trip_per_hop(platform, toy) -> None:  # type: ignore[no-untyped-def]
    g = CypherBackend(platform.store, platform.embedder).open(toy, QUESTION.text, ["milk"])
    before = platform.store.stats.queries
    s = search_anchored(g, ["milk"], {"A": ["oven"], "B": ["refrigerator"], "C": ["garage"]})
    assert platform.store.stats.queries - before == s.round_trips == 2
    assert [h.reached for h in s.hops] == [(), ("A", "B")]
    assert {p.entities for p in s.paths["B"]} == {("milk", "dairy", "refrigerator"),
                                                   ("milk", "cold", "refrigerator")}
    assert s.paths["A"][0].entities == ("milk", "heat", "oven") and s.paths["C"] == ()
    assert s.supported == {"A", "B"}
    # stored orientation is kept: Refrigerator produces Cold
    assert any(t.head == "refrigerator" and t.relation == "produces" for p in s.paths["B"]
               for t in p.triples)
    # bounded: one hop finds nothing and costs one round trip
    before = platform.store.stats.queries
    one = search_anchored(g, ["milk"], {"B": ["refrigerator"]}, max_hops=1)
    assert platform.store.stats.queries - before == 1 and one.supported == frozenset()


def test_the_method_groups_evidence_by_option_and_the_gate_trusts_a_supported_switch(
        platform, toy) -> None:  # type: ignore[no-untyped-def]
    # closed-book picks C, which no path reaches; the evidence moves it to B, which a path
    # reaches (a switch from A, also reached, would be `not-discriminative`)
    closed = {"A": math.log(0.2), "B": math.log(0.3), "C": math.log(0.5)}
    with_evidence = {"A": math.log(0.1), "B": math.log(0.8), "C": math.log(0.1)}
    model = ScriptedModel(['{"concepts": ["milk"]}', closed, with_evidence])
    method = MetaKGRAGOptionAnchored(model, CypherBackend(platform.store, platform.embedder),
                                     toy)
    pred = method.answer(QUESTION)
    assert pred.error is None and model.remaining == 0
    steps = {s.stage: s.data for s in pred.trace}
    assert steps["anchored"]["supported"] == ["A", "B"]
    assert len(steps["anchored"]["hops"]) == 2
    evidence_prompt = model.prompts[-1][-1].content
    assert "Option B (refrigerator):\n  Milk is_a Dairy; Dairy stored_in Refrigerator" in (
        evidence_prompt)
    assert "Option C (garage): no path from the question's entities." in evidence_prompt
    assert evidence_prompt.endswith("A. oven\nB. refrigerator\nC. garage\nAnswer:")
    assert steps["gate"]["rule"] == "supported-switch" and steps["gate"]["use_evidence"]
    assert pred.answer == "B. refrigerator" and pred.setting == "kg"
    assert steps["choose"]["label"] == "B"


def test_source_passages_follow_the_option_groups(platform, test_domain) -> None:  # type: ignore[no-untyped-def]
    from metakg.config import MetaKGConfig

    text = "Dairy such as milk is stored in a refrigerator, which produces cold."
    chunk = f"{test_domain}:c1"
    GraphWriter(platform.store, platform.embedder, test_domain).write(
        [{"id": chunk, "doc": f"{test_domain}:d1", "text": text, "source": "test",
          "title": "Keeping milk", "line": 1}],
        [{"key": key(n), "name": n, "aliases": []} for n in NAMES],
        [{"h": key(h), "r": r, "t": key(t), "k": "conceptual", "chunks": [chunk], "conf": 1.0}
         for h, r, t in FACTS],
        WriteReport(test_domain))
    closed = {"A": math.log(0.2), "B": math.log(0.3), "C": math.log(0.5)}
    with_evidence = {"A": math.log(0.1), "B": math.log(0.8), "C": math.log(0.1)}
    model = ScriptedModel(['{"concepts": ["milk"]}', closed, with_evidence])
    config = MetaKGConfig(source_sentences="on", source_unit="passage")
    method = MetaKGRAGOptionAnchored(model, CypherBackend(platform.store, platform.embedder),
                                     test_domain, config)
    pred = method.answer(QUESTION)
    assert pred.error is None
    prompt = model.prompts[-1][-1].content
    groups = prompt.index("Option B (refrigerator):")
    passage = prompt.index("Source passage 1 (backs evidence ")
    assert groups < passage and f"— Keeping milk: {text}" in prompt
    assert "Source of " not in prompt  # the sentence unit's lines are not shown


def test_no_path_to_any_option_answers_closed_book_without_an_evidence_pass(
        platform, toy) -> None:  # type: ignore[no-untyped-def]
    q = QUESTION.model_copy(update={"choices": [Choice(label="A", text="garage"),
                                                Choice(label="B", text="car")]})
    model = ScriptedModel(['{"concepts": ["milk"]}', {"A": -0.4, "B": -1.2}])
    pred = MetaKGRAGOptionAnchored(model, CypherBackend(platform.store, platform.embedder),
                                   toy).answer(q)
    steps = {s.stage: s.data for s in pred.trace}
    assert steps["gate"]["rule"] == "no-evidence" and not steps["gate"]["use_evidence"]
    assert pred.answer == "A. garage" and pred.setting == "kg-none" and model.remaining == 0


def test_a_calibration_question_s_own_record_is_left_out_of_the_paths(
        platform, test_domain) -> None:  # type: ignore[no-untyped-def]
    own, other = f"{test_domain}:own", f"{test_domain}:other"
    from_own = {("Dairy", "stored_in", "Refrigerator"), ("Refrigerator", "produces", "Cold")}
    GraphWriter(platform.store, platform.embedder, test_domain).write(
        [{"id": f"{d}:0", "doc": d, "text": "toy", "source": "test", "title": "toy",
          "line": 1} for d in (own, other)],
        [{"key": key(n), "name": n, "aliases": []} for n in NAMES],
        [{"h": key(h), "r": r, "t": key(t), "k": "conceptual", "conf": 1.0,
          "chunks": [f"{own if (h, r, t) in from_own else other}:0"]} for h, r, t in FACTS],
        WriteReport(test_domain))
    targets = {"A": ["oven"], "B": ["refrigerator"], "C": ["garage"]}
    backend = CypherBackend(platform.store, platform.embedder)
    every = search_anchored(backend.open(test_domain, QUESTION.text, ["milk"]), ["milk"],
                            targets)
    assert every.supported == {"A", "B"}
    left_out = search_anchored(backend.open(test_domain, QUESTION.text, ["milk"],
                                            exclude_documents=[own]), ["milk"], targets)
    assert left_out.supported == {"A"}  # both paths to the refrigerator came from `own`
    assert not any(t.relation in {"stored_in", "produces"} and t.head == "refrigerator"
                   for p in left_out.paths["A"] for t in p.triples)


@pytest.mark.parametrize(("policy", "answer", "rule"), [
    ("closed-book", "C. garage", "trust-closed-book"),
    ("evidence", "B. refrigerator", "trust-evidence"),
    ("gate", "B. refrigerator", "supported-switch"),
])
def test_the_calibrated_trust_decides_before_the_rules(
        platform, toy, tmp_path, policy, answer, rule) -> None:  # type: ignore[no-untyped-def]
    from metakg.methods import MetaKGRAGOptionAnchoredTrust
    from metakg.trust import POLICIES, EvidenceTrust, trust_path

    closed = {"A": math.log(0.2), "B": math.log(0.3), "C": math.log(0.5)}
    with_evidence = {"A": math.log(0.1), "B": math.log(0.8), "C": math.log(0.1)}
    # closed-book is decided before anything is retrieved: one pass, no concepts call
    model = ScriptedModel([closed] if policy == "closed-book" else
                          ['{"concepts": ["milk"]}', closed, with_evidence])
    method = MetaKGRAGOptionAnchoredTrust(
        model, CypherBackend(platform.store, platform.embedder), toy)
    method.reader = method.reader.model_copy(update={"prior_dir": tmp_path})
    # the hint names the reader's own bias correction (a trust is calibrated per correction)
    with pytest.raises(Exception, match=f"kgrag reader trust --dataset toy --domain {toy} "
                       f"--bias {method.reader.bias}"):
        method.trust(QUESTION, toy)
    correct = {p: (5 if p == policy else 3) for p in POLICIES}
    EvidenceTrust(model.name, "toy", toy, "test", 10, correct).save(
        trust_path(tmp_path, model.name, "toy", toy))
    before = platform.store.stats.queries
    pred = method.answer(QUESTION)
    steps = {s.stage: s.data for s in pred.trace}
    assert pred.error is None and pred.answer == answer
    assert steps["gate"]["rule"] == rule and steps["gate"]["trust"] == policy
    assert model.remaining == 0
    if policy == "closed-book":
        assert platform.store.stats.queries == before and pred.setting == "kg-none"
