"""The effect of the passage size on retrieval recall (`kgrag bench chunks`).

A document file (Markdown, text or JSONL, as `kgrag build --source` reads it) is chunked
at each size (`kgrag build --chunk-words`, `kg_builder.chunking`) into a throw-away domain
`bench-chunks-<size>`, written as that domain's passages by the same code as a build
(`kg_builder.passages`: BM25 always, vectors from the passage embedder when `dense` is
measured), and searched with the questions of a file whose lines name their supporting
sections (`supporting_titles`, matched as `textrag.recall.TitleMatcher.for_domain`). The
domain's passages and its embedder record are deleted afterwards (also before, in case an
earlier run stopped half-way). No LLM call; the graph is never touched.

    rows = bench_chunk_sizes(platform, Path("docs.md"), questions, sizes=(100, 400))
    rows[0].recall["bm25"][5]   # all supporting sections in the top 5, share of questions
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kg_builder.chunking import word_count
from kg_builder.passages import index_passages
from kg_builder.sources import load, user_source
from kgrag.errors import KgragError
from kgrag.types import Question
from textrag.corpora import chunk_corpus
from textrag.recall import TitleMatcher, measure_recall
from textrag.retrieval import Retriever
from textrag.retrievers import BM25Retriever, DenseRetriever, HybridRetriever

if TYPE_CHECKING:
    from kgrag.platform import Platform

KINDS = ("bm25", "dense", "hybrid")


@dataclass
class ChunkRow:
    """Recall at one passage size: per retriever and k, the share of questions with all
    (`recall`) and the mean share (`mean`) of their supporting sections in the top k."""

    size: int
    passages: int
    mean_words: float
    index_seconds: float
    recall: dict[str, dict[int, float]] = field(default_factory=dict)
    mean: dict[str, dict[int, float]] = field(default_factory=dict)
    # per retriever and k, per supported question: all its supporting sections found
    found: dict[str, dict[int, tuple[bool, ...]]] = field(default_factory=dict, repr=False)


PREFIX = "bench-chunks"


def bench_domain(size: int, prefix: str = PREFIX) -> str:
    """The throw-away domain of one size (its passages are deleted before and after)."""
    return f"{prefix}-{size}"


def _clear(p: Platform, domain: str) -> None:
    p.store.run("textrag/chunks/delete_passages_by_prefix", {"domain": domain,
                                                             "prefix": f"{domain}:"})
    p.store.run("vectors/delete_record", {"scope": f"corpus:{domain}"})


def bench_chunk_sizes(p: Platform, source: Path, questions: Sequence[Question],
                      sizes: Sequence[int] = (100, 150, 200, 400),
                      retrievers: Sequence[str] = ("bm25",), ks: Sequence[int] = (5,),
                      progress: bool = True, prefix: str = PREFIX) -> list[ChunkRow]:
    """One `ChunkRow` per size (module docstring), in the domains `<prefix>-<size>`."""
    unknown = [r for r in retrievers if r not in KINDS]
    if unknown or not retrievers:
        raise KgragError(f"unknown retrievers: {', '.join(unknown) or '(none given)'}",
                         hint=f"choose among {', '.join(KINDS)}")
    if not any(q.supporting for q in questions):
        raise KgragError("no question names the passages that support it",
                         hint='give each question "supporting_titles": [...]')
    embedder = p.passage_embedder if {"dense", "hybrid"} & set(retrievers) else None
    p.store.apply_schema()
    rows = []
    for size in sizes:
        domain = bench_domain(size, prefix)
        _clear(p, domain)
        try:
            chunks, _ = load(user_source(source, domain, chunk_words=size))
            if not chunks:
                raise KgragError(f"{source} holds no text to chunk")
            start = time.perf_counter()
            index_passages(p.store, embedder, domain, chunks, progress=progress)
            row = ChunkRow(size, len(chunks), sum(word_count(c.text) for c in chunks)
                           / len(chunks), time.perf_counter() - start)
            found = measure_recall(questions, _retrievers(p, domain, retrievers), ks,
                                   progress=progress, match=TitleMatcher.for_domain(domain))
            for r in found:
                row.recall.setdefault(r.retriever, {})[r.k] = r.support_all
                row.mean.setdefault(r.retriever, {})[r.k] = r.support_mean
                row.found.setdefault(r.retriever, {})[r.k] = r.all_found
            rows.append(row)
        finally:
            _clear(p, domain)
    return rows


def _retrievers(p: Platform, domain: str, kinds: Sequence[str]) -> dict[str, Retriever]:
    corpus = chunk_corpus(domain)
    bm25 = BM25Retriever(p.store, corpus)
    out: dict[str, Retriever] = {"bm25": bm25}
    if {"dense", "hybrid"} & set(kinds):
        out["dense"] = DenseRetriever(p.store, p.passage_embedder, corpus)
        out["hybrid"] = HybridRetriever([bm25, out["dense"]])
    return {k: out[k] for k in kinds}


def chunk_table(rows: Sequence[ChunkRow], ks: Sequence[int]) -> list[str]:
    """Markdown: one line per size, recall all / mean per retriever and k, in %."""
    names = list(rows[0].recall) if rows else []
    head = ["words per passage at most", "passages", "mean words", "index s"] + [
        f"{n} all / mean @{k} %" for n in names for k in ks]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [str(r.size), f"{r.passages:,}", f"{r.mean_words:.0f}",
                 f"{r.index_seconds:.1f}"] + [
            f"{100 * r.recall[n][k]:.1f} / {100 * r.mean[n][k]:.1f}" for n in names for k in ks]
        out.append("| " + " | ".join(cells) + " |")
    return out


def paired_sizes(rows: Sequence[ChunkRow], base: int, k: int) -> list[str]:
    """Each size against `base` at cut-off `k`, per retriever: the difference in recall
    (all) and McNemar's exact p on the same questions (`kgrag.stats.mcnemar`)."""
    from kgrag.stats import mcnemar

    ref = next((r for r in rows if r.size == base), None)
    if ref is None:
        return []
    out = []
    for r in rows:
        for name, by_k in r.found.items():
            if r is ref or k not in by_k:
                continue
            p = mcnemar(by_k[k], ref.found[name][k]).p_exact
            out.append(f"{name} @{k}: {r.size} against {base} words "
                       f"{100 * (r.recall[name][k] - ref.recall[name][k]):+.1f} points, "
                       f"McNemar p = {p:.3g}")
    return out
