"""Entity resolution over a built domain graph in Neo4j (`kgrag graph resolve`).

Reads the domain's entities with their vectors, clusters surface variants with
`kg_builder.resolve.resolve_entities` (string similarity + embedding cosine, thresholds in
`ResolveConfig`, never across domains), then merges each cluster in Neo4j with APOC's
`apoc.refactor.mergeNodes` (the safe route: no Cypher is built from entity text), keeps the
canonical name and all aliases, records the merged keys so later builds map them to the
kept node, and collapses facts that became duplicates.

    report = resolve_domain(platform.store, "medical")
    report.merged_nodes

Resolution is not a fixed point: a second pass over a resolved graph can merge a few more
nodes (their merged vectors and aliases put new pairs over the thresholds) and so change the
graph's fingerprint, which evaluation runs record. `resolve_once` therefore resolves once
per graph state: a marker file keeps the fingerprint resolution left, and a call on that
same state does nothing. Builds, `kgrag demo --full` and `kgrag graph resolve --once` use it.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kg_builder.domains import jobs_folder
from kg_builder.fingerprint import graph_fingerprint
from kg_builder.resolve import IDENTITY, ResolveConfig, candidate_pairs, resolve_entities
from kgrag.store import GraphStore

log = logging.getLogger(__name__)
# Over a whole graph, candidates come from blocks: shared content words and spelling
# variants one edit apart (haemoglobin/hemoglobin), which need no vectors. Graphs of at
# most KNN_MAX entities also compare each entity with its 5 nearest neighbours by cosine
# (an exact, all-pairs matrix product: seconds at 20k entities, too slow at 200k). Rule 2
# needs string similarity >= 0.85 anyway, so a pair the blocks miss is rarely a merge.
GRAPH_RESOLVE = ResolveConfig(neighbours=5, spelling=True)
KNN_MAX = 20_000
WORDNET_SOURCE = "wordnet"


@dataclass(frozen=True)
class ResolveReport:
    domain: str
    entities: int
    clusters_merged: int
    merged_nodes: int
    candidate_pairs: int
    dry_run: bool = False
    seconds: float = 0.0
    examples: tuple[dict[str, Any], ...] = ()  # some of the merges: {keep, merge, name}

    def __str__(self) -> str:
        verb = "would merge" if self.dry_run else "merged"
        return (f"{self.domain}: {self.entities:,} entities; {self.candidate_pairs:,} candidate "
                f"pairs; {verb} {self.merged_nodes:,} nodes into {self.clusters_merged:,} "
                f"entities ({self.seconds:.1f} s)")


def resolution_rows(store: GraphStore, domain: str, config: ResolveConfig | None = None
                    ) -> tuple[list[dict[str, Any]], int, int]:
    """The merges resolution would make: rows {keep, merge, name, aliases}.

    Large graphs: the candidate pairs come from the names alone (`candidate_pairs`), and
    only the entities in some pair are read with their vectors and clustered."""
    cfg = config or GRAPH_RESOLVE
    ents = [e for e in store.read("kg/resolution_entities", {"domain": domain})
            if e["embedded"]]
    n = len(ents)
    if n < 2:
        return [], n, 0
    if n > KNN_MAX and cfg.neighbours:
        cfg = cfg.model_copy(update={"neighbours": 0})
    if not cfg.neighbours:
        pairs = candidate_pairs([e["name"] for e in ents], domain, cfg)
        ents = [ents[i] for i in sorted({i for p in pairs for i in p})]
        if len(ents) < 2:
            return [], n, 0
    vecs = _embeddings(store, domain, [e["key"] for e in ents])
    names = [e["name"] for e in ents]
    index = {e["key"]: i for i, e in enumerate(ents)}
    apart = [(index[f["h"]], index[f["t"]]) for f in store.read("kg/edges", {"domain": domain})
             if f["h"] in index and f["t"] in index and not IDENTITY.search(f["r"] or "")]
    lexicon = {r["key"] for r in store.read("kg/source_entity_keys",
                                            {"domain": domain, "source": WORDNET_SOURCE})}
    res = resolve_entities(names, vecs, domain, config=cfg, apart=apart,
                           distinct=[index[k] for k in lexicon if k in index])
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
    return rows, n, res.candidate_pairs


def _embeddings(store: GraphStore, domain: str, keys: list[str], batch: int = 5000
                ) -> np.ndarray:
    """The stored vectors of `keys`, in order (read in batches of keys)."""
    out: dict[str, list[float]] = {}
    for start in range(0, len(keys), batch):
        for r in store.read("kg/entity_embeddings",
                            {"domain": domain, "keys": keys[start : start + batch]}):
            out[r["key"]] = r["embedding"]
    return np.asarray([out[k] for k in keys], dtype=np.float32)


def resolve_domain(store: GraphStore, domain: str, config: ResolveConfig | None = None,
                   *, dry_run: bool = False, examples: int = 0) -> ResolveReport:
    """Resolve a domain's entities in Neo4j; `dry_run`: only find the merges (nothing is
    written), e.g. to time resolution or to preview its merges (`examples` of them)."""
    start = time.perf_counter()
    rows, n, pairs = resolution_rows(store, domain, config)
    shown = tuple({"keep": r["keep"], "merge": r["merge"], "name": r["name"]}
                  for r in rows[:examples])
    if dry_run:
        return ResolveReport(domain, n, len(rows), sum(len(r["merge"]) for r in rows), pairs,
                             True, time.perf_counter() - start, shown)
    merged = 0
    if rows:
        for sent, _ in store.write_batches("kg/merge_resolved", rows, batch_size=500,
                                           extra={"domain": domain}):
            merged += sent
        keys = [r["keep"] for r in rows]
        store.run("kg/dedupe_facts", {"domain": domain, "keys": keys})
        store.run("kg/dedupe_mentions", {"domain": domain, "keys": keys})
    return ResolveReport(domain, n, merged, sum(len(r["merge"]) for r in rows), pairs,
                         False, time.perf_counter() - start, shown)


def resolved_marker(home: Path, domain: str) -> Path:
    """The file holding the fingerprint a domain's last resolution left, in the domain's
    jobs folder (`kg_builder.domains.jobs_folder`, always inside `home/jobs`).

    >>> resolved_marker(Path("/h"), "wikipedia").as_posix()
    '/h/jobs/wikipedia/resolved.fingerprint'
    """
    return jobs_folder(home, domain) / "resolved.fingerprint"


def record_resolved(store: GraphStore, domain: str, home: Path) -> None:
    """Write the marker of `resolve_once` for the graph as it is now. A marker that cannot
    be written costs only a repeated resolution later: it is logged, not raised."""
    marker = resolved_marker(home, domain)
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(str(graph_fingerprint(store, domain)))
    except OSError as e:
        log.warning("cannot write %s (%s): the next build resolves %s again", marker, e,
                    domain)


def resolve_once(store: GraphStore, domain: str, home: Path) -> ResolveReport | None:
    """Resolve the domain unless its last resolution left the graph as it is now (the
    marker holds the current fingerprint); None when it skipped. A build, import or edit
    since then changes the fingerprint, so resolution runs again."""
    marker = resolved_marker(home, domain)
    try:
        last = marker.read_text() if marker.is_file() else None
    except (OSError, UnicodeDecodeError) as e:  # unreadable: resolve, then rewrite it
        log.warning("cannot read %s (%s): resolving %s", marker, e, domain)
        last = None
    if last is not None and last == str(graph_fingerprint(store, domain)):
        return None
    report = resolve_domain(store, domain)
    record_resolved(store, domain, home)
    return report


def merged_key_map(store: GraphStore, domain: str) -> dict[str, str]:
    """Keys merged away by earlier resolutions → the key of the node that absorbed them."""
    return {r["merged"]: r["key"] for r in store.read("kg/merged_keys", {"domain": domain})}
