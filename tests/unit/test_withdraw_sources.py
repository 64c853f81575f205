"""research/withdraw_sources.py: the chunks of withdrawn sources go, then the facts and
pairs only they supported, then the entities left with neither; the rest is untouched."""

from __future__ import annotations

import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
withdraw = runpy.run_path(str(ROOT / "research" / "withdraw_sources.py"))["withdraw"]


def test_withdraw_takes_back_only_what_the_source_alone_held() -> None:
    rows = [
        {"type": "meta", "sources": ["kb.jsonl", "bench/a/test.jsonl"],
         "counts": {"entities": 4, "facts": 2, "chunks": 2, "cooccurs": 1}},
        {"type": "chunk", "id": "k:1", "source": "kb.jsonl"},
        {"type": "chunk", "id": "t:1", "source": "bench/a/test.jsonl"},
        {"type": "entity", "key": "fox"}, {"type": "entity", "key": "vole"},
        {"type": "entity", "key": "mice"}, {"type": "entity", "key": "lonely"},
        {"type": "fact", "h": "fox", "t": "mice", "chunks": ["k:1", "t:1"]},
        {"type": "fact", "h": "fox", "t": "vole", "chunks": ["t:1"]},
        {"type": "cooccur", "h": "vole", "t": "mice", "chunks": ["t:1"]},
    ]
    kept, counts = withdraw(rows, "bench/*/test.jsonl")
    assert dict(counts) == {"chunks": 1, "facts": 1, "cooccurs": 1, "entities": 1}
    assert [r["id"] for r in kept if r["type"] == "chunk"] == ["k:1"]
    assert [r["chunks"] for r in kept if r["type"] == "fact"] == [["k:1"]]
    # an entity that never had a fact is not the withdrawal's to delete
    assert {r["key"] for r in kept if r["type"] == "entity"} == {"fox", "mice", "lonely"}
    meta = kept[0]
    assert meta["sources"] == ["kb.jsonl"]
    assert meta["counts"] == {"entities": 3, "facts": 1, "chunks": 1, "cooccurs": 0}
    assert rows[7]["chunks"] == ["k:1", "t:1"]  # the input rows are not changed
    assert rows[0]["sources"] == ["kb.jsonl", "bench/a/test.jsonl"]
