"""Advisory file locks that die with their process (`flock`): one writer per method of a
run directory (`kgrag eval`) and per build job (`kgrag build`), and no stale locks after
a crash, a `kill -9` or a reboot, unlike a recorded pid (which another process may reuse).
Writers that share a file append whole lines under its lock (`append_line`).

    with exclusive(run_dir / ".writer.llm.lock", lambda: KgragError("busy")):
        ...
    is_locked(run_dir / ".writer.llm.lock")
    # -> False
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO


@contextlib.contextmanager
def exclusive(path: Path, busy: Callable[[], Exception]) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if missing) for the block; raise
    `busy()` at once if another process (or another open of it here) holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise busy() from None
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def is_locked(path: Path) -> bool:
    """Whether some process holds `exclusive(path)` now (a missing file: no)."""
    if not path.is_file():
        return False
    with path.open("a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
    return False


@contextlib.contextmanager
def waiting(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if missing) for the block, waiting for
    another holder to finish: for short read-modify-writes shared by processes (a run's
    config.json)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def append_line(f: TextIO, text: str) -> None:
    """Append `text` and a newline to the open file `f` as one piece, on disk when this
    returns: under an exclusive lock on the file, so that a line of another process
    appending to the same file (a long prediction line can take several writes) never
    lands inside it. Readers that take the shared lock (`reading`) never see half a line."""
    fcntl.flock(f, fcntl.LOCK_EX)
    try:
        f.write(text + "\n")
        f.flush()
        os.fsync(f.fileno())
    finally:
        fcntl.flock(f, fcntl.LOCK_UN)


@contextlib.contextmanager
def reading(path: Path) -> Iterator[TextIO]:
    """`path` open for reading under a shared lock: no `append_line` is halfway."""
    with path.open(encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_SH)
        try:
            yield f
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
