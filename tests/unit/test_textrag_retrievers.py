"""Retrievers without Neo4j: Lucene escaping, RRF arithmetic, the gold BM25, and one
contract every Retriever implementation must meet (fakes stand in for store/embedder)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from kgrag.types import Passage, Question
from textrag.bm25 import OkapiBM25
from textrag.retrieval import Retrieved, Retriever
from textrag.retrievers import (
    BM25Retriever,
    DenseRetriever,
    GoldContextRetriever,
    HybridRetriever,
    escape_lucene,
    lucene_query,
    reciprocal_rank_fusion,
)

LUCENE_SPECIAL = set('+-&|!(){}[]^"~*?:\\/')
HOSTILE = ['AND OR (foo" [bar]', "NOT", "a && b || c", "title:x*", '"unclosed', "fo~ba^2",
           "{a TO b}", "C:\\path\\file", "why? really!", "-minus +plus", "/regex/", "\\"]


def _unescaped_special(q: str) -> list[str]:
    bad, i = [], 0
    while i < len(q):
        if q[i] == "\\":
            i += 2  # the escaped character
            continue
        if q[i] in LUCENE_SPECIAL:
            bad.append(q[i])
        i += 1
    return bad


def test_escape_of_the_brief_example() -> None:
    assert escape_lucene('AND OR (foo" [bar]') == 'and or \\(foo\\" \\[bar\\]'


@pytest.mark.parametrize("query", HOSTILE)
def test_no_special_character_or_operator_survives(query: str) -> None:
    q = lucene_query(query)
    if q is None:
        return
    assert _unescaped_special(q) == [], q
    assert not {"AND", "OR", "NOT", "TO"} & set(q.split()), q


def test_queries_without_words_are_not_sent() -> None:
    assert lucene_query("  ?! ") is None
    assert lucene_query("") is None
    assert lucene_query("a " * 500, max_terms=10) == " ".join(["a"] * 10)


# ---------------------------------------------------------------------- fakes
class FakeStore:
    """Answers the two search statements from a fixed list of rows."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def read(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        self.calls.append((name, params))
        return self.rows[: params["k"]]


class FakeEmbedder:
    name, dimensions = "fake", 4

    def embed(self, texts: list[str], kind: str = "document") -> np.ndarray:
        return np.tile(np.array([0.5, 0.5, 0.5, 0.5], dtype=np.float32), (len(texts), 1))


ROWS = [{"id": f"p{i}", "title": f"T{i}", "text": f"text {i}", "score": 1.0 / (i + 1)}
        for i in range(6)]


def test_bm25_sends_the_escaped_query_and_maps_rows() -> None:
    store = FakeStore(ROWS)
    hits = BM25Retriever(store).search('AND OR (foo" [bar]', k=3)  # type: ignore[arg-type]
    assert store.calls == [("textrag/search_bm25",
                            {"query": 'and or \\(foo\\" \\[bar\\]', "k": 3})]
    assert [(h.passage.id, h.rank) for h in hits] == [("p0", 1), ("p1", 2), ("p2", 3)]


def test_bm25_does_not_query_for_punctuation_only() -> None:
    store = FakeStore(ROWS)
    assert BM25Retriever(store).search("?!?", k=3) == []  # type: ignore[arg-type]
    assert store.calls == []


def test_dense_sends_the_query_vector() -> None:
    store = FakeStore(ROWS)
    DenseRetriever(store, FakeEmbedder()).search("who?", k=2)  # type: ignore[arg-type]
    name, params = store.calls[0]
    assert name == "textrag/search_dense"
    # the index is asked for DENSE_FETCH passages (its HNSW search misses some at k)
    assert params == {"k": 100, "embedding": [0.5, 0.5, 0.5, 0.5]}


# ---------------------------------------------------------------------- RRF
def _p(pid: str) -> Passage:
    return Passage(id=pid, title=pid.upper(), text=f"about {pid}")


def test_rrf_on_a_hand_computed_example() -> None:
    # ranking 1: a b c; ranking 2: c a d  (k = 60)
    # a = 1/61 + 1/62 = 0.0325224; c = 1/63 + 1/61 = 0.0322664
    # b = 1/62 = 0.0161290;        d = 1/63 = 0.0158730
    fused = reciprocal_rank_fusion([[_p("a"), _p("b"), _p("c")], [_p("c"), _p("a"), _p("d")]])
    assert [p.id for p, _ in fused] == ["a", "c", "b", "d"]
    assert [s for _, s in fused] == pytest.approx([1 / 61 + 1 / 62, 1 / 63 + 1 / 61,
                                                   1 / 62, 1 / 63])


def test_rrf_ties_keep_first_appearance() -> None:
    fused = reciprocal_rank_fusion([[_p("x")], [_p("y")]], k=60)
    assert [p.id for p, _ in fused] == ["x", "y"]


class ListRetriever:
    def __init__(self, ids: list[str], setting: str = "open") -> None:
        self.ids, self.setting = ids, setting
        self.asked: list[int] = []

    def search(self, query: str, k: int) -> list[Retrieved]:
        self.asked.append(k)
        return [Retrieved(_p(i), 1.0, r) for r, i in enumerate(self.ids[:k], 1)]


def test_hybrid_fuses_deep_lists_and_cuts_to_k() -> None:
    one, two = ListRetriever(["a", "b", "c"]), ListRetriever(["c", "a", "d"])
    hits = HybridRetriever([one, two], depth=20).search("q", k=2)
    assert [(h.passage.id, h.rank) for h in hits] == [("a", 1), ("c", 2)]
    assert hits[0].score == pytest.approx(1 / 61 + 1 / 62)
    assert one.asked == two.asked == [20]


def test_hybrid_refuses_mixed_settings() -> None:
    with pytest.raises(ValueError, match="settings"):
        HybridRetriever([ListRetriever(["a"]), ListRetriever(["b"], setting="gold")])


# ---------------------------------------------------------------------- gold BM25
GOLD = [
    Passage(id="g1", title="Kingston Morning", text="Kingston Morning is a solo album recorded "
            "in Brooklyn and Kingston, Jamaica."),
    Passage(id="g2", title="Nola (film)", text="Nola is a romantic comedy film written and "
            "directed by Alan Hruska, set in New York City."),
    Passage(id="g3", title="Big Stone Gap (film)", text="Big Stone Gap is a 2014 romantic "
            "comedy film directed by Adriana Trigiani and set in Big Stone Gap, Virginia."),
    Passage(id="g4", title="Adriana Trigiani", text="Adriana Trigiani is a best-selling author "
            "based in Greenwich Village, New York City."),
    Passage(id="g5", title="Satellite tournament", text="A satellite tournament is a minor "
            "event on a competitive sporting tour."),
]


def test_okapi_bm25_matches_the_formula() -> None:
    # N=2, n(fox)=1: idf = ln(1 + 1.5/1.5) = ln 2; |d1|=3, avgdl=2:
    # norm = 1.2 * (0.25 + 0.75 * 3/2) = 1.65; tf=2: 2 * 2.2 / 3.65
    s = OkapiBM25(["fox fox forest", "sea"]).scores("fox")
    assert s == pytest.approx([math.log(2) * 4.4 / 3.65, 0.0])


def test_gold_bm25_ranks_the_obvious_paragraph_first() -> None:
    q = Question(id="q", text='Who directed the romantic comedy "Big Stone Gap"?', contexts=GOLD)
    hits = GoldContextRetriever.for_question(q).search(q.text, k=3)
    # g2 shares "directed", "romantic", "comedy"; nothing else shares a word
    assert [(h.passage.id, h.rank) for h in hits] == [("g3", 1), ("g2", 2)]
    assert hits[0].score > hits[1].score > 0


def test_gold_returns_only_matching_paragraphs() -> None:
    r = GoldContextRetriever(GOLD)
    assert r.setting == "gold"
    assert r.search("photosynthesis chlorophyll", k=5) == []
    assert [h.passage.id for h in r.search("Adriana Trigiani", k=5)][:2] == ["g4", "g3"]


def test_gold_needs_contexts() -> None:
    with pytest.raises(ValueError, match="no gold contexts"):
        GoldContextRetriever.for_question(Question(id="nq1", text="who?"))


# ---------------------------------------------------------------------- contract
def _implementations() -> list[tuple[str, Retriever]]:
    return [
        ("bm25", BM25Retriever(FakeStore(ROWS))),  # type: ignore[arg-type]
        ("dense", DenseRetriever(FakeStore(ROWS), FakeEmbedder())),  # type: ignore[arg-type]
        ("hybrid", HybridRetriever([BM25Retriever(FakeStore(ROWS)),  # type: ignore[arg-type]
                                    DenseRetriever(FakeStore(ROWS), FakeEmbedder())])),  # type: ignore[arg-type]
        ("gold", GoldContextRetriever([Passage(id=r["id"], title=r["title"], text=r["text"])
                                       for r in ROWS])),
    ]


@pytest.mark.parametrize(("name", "retriever"), _implementations())
def test_retriever_contract(name: str, retriever: Retriever) -> None:
    assert isinstance(retriever, Retriever)
    assert retriever.setting in ("open", "gold")
    hits = retriever.search("text 1 T1", k=3)
    assert 1 <= len(hits) <= 3, name
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert all(isinstance(h.passage, Passage) for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert retriever.search("   ", k=3) == []
    with pytest.raises(ValueError):
        retriever.search("text", k=0)
