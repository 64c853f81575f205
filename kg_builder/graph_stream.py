"""An export's records written as they are read: constant memory for graphs of 400k
entities and 900k facts (holding them all took over 7 GB).

An export lists its chunks first, then entities, facts and co-occurrence edges
(`graph_io.export_graph`). The chunks are gathered (a domain's first write is decided by
its chunk and document ids, `kg/domain_is_new`); every other kind is written a batch at a
time: with CREATE and element ids into a new domain, with the MERGE statements into one
that has a graph. What a fact's chunks mention is gathered per chunk and written after the
last fact.

    stream_records(writer, records, report)   # records: (line number, record) pairs
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from kg_builder.graph_io import VECTOR_BATCH, GraphWriter, WriteReport, as_vector
from kg_builder.rows import documents
from kgrag.errors import KgragError

Row = dict[str, Any]
ORDER = ("entity", "fact", "cooccur")
# Rows of one kind held before they are sent (in batches of the writer's batch size).
HOLD = 50_000


def stream_records(writer: GraphWriter, records: Iterable[tuple[int, Row | None]],
                   report: WriteReport) -> None:
    """Write an export's records (line number, record or None for a broken line) in file
    order; broken and unknown lines are skipped and listed in `report.skipped_lines`."""
    it = iter(records)
    chunks: list[Row] = []
    head: tuple[str, Row] | None = None
    for _, rec in _typed(it, report):
        if rec is None:
            continue
        kind, row = rec
        if kind != "chunk":
            head = (kind, row)
            break
        chunks.append(row)
    new = _write_chunks(writer, chunks, report)
    del chunks
    stream = _Stream(writer, report, new)
    stream.run(head, _typed(it, report))
    if writer.embed:
        writer.embed_missing(report, stream.given)


def _typed(it: Iterator[tuple[int, Row | None]], report: WriteReport
           ) -> Iterator[tuple[int, tuple[str, Row] | None]]:
    for n, rec in it:
        kind = rec.pop("type", None) if isinstance(rec, dict) else None
        if kind == "skip":  # an entity merged away in the target domain (graph_io._mapped)
            yield n, None
            continue
        if kind not in ("chunk", *ORDER) or rec is None:
            report.skipped_lines.append(n)
            yield n, None
            continue
        yield n, (kind, rec)


def _write_chunks(writer: GraphWriter, chunks: list[Row], report: WriteReport) -> bool:
    """Documents and chunks; whether the domain was new (the fast path)."""
    docs = documents(chunks)
    report.chunks += sum(len(d["chunks"]) for d in docs)
    new = bool(writer.store.read("kg/domain_is_new", {
        "domain": writer.domain, "doc_ids": [d["doc"] for d in docs],
        "chunk_ids": [c["id"] for d in docs for c in d["chunks"]]})[0]["new"])
    report.fast_path = new
    if new:
        writer._send("kg/create_documents", docs, report, max(1, writer.batch_size // 10),
                     parallel=True)
    else:
        writer._send("kg/merge_chunks", chunks, report)
    return new


class _Stream:
    """Entities, facts, mentions and co-occurrence edges, a held batch at a time."""

    def __init__(self, writer: GraphWriter, report: WriteReport, new: bool) -> None:
        self.w, self.report, self.new = writer, report, new
        self.ids: dict[str, str] = {}  # key -> element id of the entities created (fast path)
        self.seen: set[tuple[str, ...]] = set()   # facts and edges sent (fast path)
        self.by_chunk: dict[str, set[str]] = {}   # chunk -> entity ids (or keys)
        self.held: list[Row] = []
        self.kind = "entity"
        self.given: dict[str, str] = {}  # key -> the export's vector (MERGE path)

    def run(self, head: tuple[str, Row] | None,
            rest: Iterator[tuple[int, tuple[str, Row] | None]]) -> None:
        if head is not None:
            self._add(*head)
        for _, rec in rest:
            if rec is not None:
                self._add(*rec)
        self._switch("")

    def _add(self, kind: str, row: Row) -> None:
        if kind != self.kind:
            if kind == "chunk" or ORDER.index(kind) < ORDER.index(self.kind):
                raise KgragError(f"the export has a {kind} record after its {self.kind} "
                                 "records: not an export in file order (chunks, entities, "
                                 "facts, co-occurrence edges)")
            self._switch(kind)
        self.held.append(row)
        if len(self.held) >= HOLD:
            self._flush()

    def _switch(self, kind: str) -> None:
        self._flush()
        if self.kind == "fact" or (self.kind == "entity" and kind != "fact"):
            self._mentions()
        self.kind = kind or "done"

    def _flush(self) -> None:
        rows, self.held = self.held, []
        if rows:
            {"entity": self._entities, "fact": self._facts,
             "cooccur": self._cooccurs}[self.kind](rows)

    def _entities(self, rows: list[Row]) -> None:
        w, report = self.w, self.report
        report.entities += len(rows)
        if not self.new:
            w._send("kg/merge_entities", ({"key": e["key"], "name": e["name"],
                                           "aliases": e.get("aliases") or []} for e in rows),
                    report)
            # vectors are sent at the end, only for entities still without one
            self.given.update((e["key"], e["emb"]) for e in rows if e.get("emb"))
            return
        rows = [e for e in {e["key"]: e for e in reversed(rows)}.values()
                if e["key"] not in self.ids]  # first row per key wins
        for name, part, size, embedded in (
                ("kg/create_entities_embedded", [e for e in rows if e.get("emb")],
                 VECTOR_BATCH, 1),
                ("kg/create_entities", [e for e in rows if not e.get("emb")],
                 w.batch_size, 0)):
            out = w._send(name, ({"key": e["key"], "name": e["name"],
                                  "aliases": e.get("aliases") or [],
                                  **({"embedding": as_vector(e["emb"])} if embedded else {})}
                                 for e in part), report, size, parallel=True,
                          embedded=embedded)
            self.ids.update((r["key"], r["id"]) for r in out)

    def _facts(self, rows: list[Row]) -> None:
        self.report.facts += len(rows)
        for f in rows:
            ends = {f["h"], f["t"]} if not self.new else {
                self.ids[k] for k in (f["h"], f["t"]) if k in self.ids}
            for c in f["chunks"]:
                self.by_chunk.setdefault(c, set()).update(ends)
        if not self.new:
            self.w._send("kg/merge_facts", rows, self.report)
            return
        fresh = []
        for f in rows:
            k = (f["h"], f["r"], f["t"])
            if k not in self.seen and f["h"] in self.ids and f["t"] in self.ids:
                self.seen.add(k)
                fresh.append({**f, "h": self.ids[f["h"]], "t": self.ids[f["t"]]})
        self.w._send("kg/create_facts", fresh, self.report)

    def _mentions(self) -> None:
        by_chunk, self.by_chunk = self.by_chunk, {}
        group = max(1, self.w.batch_size // 10)
        if self.new:
            self.w._send("kg/create_mentions", ({"chunk": c, "ids": sorted(v)}
                                                for c, v in by_chunk.items()), self.report,
                         group)
        else:
            self.w._send("kg/merge_mentions", ({"chunk": c, "keys": sorted(v)}
                                               for c, v in by_chunk.items()), self.report,
                         group)

    def _cooccurs(self, rows: list[Row]) -> None:
        if not self.new:
            self.w._send("kg/import_cooccurs", rows, self.report)
            return
        fresh = []
        for r in rows:
            k = ("~", r["h"], r["t"])
            if k not in self.seen and r["h"] in self.ids and r["t"] in self.ids:
                self.seen.add(k)
                fresh.append({**r, "h": self.ids[r["h"]], "t": self.ids[r["t"]]})
        self.w._send("kg/create_cooccurs", fresh, self.report)
