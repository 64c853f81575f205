"""A domain's chunks become its passages: what `kgrag build` indexes for the text methods.

Every chunk a build reads (with facts or without) is written as a `ChunkPassage` node
with the chunk's id, title (a Markdown heading path, a record's title), text, source and
line, its vector from the configured embedder, and the domain's corpus token
(`kgrag.passages`), in batches of `UNWIND $rows`. The graph itself is untouched (its
fingerprint counts `Chunk` nodes, not passages). Indexing is idempotent: a passage stored
with the same title and text and a vector is skipped before any embedding work; passages
of the same sources that the sources no longer make are deleted (not after `--limit`).

    report = index_passages(platform.store, platform.embedder, "mydocs", plan.chunks)
    str(report)
    # -> 'passages of mydocs: 12 chunks; embedded and wrote 12, 0 unchanged, 0 removed'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from kgrag.errors import KgragError
from kgrag.passages import corpus_token
from kgrag.vectors import VectorRecord, find, record

if TYPE_CHECKING:
    from kg_builder.sources import Chunk
    from kgrag.embed import Embedder
    from kgrag.store import GraphStore


@dataclass
class PassageReport:
    """What one indexing did; `kgrag build` and `kgrag corpus load` print it."""

    domain: str
    chunks: int = 0
    written: int = 0
    unchanged: int = 0
    removed: int = 0

    def __str__(self) -> str:
        return (f"passages of {self.domain}: {self.chunks:,} chunks; embedded and wrote "
                f"{self.written:,}, {self.unchanged:,} unchanged, {self.removed:,} removed")


def passage_row(chunk: Chunk) -> dict[str, Any]:
    """The passage of a chunk: its id, title, text, source file and line."""
    return {"id": chunk.id, "title": chunk.title, "text": chunk.text,
            "source": chunk.source, "line": chunk.line}


def embedding_text(row: dict[str, Any]) -> str:
    """What is embedded for a passage: its title, then its text (as `textrag.corpus`)."""
    return f"{row['title']}: {row['text']}" if row["title"] else str(row["text"])


def index_passages(store: GraphStore, embedder: Embedder | None, domain: str,
                   chunks: Sequence[Chunk], *, batch_size: int = 128, progress: bool = True,
                   prune: bool = True) -> PassageReport:
    """Write `chunks` as `domain`'s passages (module docstring). `prune`: delete the
    domain's passages of the same sources whose ids are not among `chunks`."""
    return index_rows(store, embedder, domain, [passage_row(c) for c in chunks],
                      batch_size=batch_size, progress=progress, prune=prune)


def index_rows(store: GraphStore, embedder: Embedder | None, domain: str,
               rows: Sequence[dict[str, Any]], *, batch_size: int = 128,
               progress: bool = True, prune: bool = False) -> PassageReport:
    """Write passage rows {id, title, text, source, line} of `domain` with their vectors
    (`embedder` None: without vectors, for BM25 alone)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    report = PassageReport(domain, chunks=len(rows))
    if embedder is None:
        _write_texts(store, domain, rows, report, batch_size)
    else:
        _write_embedded(store, embedder, domain, rows, report, batch_size, progress)
    if prune and rows:
        got = store.run("kg/delete_stale_passages", {
            "domain": domain, "sources": sorted({str(r["source"]) for r in rows}),
            "keep": [r["id"] for r in rows]})
        report.removed = int(got[0]["deleted"]) if got else 0
    return report


def _write_embedded(store: GraphStore, embedder: Embedder, domain: str,
                    rows: Sequence[dict[str, Any]], report: PassageReport, batch_size: int,
                    progress: bool) -> None:
    """`index_rows` with vectors: rows stored unchanged with a vector are skipped."""
    token = corpus_token(domain)
    _record_model(store, domain, embedder.name)
    bar = tqdm(total=len(rows), unit="passage", desc=f"passages {domain}",
               disable=not progress, dynamic_ncols=True)
    try:
        for start in range(0, len(rows), batch_size):
            batch = [{**r, "title": r["title"] or ""} for r in rows[start:start + batch_size]]
            keys = [{"id": r["id"], "title": r["title"], "text": r["text"]} for r in batch]
            done = {r["id"] for r in store.read("kg/chunk_passages_embedded",
                                                {"domain": domain, "rows": keys})}
            todo = [r for r in batch if r["id"] not in done]
            report.unchanged += len(batch) - len(todo)
            if todo:
                vectors = embedder.embed([embedding_text(r) for r in todo])
                payload = [{**r, "embedding": v.tolist()}
                           for r, v in zip(todo, vectors, strict=True)]
                store.write_batch("kg/merge_chunk_passages", payload,
                                  {"domain": domain, "corpus": token})
                report.written += len(todo)
            bar.update(len(batch))
    finally:
        bar.close()


def _write_texts(store: GraphStore, domain: str, rows: Sequence[dict[str, Any]],
                 report: PassageReport, batch_size: int) -> None:
    """`index_rows` without vectors: every row is written (nothing to skip)."""
    payload = [{**r, "title": r["title"] or ""} for r in rows]
    for n, _ in store.write_batches("kg/merge_chunk_passages_text", payload,
                                    batch_size=batch_size,
                                    extra={"domain": domain, "corpus": corpus_token(domain)}):
        report.written += n


def _record_model(store: GraphStore, domain: str, model: str) -> None:
    """Record which embedder makes the domain's passage vectors (`kgrag.vectors`, scope
    `corpus:<domain>`, which dense search checks); passages embedded by another model
    are an error, not a mix."""
    scope = f"corpus:{domain}"
    found = find(store, scope)
    embedded = store.read("textrag/chunks/count_passages", {"domain": domain})[0]["embedded"]
    if found is not None and found.model != model and embedded:
        raise KgragError(f"the passages of {domain} were embedded by {found.model}, not "
                         f"{model}", hint=f"index them with KGRAG_EMBEDDING__PASSAGE_MODEL="
                         f"{found.model}, or drop the domain (`kgrag graph drop --domain "
                         f"{domain}`) and build it again")
    if found is None or found.model != model:
        record(store, VectorRecord(scope, model))


def index_graph_chunks(store: GraphStore, embedder: Embedder, domain: str, *,
                       progress: bool = True) -> PassageReport:
    """Index the chunks `domain`'s graph already holds (a graph built before its chunks
    were passages, or imported): their document's title, text, source and line."""
    rows = store.read("kg/graph_chunks", {"domain": domain})
    return index_rows(store, embedder, domain, rows, progress=progress)
