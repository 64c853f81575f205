"""Writing a domain graph to Neo4j, and moving it in and out as compressed JSONL.

All writes are `UNWIND $rows` batches (`cypher/kg/*.cypher`): `CREATE` statements while
the domain is new, `MERGE` statements once it is not, so writing the same rows twice
creates nothing, and an interrupted import or build can be re-run. The export format
(one JSON object per line, gzip):

    {"type": "meta", "domain": ..., "format": 1, "model": ..., "command": ..., ...}
    {"type": "chunk", "id", "doc", "text", "source", "title", "line"}
    {"type": "entity", "key", "name", "aliases", "emb"}     # emb: base64 float16, optional
    {"type": "fact", "h", "r", "t", "k", "chunks", "conf"}

>>> report = import_graph(store, embedder, Path("data/graphs/commonsense.jsonl.gz"))
>>> report.facts
"""

from __future__ import annotations

import base64
import gzip
import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from kg_builder.rows import documents, mentions, unique_entities, unique_facts
from kgrag.embed import Embedder
from kgrag.errors import KgragError
from kgrag.store import GraphStore, WriteCounters

log = logging.getLogger(__name__)
FORMAT = 1
# Vectors per transaction: larger batches were slower on the 1 GB-heap server (measured:
# 30,000 in one transaction took 4x as long as batches of 1,000).
VECTOR_BATCH = 1000


@dataclass
class WriteReport:
    """Counts of one write/import: rows sent and what Neo4j actually created."""

    domain: str
    chunks: int = 0
    entities: int = 0
    facts: int = 0
    nodes_created: int = 0
    relationships_created: int = 0
    embedded: int = 0
    fast_path: bool = False
    seconds: float = 0.0
    stage_seconds: dict[str, float] = field(default_factory=dict)
    skipped_lines: list[int] = field(default_factory=list)

    def add(self, c: WriteCounters) -> None:
        self.nodes_created += c.nodes_created
        self.relationships_created += c.relationships_created

    def __str__(self) -> str:
        rate = self.facts / self.seconds if self.seconds else 0.0
        text = (f"{self.domain}: {self.entities:,} entities, {self.facts:,} facts, "
                f"{self.chunks:,} chunks sent; created {self.nodes_created:,} nodes and "
                f"{self.relationships_created:,} relationships; embedded {self.embedded:,}; "
                f"{self.seconds:.1f} s ({rate:,.0f} facts/s)")
        if self.skipped_lines:
            text += f"; skipped broken lines {self.skipped_lines[:10]}"
        return text


class GraphWriter:
    """Batched, idempotent writes of one domain's chunks, entities and facts.

    A domain with no entity and no chunk yet, whose chunk and document ids are unused
    (`kg/domain_is_new`: a first import, a build's first batch), takes a fast path:
    rows are de-duplicated here and written with CREATE, facts and mentions find their
    entities by element id. Any other domain takes the MERGE statements, so writing the
    same rows again creates nothing, and an interrupted fast-path write re-runs as a MERGE.
    Vectors are stored last, only for entities still marked :Unembedded: from the rows
    when they carry one (`emb`), else from the embedder, which `embedder_factory` builds
    only then.

    >>> GraphWriter(store, None, "legal", embedder_factory=lambda: p.embedder).write(
    ...     chunks, entities, facts, WriteReport("legal"))
    """

    def __init__(self, store: GraphStore, embedder: Embedder | None, domain: str,
                 batch_size: int = 5000, *,
                 embedder_factory: Callable[[], Embedder] | None = None) -> None:
        self.store, self.embedder, self.domain = store, embedder, domain
        self.embedder_factory = embedder_factory
        self.batch_size = batch_size
        store.run("kg/merge_domain", {"domain": domain})

    def _send(self, name: str, rows: Iterable[dict[str, Any]], report: WriteReport,
              batch_size: int | None = None) -> list[dict[str, Any]]:
        """Write `rows` in batches; returns the rows the statement returns (if any)."""
        out: list[dict[str, Any]] = []
        start = time.perf_counter()
        for batch in batched(rows, batch_size or self.batch_size):
            records, counters = self.store.write_batch(name, batch, {"domain": self.domain})
            report.add(counters)
            report.embedded += counters.labels_removed  # :Unembedded dropped = vector stored
            out.extend(records)
        stage = name.removeprefix("kg/")
        report.stage_seconds[stage] = (report.stage_seconds.get(stage, 0.0)
                                       + time.perf_counter() - start)
        return out

    def write(self, chunks: Sequence[dict[str, Any]], entities: Sequence[dict[str, Any]],
              facts: Sequence[dict[str, Any]], report: WriteReport) -> None:
        """Write rows in dependency order: chunks, entities, facts, mentions, vectors."""
        ents, facts = unique_entities(entities), unique_facts(facts)
        docs = documents(chunks)
        report.chunks += sum(len(d["chunks"]) for d in docs)
        report.entities += len(ents)
        report.facts += len(facts)
        new = self.store.read("kg/domain_is_new", {
            "domain": self.domain, "doc_ids": [d["doc"] for d in docs],
            "chunk_ids": [c["id"] for d in docs for c in d["chunks"]]})[0]["new"]
        report.fast_path = bool(new)
        if new:
            self._create(docs, ents, facts, report)
        else:
            self._merge(chunks, ents, facts, report)
        self.embed_missing(report, {e["key"]: e["emb"] for e in ents if e.get("emb") is not None})

    def _create(self, docs: list[dict[str, Any]], ents: list[dict[str, Any]],
                facts: list[dict[str, Any]], report: WriteReport) -> None:
        group = max(1, self.batch_size // 10)  # a document or chunk row holds ~10 more
        self._send("kg/create_documents", docs, report, group)
        ids = {r["key"]: r["id"] for r in self._send(
            "kg/create_entities",
            ({"key": e["key"], "name": e["name"], "aliases": e["aliases"]} for e in ents),
            report)}
        self._send("kg/create_facts",
                   ({**f, "h": ids[f["h"]], "t": ids[f["t"]]} for f in facts
                    if f["h"] in ids and f["t"] in ids), report)
        self._send("kg/create_mentions",
                   ({"chunk": m["chunk"], "ids": [ids[k] for k in m["keys"] if k in ids]}
                    for m in mentions(facts)), report, group)

    def _merge(self, chunks: Sequence[dict[str, Any]], ents: list[dict[str, Any]],
               facts: list[dict[str, Any]], report: WriteReport) -> None:
        self._send("kg/merge_chunks", chunks, report)
        self._send("kg/merge_entities",
                   ({"key": e["key"], "name": e["name"], "aliases": e["aliases"]}
                    for e in ents), report)
        self._send("kg/merge_facts", facts, report)
        self._send("kg/merge_mentions", mentions(facts), report, max(1, self.batch_size // 10))

    def embed_missing(self, report: WriteReport,
                      given: Mapping[str, str | Sequence[float]] | None = None) -> None:
        """Store vectors for entities that have none yet: from `given` (key → vector or
        base64 float16 text), else computed from their names."""
        missing = self.store.read("kg/entities_missing_embedding", {"domain": self.domain})
        given = given or {}
        self._send("kg/set_entity_embeddings",
                   ({"key": m["key"], "embedding": as_vector(given[m["key"]])}
                    for m in missing if m["key"] in given), report, VECTOR_BATCH)
        rest = [m for m in missing if m["key"] not in given]
        if not rest:
            return
        embedder = self.embedder or (self.embedder_factory() if self.embedder_factory else None)
        if embedder is None:
            raise KgragError(f"{len(rest)} entities of {self.domain} need embeddings "
                             "but no embedder was given")
        self.embedder = embedder
        for start in range(0, len(rest), self.batch_size):
            part = rest[start : start + self.batch_size]
            vecs = embedder.embed([m["name"] for m in part])
            self._send("kg/set_entity_embeddings",
                       ({"key": m["key"], "embedding": v.tolist()}
                        for m, v in zip(part, vecs, strict=True)), report, VECTOR_BATCH)


# ---------------------------------------------------------------------- export / import
def encode_vector(v: Sequence[float] | np.ndarray) -> str:
    return base64.b64encode(np.asarray(v, dtype=np.float16).tobytes()).decode()


def decode_vector(s: str) -> list[float]:
    return np.frombuffer(base64.b64decode(s), dtype=np.float16).astype(np.float32).tolist()


def as_vector(v: str | Sequence[float] | np.ndarray) -> list[float]:
    """A vector as a list of floats, from a list, an array or an export's base64 text."""
    if isinstance(v, str):
        return decode_vector(v)
    return np.asarray(v, dtype=np.float32).tolist()


def batched(rows: Iterable[dict[str, Any]], n: int) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= n:
            yield batch
            batch = []
    if batch:
        yield batch


def export_graph(store: GraphStore, domain: str, path: Path, meta: dict[str, Any],
                 with_embeddings: bool = True) -> dict[str, int]:
    """Write the domain's chunks, entities and facts to `path` (gzip JSONL), atomically."""
    params = {"domain": domain}
    entities = store.read("kg/export_entities", params)
    if not entities:
        raise KgragError(f"domain {domain!r} has no entities to export",
                         hint=f"build it first: kgrag build --domain {domain}")
    facts = store.read("kg/export_facts", params)
    chunks = store.read("kg/export_chunks", params)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with gzip.open(tmp, "wt", encoding="utf-8") as f:
        head = {"type": "meta", "format": FORMAT, "domain": domain, **meta,
                "counts": {"entities": len(entities), "facts": len(facts),
                           "chunks": len(chunks)}}
        f.write(json.dumps(head, ensure_ascii=False) + "\n")
        for c in chunks:
            f.write(json.dumps({"type": "chunk", **c}, ensure_ascii=False) + "\n")
        for e in entities:
            emb = e.pop("embedding")
            if with_embeddings and emb is not None:
                e["emb"] = encode_vector(emb)
            f.write(json.dumps({"type": "entity", **e}, ensure_ascii=False) + "\n")
        for r in facts:
            f.write(json.dumps({"type": "fact", **r}, ensure_ascii=False) + "\n")
    tmp.rename(path)
    return {"entities": len(entities), "facts": len(facts), "chunks": len(chunks)}


def read_export(path: Path
                ) -> tuple[dict[str, Any], Iterator[tuple[int, dict[str, Any] | None]]]:
    """The meta record and (line number, record) pairs; a broken line gives None."""
    if not path.is_file():
        raise KgragError(f"no graph export at {path}")
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            meta = json.loads(f.readline())
    except (json.JSONDecodeError, OSError, EOFError) as e:
        raise KgragError(f"{path} is not a kgrag graph export: {e}") from e
    if meta.get("type") != "meta" or meta.get("format") != FORMAT:
        raise KgragError(f"{path} is not a format-{FORMAT} kgrag graph export")

    def records() -> Iterator[tuple[int, dict[str, Any] | None]]:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            f.readline()
            for n, line in enumerate(f, start=2):
                try:
                    yield n, json.loads(line)
                except json.JSONDecodeError:
                    yield n, None

    return meta, records()


def import_graph(store: GraphStore, embedder: Embedder | None, path: Path,
                 domain: str | None = None, batch_size: int = 5000, *,
                 embedder_factory: Callable[[], Embedder] | None = None) -> WriteReport:
    """Load an export into Neo4j (idempotent). Vectors come from the file when it has them;
    the embedder (or `embedder_factory`, called only then) embeds the entities it lacks."""
    meta, records = read_export(path)
    domain = domain or meta["domain"]
    report = WriteReport(domain)
    start = time.perf_counter()
    rows: dict[str, list[dict[str, Any]]] = {"chunk": [], "entity": [], "fact": []}
    total = sum(meta.get("counts", {}).values()) or None
    for n, rec in tqdm(records, total=total, unit="rec", desc=f"read {path.name}",
                       disable=None, leave=False):
        kind = rec.pop("type", None) if isinstance(rec, dict) else None
        if kind not in rows:
            log.warning("%s: skipping line %d (not a chunk, entity or fact record)", path, n)
            report.skipped_lines.append(n)
            continue
        rows[kind].append(rec)  # an entity's "emb" stays base64 until it is stored
    report.stage_seconds["read"] = time.perf_counter() - start
    if domain != meta["domain"]:  # chunk and document ids are global: give the copy its own
        _rename_sources(rows, meta["domain"], domain)
    writer = GraphWriter(store, embedder, domain, batch_size, embedder_factory=embedder_factory)
    writer.write(rows["chunk"], rows["entity"], rows["fact"], report)
    report.seconds = time.perf_counter() - start
    return report


def _rename_sources(rows: dict[str, list[dict[str, Any]]], old: str, new: str) -> None:
    """Chunk and document ids start with their domain ("legal:file:record") and are unique
    across domains. An export loaded under another domain name gets ids of that domain,
    so the copy's provenance is its own and dropping either leaves the other whole."""

    def rename(i: str) -> str:
        return f"{new}:{i[len(old) + 1:]}" if i.startswith(f"{old}:") else f"{new}:{i}"

    for c in rows["chunk"]:
        c["id"], c["doc"] = rename(c["id"]), rename(c["doc"])
    for f in rows["fact"]:
        f["chunks"] = [rename(i) for i in f["chunks"]]
