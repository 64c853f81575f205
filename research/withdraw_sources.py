"""Take sources that are not knowledge sources out of a committed graph export.

What `kgrag build` does to a live graph (`BuildJob._withdraw`), done to an export file:
the chunks of documents read from the named sources are dropped, then every fact and
co-occurrence pair left without a chunk, then every entity that had facts or pairs and
has none left. The meta line records what was withdrawn and how much.

    python research/withdraw_sources.py data/graphs/legal.jsonl.gz \\
        --source-glob 'legalbench/*/test.jsonl'
"""

from __future__ import annotations

import argparse
import fnmatch
import gzip
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any


def withdraw(rows: list[dict[str, Any]], pattern: str) -> tuple[list[dict[str, Any]], Counter]:
    """`rows` without the chunks of sources matching `pattern` and what only they held."""
    gone = {r["id"] for r in rows if r["type"] == "chunk"
            and fnmatch.fnmatchcase(r.get("source", ""), pattern)}
    counts: Counter = Counter(chunks=len(gone))
    used_before: set[str] = set()
    used_after: set[str] = set()
    kept: list[dict[str, Any]] = []
    for r in rows:
        if r["type"] == "chunk" and r["id"] in gone:
            continue
        if r["type"] in ("fact", "cooccur"):
            used_before.update((r["h"], r["t"]))
            chunks = [c for c in r["chunks"] if c not in gone]
            if not chunks:
                counts[f"{r['type']}s"] += 1
                continue
            r = {**r, "chunks": chunks}
            used_after.update((r["h"], r["t"]))
        kept.append(r)
    orphans = used_before - used_after
    counts["entities"] = sum(1 for r in kept if r["type"] == "entity" and r["key"] in orphans)
    kept = [r for r in kept if not (r["type"] == "entity" and r["key"] in orphans)]
    kept = [dict(r) if r["type"] == "meta" else r for r in kept]
    for r in kept:
        if r["type"] == "meta":
            r["sources"] = [s for s in r.get("sources", [])
                            if not fnmatch.fnmatchcase(s, pattern)]
            r["withdrawn"] = r.get("withdrawn", []) + [{"sources": pattern, **counts}]
            if "counts" in r:  # the import checks these against the lines it reads
                r["counts"] = {k: sum(1 for x in kept if x["type"] == _TYPE[k])
                               for k in r["counts"]}
    return kept, counts


_TYPE = {"entities": "entity", "facts": "fact", "chunks": "chunk", "cooccurs": "cooccur"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("export", type=Path)
    ap.add_argument("--source-glob", required=True, help="source names to withdraw")
    args = ap.parse_args()
    with gzip.open(args.export, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    kept, counts = withdraw(rows, args.source_glob)
    tmp = args.export.with_suffix(".tmp")
    with gzip.open(tmp, "wt", encoding="utf-8") as f:
        for r in kept:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    os.replace(tmp, args.export)
    print(f"{args.export}: withdrew {dict(counts)}")


if __name__ == "__main__":
    main()
