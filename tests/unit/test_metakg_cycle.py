"""MetaKGRAG's pure core: Perceive / Evaluate / Adjust, greedy search, the refine loop.

Vectors are built so that every cosine the cycle reads is chosen by hand: the question
and each concept are basis vectors, and an entity is Σ cos·axis plus the remainder on a
private axis. So sim(entity, axis) is exactly the number written in the scenario, and
every expected value below can be re-derived from the comments.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path as FilePath

import numpy as np
import pytest
from pydantic import ValidationError

from kgrag.prompt import PromptTemplate
from metakg.config import Ablation, EdgeWeight, MetaKGConfig
from metakg.cycle import (
    CycleRecord,
    Diagnosis,
    Refinement,
    Restart,
    adjustments,
    completeness_deficiency,
    completeness_pivot,
    coverage,
    entity_scope,
    evaluate,
    global_support,
    match_entities,
    normalise_concepts,
    path_refinement_rate,
    plan_restart,
    refine,
    relevance_deficiency,
    relevance_pivot,
)
from metakg.graph import (
    Adjustments,
    Candidate,
    Hop,
    Path,
    Triple,
    greedy_path_search,
    integrate_evidence_paths,
    path_similarity,
)
from metakg.similarity import Similarity
from tests.doubles.memory import InMemoryGraph

PROMPTS = FilePath(__file__).resolve().parents[2] / "metakg" / "prompts"


def space(axes: Sequence[str], entities: Mapping[str, Mapping[str, float]]) -> Similarity:
    """Unit vectors with sim(entity, axis) = entities[entity][axis] exactly."""
    dim = len(axes) + len(entities)
    vectors: dict[str, np.ndarray] = {}
    for i, axis in enumerate(axes):
        vectors[axis] = np.eye(dim)[i]
    for j, (name, cosines) in enumerate(entities.items()):
        v = np.zeros(dim)
        for axis, c in cosines.items():
            v[axes.index(axis)] = c
        rest = 1.0 - float(np.dot(v, v))
        assert rest >= 0, f"cosines of {name} do not fit in a unit vector"
        v[len(axes) + j] = math.sqrt(rest)
        vectors[name] = v
    return Similarity(vectors)


def path_of(*entities: str) -> Path:
    hops = tuple(Hop(Triple(a, "r", b), b, 0.0, 0.0) for a, b in zip(entities, entities[1:],
                                                                       strict=False))
    return Path(entities[0], hops)


def restart_of(record: CycleRecord) -> Restart:
    assert record.restart is not None, f"cycle {record.iteration} made no restart"
    return record.restart


def new_path_of(record: CycleRecord) -> Path:
    assert record.new_path is not None, f"cycle {record.iteration} made no new path"
    return record.new_path


class DictIndex:
    """An EntityIndex that returns fixed neighbour lists."""

    def __init__(self, table: Mapping[str, list[tuple[str, float]]]) -> None:
        self.table = table

    def nearest(self, concept: str, k: int) -> list[tuple[str, float]]:
        return self.table.get(concept, [])[:k]


# --- The Table 10 case study as a graph ------------------------------------------------
# Question "Is donepezil suitable with NSAIDs?"; concepts C = (donepezil, nsaids).
DON, CHEI, ALZ, ML = "Donepezil", "Cholinesterase Inhibitor", "Alzheimer's Disease", "Memory Loss"
GAS, NSAIDS, GIB = "Gastric Acid Secretion", "NSAIDs", "GI Bleeding"
CONCEPTS = ("donepezil", "nsaids")
CASE_SIMS = {  # cosines to the question Q and to each concept
    DON: {"Q": 0.6, "donepezil": 0.75},
    CHEI: {"Q": 0.55, "donepezil": 0.5, "nsaids": 0.2},
    ALZ: {"Q": 0.5},
    ML: {"Q": 0.3},
    GAS: {"Q": 0.35, "nsaids": 0.35},
    NSAIDS: {"Q": 0.3, "nsaids": 0.9},
    GIB: {"Q": 0.25, "nsaids": 0.4},
}
CASE_TRIPLES = [
    Triple(DON, "is_a", CHEI), Triple(DON, "treats", ALZ), Triple(CHEI, "treats", ALZ),
    Triple(ALZ, "causes", ML), Triple(CHEI, "increases", GAS),
    Triple(GAS, "heightens_risk_with", NSAIDS), Triple(NSAIDS, "can_cause", GIB),
]


def case(cfg: MetaKGConfig) -> tuple[InMemoryGraph, Similarity]:
    sim = space(["Q", *CONCEPTS], CASE_SIMS)
    return InMemoryGraph(CASE_TRIPLES, sim, "Q", cfg), sim


def run_case(cfg: MetaKGConfig) -> tuple[Refinement, InMemoryGraph]:
    graph, sim = case(cfg)
    return refine(DON, "Q", CONCEPTS, graph, graph, sim, cfg), graph


# Initial greedy walk from Donepezil (weights = sim(target, Q), max_path_length 3):
#   Don: ChEI .55 > Alz .5 -> ChEI;  ChEI: Alz .5 > GAS .35 -> Alz;  Alz: ML .3 -> ML.
INITIAL = (DON, CHEI, ALZ, ML)


# --- Perceive / Evaluate ---------------------------------------------------------------
def test_coverage_is_the_best_match_on_the_path() -> None:
    _, sim = case(MetaKGConfig())
    cov = coverage(path_of(*INITIAL), CONCEPTS, sim)
    # donepezil: max(.75, .5, 0, 0) = .75;  nsaids: max(0, .2, 0, 0) = .2
    assert cov == pytest.approx({"donepezil": 0.75, "nsaids": 0.2})


def test_a_concept_is_missing_only_strictly_below_tau_coverage() -> None:
    assert completeness_deficiency({"a": 0.6, "b": 0.59, "c": 0.9}, 0.6) == ("b",)


def test_entity_scope_counts_concepts_strictly_above_tau_c() -> None:
    sim = space(["c1", "c2", "c3"], {"e": {"c1": 0.3, "c2": 0.31, "c3": 0.8}})
    # c1 = .3 is not > .3; c2 and c3 are: 2 / 3
    assert entity_scope("e", ["c1", "c2", "c3"], sim, 0.3) == pytest.approx(2 / 3)
    assert entity_scope("e", [], sim, 0.3) == 0.0


def test_global_support_weighs_scope_and_question_relevance() -> None:
    _, sim = case(MetaKGConfig())
    cfg = MetaKGConfig(alpha=0.5, tau_c=0.3)
    # ChEI: scope = |{donepezil .5}| / 2 = .5 (nsaids .2 ≤ .3); .5·.5 + .5·.55 = .525
    assert global_support(CHEI, "Q", CONCEPTS, sim, cfg) == pytest.approx(0.525)
    # alpha = .8: .8·.5 + .2·.55 = .51
    assert global_support(CHEI, "Q", CONCEPTS, sim, cfg.model_copy(update={"alpha": 0.8})
                          ) == pytest.approx(0.51)


def test_evaluate_finds_both_deficiencies_on_the_initial_path() -> None:
    _, sim = case(MetaKGConfig())
    d = evaluate(path_of(*INITIAL), "Q", CONCEPTS, sim, MetaKGConfig())
    assert d.missing == ("nsaids",)  # coverage .2 < .6
    # Don .5·.5+.5·.6 = .55; ChEI .525; Alz 0+.5·.5 = .25; ML 0+.5·.3 = .15
    assert dict(d.support) == pytest.approx({DON: 0.55, CHEI: 0.525, ALZ: 0.25, ML: 0.15})
    assert d.misleading == (ALZ, ML)  # below tau_support .3
    assert d.issues == ("completeness", "relevance")


def test_an_entity_is_misleading_only_strictly_below_tau_support() -> None:
    sim = space(["Q", "c"], {"edge": {"Q": 0.6}, "below": {"Q": 0.58}})
    # scope 0 for both: GS(edge) = .5·.6 = .3 (not < .3); GS(below) = .5·.58 = .29
    support, misleading = relevance_deficiency(path_of("edge", "below"), "Q", ["c"], sim,
                                               MetaKGConfig(tau_support=0.3))
    assert support["edge"] == pytest.approx(0.3) and misleading == ("below",)


def test_evaluate_respects_the_check_switches() -> None:
    _, sim = case(MetaKGConfig())
    path = path_of(*INITIAL)
    no_comp = evaluate(path, "Q", CONCEPTS, sim,
                       MetaKGConfig(ablation=Ablation(completeness_check=False)))
    no_rel = evaluate(path, "Q", CONCEPTS, sim,
                      MetaKGConfig(ablation=Ablation(relevance_check=False)))
    assert no_comp.missing == () and no_comp.misleading == (ALZ, ML)
    assert no_rel.missing == ("nsaids",) and no_rel.misleading == () and not no_rel.support
    assert no_comp.coverage["nsaids"] == pytest.approx(0.2)  # Perceive still runs


# --- Adjust ----------------------------------------------------------------------------
def test_adjustments_boost_external_relevant_and_penalise_misleading() -> None:
    index = DictIndex({"m": [("on_path", 0.9), ("far", 0.5), ("edge", 0.3), ("weak", 0.1)]})
    d = Diagnosis(coverage={}, missing=("m",), support={}, misleading=("bad",))
    path = path_of("s", "on_path", "bad")
    cfg = MetaKGConfig(delta=0.25, tau_c=0.3)
    # on_path is on the path (not external); edge .3 is not > .3; weak .1 neither.
    assert dict(adjustments(d, path, index, cfg)) == {"far": 0.25, "bad": -0.25}


def test_adjustments_carry_over_unless_switched_off() -> None:
    index = DictIndex({})
    d = Diagnosis(coverage={}, missing=(), support={}, misleading=("b",))
    previous = {"a": -0.2, "b": 0.2}
    path = path_of("s", "b")
    assert dict(adjustments(d, path, index, MetaKGConfig(), previous)) == {"a": -0.2, "b": -0.2}
    no_carry = MetaKGConfig(carry_adjustments=False)
    assert dict(adjustments(d, path, index, no_carry, previous)) == {"b": -0.2}


def test_completeness_pivot_maximises_similarity_to_missing_concepts() -> None:
    sim = space(["m1", "m2"], {"a": {"m1": 0.2}, "b": {"m1": 0.1, "m2": 0.5}, "c": {"m1": 0.4}})
    # f(a) = max(.2, 0) = .2; f(b) = max(.1, .5) = .5; f(c) = .4
    assert completeness_pivot(path_of("a", "b", "c"), ["m1", "m2"], sim) == ("b", 0.5)
    # only m1 missing: f = .2, .1, .4 -> c
    assert completeness_pivot(path_of("a", "b", "c"), ["m1"], sim) == ("c", 0.4)


def test_relevance_pivot_takes_the_highest_support_earliest_on_ties() -> None:
    path = path_of("a", "b", "c")
    assert relevance_pivot(path, {"a": 0.4, "b": 0.6, "c": 0.1}) == ("b", 0.6)
    assert relevance_pivot(path, {"a": 0.6, "b": 0.6, "c": 0.1}) == ("a", 0.6)


def test_plan_restart_needs_an_issue() -> None:
    d = Diagnosis(coverage={}, missing=(), support={}, misleading=())
    with pytest.raises(ValueError, match="issue"):
        plan_restart(path_of("a"), d, DictIndex({}), space([], {}), MetaKGConfig())


def test_path_similarity_is_jaccard_of_entity_sets() -> None:
    # {a,b,c} vs {a,b,d}: |{a,b}| / |{a,b,c,d}| = 2/4
    assert path_similarity(path_of("a", "b", "c"), path_of("a", "b", "d")) == 0.5
    assert path_similarity(path_of("a", "b"), path_of("a", "b")) == 1.0
    assert path_similarity(path_of("a"), path_of("z")) == 0.0


# --- Greedy search ---------------------------------------------------------------------
def chain_graph(sims: Mapping[str, float], triples: list[Triple], cfg: MetaKGConfig
                ) -> InMemoryGraph:
    sim = space(["Q"], {e: {"Q": s} for e, s in sims.items()})
    return InMemoryGraph(triples, sim, "Q", cfg)


def test_greedy_never_revisits_in_a_cyclic_graph() -> None:
    cfg = MetaKGConfig(max_path_length=5)
    g = chain_graph({"a": 0.1, "b": 0.5, "c": 0.4},
                    [Triple("a", "r", "b"), Triple("b", "r", "c"), Triple("c", "r", "a")], cfg)
    # a: b .5 > c .4 -> b;  b: c (a visited) -> c;  c: a and b visited -> stop
    path = greedy_path_search("a", g, cfg)
    assert path.entities == ("a", "b", "c")
    assert g.calls == 3  # one source call per hop, plus the one that found nothing


def test_greedy_ignores_visited_targets_a_source_returns() -> None:
    class Sloppy:
        def candidates(self, current: str, visited: frozenset[str], adjustments: Adjustments
                       ) -> list[Candidate]:
            return [Candidate(Triple(current, "r", "a"), "a", 9.0),
                    Candidate(Triple(current, "r", current + "x"), current + "x", 0.1)]

    path = greedy_path_search("a", Sloppy(), MetaKGConfig(max_path_length=3))
    assert path.entities == ("a", "ax", "axx", "axxx")


def test_greedy_uses_adjusted_weights_and_records_them() -> None:
    cfg = MetaKGConfig(max_path_length=1)
    g = chain_graph({"a": 0.0, "b": 0.5, "c": 0.4}, [Triple("a", "r", "b"),
                                                     Triple("a", "r", "c")], cfg)
    assert greedy_path_search("a", g, cfg).entities == ("a", "b")
    # c: .4 + .2 = .6 beats b: .5
    hop = greedy_path_search("a", g, cfg, {"c": 0.2}).hops[0]
    assert (hop.target, hop.weight, hop.adjusted) == ("c", pytest.approx(0.4),
                                                      pytest.approx(0.6))


def test_greedy_stops_at_max_length_floor_and_breaks_ties_by_name() -> None:
    triples = [Triple("a", "r", "b"), Triple("b", "r", "c"), Triple("c", "r", "d")]
    cfg = MetaKGConfig(max_path_length=2)
    g = chain_graph({"a": 0.1, "b": 0.5, "c": 0.4, "d": 0.9}, triples, cfg)
    assert greedy_path_search("a", g, cfg).entities == ("a", "b", "c")
    floor = cfg.model_copy(update={"min_edge_weight": 0.45, "max_path_length": 5})
    assert greedy_path_search("a", g, floor).entities == ("a", "b")  # c .4 < .45
    tie = chain_graph({"a": 0.1, "y": 0.5, "x": 0.5}, [Triple("a", "r", "y"),
                                                       Triple("a", "r", "x")], cfg)
    assert greedy_path_search("a", tie, cfg.model_copy(update={"max_path_length": 1})
                              ).entities == ("a", "x")


def test_greedy_prefix_must_end_at_the_restart_entity() -> None:
    cfg = MetaKGConfig()
    g = chain_graph({"a": 0.1, "b": 0.5}, [Triple("a", "r", "b")], cfg)
    with pytest.raises(ValueError, match="prefix"):
        greedy_path_search("b", g, cfg, prefix=Path("a"))


def test_incoming_edges_are_walked_only_when_configured() -> None:
    triples = [Triple("b", "points_to", "a")]
    both = MetaKGConfig()
    out_only = MetaKGConfig(traverse_incoming=False)
    path = greedy_path_search("a", chain_graph({"a": 0.1, "b": 0.5}, triples, both), both)
    assert path.entities == ("a", "b") and path.triples == (triples[0],)  # orientation kept
    assert greedy_path_search("a", chain_graph({"a": 0.1, "b": 0.5}, triples, out_only),
                              out_only).hops == ()


def test_triple_question_edge_weight_scores_the_whole_fact() -> None:
    triples = [Triple("a", "treats", "b"), Triple("a", "causes", "c")]
    sim = space(["Q"], {"a": {}, "b": {"Q": 0.5}, "c": {"Q": 0.4},
                        "a treats b": {"Q": 0.2}, "a causes c": {"Q": 0.6}})
    cases: list[tuple[EdgeWeight, str]] = [("tail_question", "b"), ("triple_question", "c")]
    for choice, expected in cases:
        cfg = MetaKGConfig(edge_weight=choice, max_path_length=1)
        assert greedy_path_search("a", InMemoryGraph(triples, sim, "Q", cfg), cfg).end == expected


def test_a_start_without_neighbours_gives_an_empty_path_and_no_evidence() -> None:
    cfg = MetaKGConfig()
    sim = space(["Q", "c"], {"lonely": {"Q": 0.1}, "x": {}, "y": {}})
    g = InMemoryGraph([Triple("x", "r", "y")], sim, "Q", cfg)
    r = refine("lonely", "Q", ["c"], g, g, sim, cfg)  # concept c is uncovered: an issue
    assert r.initial.hops == () and r.final.hops == () and r.cycles == ()
    assert r.stop == "empty" and g.calls == 1
    assert integrate_evidence_paths([r.final]).triples == ()


# --- The refine loop -------------------------------------------------------------------
def test_case_study_restart_pivot_adjustments_and_refined_path() -> None:
    r, graph = run_case(MetaKGConfig())
    assert r.initial.entities == INITIAL
    first = r.cycles[0]
    restart = restart_of(first)
    # Completeness wins the pivot: f = max sim(e, nsaids) = Don 0, ChEI .2, Alz 0, ML 0
    assert (restart.issue, restart.pivot) == ("completeness", CHEI)
    assert restart.score == pytest.approx(0.2)
    # +δ: entities off the path with sim(e, nsaids) > .3: NSAIDs .9, GIB .4, GAS .35;
    # −δ: misleading Alz (.25) and ML (.15). ChEI (.2, and on the path) gets nothing.
    assert dict(restart.adjustments) == pytest.approx(
        {NSAIDS: 0.2, GIB: 0.2, GAS: 0.2, ALZ: -0.2, ML: -0.2})
    # Re-search from ChEI keeping Don→ChEI: GAS .35+.2 = .55 > Alz .5−.2 = .3;
    # then NSAIDs .3+.2 = .5; then GIB .25+.2 = .45 — the paper's refined path.
    new = new_path_of(first)
    assert new.entities == (DON, CHEI, GAS, NSAIDS, GIB)
    assert new.hops[0] == r.initial.hops[0]
    assert [(h.weight, h.adjusted) for h in new.hops[1:]] == [
        (pytest.approx(0.35), pytest.approx(0.55)), (pytest.approx(0.3), pytest.approx(0.5)),
        (pytest.approx(0.25), pytest.approx(0.45))]
    # Jaccard: {Don, ChEI} / {Don, ChEI, Alz, ML, GAS, NSAIDs, GIB} = 2/7 ≤ .8: accepted
    assert first.similarity == pytest.approx(2 / 7) and first.accepted
    # Cycle 2: nsaids coverage .9; supports GAS .425, NSAIDs .4, GIB .375 ≥ .3: no issue
    assert len(r.cycles) == 2 and r.cycles[1].diagnosis.issues == ()
    assert r.stop == "no_issue" and r.final == new
    assert graph.calls == 6  # 3 hops initial + 3 hops re-search


CHAIN = {"S": {"Q": 0.3, "s": 0.9}, "A": {"Q": 0.7}, "B": {"Q": 0.7}, "C": {"Q": 0.7},
         "D": {"Q": 0.7, "x": 0.4}, "E": {"Q": 0.7, "x": 0.5}}


def run_chain(cfg: MetaKGConfig) -> Refinement:
    # S-A-B-C-D-E; max_path_length 4, so the initial path stops at D.
    sim = space(["Q", "s", "x"], CHAIN)
    names = list(CHAIN)
    g = InMemoryGraph([Triple(a, "r", b) for a, b in zip(names, names[1:], strict=False)],
                      sim, "Q", cfg)
    return refine("S", "Q", ("s", "x"), g, g, sim, cfg)


def test_stop_when_the_new_path_is_too_similar_keeps_the_old_path() -> None:
    # x coverage .4 (D) < .6 -> pivot D (.4), +δ on E; re-search from D: E (.7+.2).
    # New {S..E} vs old {S..D}: 5/6 = .833 > .8 -> stop, old path kept.
    r = run_chain(MetaKGConfig(max_path_length=4))
    assert r.initial.entities == ("S", "A", "B", "C", "D")
    assert len(r.cycles) == 1 and restart_of(r.cycles[0]).pivot == "D"
    assert r.cycles[0].similarity == pytest.approx(5 / 6) and not r.cycles[0].accepted
    assert r.stop == "converged" and r.final == r.initial


def test_a_looser_tau_similarity_accepts_the_same_change() -> None:
    # .833 ≤ .9 -> accepted; cycle 2: x coverage .5 (E) still < .6, pivot E, nothing new
    # to visit -> same path, Jaccard 1 > .9 -> converged on the longer path.
    r = run_chain(MetaKGConfig(max_path_length=4, tau_similarity=0.9))
    assert r.cycles[0].accepted and len(r.cycles) == 2
    assert r.cycles[1].similarity == 1.0 and r.stop == "converged"
    assert r.final.entities == ("S", "A", "B", "C", "D", "E")


STAR = {"S": {"Q": 0.3, "s": 0.9},
        "A": {"Q": 0.5}, "B": {"Q": 0.45}, "C": {"Q": 0.4}, "D": {"Q": 0.35},
        "A2": {"Q": 0.1}, "B2": {"Q": 0.1}, "C2": {"Q": 0.1}, "D2": {"Q": 0.1}}


def run_star(cfg: MetaKGConfig) -> Refinement:
    # S - {A, B, C, D}, each X - X2. Concept m matches nothing, so every path misses it;
    # every branch entity is misleading (GS = .5·sim(Q) ≤ .25 < .3), S is not (.4).
    sim = space(["Q", "s", "m"], STAR)
    triples = [t for x in "ABCD" for t in (Triple("S", "r", x), Triple(x, "r", x + "2"))]
    g = InMemoryGraph(triples, sim, "Q", cfg)
    return refine("S", "Q", ("s", "m"), g, g, sim, cfg)


@pytest.mark.parametrize(("n_max", "final"), [(0, "A"), (1, "B"), (2, "C"), (3, "D")])
def test_n_max_bounds_the_cycles(n_max: int, final: str) -> None:
    # Pivot: f(e) = sim(e, m) = 0 everywhere -> earliest, S. Each cycle penalises the
    # branch just taken (carried over): A .5→.3, then B .45→.25, then C .4→.2, so the
    # walk goes A, B, C, D; each change has Jaccard 1/5 and is accepted.
    r = run_star(MetaKGConfig(max_path_length=2, n_max=n_max))
    assert len(r.cycles) == n_max and r.stop == "n_max"
    assert r.final.entities == ("S", final, final + "2")
    assert all(c.restart is not None and c.restart.pivot == "S" for c in r.cycles)


def test_without_carried_adjustments_a_penalised_branch_comes_back() -> None:
    # Cycle 2 only penalises B: A is back at .5 -> A; cycle 3 penalises A -> B.
    r = run_star(MetaKGConfig(max_path_length=2, n_max=3, carry_adjustments=False))
    assert [new_path_of(c).entities[1] for c in r.cycles] == ["B", "A", "B"]


# --- Ablations -------------------------------------------------------------------------
def test_without_cycle_the_initial_path_is_final() -> None:
    r, graph = run_case(MetaKGConfig(ablation=Ablation(cycle=False)))
    assert r.final.entities == INITIAL and r.cycles == () and r.stop == "no_cycle"
    assert graph.calls == 3


def test_without_completeness_check_the_relevance_pivot_and_no_boost() -> None:
    r, _ = run_case(MetaKGConfig(ablation=Ablation(completeness_check=False)))
    restart = restart_of(r.cycles[0])
    assert r.cycles[0].diagnosis.missing == ()
    # Relevance pivot: argmax GS = Don .55 (ChEI .525); only −δ on Alz and ML.
    assert (restart.issue, restart.pivot) == ("relevance", DON)
    assert dict(restart.adjustments) == pytest.approx({ALZ: -0.2, ML: -0.2})
    # From Don: ChEI .55; ChEI: GAS .35 > Alz .3; GAS: NSAIDs .3 — budget of 3 hops used.
    assert r.final.entities == (DON, CHEI, GAS, NSAIDS)


def test_without_relevance_check_only_boosts() -> None:
    r, _ = run_case(MetaKGConfig(ablation=Ablation(relevance_check=False)))
    restart = restart_of(r.cycles[0])
    assert r.cycles[0].diagnosis.misleading == ()
    assert dict(restart.adjustments) == pytest.approx({NSAIDS: 0.2, GIB: 0.2, GAS: 0.2})
    # GAS .55 still beats the unpenalised Alz .5, so the path is the full method's.
    assert r.final.entities == (DON, CHEI, GAS, NSAIDS, GIB)


def test_without_strategic_restart_the_search_restarts_from_the_start() -> None:
    r, _ = run_case(MetaKGConfig(ablation=Ablation(strategic_restart=False)))
    restart = restart_of(r.cycles[0])
    assert (restart.pivot, restart.score) == (DON, 0.0)
    assert len(restart.adjustments) == 5  # the same ±δ map as the full method
    # From Don with a fresh 3-hop budget: ChEI .55, GAS .55, NSAIDs .5 — GIB is not reached.
    assert new_path_of(r.cycles[0]).entities == (DON, CHEI, GAS, NSAIDS)


# --- Around the loop -------------------------------------------------------------------
def test_match_entities_threshold_dedup_and_cap() -> None:
    index = DictIndex({"c1": [("e1", 0.9)], "c2": [("e1", 0.7)], "c3": [("e3", 0.6)],
                       "c4": [("e4", 0.65)], "c5": []})
    cfg = MetaKGConfig(tau_entity=0.6)
    # e3 .6 is not > .6; e1 appears twice and keeps its best (.9)
    assert match_entities(["c1", "c2", "c3", "c4", "c5"], index, cfg) == ("e1", "e4")
    assert match_entities(["c4", "c1"], index, cfg.model_copy(update={"n_starts": 1})) == ("e1",)


def test_match_entities_on_the_in_memory_index() -> None:
    graph, _ = case(MetaKGConfig())
    # nearest: nsaids -> NSAIDs .9, GIB .4, ...; donepezil -> Donepezil .75, ChEI .5, ...
    assert graph.nearest("nsaids", 2) == [(NSAIDS, pytest.approx(0.9)), (GIB, pytest.approx(0.4))]
    # both best matches clear τ_entity .6; ranked best first: NSAIDs .9, Donepezil .75
    assert match_entities(CONCEPTS, graph, MetaKGConfig()) == (NSAIDS, DON)


def test_normalise_concepts_dedups_and_caps() -> None:
    assert normalise_concepts(["a ", "A", "", "b", "c"], 2) == ("a", "b")


def test_integrate_merges_paths_without_duplicates() -> None:
    t1, t2, t3 = Triple("a", "is_a", "b"), Triple("b", "r", "c"), Triple("a", "r", "d")
    p1 = Path("a", (Hop(t1, "b", 0, 0), Hop(t2, "c", 0, 0)))
    p2 = Path("a", (Hop(t1, "b", 0, 0), Hop(t3, "d", 0, 0)))
    evidence = integrate_evidence_paths([p1, Path("z"), p2])
    assert evidence.triples == (t1, t2, t3)
    assert evidence.lines() == ["Evidence 1: a is_a b", "Evidence 2: b r c",
                                "Evidence 3: a r d"]


def test_path_refinement_rate() -> None:
    same = path_of("S", "A", "A2")
    moved = Refinement("S", same, (), path_of("S", "D", "D2"), "n_max")
    kept = Refinement("S", same, (), same, "no_issue")
    rate = path_refinement_rate([[moved, kept], [kept], []])
    # starts: 1 of 3 changed; questions: 1 of 3 (the empty one counts as unchanged)
    assert rate.by_start == pytest.approx(1 / 3) and rate.by_question == pytest.approx(1 / 3)
    # 1 − Jaccard({S,A,A2}, {S,D,D2}) = 1 − 1/5 = .8; mean over 3 starts = .8/3
    assert rate.mean_change == pytest.approx(0.8 / 3)
    assert (rate.starts, rate.questions) == (3, 3)


# --- Config, similarity helper, prompts ------------------------------------------------
def test_config_defaults_are_the_papers() -> None:
    cfg = MetaKGConfig()
    assert (cfg.n_max, cfg.tau_coverage, cfg.tau_c, cfg.tau_similarity, cfg.n_starts) == (
        3, 0.6, 0.3, 0.8, 5)
    assert 0.2 <= cfg.delta <= 0.3
    assert cfg.ablation == Ablation(cycle=True, completeness_check=True,
                                    relevance_check=True, strategic_restart=True)
    assert "§" in (MetaKGConfig.model_fields["tau_coverage"].description or "")


@pytest.mark.parametrize("bad", [{"tau_coverage": 1.5}, {"n_max": -1}, {"alpha": 2.0},
                                 {"edge_weight": "pagerank"}, {"tau_simlarity": 0.9}])
def test_config_rejects_bad_values(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        MetaKGConfig(**bad)  # type: ignore[arg-type]


def test_similarity_refuses_unnormalised_vectors_and_unknown_names() -> None:
    with pytest.raises(ValueError, match="normalised"):
        Similarity({"a": np.array([1.0, 1.0])})
    s = Similarity({"a": np.array([1.0, 0.0])})
    with pytest.raises(ValueError, match="dims"):
        s.add("b", np.array([1.0, 0.0, 0.0]))
    with pytest.raises(KeyError, match="'zz'"):
        s.sim("a", "zz")


def test_answer_prompts_put_evidence_then_question_then_options() -> None:
    p = PromptTemplate.load(PROMPTS / "answer_mcq.txt")
    msgs = p.render(domain="medical", evidence="Evidence 1: a r b", question="QQQ?",
                    choices="A. x\nB. y")
    user = msgs[-1].content
    assert [m.role for m in msgs] == ["system", "user"] and "medical" in msgs[0].content
    assert user.index("Evidence 1") < user.index("QQQ?") < user.index("A. x")
    assert "letter" in user
    with pytest.raises(KeyError):
        p.render(domain="medical", evidence="", question="q")  # no choices
    open_user = PromptTemplate.load(PROMPTS / "answer_open.txt").render(
        domain="legal", evidence="Evidence 1: a r b", question="QQQ?")[-1].content
    assert open_user.index("Evidence 1") < open_user.index("QQQ?")
    short_user = PromptTemplate.load(PROMPTS / "answer_short.txt").render(
        domain="wikipedia", evidence="Evidence 1: a r b", question="QQQ?")[-1].content
    assert short_user.index("Evidence 1") < short_user.index("QQQ?")
    # the closing line the text methods use, so extract_answer reads every method alike
    assert 'So the answer is: <short answer>' in short_user


def test_concept_prompt_asks_for_at_most_max_concepts_as_json() -> None:
    msgs = PromptTemplate.load(PROMPTS / "concepts.txt").render(
        domain="medical", question="Is donepezil safe with NSAIDs?", max_concepts=4)
    assert "at most 4" in msgs[-1].content and '{"concepts": [' in msgs[-1].content
