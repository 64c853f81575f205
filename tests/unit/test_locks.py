"""flock-based locks: exclusive while held, free once released or the process is gone;
lines appended by several processes stay whole."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kgrag.locks import append_line, exclusive, is_locked, reading


class Busy(Exception):
    pass


def test_a_held_lock_refuses_a_second_holder_and_frees_on_release(tmp_path: Path) -> None:
    path = tmp_path / "job" / ".lock"
    assert not is_locked(path)
    with exclusive(path, Busy):
        assert is_locked(path)
        with pytest.raises(Busy), exclusive(path, Busy):
            pass
    assert not is_locked(path)


def test_a_lock_dies_with_its_process(tmp_path: Path) -> None:
    path = tmp_path / ".lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from kgrag.locks import exclusive\n"
         f"with exclusive(__import__('pathlib').Path({str(path)!r}), RuntimeError):\n"
         "    print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert is_locked(path)
    finally:
        holder.kill()
        holder.wait()
    assert not is_locked(path)


WRITER = """
import sys
from pathlib import Path
from kgrag.locks import append_line
path, tag = Path(sys.argv[1]), sys.argv[2]
with path.open("a", encoding="utf-8") as f:
    for i in range(40):
        append_line(f, '{"w": "%s", "i": %d, "pad": "%s"}' % (tag, i, tag * 300_000))
"""


def test_lines_appended_by_three_processes_at_once_stay_whole(tmp_path: Path) -> None:
    """Two `kgrag eval` of other methods append long prediction lines to one file: every
    line arrives whole, once, in each writer's order."""
    path = tmp_path / "predictions.jsonl"
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), tag])
               for tag in "abc"]
    for w in writers:
        assert w.wait(timeout=120) == 0
    with reading(path) as f:
        rows = [json.loads(line) for line in f]
    assert sorted((r["w"], r["i"]) for r in rows) == [(t, i) for t in "abc" for i in range(40)]
    assert all(r["pad"] == r["w"] * 300_000 for r in rows)
    with path.open("a", encoding="utf-8") as f:
        append_line(f, "{}")
    assert path.read_text(encoding="utf-8").endswith("}\n{}\n")


def test_an_append_waits_for_the_holder_of_the_files_lock(tmp_path: Path) -> None:
    """The lock is what keeps lines whole where one write can be cut (CPython writes such
    a line in one write(), atomic on a local file system; not on every file system)."""
    import fcntl
    import time

    path = tmp_path / "predictions.jsonl"
    path.write_text("")
    with path.open("a", encoding="utf-8") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        script = WRITER.replace("range(40)", "range(1)").replace(
            'with path.open', 'print("appending", flush=True)\nwith path.open')
        writer = subprocess.Popen([sys.executable, "-c", script, str(path), "z"],
                                  stdout=subprocess.PIPE, text=True)
        assert writer.stdout is not None and writer.stdout.readline().strip() == "appending"
        time.sleep(1.0)
        assert writer.poll() is None and path.stat().st_size == 0  # waiting for the lock
        fcntl.flock(held, fcntl.LOCK_UN)
        assert writer.wait(timeout=60) == 0
    assert json.loads(path.read_text(encoding="utf-8"))["w"] == "z"
