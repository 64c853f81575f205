"""Writing a domain graph to Neo4j, and moving it in and out as compressed JSONL.

All writes are `UNWIND $rows` batches of `MERGE` statements (`cypher/kg/*.cypher`), so
writing the same rows twice creates nothing, and an interrupted import or build can be
re-run. The export format (one JSON object per line, gzip):

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
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from kgrag.embed import Embedder
from kgrag.errors import KgragError
from kgrag.store import GraphStore, WriteCounters

log = logging.getLogger(__name__)
FORMAT = 1


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
    """Batched, idempotent writes of one domain's chunks, entities and facts."""

    def __init__(self, store: GraphStore, embedder: Embedder | None, domain: str,
                 batch_size: int = 5000) -> None:
        self.store, self.embedder, self.domain = store, embedder, domain
        self.batch_size = batch_size
        store.run("kg/merge_domain", {"domain": domain})

    def _send(self, name: str, rows: Iterable[dict[str, Any]], report: WriteReport) -> int:
        n, start = 0, time.perf_counter()
        for sent, counters in self.store.write_batches(
            name, rows, batch_size=self.batch_size, extra={"domain": self.domain}
        ):
            report.add(counters)
            report.embedded += counters.labels_removed  # :Unembedded dropped = vector stored
            n += sent
        stage = name.removeprefix("kg/")
        report.stage_seconds[stage] = (report.stage_seconds.get(stage, 0.0)
                                       + time.perf_counter() - start)
        return n

    def write(self, chunks: Sequence[dict[str, Any]], entities: Sequence[dict[str, Any]],
              facts: Sequence[dict[str, Any]], report: WriteReport) -> None:
        """Write rows in dependency order: chunks, entities, facts, mentions, embeddings."""
        report.chunks += self._send("kg/merge_chunks", chunks, report)
        report.entities += self._send(
            "kg/merge_entities",
            ({"key": e["key"], "name": e["name"], "aliases": e.get("aliases") or []}
             for e in entities), report)
        given = [{"key": e["key"], "embedding": e["emb"]} for e in entities
                 if e.get("emb") is not None]
        if given:
            self._send("kg/set_entity_embeddings", given, report)
        report.facts += self._send("kg/merge_facts", facts, report)
        mentions = {(c, f[k]) for f in facts for c in f["chunks"] for k in ("h", "t")}
        self._send("kg/merge_mentions", ({"chunk": c, "key": key} for c, key in mentions),
                   report)
        self.embed_missing(report)

    def embed_missing(self, report: WriteReport) -> None:
        """Embed the names of entities that have no vector yet (new ones only)."""
        missing = self.store.read("kg/entities_missing_embedding", {"domain": self.domain})
        if not missing:
            return
        if self.embedder is None:
            raise KgragError(f"{len(missing)} entities of {self.domain} need embeddings "
                             "but no embedder was given")
        for start in range(0, len(missing), self.batch_size):
            part = missing[start : start + self.batch_size]
            vecs = self.embedder.embed([m["name"] for m in part])
            rows = [{"key": m["key"], "embedding": v.tolist()}
                    for m, v in zip(part, vecs, strict=True)]
            self._send("kg/set_entity_embeddings", rows, report)


# ---------------------------------------------------------------------- export / import
def encode_vector(v: Sequence[float] | np.ndarray) -> str:
    return base64.b64encode(np.asarray(v, dtype=np.float16).tobytes()).decode()


def decode_vector(s: str) -> list[float]:
    return np.frombuffer(base64.b64decode(s), dtype=np.float16).astype(np.float32).tolist()


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
                 domain: str | None = None, batch_size: int = 5000) -> WriteReport:
    """Load an export into Neo4j (idempotent; embeddings from the file when present)."""
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
        if kind == "entity" and "emb" in rec:
            rec["emb"] = decode_vector(rec["emb"])
        rows[kind].append(rec)
    writer = GraphWriter(store, embedder, domain, batch_size)
    writer.write(rows["chunk"], rows["entity"], rows["fact"], report)
    report.seconds = time.perf_counter() - start
    return report
