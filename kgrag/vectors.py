"""Vectors know their model: which embedder made a corpus's or a graph's vectors.

A scope (`corpus:<name>` for a passage corpus, `graph:<domain>` for a domain's entity
vectors) has one `(:VectorModel {scope, model, complete, previous})` node. A query is
embedded by one model and compared with stored vectors of another only by mistake, so
`check` refuses it with an error that names the re-embed command. Vectors stored before
models were recorded were all made by all-MiniLM-L6-v2 (`LEGACY_MODEL`).

`reembed` replaces a scope's vectors in place, batch by batch, each stored vector marked
with its model, so a stopped run resumes where it stopped; while it runs (or after it was
stopped) the record says `complete: false` and queries are refused until it finishes.

    check(store, "corpus:wikipedia", embedder, "kgrag corpus embed --model bge-small-en-v1.5-q")
    reembed(store, "corpus:wikipedia", embedder, Statements("textrag/passages_to_embed",
            "textrag/set_passage_embeddings"), text=lambda r: f"{r['title']}: {r['text']}")
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from kgrag.errors import KgragError

if TYPE_CHECKING:
    from kgrag.embed import Embedder
    from kgrag.store import GraphStore

LEGACY_MODEL = "all-minilm-l6-v2"  # the only embedder before models were recorded


@dataclass(frozen=True)
class VectorRecord:
    """The embedder of a scope's vectors; `complete` is False while a re-embedding to
    `model` runs or after one stopped, `previous` then names the model it replaces."""

    scope: str
    model: str
    complete: bool = True
    previous: str | None = None


class VectorModelMismatch(KgragError):
    """A query embedder differs from the one that made the stored vectors."""


def recorded(store: GraphStore, scope: str) -> VectorRecord:
    """The scope's record; `LEGACY_MODEL`, complete, when none was written."""
    return find(store, scope) or VectorRecord(scope, LEGACY_MODEL)


def find(store: GraphStore, scope: str) -> VectorRecord | None:
    """The scope's record, None when none was written."""
    rows = store.read("vectors/get_record", {"scope": scope})
    if not rows:
        return None
    r = rows[0]
    return VectorRecord(scope, str(r["model"]), bool(r["complete"]),
                        None if r["previous"] is None else str(r["previous"]))


def record(store: GraphStore, rec: VectorRecord) -> None:
    store.run("vectors/set_record", {"scope": rec.scope, "model": rec.model,
                                     "complete": rec.complete, "previous": rec.previous})


def check(store: GraphStore, scope: str, model: str | None, command: str, *,
          legacy: bool = True) -> VectorRecord:
    """The scope's record if its vectors were made by `model` (None: by any one model, a
    re-embedding not stopped halfway); else a clear error naming `command` (the re-embed
    command, `--model` appended) and the setting to change. `legacy` False: a scope
    without a record has no vectors yet (an error too)."""
    found = find(store, scope)
    if found is None and not legacy:
        raise VectorModelMismatch(f"{scope} has no vectors yet",
                                  hint=f"make them with `{command} --model {model}`")
    rec = found or VectorRecord(scope, LEGACY_MODEL)
    if not rec.complete:
        raise VectorModelMismatch(
            f"re-embedding {scope} with {rec.model} stopped before the end (its vectors mix "
            f"{rec.previous} and {rec.model})",
            hint=f"finish it with `{command} --model {rec.model}` (it resumes)")
    if model is not None and rec.model != model:
        raise VectorModelMismatch(
            f"the vectors of {scope} were made by {rec.model}, but queries would be embedded "
            f"by {model}",
            hint=f"re-embed them with `{command} --model {model}`, or query with the model "
            f"that made them (KGRAG_EMBEDDING__… = {rec.model})")
    return rec


def check_recorded(store: GraphStore, scope: str, model: str, command: str
                   ) -> VectorRecord | None:
    """`check` for a scope whose vectors were recorded; None (accepted) when none were
    (a graph built or imported before its model was recorded: any vectors it has were
    made by the embedder that built it)."""
    if find(store, scope) is None:
        return None
    return check(store, scope, model, command)


@dataclass(frozen=True)
class Statements:
    """The two statements of a scope's re-embedding: `todo` returns up to `$limit` rows
    (with `id`) whose vector was not made by `$model`; `write` takes `$rows` of
    {id, embedding} and `$model`."""

    todo: str
    write: str
    params: Mapping[str, Any] | None = None  # e.g. the domain


@dataclass
class ReembedReport:
    scope: str
    model: str
    embedded: int = 0
    embed_seconds: float = 0.0
    seconds: float = 0.0

    def __str__(self) -> str:
        rate = self.embedded / self.embed_seconds if self.embed_seconds else 0.0
        return (f"{self.scope}: re-embedded {self.embedded:,} texts with {self.model} in "
                f"{self.seconds:.0f} s ({self.embed_seconds:.0f} s computing vectors, "
                f"{rate:.1f} texts/s)")


def reembed(store: GraphStore, scope: str, embedder: Embedder, statements: Statements,
            text: Callable[[Mapping[str, Any]], str], *, total: int | None = None,
            batch_size: int = 256, progress: bool = True) -> ReembedReport:
    """Replace the vectors of `scope` with `embedder`'s, resumably (module docstring)."""
    start = time.perf_counter()
    before = recorded(store, scope)
    report = ReembedReport(scope, embedder.name)
    previous = before.previous if not before.complete else before.model
    record(store, VectorRecord(scope, embedder.name, complete=False, previous=previous))
    extra = dict(statements.params or {})
    bar = tqdm(total=total, unit="text", desc=f"embed {scope}", disable=not progress,
               dynamic_ncols=True)
    try:
        while rows := store.read(statements.todo, {**extra, "model": embedder.name,
                                                   "limit": batch_size}):
            began = time.perf_counter()
            vectors = embedder.embed([text(r) for r in rows])
            report.embed_seconds += time.perf_counter() - began
            store.run(statements.write, {**extra, "model": embedder.name, "rows": [
                {"id": r["id"], "embedding": v.tolist()} for r, v in zip(rows, vectors,
                                                                         strict=True)]})
            report.embedded += len(rows)
            bar.update(len(rows))
    finally:
        bar.close()
        report.seconds = time.perf_counter() - start
    record(store, VectorRecord(scope, embedder.name))
    return report
