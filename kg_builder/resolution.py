"""Entity resolution over a built domain graph in Neo4j (`kgrag graph resolve`).

Reads the domain's entities with their vectors, clusters surface variants with
`kg_builder.resolve.resolve_entities` (string similarity + embedding cosine, thresholds in
`ResolveConfig`, never across domains), then merges each cluster in Neo4j with APOC's
`apoc.refactor.mergeNodes` (the safe route: no Cypher is built from entity text), keeps the
canonical name and all aliases, records the merged keys so later builds map them to the
kept node, and collapses facts that became duplicates.

>>> report = resolve_domain(platform.store, "medical")
>>> report.merged_nodes
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from kg_builder.resolve import IDENTITY, ResolveConfig, resolve_entities
from kgrag.store import GraphStore

log = logging.getLogger(__name__)
# Over a whole graph, also compare each entity with its 5 nearest neighbours by cosine, so
# spelling variants without a shared word (haemoglobin/hemoglobin) become candidates.
GRAPH_RESOLVE = ResolveConfig(neighbours=5)


@dataclass(frozen=True)
class ResolveReport:
    domain: str
    entities: int
    clusters_merged: int
    merged_nodes: int
    candidate_pairs: int

    def __str__(self) -> str:
        return (f"{self.domain}: {self.entities:,} entities; {self.candidate_pairs:,} candidate "
                f"pairs; merged {self.merged_nodes:,} nodes into {self.clusters_merged:,} "
                "entities")


def resolution_rows(store: GraphStore, domain: str, config: ResolveConfig | None = None
                    ) -> tuple[list[dict[str, Any]], int, int]:
    """The merges resolution would make: rows {keep, merge, name, aliases}."""
    ents = [e for e in store.read("kg/export_entities", {"domain": domain})
            if e["embedding"] is not None]
    if len(ents) < 2:
        return [], len(ents), 0
    names = [e["name"] for e in ents]
    vecs = np.asarray([e["embedding"] for e in ents], dtype=np.float32)
    index = {e["key"]: i for i, e in enumerate(ents)}
    apart = [(index[f["h"]], index[f["t"]]) for f in store.read("kg/edges", {"domain": domain})
             if f["h"] in index and f["t"] in index and not IDENTITY.search(f["r"] or "")]
    res = resolve_entities(names, vecs, domain, config=config or GRAPH_RESOLVE, apart=apart)
    rows = []
    for cluster in res.clusters:
        if len(cluster.members) < 2:
            continue
        keys = [ents[i]["key"] for i in cluster.members]
        keep = cluster.key if cluster.key in keys else keys[0]
        aliases = sorted({a for i in cluster.members for a in (ents[i]["aliases"] or [])}
                         | set(cluster.aliases) | {ents[i]["name"] for i in cluster.members}
                         - {cluster.canonical})
        rows.append({"keep": keep, "merge": [k for k in keys if k != keep],
                     "name": cluster.canonical, "aliases": aliases})
    return rows, len(ents), res.candidate_pairs


def resolve_domain(store: GraphStore, domain: str, config: ResolveConfig | None = None
                   ) -> ResolveReport:
    rows, n, pairs = resolution_rows(store, domain, config)
    merged = 0
    if rows:
        for sent, _ in store.write_batches("kg/merge_resolved", rows, batch_size=500,
                                           extra={"domain": domain}):
            merged += sent
        keys = [r["keep"] for r in rows]
        store.run("kg/dedupe_facts", {"domain": domain, "keys": keys})
        store.run("kg/dedupe_mentions", {"domain": domain, "keys": keys})
    return ResolveReport(domain, n, merged, sum(len(r["merge"]) for r in rows), pairs)


def merged_key_map(store: GraphStore, domain: str) -> dict[str, str]:
    """Keys merged away by earlier resolutions → the key of the node that absorbed them."""
    return {r["merged"]: r["key"] for r in store.read("kg/merged_keys", {"domain": domain})}
