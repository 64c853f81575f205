"""kg-ppr's parts without Neo4j: personalized PageRank on hand-made graphs (known
stationary distributions), the subgraph's edge weights, weighted reciprocal rank fusion,
and that the retriever only ever sees the query string (never gold paragraphs)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kgrag.types import Passage, Question
from metakg.ppr import GraphPPR, PassageIds, PPRConfig, Subgraph, personalized_pagerank
from metakg.seeds import EntityMatcher
from textrag.ppr import KGPPR, PPRRetriever, weighted_rrf
from textrag.retrievers import shared


def dense_ppr(n: int, edges: list[tuple[int, int, float]], reset: dict[int, float],
              d: float) -> np.ndarray:
    """The closed form p = (1 - d) (I - d T)^-1 s for a graph without isolated nodes."""
    w = np.zeros((n, n))
    for i, j, x in edges:
        w[i, j] += x
        w[j, i] += x
    t = (w / w.sum(axis=1, keepdims=True)).T
    s = np.zeros(n)
    for i, x in reset.items():
        s[i] = x
    s /= s.sum()
    return (1 - d) * np.linalg.solve(np.eye(n) - d * t, s)


def test_a_chain_has_the_hand_computed_distribution() -> None:
    # p0 = .5 + .5 p1/2, p1 = .5 (p0 + p2), p2 = .5 p1/2  →  (7, 4, 1) / 12
    p = personalized_pagerank(3, [(0, 1, 1.0), (1, 2, 1.0)], {0: 1.0}, damping=0.5)
    assert p == pytest.approx([7 / 12, 4 / 12, 1 / 12], abs=1e-9)


def test_a_star_ranks_the_centre_after_the_seed_and_leaves_equal() -> None:
    edges = [(0, i, 1.0) for i in range(1, 5)]  # centre 0, leaves 1..4, seed leaf 1
    p = personalized_pagerank(5, edges, {1: 1.0})
    assert p == pytest.approx(dense_ppr(5, edges, {1: 1.0}, 0.5), abs=1e-9)
    assert p[1] > p[0] > p[2] and p[2] == pytest.approx(p[3]) == pytest.approx(p[4])
    assert p.sum() == pytest.approx(1.0)


def test_weights_and_two_seeds_match_the_closed_form() -> None:
    edges = [(0, 1, 2.0), (1, 2, 1.0), (2, 3, 1.0), (3, 0, 1.0), (1, 3, 3.0), (4, 2, 1.0)]
    reset = {0: 0.25, 4: 0.75}
    for d in (0.5, 0.85):
        got = personalized_pagerank(5, edges, reset, damping=d)
        assert got == pytest.approx(dense_ppr(5, edges, reset, d), abs=1e-8)


def test_isolated_nodes_send_their_mass_back_to_the_seeds() -> None:
    p = personalized_pagerank(3, [(1, 2, 1.0)], {0: 1.0})
    assert p == pytest.approx([1.0, 0.0, 0.0])
    with pytest.raises(ValueError):
        personalized_pagerank(2, [], {})
    with pytest.raises(ValueError):
        personalized_pagerank(2, [], {0: 1.0}, damping=1.0)


def test_subgraph_has_one_edge_per_pair() -> None:
    g = Subgraph.of([["a", "b"], ["b", "a"], ["b", "c"], ["c", "c"]], ["a"], {"a": 4})
    assert g.keys == ["a", "b", "c"]
    assert g.edges == [(0, 1, 1.0), (1, 2, 1.0)]  # parallel facts once, no self-loop


def test_weighted_rrf() -> None:
    a, b, c = (Passage(id=x, text=x) for x in "abc")
    fused = weighted_rrf([[a, b], [b, c], []], [2.0, 1.0, 5.0])
    assert [p.id for p, _ in fused] == ["b", "a", "c"]
    assert fused[0][1] == pytest.approx(2 / 62 + 1 / 61)
    assert [p.id for p, _ in weighted_rrf([[a], [b]], [1.0, 1.0])] == ["a", "b"]  # tie
    with pytest.raises(ValueError):
        weighted_rrf([[a]], [1.0, 2.0])


# --- the retriever sees the query only -----------------------------------------------------
class RecordingStore:
    """Answers the three kg-ppr statements from a tiny graph; records every parameter."""

    def __init__(self) -> None:
        self.params: list[dict[str, Any]] = []
        self.entities = {"big stone gap", "adriana trigiani", "greenwich village"}

    def read(self, name: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        params = dict(params or {})
        self.params.append({"name": name, **params})
        if name == "metakg/match_keys":
            return [{"key": k} for k in params["keys"] if k in self.entities]
        if name == "metakg/ppr_subgraph":
            seeds = [s for s in params["seeds"] if s in self.entities]
            return [{"seeds": [{"key": s, "mentions": 1} for s in seeds],
                     "edges": [["big stone gap", "adriana trigiani"],
                               ["adriana trigiani", "greenwich village"]]}]
        if name == "textrag/ppr_passages":
            return [{"id": f"p-{e['key']}", "title": e["key"], "text": "t",
                     "score": e["score"]} for e in params["entities"]]
        raise AssertionError(f"unexpected statement {name}")


class FixedRetriever:
    setting = "open"

    def __init__(self, ids: list[str]) -> None:
        self.ids, self.queries = ids, []

    def search(self, query: str, k: int) -> list[Any]:
        from textrag.retrieval import Retrieved

        self.queries.append(query)
        return [Retrieved(Passage(id=i, title=i, text=i), 1.0, r)
                for r, i in enumerate(self.ids[:k], 1)]


def retriever(store: RecordingStore, others: list[FixedRetriever]) -> PPRRetriever:
    lookup = lambda keys: {r["key"] for r in store.read(  # noqa: E731
        "metakg/match_keys", {"keys": list(keys)})}
    return PPRRetriever(GraphPPR(store, "wikipedia", PassageIds("wikipedia:wiki_passages:"),
                                 PPRConfig()), EntityMatcher(lookup), others)


def test_graph_ranking_alone_puts_the_seed_and_its_neighbour_first() -> None:
    store = RecordingStore()
    hits = retriever(store, []).search("Who directed Big Stone Gap?", 3)
    assert [h.passage.id for h in hits] == ["p-big stone gap", "p-adriana trigiani",
                                            "p-greenwich village"]
    assert [p["name"] for p in store.params] == ["metakg/match_keys", "metakg/ppr_subgraph",
                                                 "textrag/ppr_passages"]


def test_without_seeds_the_result_is_the_fusion_of_the_others() -> None:
    store = RecordingStore()
    bm25, dense = FixedRetriever(["x", "y"]), FixedRetriever(["y", "z"])
    hits = retriever(store, [bm25, dense]).search("What is the capital of Peru?", 3)
    assert [h.passage.id for h in hits] == ["y", "x", "z"]
    assert "metakg/ppr_subgraph" not in [p["name"] for p in store.params]


def test_seeds_never_read_gold_paragraphs_or_supporting_titles() -> None:
    from tests.doubles.scripted import ScriptedModel

    store = RecordingStore()
    store.entities |= {"poisoned gold title", "secret"}
    bm25 = FixedRetriever(["x"])
    q = Question(id="h", text="Who directed Big Stone Gap?", answers=["Adriana Trigiani"],
                 supporting=["Poisoned Gold Title"],
                 contexts=[Passage(id="g", title="Poisoned Gold Title", text="secret secret")])
    model = ScriptedModel(["Adriana Trigiani directed it. So the answer is: Adriana Trigiani."])
    pred = KGPPR(model, shared(retriever(store, [bm25])), store=None).answer(q)
    assert pred.error is None and pred.answer == "Adriana Trigiani"
    assert [s.stage for s in pred.trace][-1] == "graph"
    assert pred.trace[-1].data["searches"][0]["seeds"] == ["big stone gap"]
    sent = repr(store.params) + repr(bm25.queries)
    assert "poisoned" not in sent.casefold() and "secret" not in sent.casefold()
    assert bm25.queries == [q.text]
    # the gold paragraph's words never reached the model either (only retrieved ones)
    assert "secret" not in repr(model.prompts).casefold()


def test_metarag_ppr_retrieves_through_the_graph_and_traces_its_seeds() -> None:
    from tests.doubles.scripted import ScriptedModel
    from tests.unit.test_metarag import BagOfWords, answer, expert
    from textrag.ppr import MetaRAGPPR

    store = RecordingStore()
    bm25 = FixedRetriever(["x", "y"])
    model = ScriptedModel([answer("Adriana Trigiani"), expert("Adriana Trigiani")])
    q = Question(id="m", text="Who directed Big Stone Gap?")
    pred = MetaRAGPPR(model, shared(retriever(store, [bm25])), BagOfWords()).answer(q)
    assert pred.error is None and pred.answer == "Adriana Trigiani"
    assert model.remaining == 0 and bm25.queries == [q.text]
    refs = model.prompts[0][-1].content  # graph-ranked passages fused with BM25's
    assert "big stone gap" in refs and "x -- x" in refs
    (graph,) = [s for s in pred.trace if s.stage == "graph"]
    assert [s["seeds"] for s in graph.data["searches"]] == [["big stone gap"]]


# --- which corpus a domain's kg-ppr reads ---------------------------------------------------
class StatusStore:
    def read(self, name: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        assert name == "metakg/domain_status"
        return [{"facts": 10}]


@pytest.mark.parametrize(("domain", "ids", "corpus"), [
    ("medical", PassageIds("medical:medquad_corpus:", "medquad:",
                           "textrag/medical/ppr_passages"), "medical"),
    ("wikipedia", PassageIds("wikipedia:wiki_passages:"), "wikipedia"),
    (None, PassageIds("wikipedia:wiki_passages:"), "wikipedia"),
])
def test_a_domain_ranks_and_fuses_the_passages_of_its_own_corpus(
        monkeypatch: pytest.MonkeyPatch, domain: str | None, ids: PassageIds,
        corpus: str) -> None:
    import textrag.ppr
    import textrag.setting
    from textrag.corpora import corpus_for_domain

    opened: list[tuple[str, str]] = []

    def open_retriever(p: object, kind: str, domain: str | None = None) -> FixedRetriever:
        opened.append((kind, corpus_for_domain(domain).name))
        return FixedRetriever([])

    monkeypatch.setattr(textrag.setting, "open_retriever", open_retriever)
    monkeypatch.setattr(textrag.ppr, "spacy_tagger", lambda: None)
    monkeypatch.setattr(textrag.ppr, "store_matcher", lambda store, domain, tagger: None)

    class FakePlatform:
        store = StatusStore()

    r = textrag.ppr.ppr_retriever(FakePlatform(), domain)  # type: ignore[arg-type]
    assert r.graph.ids == ids
    assert opened == [("bm25", corpus), ("dense", corpus)]
