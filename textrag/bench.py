"""Retrieval benchmark: corpus load speed and BM25 / dense / hybrid query latency.

Numbers for the README come from here (`kgrag corpus bench`), never from timed tests.

1. Cold load: the first `load_sample` passages of the corpus under temporary ids
   (embedding + writing, with an empty embedding cache), then deleted again.
2. Full load: `load_corpus` of the whole corpus, which writes only what is missing
   (on a loaded database this measures the idempotent re-load).
3. Latency: `queries` passage titles as queries, top-5, after a warm-up; dense includes
   embedding the query. Hybrid gets the lower-cased titles, so its query embeddings are
   not served from the cache that dense just filled (the analyzer and the uncased MiniLM
   see the same text). A last dense pass with cached vectors isolates the vector search.
   The table counts the embedding-cache hits of each row, so a cached row cannot pass
   for a cold one.

    bench_retrieval(Platform(), Console())
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rich.console import Console
from rich.table import Table

from kgrag.embed import Embedder
from kgrag.platform import Platform
from textrag.corpus import LoadReport, default_corpus_path, delete_passages, load_corpus
from textrag.corpus_vectors import ready_to_load
from textrag.retrieval import Retrieved
from textrag.retrievers import BM25Retriever, DenseRetriever, HybridRetriever

TOP_K = 5


@dataclass(frozen=True)
class Latency:
    name: str
    seconds: list[float]
    top1_title_match: float  # share of title queries whose top hit has that title
    cache_hits: int | None = None  # query vectors served from the embedder's cache

    @property
    def median_ms(self) -> float:
        return statistics.median(self.seconds) * 1000

    @property
    def p90_ms(self) -> float:
        return statistics.quantiles(self.seconds, n=10)[-1] * 1000 if len(self.seconds) > 1 \
            else self.median_ms


@dataclass
class RetrievalBench:
    cold: LoadReport | None = None
    full: LoadReport | None = None
    latencies: list[Latency] = field(default_factory=list)


def _cache_hits(embedder: Embedder) -> int | None:
    hits = getattr(embedder, "hits", None)  # an Embedder need not have a cache
    return hits if isinstance(hits, int) else None


def _time_queries(name: str, search: Callable[[str, int], list[Retrieved]],
                  queries: Sequence[str], embedder: Embedder | None = None) -> Latency:
    seconds, matches = [], 0
    before = _cache_hits(embedder) if embedder is not None else None
    for q in queries:
        start = time.perf_counter()
        hits = search(q, TOP_K)
        seconds.append(time.perf_counter() - start)
        matches += bool(hits) and hits[0].passage.title.lower() == q.lower()
    after = _cache_hits(embedder) if embedder is not None else None
    cached = after - before if after is not None and before is not None else None
    return Latency(name, seconds, matches / len(queries) if queries else 0.0, cached)


def bench_retrieval(p: Platform, console: Console, *, queries: int = 100,
                    load_sample: int = 1000) -> RetrievalBench:
    """Run the three measures above and print them."""
    store = p.store
    store.apply_schema()
    embedder = ready_to_load(p)  # the model the corpus's vectors are made by
    path = default_corpus_path(p.settings)
    result = RetrievalBench()
    if load_sample:
        prefix = f"bench-{uuid.uuid4().hex[:8]}:"
        try:
            result.cold = load_corpus(store, embedder, path, limit=load_sample, id_prefix=prefix)
        finally:
            delete_passages(store, prefix)
        console.print(f"cold load of {load_sample:,} passages: {result.cold}")
    result.full = load_corpus(store, embedder, path)
    console.print(f"full corpus load: {result.full}")

    titles = [r["title"] for r in store.read("textrag/sample_titles", {"n": queries})]
    bm25, dense = BM25Retriever(store), DenseRetriever(store, embedder)
    hybrid = HybridRetriever([bm25, dense])
    for r in (bm25, dense, hybrid):  # warm-up: driver pool, query plans, model threads
        r.search("warm-up query about a film director", TOP_K)
    result.latencies = [
        _time_queries("bm25", bm25.search, titles),
        _time_queries("dense", dense.search, titles, embedder),
        _time_queries("hybrid (RRF k=60)", hybrid.search, [t.lower() for t in titles],
                      embedder),
        # the same dense queries again: their vectors are cached, so this is Neo4j alone
        _time_queries("dense, vector cached", dense.search, titles, embedder),
    ]
    table = Table("retriever", "median ms", "p90 ms", "top-1 title = query", "queries",
                  "cached")
    for lat in result.latencies:
        table.add_row(lat.name, f"{lat.median_ms:.1f}", f"{lat.p90_ms:.1f}",
                      f"{lat.top1_title_match:.0%}", str(len(lat.seconds)),
                      "-" if lat.cache_hits is None else str(lat.cache_hits))
    console.print(table)
    rows = store.read("textrag/count_passages")[0]
    console.print(f"corpus: {rows['passages']:,} passages ({rows['embedded']:,} embedded); "
                  f"top-{TOP_K}; embedder {embedder.name}; Neo4j {store.uri}")
    return result
