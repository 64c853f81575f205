"""The committed decontamination list: knowledge-source records a graph build leaves out.

The shared data README says no dev question is in a knowledge-source file. It does not
hold for MedQuAD: 480 records of `medical/medquad_corpus.jsonl.gz` repeat a
`medquad_dev300` question (389 of them with the very reference answer, under another
question). A graph built from them holds reference answers. `leave_out.json`, beside
this module, lists those records by line, with the sha256 of the file it was made for.

The list is made once from the evaluation files by `research/leave_out.py --write`
(through `textrag.corpora.overlapping_records`), and a data test checks it against the
real files. A graph build and the load of a shared passage corpus (`kgrag corpus load`)
read only the list, never an evaluation file.

    left_out_lines("medical/medquad_corpus.jsonl.gz", Path("../shared/data"))
    # -> frozenset({...480 line numbers...})
    left_out_lines("commonsense/csqa_train.jsonl", Path("../shared/data"))
    # -> frozenset()
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any

from kgrag.errors import KgragError

LIST = Path(__file__).with_name("leave_out.json")
REMAKE = "python research/leave_out.py --write"


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@cache
def _entries(listing: Path) -> dict[str, Any]:
    try:
        files = json.loads(listing.read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError) as e:
        raise KgragError(f"cannot read the leave-out list {listing}: {e}",
                         hint=f"restore it from git, or remake it: {REMAKE}") from e
    return dict(files)


def left_out_records(rel: str, data_dir: Path, listing: Path | None = None
                     ) -> list[dict[str, Any]]:
    """The list's records of the knowledge source `rel` (relative to the data folder), each
    `{"line", "question_id", "reason"}`; empty for a source the list does not name. The file
    must be the one the list was made for (same sha256): a changed file may hold other
    repeats, so the build stops rather than guess."""
    entry = _entries(listing or LIST).get(rel)
    if entry is None:
        return []
    path = data_dir / rel
    found = sha256_of(path)
    if found != entry["sha256"]:
        raise KgragError(f"{path} is not the file the leave-out list was made for (sha256 "
                         f"{found[:12]}…, the list has {entry['sha256'][:12]}…): its records "
                         "that repeat an evaluation question are unknown",
                         hint=f"remake the list from the evaluation files: {REMAKE}")
    return list(entry["records"])


def left_out_lines(rel: str, data_dir: Path, listing: Path | None = None) -> frozenset[int]:
    """The 1-based lines of the knowledge source `rel` that repeat an evaluation question
    (`left_out_records`)."""
    return frozenset(int(r["line"]) for r in left_out_records(rel, data_dir, listing))
