"""`kgrag bench import`: Neo4j write throughput for pre-extracted triples.

Generates a synthetic export (random entity names, facts with provenance, float16
vectors), imports it into a scratch domain (new, so the CREATE fast path), times the
graph fingerprint an evaluation run takes of it, imports it again (the MERGE path) to
show the idempotence counters, and deletes the domain. Numbers go to the README.
"""

from __future__ import annotations

import gzip
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from rich.console import Console

from kg_builder.fingerprint import graph_fingerprint
from kg_builder.graph_io import FORMAT, WORKERS, encode_vector, import_graph
from kgrag.store import GraphStore


def synthetic_export(path: Path, n_facts: int, n_entities: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    n_chunks = max(1, n_facts // 5)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write(json.dumps({"type": "meta", "format": FORMAT, "domain": "bench-import",
                            "counts": {"entities": n_entities, "facts": n_facts,
                                       "chunks": n_chunks}}) + "\n")
        for c in range(n_chunks):
            f.write(json.dumps({"type": "chunk", "id": f"bench:c{c}", "doc": f"bench:d{c // 10}",
                                "text": f"synthetic chunk {c}", "source": "bench",
                                "title": "", "line": c}) + "\n")
        vecs = rng.standard_normal((n_entities, 384)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        for e in range(n_entities):
            f.write(json.dumps({"type": "entity", "key": f"entity {e}", "name": f"Entity {e}",
                                "aliases": [], "emb": encode_vector(vecs[e])}) + "\n")
        heads = rng.integers(0, n_entities, n_facts)
        tails = rng.integers(0, n_entities, n_facts)
        preds = rng.integers(0, 50, n_facts)
        for i in range(n_facts):
            f.write(json.dumps({"type": "fact", "h": f"entity {heads[i]}", "r": f"rel {preds[i]}",
                                "t": f"entity {tails[i]}", "k": "conceptual",
                                "chunks": [f"bench:c{i // 5}"], "conf": 1.0}) + "\n")


def bench_import(store: GraphStore, console: Console, n_facts: int, n_entities: int,
                 workers: int = WORKERS) -> None:
    domain = "bench-import"
    load_before = os.getloadavg()[0]  # the 2 cores are shared: the figures scale with it
    store.run_autocommit("graph/delete_domain", {"domain": domain})
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.jsonl.gz"
        synthetic_export(path, n_facts, n_entities)
        try:
            first = import_graph(store, None, path, domain, workers=workers)
            fingerprint = _time_fingerprint(store, domain)
            start = time.perf_counter()
            second = import_graph(store, None, path, domain)
            second.seconds = time.perf_counter() - start
        finally:
            store.run_autocommit("graph/delete_domain", {"domain": domain})
    console.print(f"load average (1 min): {load_before:.1f} at the start, "
                  f"{os.getloadavg()[0]:.1f} at the end, on {os.cpu_count()} cores")
    console.print(f"first import ({'CREATE fast path' if first.fast_path else 'MERGE'}, "
                  f"{workers} transaction(s) in flight): {first}")
    console.print(f"second import ({'CREATE' if second.fast_path else 'MERGE'}): created "
                  f"{second.nodes_created} nodes, {second.relationships_created} relationships "
                  f"({second.seconds:.1f} s)")
    vectors = (first.stage_seconds.get("set_entity_embeddings", 0.0)
               + first.stage_seconds.get("create_entities_embedded", 0.0))
    console.print(f"whole import: {first.facts / first.seconds:,.0f} facts/s "
                  f"({first.facts:,} facts, {first.entities:,} entities with vectors, "
                  f"{first.chunks:,} chunks, in {first.seconds:.1f} s, file parsing included)")
    console.print(f"graph fingerprint (eval runs record it): {fingerprint}")
    st = first.stage_seconds
    console.print("per stage: " + ", ".join(f"{k} {v:.1f} s" for k, v in st.items()))
    console.print(f"without the vector-indexed entity stage (chunks, facts, mentions, parsing): "
                  f"{first.facts / (first.seconds - vectors):,.0f} facts/s; "
                  f"vector-indexed entities: {first.entities / vectors:,.0f}/s")


def _time_fingerprint(store: GraphStore, domain: str, runs: int = 5) -> str:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fp = graph_fingerprint(store, domain)
        times.append(time.perf_counter() - start)
    return (f"median {statistics.median(times):.2f} s (min {min(times):.2f}, max "
            f"{max(times):.2f}, n={runs}) for {fp}")
