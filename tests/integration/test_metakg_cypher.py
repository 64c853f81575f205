"""MetaKGRAG's Cypher source against the real Neo4j, with real all-MiniLM-L6-v2 vectors.

The toy graph is the drug-interaction case of the paper's Table 10, plus distractors, a
cycle (Donepezil → ChEI → Alzheimer's ← Donepezil) and an isolated entity. COSINES lists
what the embedder gives for the names used below (to the question Q and to the two
concepts); every expectation is derived by hand from that table, and
`test_the_cosine_table_holds` fails first if the embedder ever disagrees with it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import numpy as np
import pytest

from kg_builder.graph_io import GraphWriter, WriteReport
from kgrag.method import Trace
from kgrag.types import Question
from metakg.backend import QUESTION, concept_name
from metakg.config import MetaKGConfig
from metakg.cycle import match_entities, refine
from metakg.graph import Triple, greedy_path_search
from metakg.methods import KGVanilla, MetaKGRAG
from metakg.neo4j_source import CypherBackend, browser_query
from metakg.tog import ThinkOnGraph
from tests.doubles.memory import MemoryBackend
from tests.doubles.scripted import ScriptedModel

Q = "Can donepezil be taken together with NSAIDs such as ibuprofen?"
CONCEPTS = ["donepezil", "NSAIDs"]
DON, NSA = (concept_name(c) for c in CONCEPTS)
# name: (sim to Q, sim to "donepezil", sim to "NSAIDs"), all-MiniLM-L6-v2
COSINES = {
    "Donepezil": (0.481, 1.000, 0.212),
    "Cholinesterase Inhibitor": (0.305, 0.209, 0.297),
    "Alzheimer's Disease": (0.007, 0.041, 0.172),
    "Galantamine": (0.186, 0.250, 0.329),
    "Ketoconazole": (0.307, 0.192, 0.290),
    "Naproxen": (0.213, 0.354, 0.354),
    "NSAIDs": (0.557, 0.212, 1.000),
    "Ibuprofen": (0.528, 0.128, 0.581),
    "Aspirin": (0.325, 0.230, 0.505),
    "Pain Relief": (0.267, 0.173, 0.395),
    "Inflammation": (0.206, 0.036, 0.456),
    "Gastric Acid Secretion": (0.083, 0.005, 0.243),
    "Gastrointestinal Bleeding": (0.084, 0.049, 0.112),
}
NAMES = [*COSINES, "Memory Loss", "Dementia", "Memantine", "Urinary pH", "Hippocampus",
         "Amyloid Plaques", "Vitamin E"]
FACTS = [
    ("Donepezil", "is_a", "Cholinesterase Inhibitor"),
    ("Donepezil", "treats", "Alzheimer's Disease"),
    ("Cholinesterase Inhibitor", "treats", "Alzheimer's Disease"),
    ("Alzheimer's Disease", "causes", "Memory Loss"),
    ("Alzheimer's Disease", "is_a", "Dementia"),
    ("Cholinesterase Inhibitor", "increases", "Gastric Acid Secretion"),
    ("Gastric Acid Secretion", "heightens_risk_with", "NSAIDs"),
    ("NSAIDs", "can_cause", "Gastrointestinal Bleeding"),
    ("Galantamine", "is_a", "Cholinesterase Inhibitor"),
    ("Ketoconazole", "inhibits_metabolism_of", "Galantamine"),
    ("Galantamine", "interacts_with", "Naproxen"),
    ("Naproxen", "is_a", "NSAIDs"),
    ("Ibuprofen", "is_a", "NSAIDs"),
    ("Aspirin", "is_a", "NSAIDs"),
    ("Memantine", "treats", "Alzheimer's Disease"),
    ("Urinary pH", "affects_clearance_of", "Memantine"),
    ("Amyloid Plaques", "accumulate_in", "Hippocampus"),
    ("Alzheimer's Disease", "damages", "Hippocampus"),
    ("Ibuprofen", "provides", "Pain Relief"),
    ("NSAIDs", "reduce", "Inflammation"),
]  # Vitamin E has no fact


def key(name: str) -> str:
    return name.lower()


def write(platform, domain: str, names, facts) -> None:  # type: ignore[no-untyped-def]
    chunk = f"{domain}:c1"
    GraphWriter(platform.store, platform.embedder, domain).write(
        [{"id": chunk, "doc": f"{domain}:d1", "text": "toy", "source": "test", "title": "toy",
          "line": 1}],
        [{"key": key(n), "name": n, "aliases": []} for n in names],
        [{"h": key(h), "r": r, "t": key(t), "k": "conceptual", "chunks": [chunk], "conf": 1.0}
         for h, r, t in facts],
        WriteReport(domain))


@pytest.fixture()
def toy(platform, test_domain) -> str:  # type: ignore[no-untyped-def]
    write(platform, test_domain, NAMES, FACTS)
    return test_domain


@pytest.fixture()
def backend(platform) -> CypherBackend:  # type: ignore[no-untyped-def]
    return CypherBackend(platform.store, platform.embedder)


def queries(platform) -> int:  # type: ignore[no-untyped-def]
    return platform.store.stats.queries


def test_the_cosine_table_holds(platform) -> None:  # type: ignore[no-untyped-def]
    names = list(COSINES)
    v = platform.embedder.embed([Q, *CONCEPTS, *names])
    for i, name in enumerate(names):
        got = tuple(float(v[3 + i] @ v[j]) for j in range(3))
        assert got == pytest.approx(COSINES[name], abs=2e-3), name


# --- one hop ---------------------------------------------------------------------------
def test_a_walk_costs_one_round_trip_per_hop(platform, toy, backend) -> None:  # type: ignore[no-untyped-def]
    g = backend.open(toy, Q, CONCEPTS)
    before = queries(platform)
    path = greedy_path_search(key("Donepezil"), g, MetaKGConfig(max_path_length=3))
    # Donepezil: ChEI .305 > Alzheimer's .007; ChEI: Galantamine .186 > GAS .083 > Alz .007;
    # Galantamine: Ketoconazole .307 > Naproxen .213
    assert path.entities == ("donepezil", "cholinesterase inhibitor", "galantamine",
                             "ketoconazole")
    assert queries(platform) - before == 3
    assert [h.weight for h in path.hops] == pytest.approx([0.305, 0.186, 0.307], abs=2e-3)
    # the neighbours' vectors came with the rows: the cycle can score them right away
    assert g.sim.sim("ketoconazole", QUESTION) == pytest.approx(0.307, abs=2e-3)
    assert g.name("ketoconazole") == "Ketoconazole"


def test_visited_keys_are_excluded_so_cycles_end(platform, toy, backend) -> None:  # type: ignore[no-untyped-def]
    g = backend.open(toy, Q, CONCEPTS)
    found = g.candidates(key("Alzheimer's Disease"), frozenset({"alzheimer's disease",
                                                                 "donepezil"}), {})
    assert {c.target for c in found} == {"cholinesterase inhibitor", "memory loss", "dementia",
                                         "memantine", "hippocampus"}
    # both directions, each triple in its stored orientation
    assert Triple("cholinesterase inhibitor", "treats", "alzheimer's disease") in {
        c.triple for c in found}
    # A long walk through the triangle Donepezil → ChEI → Alzheimer's ← Donepezil: from
    # Ketoconazole every neighbour is visited, so the walk ends after 3 hops, not 10.
    before = queries(platform)
    path = greedy_path_search("donepezil", g, MetaKGConfig(max_path_length=10))
    assert path.entities == ("donepezil", "cholinesterase inhibitor", "galantamine",
                             "ketoconazole")
    assert queries(platform) - before == 4  # the 4th hop query found nothing new


def test_the_adjustment_map_changes_the_chosen_neighbour(platform, toy) -> None:  # type: ignore[no-untyped-def]
    # limit=1: the server must rank by the adjusted weight for the right row to come back
    g = CypherBackend(platform.store, platform.embedder, limit=1).open(toy, Q, CONCEPTS)
    visited = frozenset({"galantamine", "cholinesterase inhibitor"})
    # Galantamine's unvisited neighbours: Ketoconazole .307, Naproxen .213
    assert [c.target for c in g.candidates("galantamine", visited, {})] == ["ketoconazole"]
    boosted = g.candidates("galantamine", visited, {"naproxen": 0.2})  # .413 > .307
    assert [c.target for c in boosted] == ["naproxen"]
    assert boosted[0].weight == pytest.approx(0.213, abs=2e-3)  # w_original is unchanged
    penalised = g.candidates("galantamine", visited, {"ketoconazole": -0.2})  # .107 < .213
    assert [c.target for c in penalised] == ["naproxen"]


def test_a_start_with_no_neighbours_gives_an_empty_path(platform, toy, backend) -> None:  # type: ignore[no-untyped-def]
    g = backend.open(toy, Q, ["vitamin E"])
    g.prefetch([concept_name("vitamin E")], 1)
    assert match_entities([concept_name("vitamin E")], g, MetaKGConfig()) == ("vitamin e",)
    before = queries(platform)
    ref = refine("vitamin e", QUESTION, [concept_name("vitamin E")], g, g, g.sim,
                 MetaKGConfig())
    assert (ref.stop, ref.final.hops, queries(platform) - before) == ("empty", (), 1)


# --- the cycle over Cypher -------------------------------------------------------------
# Start Donepezil. Initial path Donepezil → ChEI → Galantamine → Ketoconazole (see above).
# Cycle 1: coverage NSAIDs = max(.212, .297, .329, .290) = .329 < .6 → missing.
#   GlobalSupport (α .5, τ_c .3): Donepezil .5·.5 + .5·.481 = .49; ChEI 0 + .153 and
#   Ketoconazole 0 + .154 are misleading (< .3); Galantamine .5·.5 + .093 = .343.
#   Completeness pivot: max sim(e, NSAIDs) on the path → Galantamine (.329 > ChEI .297).
#   +δ: entities with sim > .3 to NSAIDs, off the path: NSAIDs, Ibuprofen, Aspirin,
#   Inflammation, Pain Relief, Naproxen; −δ: ChEI, Ketoconazole.
#   Re-search from Galantamine: Naproxen .213+.2 = .413 > Ketoconazole .307−.2 → Naproxen;
#   then NSAIDs .557+.2; then Ibuprofen .528+.2 (> Aspirin .525, Inflammation .406).
#   Jaccard {Don, ChEI, Gal} / 7 entities = .43 ≤ .8 → accepted.
# Cycle 2: no concept missing; ChEI still misleading → relevance pivot = the highest
#   GlobalSupport: Naproxen (scope 2/2: .5 + .5·.213 = .607). Re-search from Naproxen:
#   NSAIDs, Ibuprofen, Pain Relief (.267+.2): Jaccard 6/7 = .857 > .8 → converged, the
#   cycle-1 path is final.
BOOSTED = {"nsaids", "ibuprofen", "aspirin", "inflammation", "pain relief", "naproxen"}


def test_refine_over_cypher_restarts_at_the_expected_pivot(platform, toy, backend) -> None:  # type: ignore[no-untyped-def]
    cfg = MetaKGConfig()
    g = backend.open(toy, Q, CONCEPTS)
    g.prefetch([DON, NSA], cfg.boost_top_k)
    assert match_entities([DON, NSA], g, cfg) in (("donepezil", "nsaids"),
                                                  ("nsaids", "donepezil"))  # both 1.0
    ref = refine("donepezil", QUESTION, [DON, NSA], g, g, g.sim, cfg)
    assert ref.initial.entities == ("donepezil", "cholinesterase inhibitor", "galantamine",
                                    "ketoconazole")
    first, second = ref.cycles
    assert first.diagnosis.missing == (NSA,)
    assert set(first.diagnosis.misleading) == {"cholinesterase inhibitor", "ketoconazole"}
    assert first.restart is not None and first.new_path is not None
    assert (first.restart.issue, first.restart.pivot) == ("completeness", "galantamine")
    assert first.restart.score == pytest.approx(0.329, abs=2e-3)
    assert dict(first.restart.adjustments) == {
        **{e: 0.2 for e in BOOSTED}, "cholinesterase inhibitor": -0.2, "ketoconazole": -0.2}
    new_hops = first.new_path.hops[2:]  # after the kept prefix Donepezil → ChEI → Galantamine
    assert [h.target for h in new_hops] == ["naproxen", "nsaids", "ibuprofen"]
    assert [h.weight for h in new_hops] == pytest.approx([0.213, 0.557, 0.528], abs=2e-3)
    assert [h.adjusted - h.weight for h in new_hops] == pytest.approx([0.2, 0.2, 0.2])
    assert first.similarity == pytest.approx(3 / 7) and first.accepted
    assert second.restart is not None
    assert (second.restart.issue, second.restart.pivot) == ("relevance", "naproxen")
    assert second.similarity == pytest.approx(6 / 7) and not second.accepted
    assert ref.stop == "converged" and ref.final == first.new_path


def test_cypher_and_in_memory_sources_agree(platform, toy, backend) -> None:  # type: ignore[no-untyped-def]
    """The contract: same triples and vectors, same walks, facts, relations, expansions."""
    cfg = MetaKGConfig()
    cy = backend.open(toy, Q, CONCEPTS)
    mem = MemoryBackend({key(n): n for n in NAMES},
                        [Triple(key(h), r, key(t)) for h, r, t in FACTS], platform.embedder,
                        cfg).open(toy, Q, CONCEPTS)
    for start in ("donepezil", "nsaids", "vitamin e"):
        a = refine(start, QUESTION, [DON, NSA], cy, cy, cy.sim, cfg)
        b = refine(start, QUESTION, [DON, NSA], mem, mem, mem.sim, cfg)
        assert (a.final.entities, a.stop, len(a.cycles)) == (
            b.final.entities, b.stop, len(b.cycles)), start
    starts = ["donepezil", "nsaids", "alzheimer's disease"]
    facts = (cy.facts(starts, 3), mem.facts(starts, 3))
    assert [(f.source, f.triple, f.target) for f in facts[0]] == [
        (f.source, f.triple, f.target) for f in facts[1]]
    assert [f.score for f in facts[0]] == pytest.approx([f.score for f in facts[1]], abs=1e-5)
    visited = frozenset({"galantamine"})
    rels = (cy.relations(starts, visited, 4), mem.relations(starts, visited, 4))
    assert [(o.entity, o.predicate, o.direction, o.neighbours) for o in rels[0]] == [
        (o.entity, o.predicate, o.direction, o.neighbours) for o in rels[1]]
    picks = rels[0][:5]
    grown = (cy.expand(picks, visited, 2), mem.expand(picks, visited, 2))
    assert [(f.source, f.triple) for f in grown[0]] == [(f.source, f.triple) for f in grown[1]]


class AxisEmbedder:
    """Vectors on the first axes of the 384-d space: "alpha" is e0, "beta" has cosine .8 to
    it and "gamma" .6. Real MiniLM vectors of other domains have cosines of ~±0.25 at most
    to such axes, so whatever else the shared index holds, these rank first."""

    name, dimensions = "axes", 384
    AXES = {"alpha": {0: 1.0}, "beta": {0: 0.8, 1: 0.6}, "gamma": {0: 0.6, 2: 0.8},
            "delta": {3: 1.0}, "which one?": {3: 1.0}}

    def embed(self, texts):  # type: ignore[no-untyped-def]
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for row, text in enumerate(texts):
            for axis, value in self.AXES[text].items():
                out[row, axis] = value
        return out


def split(hits):  # type: ignore[no-untyped-def]
    return [k for k, _ in hits], [s for _, s in hits]


def test_nearest_entities_in_a_shared_vector_index(platform, test_domain) -> None:  # type: ignore[no-untyped-def]
    store, emb = platform.store, AxisEmbedder()
    names = ["alpha", "beta", "gamma", "delta"]
    other = f"{test_domain}-other"
    GraphWriter(store, emb, test_domain).write(
        [], [{"key": n, "name": n} for n in names],
        [{"h": "alpha", "r": "r", "t": "beta", "k": "conceptual", "chunks": [], "conf": 1.0}],
        WriteReport(test_domain))
    try:
        # another domain with the same names: every score ties with ours
        GraphWriter(store, emb, other).write([], [{"key": n, "name": n} for n in names], [],
                                             WriteReport(other))
        # a small domain is scanned exactly, in one round trip for all concepts
        g = CypherBackend(store, emb).open(test_domain, "which one?", ["alpha", "gamma"])
        exact = store.stats.by_name.get("metakg/nearest_entities_exact", 0)
        assert split(g.nearest(concept_name("alpha"), 3)) == (
            ["alpha", "beta", "gamma"], pytest.approx([1.0, 0.8, 0.6], abs=1e-6))
        assert store.stats.by_name["metakg/nearest_entities_exact"] == exact + 1
        assert g.nearest(concept_name("gamma"), 1)[0][0] == "gamma"  # fetched with alpha
        assert store.stats.by_name["metakg/nearest_entities_exact"] == exact + 1
        # through the index, asked for exactly k = 3 nodes: the other domain's copies take
        # at least one of the three places, so it is asked again with a 10x wider fetch
        b = CypherBackend(store, emb, overfetch=1, min_fetch=0, exact_limit=0)
        g = b.open(test_domain, "which one?", ["alpha"])
        before = queries(platform)
        hits = g.nearest(concept_name("alpha"), 3)
        assert queries(platform) - before == 2
        assert split(hits) == (["alpha", "beta", "gamma"],
                               pytest.approx([1.0, 0.8, 0.6], abs=1e-6))
        assert g.nearest(concept_name("alpha"), 2) == hits[:2]
        assert queries(platform) - before == 2  # cached
    finally:
        store.run_autocommit("graph/delete_domain", {"domain": other})


# --- hostile names ---------------------------------------------------------------------
HOSTILE = ['O\'Brien "the" `tick`', "}) DETACH DELETE n //", "x'}) MATCH (m) DETACH DELETE m //",
           "line one\nline two", "emoji 🧠🔥 and ünïcödé", "$rows {domain: 'evil'}"]


def test_hostile_names_travel_as_parameters(platform, test_domain, backend) -> None:  # type: ignore[no-untyped-def]
    chain = [(HOSTILE[i], HOSTILE[(i + 3) % 6], HOSTILE[i + 1]) for i in range(5)]
    write(platform, test_domain, HOSTILE, chain)
    g = backend.open(test_domain, HOSTILE[1], [HOSTILE[2]])
    start = key(HOSTILE[0])
    path = greedy_path_search(start, g, MetaKGConfig(max_path_length=5))
    assert path.entities == tuple(key(n) for n in HOSTILE)  # a chain: one way through
    assert [h.triple.relation for h in path.hops] == [r for _, r, _ in chain]
    adjusted = g.candidates(key(HOSTILE[2]), frozenset(), {key(HOSTILE[1]): -5.0,
                                                          key(HOSTILE[3]): 5.0})
    assert adjusted[0].target == key(HOSTILE[3])
    assert g.nearest(concept_name(HOSTILE[2]), 1)[0][0] == key(HOSTILE[2])
    browser = browser_query(test_domain, path.triples)
    literal = browser.params.removeprefix(f":params {{domain: {json.dumps(test_domain)}, "
                                          "triples: ").removesuffix("}")
    triples = json.loads(literal)
    rows = platform.store.read("metakg/evidence_subgraph", {"domain": test_domain,
                                                            "triples": triples})
    assert len(rows) == 5
    stats = platform.store.read("kg/stats", {"domain": test_domain})[0]
    assert (stats["entities"], stats["relations"]) == (6, 5)  # nothing deleted or added


# --- the methods end to end ------------------------------------------------------------
QUESTION_TEXT = Question(id="t10", text=Q)


def test_metakgrag_answers_end_to_end_over_the_real_graph(platform, toy, backend) -> None:  # type: ignore[no-untyped-def]
    model = ScriptedModel(['{"concepts": ["donepezil", "NSAIDs"]}', "No: risk of GI bleeding."])
    pred = MetaKGRAG(model, backend, toy).answer(QUESTION_TEXT)
    assert pred.error is None and model.remaining == 0
    assert pred.setting == "kg" and pred.answer == "No: risk of GI bleeding."
    text = "\n".join(pred.evidence)  # the two starts tie at 1.0: their order may vary
    assert pred.evidence[0].startswith("Evidence 1: ")
    for fact in ("Donepezil is_a Cholinesterase Inhibitor", "Galantamine interacts_with Naproxen",
                 "Naproxen is_a NSAIDs", "Ibuprofen is_a NSAIDs"):
        assert fact in text
    assert "\n".join(pred.evidence) in model.prompts[-1][-1].content
    stages = [s.stage for s in pred.trace]
    assert stages == ["domain", "concepts", "match", "refine", "refine", "evidence", "generate"]
    for step in (s for s in pred.trace if s.stage == "refine"):  # "1 cycle", "2 cycles"
        n = len(step.data["cycles"])
        assert f": {n} cycle{'' if n == 1 else 's'}, stop {step.data['stop']}; " in step.summary
    evidence = next(s.data for s in pred.trace if s.stage == "evidence")
    assert evidence["browser_params"].startswith(":params {domain: ")
    rows = platform.store.read("metakg/evidence_subgraph", {"domain": toy,
                                                            "triples": evidence["triples"]})
    assert len(rows) == len(evidence["triples"])
    assert evidence["retrieval_ms"] > 0
    per_stage = sum(s.data.get("cypher_queries", 0) for s in pred.trace)
    assert per_stage == pred.usage.cypher_queries > 0
    json.dumps(pred.model_dump(mode="json"))


def test_gather_finds_what_answer_finds_without_the_model(platform, toy, backend) -> None:  # type: ignore[no-untyped-def]
    """`kgrag evidence` runs `gather` with concepts it extracted before: the same
    evidence as the answering method, no LLM call, its Cypher round trips counted."""
    answered = MetaKGRAG(ScriptedModel(['{"concepts": ["donepezil", "NSAIDs"]}', "No."]),
                         backend, toy).answer(QUESTION_TEXT)
    model, trace, q0 = ScriptedModel([]), Trace(), queries(platform)
    found = MetaKGRAG(model, backend, toy).gather(QUESTION_TEXT, trace, CONCEPTS)
    def facts(lines: list[str]) -> list[str]:  # the two starts tie: their order may vary
        return sorted(line.split(": ", 1)[1] for line in lines)

    assert model.prompts == [] and facts(found.lines) == facts(answered.evidence)
    assert [s.stage for s in trace.steps] == ["domain", "concepts", "match", "refine",
                                              "refine", "evidence"]
    assert sum(s.data.get("cypher_queries", 0) for s in trace.steps) == queries(platform) - q0
    assert found.retrieval_ms > 0 and len(found.starts) == 2


def test_kg_vanilla_and_tog_run_over_the_real_graph(platform, toy, backend) -> None:  # type: ignore[no-untyped-def]
    concepts = '{"concepts": ["donepezil"]}'
    vanilla = KGVanilla(ScriptedModel([concepts, "x"]), backend, toy).answer(QUESTION_TEXT)
    # Donepezil's facts by sim(other end, Q): ChEI .305, Alzheimer's .007
    assert vanilla.evidence == ["Evidence 1: Donepezil is_a Cholinesterase Inhibitor",
                                "Evidence 2: Donepezil treats Alzheimer's Disease"]
    # ToG: Donepezil's relations by best neighbour: 1. is_a (ChEI .305), 2. treats (Alz)
    model = ScriptedModel([concepts, '{"relations": [1]}', '{"facts": [1]}',
                           '{"sufficient": true}', "y"])
    tog = ThinkOnGraph(model, backend, toy).answer(QUESTION_TEXT)
    assert tog.error is None and model.remaining == 0
    assert "1. Donepezil --is_a--> ?\n2. Donepezil --treats--> ?" in model.prompts[1][-1].content
    assert tog.evidence == ["Evidence 1: Donepezil is_a Cholinesterase Inhibitor"]


def test_an_unbuilt_domain_names_the_build_command(platform, backend) -> None:  # type: ignore[no-untyped-def]
    from kgrag.errors import KgragError

    missing = f"test-missing-{uuid.uuid4().hex[:6]}"
    with pytest.raises(KgragError, match="has no entities") as e:
        MetaKGRAG(ScriptedModel([]), backend, missing).answer(QUESTION_TEXT)
    assert f"kgrag build --domain {missing}" in e.value.hint


@pytest.fixture(autouse=True)
def _quiet_driver_notifications() -> Iterator[None]:
    import logging

    logger = logging.getLogger("neo4j.notifications")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)


def test_source_sentences_and_passages_read_the_real_chunks(platform, test_domain) -> None:  # type: ignore[no-untyped-def]
    from metakg.provenance import source_passages, source_sentences

    note = ("In 1934 the director, Paul Okafor, discovered the comet. "
            "It returns every 71 years.")
    GraphWriter(platform.store, platform.embedder, test_domain).write(
        [{"id": f"{test_domain}:c1", "doc": f"{test_domain}:d1", "text": note,
          "source": "test", "title": "Comet Okafor", "line": 1},
         {"id": f"{test_domain}:c2", "doc": f"{test_domain}:d2", "text": "The hill is green.",
          "source": "test", "title": "Hill", "line": 2}],
        [{"key": n, "name": n} for n in ("paul okafor", "comet", "71 years", "hill")],
        [{"h": "paul okafor", "r": "discovered", "t": "comet", "k": "conceptual",
          "chunks": [f"{test_domain}:c1"], "conf": 1.0},
         {"h": "comet", "r": "returns every", "t": "71 years", "k": "conceptual",
          "chunks": [f"{test_domain}:c1"], "conf": 1.0},
         {"h": "hill", "r": "is", "t": "comet", "k": "conceptual",
          "chunks": [f"{test_domain}:c2"], "conf": 1.0}],
        WriteReport(test_domain))
    triples = [Triple("hill", "is", "comet"), Triple("paul okafor", "discovered", "comet"),
               Triple("comet", "returns every", "71 years")]
    before = platform.store.stats.by_name.get("metakg/evidence_sources", 0)
    backed = source_sentences(platform.store, test_domain, triples)
    assert [(s.fact, s.sentence[:7]) for s in backed] == [
        (1, "The hil"), (2, "In 1934"), (3, "It retu")]
    passages = source_passages(platform.store, test_domain, triples,
                               "Who discovered the comet that returns every 71 years?")
    assert [(p.title, p.facts) for p in passages] == [("Comet Okafor", [2, 3]), ("Hill", [1])]
    assert platform.store.stats.by_name["metakg/evidence_sources"] == before + 2
