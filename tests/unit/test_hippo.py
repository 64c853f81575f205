"""kg-ppr's walk without Neo4j (`metakg.hippo`): seeds from recognised facts, passage
nodes with their small dense reset mass, synonym edges that carry the walk further, and
the rank of one search against a scripted store."""

from __future__ import annotations

from typing import Any

import pytest

from metakg.hippo import Fact, HippoConfig, HippoGraph, seed_weights, walk
from metakg.ppr import PassageIds

EDGES = [["a", "b", 1.0, "REL"], ["b", "a", 1.0, "REL"],  # one fact read from both ends
         ["b", "c", 0.9, "SYNONYM"]]
PAIRS = [["p1", "a"], ["p2", "b"], ["p3", "c"], ["p4", "d"]]


def test_passages_are_ranked_by_their_own_pagerank() -> None:
    ranked, counts = walk(EDGES, PAIRS, {("e", "a"): 1.0}, 0.5)
    assert [p for p, _ in ranked] == ["p1", "p2", "p3", "p4"]
    assert ranked[-1][1] == 0.0  # d is not connected to the seed
    assert counts == {"entities": 4, "passages": 4, "fact_edges": 1, "synonym_edges": 1,
                      "context_edges": 4}


def test_without_the_synonym_edge_c_is_out_of_reach() -> None:
    ranked, counts = walk(EDGES[:2], PAIRS, {("e", "a"): 1.0}, 0.5)
    assert dict(ranked)["p3"] == 0.0 and counts["synonym_edges"] == 0


def test_dense_reset_mass_lifts_a_passage_the_graph_does_not_reach() -> None:
    reset = {("e", "a"): 1.0, ("p", "p4"): 0.05}
    ranked, _ = walk(EDGES, PAIRS, reset, 0.5)
    assert dict(ranked)["p4"] > 0.0 and ranked[0][0] == "p1"


def test_seed_weights_keep_the_best_ends_and_divide_by_their_chunks() -> None:
    facts = [Fact("x", "r", "y", 0.8, 4, 1), Fact("z", "r", "w", 0.2, 1, 1)]
    assert seed_weights(facts, 2) == {"x": pytest.approx(0.2), "y": pytest.approx(0.8)}
    assert seed_weights([], 5) == {}


class Scripted:
    """Answers kg-ppr's three graph statements from fixed rows; records the calls."""

    def __init__(self, facts: list[dict[str, Any]]) -> None:
        self.facts, self.calls = facts, []

    def read(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        self.calls.append(name)
        if name == "hippo/nearest_facts":
            return self.facts
        if name == "hippo/subgraph":
            return [{"seeds": ["a", "b"], "edges": EDGES}]
        assert name == "hippo/passage_edges"
        assert params["passages"] == ["p4"] and set(params["entities"]) == {"a", "b", "c"}
        return [{"pairs": PAIRS}]


def test_rank_reads_three_statements_and_falls_back_to_dense_without_facts() -> None:
    fact = {"head": "a", "predicate": "r", "tail": "b", "score": 0.9, "head_chunks": 1,
            "tail_chunks": 1}
    store = Scripted([fact])
    g = HippoGraph(store, "w", PassageIds("w:wiki_passages:"), HippoConfig())  # type: ignore[arg-type]
    ranked, seen = g.rank([0.0] * 4, [("p4", 0.7)])
    assert store.calls == ["hippo/nearest_facts", "hippo/subgraph", "hippo/passage_edges"]
    assert [p for p, _ in ranked][:2] == ["p1", "p2"] and seen["synonym_edges"] == 1
    empty = Scripted([])
    ranked, seen = HippoGraph(empty, "w", PassageIds("w:"), HippoConfig()).rank(  # type: ignore[arg-type]
        [0.0] * 4, [("p9", 0.5), ("p8", 0.4)])
    assert ranked == [("p9", 0.5), ("p8", 0.4)] and empty.calls == ["hippo/nearest_facts"]
