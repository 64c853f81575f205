"""Retrievers behind the `textrag.retrieval.Retriever` protocol.

Open setting (a passage corpus in Neo4j, Wikipedia unless another `textrag.corpora`
corpus is given): `BM25Retriever` (that corpus's Lucene full-text index, `passage_text`
for Wikipedia; a domain's chunk passages require its corpus token in the query),
`DenseRetriever` (its vector index, `passage_embedding`; over a domain's chunk passages,
numpy over its vectors, `DomainVectors`),
`HybridRetriever` (reciprocal rank fusion of several retrievers). Gold setting:
`GoldContextRetriever` ranks a question's own paragraphs with an in-memory Okapi BM25.

Every retriever is a template method: `search()` validates `k`, returns `[]` for a query
without searchable words, and numbers the ranks; subclasses implement `_search()`.

    bm25 = BM25Retriever(platform.store)
    [h.passage.title for h in bm25.search('AND OR (foo" [bar]', k=3)]   # never a syntax error
    gold = GoldContextRetriever.for_question(question)
    gold.search("Big Stone Gap director", k=2)[0].passage.title
    # -> 'Big Stone Gap (film)'

Methods take a `RetrieverFor` (question -> retriever) because the gold setting's
retriever depends on the question: `shared(bm25)` for the open setting,
`GoldContextRetriever.for_question` for the gold one.
"""

from __future__ import annotations

import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from kgrag.passages import corpus_token
from kgrag.types import Passage, Question
from textrag.bm25 import OkapiBM25
from textrag.corpora import DEFAULT, CorpusSpec
from textrag.retrieval import Retrieved, Retriever, Setting

if TYPE_CHECKING:
    from kgrag.embed import Embedder
    from kgrag.store import GraphStore

RetrieverFor = Callable[[Question], Retriever]

# Lucene classic query-parser syntax: these characters must be backslash-escaped.
_LUCENE_SPECIAL = re.compile(r'([+\-!(){}\[\]^"~*?:\\/&|])')
_LUCENE_OPERATOR = re.compile(r"\b(AND|OR|NOT|TO)\b")
_WORD = re.compile(r"\w", re.UNICODE)
# Lucene refuses a query of more than 1024 clauses; a question is never near that.
MAX_QUERY_TERMS = 256


def escape_lucene(text: str) -> str:
    """`text` as literal terms for Lucene: special characters escaped, operators lowered.

    >>> print(escape_lucene('AND OR (foo" [bar]'))
    and or \\(foo\\" \\[bar\\]
    """
    escaped = _LUCENE_SPECIAL.sub(r"\\\1", text)
    # Upper-case AND/OR/NOT/TO are operators; the analyzer lower-cases terms anyway.
    return _LUCENE_OPERATOR.sub(lambda m: m.group(1).lower(), escaped)


def lucene_query(text: str, max_terms: int = MAX_QUERY_TERMS) -> str | None:
    """An escaped query of at most `max_terms` whitespace tokens, or None if nothing to search."""
    if not _WORD.search(text):
        return None
    terms = [t for t in text.split() if _WORD.search(t)][:max_terms]
    return " ".join(escape_lucene(t) for t in terms)


def domain_query(query: str, domain: str) -> str:
    """An escaped Lucene query (`lucene_query`) over a domain's chunk passages: the
    domain's corpus token is required, the query's terms are searched in title and text.

    >>> domain_query("Who found it?", "x").startswith("+corpus:c")
    True
    """
    return f"+corpus:{corpus_token(domain)} +(title:({query}) OR text:({query}))"


class BaseRetriever(ABC):
    """Template method: `search()` is shared; subclasses implement `_search()`."""

    setting: Setting = "open"
    kind: ClassVar[str] = "base"

    def search(self, query: str, k: int) -> list[Retrieved]:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if not _WORD.search(query):
            return []
        hits = self._search(query.strip(), k)[:k]
        return [Retrieved(p, float(s), rank) for rank, (p, s) in enumerate(hits, 1)]

    @abstractmethod
    def _search(self, query: str, k: int) -> list[tuple[Passage, float]]:
        """Up to `k` (passage, score) pairs, best first."""


def _rows_to_hits(rows: list[dict[str, object]]) -> list[tuple[Passage, float]]:
    return [(Passage(id=str(r["id"]), title=str(r["title"] or ""), text=str(r["text"] or "")),
             float(r["score"])) for r in rows]  # type: ignore[arg-type]


class BM25Retriever(BaseRetriever):
    """Lucene BM25 through Neo4j's full-text index on passage title and text.

        BM25Retriever(store).search("Who directed Jaws?", k=3)[0].rank
        # -> 1
    """

    kind: ClassVar[str] = "bm25"

    def __init__(self, store: GraphStore, corpus: CorpusSpec = DEFAULT) -> None:
        self.store, self.corpus = store, corpus

    def _search(self, query: str, k: int) -> list[tuple[Passage, float]]:
        q = lucene_query(query, MAX_QUERY_TERMS // 2 if self.corpus.is_chunks else
                         MAX_QUERY_TERMS)
        if q is None:
            return []
        if self.corpus.is_chunks:
            q = domain_query(q, self.corpus.domain)
        return _rows_to_hits(self.store.read(self.corpus.statement("search_bm25"),
                                             {"query": q, "k": k, **self.corpus.params}))


DENSE_FETCH = 100  # nearest passages asked of the vector index (`DenseRetriever`)


class DenseRetriever(BaseRetriever):
    """Cosine similarity of the query's vector to passage vectors (vector index); the
    embedder must be the one that made the corpus's vectors (`textrag.corpus_vectors`).

        DenseRetriever(store, embedder).search("shark film by Spielberg", k=3)
    """

    kind: ClassVar[str] = "dense"

    def __init__(self, store: GraphStore, embedder: Embedder,
                 corpus: CorpusSpec = DEFAULT) -> None:
        self.store, self.embedder, self.corpus = store, embedder, corpus
        self._vectors = DomainVectors(store, corpus.domain) if corpus.is_chunks else None

    def _search(self, query: str, k: int) -> list[tuple[Passage, float]]:
        vector = self.embedder.embed([query], kind="query")[0]
        if self._vectors is not None:
            return self._vectors.nearest(vector, k)
        # Neo4j's HNSW search explores about k candidates: asked for 10 it misses true
        # nearest passages that it finds when asked for 50 (bge-small, 2Wiki dev), so it
        # is asked for at least DENSE_FETCH and the best k are kept
        return _rows_to_hits(self.store.read(self.corpus.statement("search_dense"), {
            "k": max(k, DENSE_FETCH), "embedding": vector.tolist()}))[:k]


class DomainVectors:
    """A domain's passage vectors as one matrix, read from Neo4j on the first search
    (`textrag/chunks/domain_vectors`, one round trip) and kept: dense search over a
    domain's passages is then one matrix product (vectors are L2-normalised, so the dot
    product is the cosine). Ties keep id order.

        DomainVectors(store, "mydocs").nearest(embedder.embed(["comet"])[0], k=3)
    """

    def __init__(self, store: GraphStore, domain: str) -> None:
        self.store, self.domain = store, domain
        self._passages: list[Passage] | None = None
        self._matrix = np.zeros((0, 0), dtype=np.float32)
        self._lock = threading.Lock()

    def _load(self) -> list[Passage]:
        with self._lock:
            if self._passages is None:
                rows = self.store.read("textrag/chunks/domain_vectors",
                                       {"domain": self.domain})
                self._passages = [Passage(id=str(r["id"]), title=str(r["title"] or ""),
                                          text=str(r["text"] or "")) for r in rows]
                self._matrix = (np.asarray([r["embedding"] for r in rows], dtype=np.float32)
                                if rows else np.zeros((0, 0), dtype=np.float32))
            return self._passages

    def nearest(self, vector: np.ndarray, k: int) -> list[tuple[Passage, float]]:
        """The `k` passages most similar to `vector`, best first, with their cosine."""
        passages = self._load()
        if not passages:
            return []
        scores = self._matrix @ np.asarray(vector, dtype=np.float32)
        order = np.argsort(-scores, kind="stable")[:k]
        return [(passages[i], float(scores[i])) for i in order]


def reciprocal_rank_fusion(rankings: Sequence[Sequence[Passage]], k: int = 60
                           ) -> list[tuple[Passage, float]]:
    """RRF (Cormack et al. 2009): score(d) = sum over rankings of 1 / (k + rank(d)).

    Ties keep the order of first appearance (earlier ranking, higher rank first).

    >>> a, b = Passage(id="a", text="x"), Passage(id="b", text="y")
    >>> [(p.id, round(s, 5)) for p, s in reciprocal_rank_fusion([[a, b], [b]])]
    [('b', 0.03252), ('a', 0.01639)]
    """
    scores: dict[str, float] = {}
    first: dict[str, Passage] = {}
    for ranking in rankings:
        for rank, passage in enumerate(ranking, 1):
            scores[passage.id] = scores.get(passage.id, 0.0) + 1.0 / (k + rank)
            first.setdefault(passage.id, passage)
    order = sorted(scores, key=lambda pid: -scores[pid])  # stable: first appearance wins ties
    return [(first[pid], scores[pid]) for pid in order]


class HybridRetriever(BaseRetriever):
    """Reciprocal rank fusion (k=60) of several retrievers' top `depth` lists.

        HybridRetriever([BM25Retriever(store), DenseRetriever(store, embedder)])
    """

    kind: ClassVar[str] = "hybrid"

    def __init__(self, retrievers: Sequence[Retriever], *, rrf_k: int = 60, depth: int = 20
                 ) -> None:
        if not retrievers:
            raise ValueError("HybridRetriever needs at least one retriever")
        settings = {r.setting for r in retrievers}
        if len(settings) != 1:
            raise ValueError(f"cannot fuse retrievers of different settings: {settings}")
        self.retrievers = list(retrievers)
        self.setting = settings.pop()
        self.rrf_k, self.depth = rrf_k, depth

    def _search(self, query: str, k: int) -> list[tuple[Passage, float]]:
        depth = max(k, self.depth)
        rankings = [[h.passage for h in r.search(query, depth)] for r in self.retrievers]
        return reciprocal_rank_fusion(rankings, self.rrf_k)[:k]


class GoldContextRetriever(BaseRetriever):
    """BM25 ranking among a fixed set of paragraphs (a question's gold contexts).

    Only paragraphs sharing a word with the query are returned, like a real index.

        GoldContextRetriever(question.contexts).search("Adriana Trigiani", k=1)
    """

    setting: Setting = "gold"
    kind: ClassVar[str] = "gold-bm25"

    def __init__(self, passages: Sequence[Passage]) -> None:
        self.passages = list(passages)
        self._index = OkapiBM25([f"{p.title}\n{p.text}" for p in self.passages])

    @classmethod
    def for_question(cls, question: Question) -> GoldContextRetriever:
        """The gold-context retriever of `question` (an error if it has no contexts)."""
        if not question.contexts:
            raise ValueError(f"question {question.id} has no gold contexts; use the open "
                             "setting for this dataset")
        return cls(question.contexts)

    def _search(self, query: str, k: int) -> list[tuple[Passage, float]]:
        scored = [(p, s) for p, s in zip(self.passages, self._index.scores(query), strict=True)
                  if s > 0]
        scored.sort(key=lambda ps: -ps[1])  # stable: file order breaks ties
        return scored[:k]


def shared(retriever: Retriever) -> RetrieverFor:
    """The same retriever for every question (the open setting)."""

    def for_question(question: Question) -> Retriever:
        return retriever

    return for_question
