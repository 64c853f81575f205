"""Advisory file locks that die with their process (`flock`): one writer per run
directory (`kgrag eval`) and per build job (`kgrag build`), and no stale locks after a
crash, a `kill -9` or a reboot, unlike a recorded pid (which another process may reuse).

    with exclusive(run_dir / ".writer.lock", lambda: KgragError("busy")):
        ...
    is_locked(run_dir / ".writer.lock")
    # -> False
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Callable, Iterator
from pathlib import Path


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
