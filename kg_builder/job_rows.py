"""What a build job writes: extraction results as GraphWriter rows, and co-occurrence edges.

Facts (`:REL`) go through `GraphWriter` with their extraction kind (`x`: "llm", "spacy");
co-occurrence pairs of the fast extractor go to `:CO_OCCURS {domain, weight, chunk_ids}`
edges (`cypher/kg/merge_cooccurs.cypher`), a kind of their own: the MetaKGRAG traversals
and the relation-fact counts of `kgrag graph stats` read only `:REL`.

    fact_rows([Triple("Fox", "lives in", "forest", "spatial", "fox", "forest", "c1")])
    # -> [{'h': 'fox', 'r': 'lives in', 't': 'forest', 'k': 'spatial', 'chunks': ['c1'],
    #      'conf': 1.0, 'x': 'llm'}]
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

from kg_builder.extract import CoOccurrence, Triple
from kg_builder.graph_io import WriteReport, batched
from kg_builder.sources import Chunk
from kgrag.store import GraphStore

Row = dict[str, Any]


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def chunk_row(c: Chunk) -> Row:
    return {"id": c.id, "doc": c.document_id, "text": c.text, "source": c.source,
            "title": c.title, "line": c.line}


def entity_rows(triples: Iterable[Triple], pairs: Iterable[CoOccurrence] = ()) -> list[Row]:
    """One row per entity key: the first display name seen, other spellings as aliases."""
    names: dict[str, str] = {}
    aliases: dict[str, set[str]] = {}
    named = [((t.head_key, t.head), (t.tail_key, t.tail)) for t in triples]
    named += [((p.head_key, p.head), (p.tail_key, p.tail)) for p in pairs]
    for both in named:
        for key, name in both:
            names.setdefault(key, name)
            if name != names[key]:
                aliases.setdefault(key, set()).add(name)
    return [{"key": k, "name": n, "aliases": sorted(aliases.get(k, ()))}
            for k, n in names.items()]


def fact_rows(triples: Iterable[Triple]) -> list[Row]:
    """One row per (head, relation, tail) with all its source chunks and the kind of
    extraction that read it (`x`)."""
    rows: dict[tuple[str, str, str], Row] = {}
    for t in triples:
        row = rows.setdefault((t.head_key, t.relation, t.tail_key), {
            "h": t.head_key, "r": t.relation, "t": t.tail_key, "k": t.kind, "chunks": [],
            "conf": t.confidence, "x": t.extractor})
        if t.record_id not in row["chunks"]:
            row["chunks"].append(t.record_id)
        row["conf"] = max(row["conf"], t.confidence)
    return list(rows.values())


def cooccurrence_rows(pairs: Iterable[CoOccurrence]) -> list[Row]:
    """One row per entity pair (keys ordered) with its chunks and per-chunk weights."""
    rows: dict[tuple[str, str], Row] = {}
    for p in pairs:
        h, t = sorted((p.head_key, p.tail_key))
        row = rows.setdefault((h, t), {"h": h, "t": t, "chunks": [], "ws": []})
        if p.record_id in row["chunks"]:
            row["ws"][row["chunks"].index(p.record_id)] += p.weight
        else:
            row["chunks"].append(p.record_id)
            row["ws"].append(p.weight)
    return list(rows.values())


def write_cooccurrences(store: GraphStore, domain: str, pairs: Sequence[CoOccurrence],
                        fact_keys: dict[str, set[str]], report: WriteReport,
                        batch_size: int = 5000) -> None:
    """MERGE the pairs' `:CO_OCCURS` edges (weights add up once per chunk, so a re-run
    writes nothing) and the `MENTIONS` of their entities that the facts did not give.
    The entities exist: they were in the rows written with the facts."""
    extra = {"domain": domain}
    for batch in batched(cooccurrence_rows(pairs), batch_size):
        report.add(store.write_batch("kg/merge_cooccurs", batch, extra)[1])
    by_chunk: dict[str, set[str]] = {}
    for p in pairs:
        by_chunk.setdefault(p.record_id, set()).update((p.head_key, p.tail_key))
    mentions = [{"chunk": c, "keys": sorted(keys - fact_keys.get(c, set()))}
                for c, keys in by_chunk.items()]
    for batch in batched((m for m in mentions if m["keys"]), max(1, batch_size // 10)):
        report.add(store.write_batch("kg/merge_mentions", batch, extra)[1])
