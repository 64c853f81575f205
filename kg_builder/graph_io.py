# Over 400 lines: writer, export and import share one row format and vector encoding.
"""Writing a domain graph to Neo4j, and moving it in and out as compressed JSONL.

All writes are `UNWIND $rows` batches (`cypher/kg/*.cypher`): `CREATE` statements while
the domain is new, `MERGE` statements once it is not, so writing the same rows twice
creates nothing, and an interrupted import or build can be re-run. The export format
(one JSON object per line, gzip):

    {"type": "meta", "domain": ..., "format": 1, "model": ..., "command": ..., ...}
    {"type": "chunk", "id", "doc", "text", "source", "title", "line"}
    {"type": "entity", "key", "name", "aliases", "emb"}     # emb: optional, base64 float16
                                                             # or "i8:<scale>:<base64 int8>"
    {"type": "fact", "h", "r", "t", "k", "chunks", "conf", "x"}

An export over `PART_BYTES` continues in `<file>.part2`, `<file>.part3`, … (see
`export_graph`).

    report = import_graph(store, embedder, Path("data/graphs/commonsense.jsonl.gz"))
    report.facts
"""

from __future__ import annotations

import base64
import gzip
import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

try:  # twice as fast at parsing an export's lines (installed with the langchain extra);
    # its JSONDecodeError is json's
    from orjson import loads as _loads
except ImportError:  # the same records, parsed by the standard library
    from json import loads as _loads  # type: ignore[assignment]

from kg_builder.domains import check_not_reserved
from kg_builder.rows import documents, mentions, unique_entities, unique_facts
from kgrag.embed import Embedder
from kgrag.errors import KgragError
from kgrag.store import GraphStore, WriteCounters

log = logging.getLogger(__name__)
FORMAT = 1
# Vectors per transaction: larger batches were slower on the 1 GB-heap server (measured:
# 30,000 in one transaction took 4x as long as batches of 1,000).
VECTOR_BATCH = 1000
# Transactions in flight at once for the stages whose batches touch disjoint nodes (new
# documents and chunks, new entities with their vectors, vectors of distinct entities):
# the server indexes one batch (HNSW insertion is single-threaded per transaction) while
# the client packs the next. Facts and mentions share entities between batches (their
# relationship writes lock both ends), so they stay one at a time.
WORKERS = 2
# Compressed bytes per file of an export (git hosts refuse files over 50 MB).
PART_BYTES = 45_000_000
# Entities (with their vectors) an export reads per round trip.
EXPORT_PAGE = 20_000
# The fields without which an export's record cannot be written (else it is a broken line).
REQUIRED = {"chunk": ("id", "doc"), "entity": ("key", "name"),
            "fact": ("h", "r", "t", "chunks"), "cooccur": ("h", "t", "chunks")}
# Fact fields every exported fact line keeps, null or not (the format of FORMAT 1).
FACT_FIELDS = frozenset({"h", "r", "t", "k", "chunks", "conf", "x"})


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
    redirected: int = 0  # imported entities that resolution had merged into another node

    def add(self, c: WriteCounters) -> None:
        self.nodes_created += c.nodes_created
        self.relationships_created += c.relationships_created

    def __str__(self) -> str:
        rate = self.facts / self.seconds if self.seconds else 0.0
        text = (f"{self.domain}: {self.entities:,} entities, {self.facts:,} facts, "
                f"{self.chunks:,} chunks sent; created {self.nodes_created:,} nodes and "
                f"{self.relationships_created:,} relationships; embedded {self.embedded:,}; "
                f"{self.seconds:.1f} s ({rate:,.0f} facts/s)")
        if self.redirected:
            text += (f"; {self.redirected:,} entities were merged into others by entity "
                     "resolution: their facts went to those")
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

        GraphWriter(store, None, "legal", embedder_factory=lambda: p.embedder).write(
            chunks, entities, facts, WriteReport("legal"))
    """

    def __init__(self, store: GraphStore, embedder: Embedder | None, domain: str,
                 batch_size: int = 5000, *,
                 embedder_factory: Callable[[], Embedder] | None = None,
                 workers: int = WORKERS, embed: bool = True) -> None:
        self.store, self.embedder, self.domain = store, embedder, domain
        self.embedder_factory = embedder_factory
        # embed=False: new entities keep :Unembedded; `kgrag graph embed` stores their
        # vectors later in one pass (a big build spends most of its time embedding names).
        self.embed = embed
        self.batch_size = batch_size
        self.workers = max(1, workers)
        store.run("kg/merge_domain", {"domain": domain})

    def _send(self, name: str, rows: Iterable[dict[str, Any]], report: WriteReport,
              batch_size: int | None = None, *, parallel: bool = False,
              embedded: int = 0) -> list[dict[str, Any]]:
        """Write `rows` in batches; returns the rows the statement returns (if any).
        `parallel`: up to `workers` batches in flight (only for batches that touch
        disjoint nodes). `embedded`: vectors each row stores (when the statement does not
        say so by removing :Unembedded)."""
        out: list[dict[str, Any]] = []
        start = time.perf_counter()
        params = {"domain": self.domain}
        batches = batched(rows, batch_size or self.batch_size)
        if parallel and self.workers > 1:
            with ThreadPoolExecutor(self.workers) as pool:
                results = list(pool.map(
                    lambda b: (len(b), *self.store.write_batch(name, b, params)), batches))
        else:
            results = [(len(b), *self.store.write_batch(name, b, params)) for b in batches]
        for n, records, counters in results:
            report.add(counters)
            report.embedded += counters.labels_removed  # :Unembedded dropped = vector stored
            report.embedded += embedded * n
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
        if self.embed:
            self.embed_missing(report,
                               {e["key"]: e["emb"] for e in ents if e.get("emb") is not None})

    def _create(self, docs: list[dict[str, Any]], ents: list[dict[str, Any]],
                facts: list[dict[str, Any]], report: WriteReport) -> None:
        group = max(1, self.batch_size // 10)  # a document or chunk row holds ~10 more
        self._send("kg/create_documents", docs, report, group, parallel=True)
        # Entities that come with a vector are created with it (one pass, no :Unembedded
        # label to add and remove); the others are embedded afterwards (embed_missing).
        with_vec = [e for e in ents if e.get("emb") is not None]
        ids = {r["key"]: r["id"] for r in self._send(
            "kg/create_entities_embedded",
            ({"key": e["key"], "name": e["name"], "aliases": e["aliases"],
              "embedding": as_vector(e["emb"])} for e in with_vec),
            report, VECTOR_BATCH, parallel=True, embedded=1)}
        ids.update({r["key"]: r["id"] for r in self._send(
            "kg/create_entities",
            ({"key": e["key"], "name": e["name"], "aliases": e["aliases"]} for e in ents
             if e.get("emb") is None), report, parallel=True)})
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
                      given: Mapping[str, str | Sequence[float]] | None = None,
                      progress: bool = False) -> None:
        """Store vectors for entities that have none yet: from `given` (key → vector or
        base64 float16 text), else computed from their names. Resumable: what is stored
        stays stored (`progress`: a bar over the names to embed)."""
        missing = self.store.read("kg/entities_missing_embedding", {"domain": self.domain})
        given = given or {}
        self._send("kg/set_entity_embeddings",
                   ({"key": m["key"], "embedding": as_vector(given[m["key"]])}
                    for m in missing if m["key"] in given), report, VECTOR_BATCH,
                   parallel=True)
        rest = [m for m in missing if m["key"] not in given]
        if not rest:
            return
        embedder = self.embedder or (self.embedder_factory() if self.embedder_factory else None)
        if embedder is None:
            raise KgragError(f"{len(rest)} entities of {self.domain} need embeddings "
                             "but no embedder was given")
        self.embedder = embedder
        bar = tqdm(total=len(rest), unit="name", desc=f"embed {self.domain}",
                   disable=not progress, dynamic_ncols=True)
        for start in range(0, len(rest), self.batch_size):
            part = rest[start : start + self.batch_size]
            began = time.perf_counter()
            vecs = embedder.embed([m["name"] for m in part])
            report.stage_seconds["embed"] = (report.stage_seconds.get("embed", 0.0)
                                             + time.perf_counter() - began)
            self._send("kg/set_entity_embeddings",
                       ({"key": m["key"], "embedding": v.tolist()}
                        for m, v in zip(part, vecs, strict=True)), report, VECTOR_BATCH,
                       parallel=True)
            bar.update(len(part))
        bar.close()


# ---------------------------------------------------------------------- export / import
def encode_vector(v: Sequence[float] | np.ndarray) -> str:
    return base64.b64encode(np.asarray(v, dtype=np.float16).tobytes()).decode()


def decode_vector(s: str) -> list[float]:
    """A vector from an export: base64 float16, or "i8:<scale>:<base64 int8>"."""
    if s.startswith("i8:"):
        _, scale, data = s.split(":", 2)
        v = np.frombuffer(base64.b64decode(data), dtype=np.int8).astype(np.float32)
        v *= float(scale)
        norm = float(np.linalg.norm(v))
        return (v / norm if norm else v).tolist()
    return np.frombuffer(base64.b64decode(s), dtype=np.float16).astype(np.float32).tolist()


def encode_vector_int8(v: Sequence[float] | np.ndarray) -> str:
    """A unit vector as int8 with one scale: 384 bytes instead of 768 (float16), and a
    cosine of more than 0.9999 to the original; decoded vectors are normalised again."""
    a = np.asarray(v, dtype=np.float32)
    peak = float(np.abs(a).max()) or 1.0
    q = np.round(a * (127.0 / peak)).astype(np.int8)
    return f"i8:{peak / 127.0:.9g}:" + base64.b64encode(q.tobytes()).decode()


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
                 with_embeddings: bool = True, part_bytes: int = PART_BYTES, *,
                 int8: bool = False) -> dict[str, int]:
    """Write the domain's chunks, entities and facts to `path` (gzip JSONL), atomically.

    An export larger than `part_bytes` (compressed) continues in `<path>.part2`,
    `<path>.part3`, … (each a gzip file of whole lines; git hosts refuse files over
    50 MB); `read_export` reads them in order after `path`. Entities are read a page at a
    time (`kg/export_entities_page`), so a graph of 400k vectors fits in memory; facts
    leave out the fields they do not set (an imported knowledge base's score, freq,
    assertions)."""
    params = {"domain": domain}
    n_entities = store.read("kg/count_entities", params)[0]["entities"]
    if not n_entities:
        raise KgragError(f"domain {domain!r} has no entities to export",
                         hint=f"build it first: kgrag build --domain {domain}")
    facts = store.read("kg/export_facts", params)
    chunks = store.read("kg/export_chunks", params)
    cooccurs = store.read("kg/export_cooccurs", params)
    counts = {"entities": n_entities, "facts": len(facts), "chunks": len(chunks),
              "cooccurs": len(cooccurs)}
    head = {"type": "meta", "format": FORMAT, "domain": domain, **meta, "counts": counts}
    written = 0

    def entity_lines() -> Iterator[str]:
        nonlocal written
        after = ""
        while page := store.read("kg/export_entities_page",
                                 {**params, "after": after, "limit": EXPORT_PAGE}):
            for e in page:
                emb = e.pop("embedding")
                if with_embeddings and emb is not None:
                    e["emb"] = encode_vector_int8(emb) if int8 else encode_vector(emb)
                yield json.dumps({"type": "entity", **e}, ensure_ascii=False) + "\n"
            written += len(page)
            after = page[-1]["key"]

    def lines() -> Iterator[str]:
        yield json.dumps(head, ensure_ascii=False) + "\n"
        for c in chunks:
            yield json.dumps({"type": "chunk", **c}, ensure_ascii=False) + "\n"
        yield from entity_lines()
        if written != n_entities:  # the domain changed while it was read: write nothing
            raise KgragError(f"{domain}: {written:,} entities read, {n_entities:,} counted",
                             hint="export again when no build or import writes to it")
        for r in facts:
            fact = {k: v for k, v in r.items() if v is not None or k in FACT_FIELDS}
            yield json.dumps({"type": "fact", **fact}, ensure_ascii=False) + "\n"
        for r in cooccurs:
            yield json.dumps({"type": "cooccur", **r}, ensure_ascii=False) + "\n"

    _write_parts(path, lines(), part_bytes)
    return counts


def part_paths(path: Path) -> list[Path]:
    """`path` and its continuation parts (`<path>.part2`, …) that exist, in order."""
    out = [path]
    while (nxt := path.with_name(f"{path.name}.part{len(out) + 1}")).is_file():
        out.append(nxt)
    return out


def _write_parts(path: Path, lines: Iterable[str], part_bytes: int) -> None:
    """Write gzip parts of at most ~`part_bytes` compressed bytes; rename into place only
    when all are written, and remove stale parts of an earlier, larger export."""
    path.parent.mkdir(parents=True, exist_ok=True)
    names = [path]
    tmps: list[Path] = []
    raw = None
    out = None
    try:
        for line in lines:
            if out is None or raw.tell() > part_bytes:  # type: ignore[union-attr]
                if out is not None:
                    out.close()
                    raw.close()  # type: ignore[union-attr]
                    names.append(path.with_name(f"{path.name}.part{len(names) + 1}"))
                tmp = names[-1].with_name(names[-1].name + ".tmp")
                tmps.append(tmp)
                raw = open(tmp, "wb")  # noqa: SIM115 - closed when the part is full
                out = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0)
            out.write(line.encode("utf-8"))
    finally:
        if out is not None:
            out.close()
            raw.close()  # type: ignore[union-attr]
    for tmp, final in zip(tmps, names, strict=True):
        tmp.rename(final)
    for stale in part_paths(path)[len(names):]:
        stale.unlink()


def read_export(path: Path
                ) -> tuple[dict[str, Any], Iterator[tuple[int, dict[str, Any] | None]]]:
    """The meta record and (line number, record) pairs; a broken line gives None. Lines
    are numbered across the parts of a multi-part export."""
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
        n = 1
        for i, part in enumerate(part_paths(path)):
            with gzip.open(part, "rb") as f:
                if i == 0:
                    f.readline()
                for line in f:
                    n += 1
                    try:
                        yield n, _loads(line)
                    except (json.JSONDecodeError, UnicodeDecodeError):
                        yield n, None

    return meta, records()


def import_graph(store: GraphStore, embedder: Embedder | None, path: Path,
                 domain: str | None = None, batch_size: int = 5000, *,
                 embedder_factory: Callable[[], Embedder] | None = None,
                 workers: int = WORKERS) -> WriteReport:
    """Load an export into Neo4j (idempotent). Vectors come from the file when it has them;
    the embedder (or `embedder_factory`, called only then) embeds the entities it lacks."""
    meta, records = read_export(path)
    domain = domain or meta["domain"]
    if domain != meta["domain"]:  # the paper-protocol graph is neither renamed nor added to
        for reserved in (domain, meta["domain"]):
            check_not_reserved(reserved, f"importing {meta['domain']!r} as {domain!r}")
    report = WriteReport(domain)
    start = time.perf_counter()
    _check_parts(path, meta)
    from kg_builder.graph_stream import stream_records
    from kg_builder.resolution import merged_key_map

    key_map = merged_key_map(store, domain)
    rename = _renamer(meta["domain"], domain) if domain != meta["domain"] else None
    total = sum(meta.get("counts", {}).values()) or None
    bar = tqdm(records, total=total, unit="rec", desc=f"import {path.name}", disable=None,
               leave=False)
    writer = GraphWriter(store, embedder, domain, batch_size, embedder_factory=embedder_factory,
                         workers=workers)
    stream_records(writer, (_mapped(n, rec, key_map, rename, report) for n, rec in bar),
                   report)
    report.seconds = time.perf_counter() - start
    return report


def _check_parts(path: Path, meta: dict[str, Any]) -> None:
    """Refuse an export whose parts hold fewer lines than its meta line counts (a part is
    missing), before anything is written."""
    expected = sum(n for k, n in (meta.get("counts") or {}).items()
                   if k in ("chunks", "entities", "facts", "cooccurs"))
    lines = 0
    for part in part_paths(path):
        with gzip.open(part, "rb") as f:
            while block := f.read(1 << 24):
                lines += block.count(b"\n")
    if lines - 1 < expected:
        raise KgragError(f"{path} holds fewer records than its meta line says ({lines - 1:,} "
                         f"lines, {expected:,} records): a part of the export is missing",
                         hint=f"the parts are {path.name}, {path.name}.part2, …; fetch all")


def _mapped(n: int, rec: dict[str, Any] | None, key_map: dict[str, str],
            rename: Callable[[str], str] | None, report: WriteReport
            ) -> tuple[int, dict[str, Any] | None]:
    """One record as it is written: ids renamed for another domain name, keys that entity
    resolution merged away in the target domain mapped to their survivors (as builds do),
    so importing into a resolved domain never brings merged nodes back."""
    if not isinstance(rec, dict):
        return n, rec
    kind = rec.get("type")
    if any(rec.get(k) is None for k in REQUIRED.get(kind, ())):  # type: ignore[arg-type]
        return n, None  # a record without its keys: a broken line, skipped and reported
    if rename is not None:
        if kind == "chunk":
            rec["id"], rec["doc"] = rename(rec["id"]), rename(rec["doc"])
        elif kind in ("fact", "cooccur"):
            rec["chunks"] = [rename(i) for i in rec["chunks"]]
    if key_map:
        if kind == "entity" and rec.get("key") in key_map:
            report.redirected += 1
            return n, {"type": "skip"}
        if kind in ("fact", "cooccur"):
            rec["h"], rec["t"] = key_map.get(rec["h"], rec["h"]), key_map.get(rec["t"], rec["t"])
            if rec["h"] == rec["t"]:  # both ends merged into one node: no self-loop
                return n, {"type": "skip"}
    return n, rec


def _renamer(old: str, new: str) -> Callable[[str], str]:
    """Chunk and document ids start with their domain ("legal:file:record") and are unique
    across domains. An export loaded under another domain name gets ids of that domain,
    so the copy's provenance is its own and dropping either leaves the other whole."""

    def rename(i: str) -> str:
        return f"{new}:{i[len(old) + 1:]}" if i.startswith(f"{old}:") else f"{new}:{i}"

    return rename
