"""Rows for `GraphWriter`: one per node or relationship, grouped to save lookups.

The MERGE statements tolerate repeated rows (a key seen twice, a fact from two chunks);
the CREATE statements of the fast path do not. These functions collapse rows exactly as
the MERGE statements would: the first row's properties win, aliases and chunk ids
accumulate without duplicates, in order.

>>> unique_facts([{"h": "a", "r": "is", "t": "b", "chunks": ["c1"]},
...               {"h": "a", "r": "is", "t": "b", "chunks": ["c2"]}])[0]["chunks"]
['c1', 'c2']
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

Row = dict[str, Any]


def documents(chunks: Iterable[Row]) -> list[Row]:
    """One row per document with its chunks (first row per chunk id and document wins)."""
    docs: dict[str, Row] = {}
    seen: set[str] = set()
    for c in chunks:
        if c["id"] in seen:
            continue
        seen.add(c["id"])
        doc = docs.setdefault(c["doc"], {"doc": c["doc"], "source": c.get("source"),
                                         "title": c.get("title"), "chunks": []})
        doc["chunks"].append({"id": c["id"], "text": c.get("text"),
                              "source": c.get("source"), "line": c.get("line")})
    return list(docs.values())


def unique_entities(entities: Iterable[Row]) -> list[Row]:
    """One row per key: the first name and vector, every alias once."""
    out: dict[str, Row] = {}
    for e in entities:
        row = out.get(e["key"])
        if row is None:
            out[e["key"]] = {**e, "aliases": list(e.get("aliases") or [])}
            continue
        row["aliases"].extend(a for a in e.get("aliases") or [] if a not in row["aliases"])
        if row.get("emb") is None and e.get("emb") is not None:
            row["emb"] = e["emb"]
    return list(out.values())


def unique_facts(facts: Iterable[Row]) -> list[Row]:
    """One row per (head, relation, tail): the first kind and confidence, all chunk ids."""
    out: dict[tuple[str, str, str], Row] = {}
    for f in facts:
        k = (f["h"], f["r"], f["t"])
        row = out.get(k)
        if row is None:
            out[k] = {**f, "chunks": list(dict.fromkeys(f["chunks"]))}
        else:
            row["chunks"].extend(c for c in f["chunks"] if c not in row["chunks"])
    return list(out.values())


def mentions(facts: Iterable[Row]) -> list[Row]:
    """(chunk)-[:MENTIONS]->(entity) pairs of the facts, one row per chunk with its keys."""
    by_chunk: dict[str, set[str]] = {}
    for f in facts:
        for c in f["chunks"]:
            by_chunk.setdefault(c, set()).update((f["h"], f["t"]))
    return [{"chunk": c, "keys": sorted(keys)} for c, keys in by_chunk.items()]
