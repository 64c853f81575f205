"""flock-based locks: exclusive while held, free once released or the process is gone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kgrag.locks import exclusive, is_locked


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
