"""What storing 30,000 entity vectors costs in Neo4j, by where the HNSW insert happens.

Issue 41 asks `kgrag bench import` for 20,000 facts/s with vectors: 100k facts and 30k
entities in 5 s. This script times the vector part alone, with real vectors (read from a
domain, never written to it) copied onto scratch nodes, one mode per argument:

    none                       vectors stored, no index covers the nodes (the floor)
    own                        an index of the scratch nodes only, created first (commit-time)
    after                      the same index created after the load, waited for until ONLINE
    shared                     the nodes are :Entity nodes: the shared entity_embedding index
    after:m=8,ef=40            HNSW settings for own/after (vector.hnsw.m, ef_construction)

For own/after it also gives recall@10 of the index against the exact cosine ranking, for
`--queries` vectors of the same domain that are not among the loaded ones. The scratch
nodes and index are removed at the end (and before each mode).

    .venv/bin/python research/vector_index_cost.py none own shared after after:ef=40
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from kgrag.platform import Platform
from kgrag.store import GraphStore

HERE = Path(__file__).resolve().parent / "vector_index_cost"
SCRATCH_DOMAIN = "vector-cost-scratch"
KEYS = {"m": "vector.hnsw.m", "ef": "vector.hnsw.ef_construction"}


def run_mode(store: GraphStore, spec: str, base: np.ndarray, queries: np.ndarray,
             exact: np.ndarray, batch: int) -> str:
    mode, _, settings = spec.partition(":")
    if mode not in ("none", "own", "after", "shared"):
        raise SystemExit(f"unknown mode {mode!r}: none, own, after or shared")
    config: dict[str, object] = {"vector.dimensions": int(base.shape[1]),
                                 "vector.similarity_function": "cosine"}
    for kv in filter(None, settings.split(",")):
        key, _, value = kv.partition("=")
        config[KEYS.get(key, key)] = int(value)
    clean(store)
    if mode == "own":
        store.run("vc/create_index", {"config": config})
        store.run("vc/await_index", {"seconds": 600})
    rows = [{"k": i, "embedding": base[i].tolist()} for i in range(len(base))]
    statement = "vc/create_scratch_shared" if mode == "shared" else "vc/create_scratch"
    load = os.getloadavg()[0]
    start = time.perf_counter()
    for i in range(0, len(rows), batch):
        store.write_batch(statement, rows[i:i + batch], {"domain": SCRATCH_DOMAIN})
    stored = time.perf_counter() - start
    if mode == "after":
        store.run("vc/create_index", {"config": config})
        store.run("vc/await_index", {"seconds": 1800})
    total = time.perf_counter() - start
    text = (f"{spec}: load average {load:.1f}; vectors stored {stored:.1f} s, index "
            f"{total - stored:.1f} s, total {total:.1f} s ({len(base) / total:,.0f} vectors/s)")
    if mode in ("own", "after"):
        found = 0
        for q, best in zip(queries, exact, strict=True):
            got = {r["k"] for r in store.read("vc/nearest", {"k": 10, "vector": q.tolist()})}
            found += len(got & set(best.tolist()))
        text += f"; recall@10 {found / exact.size:.3f} over {len(queries)} queries"
    return text


def clean(store: GraphStore) -> None:
    store.run("vc/drop_index")
    store.run_autocommit("vc/delete_scratch")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("modes", nargs="+")
    ap.add_argument("--domain", default="commonsense", help="read its vectors (read only)")
    ap.add_argument("--n", type=int, default=30_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--batch", type=int, default=1000)
    args = ap.parse_args()
    store = Platform().store
    store.add_statements("vc", HERE)
    vecs = np.asarray([r["embedding"] for r in store.read(
        "vc/source_vectors", {"domain": args.domain, "n": args.n + args.queries})],
        dtype=np.float32)
    if len(vecs) < args.n + args.queries:
        raise SystemExit(f"{args.domain} has only {len(vecs)} vectors")
    base, queries = vecs[:args.n], vecs[args.n:]
    unit = base / np.linalg.norm(base, axis=1, keepdims=True)
    q_unit = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    exact = np.argsort(-(q_unit @ unit.T), axis=1)[:, :10]
    try:
        for spec in args.modes:
            print(run_mode(store, spec, base, queries, exact, args.batch), flush=True)
    finally:
        clean(store)


if __name__ == "__main__":
    main()
