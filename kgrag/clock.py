"""The clock methods time themselves with.

It is `time.perf_counter()` plus the seconds *credited* for model calls that were not
made because an identical greedy call had already been answered in the same run
(`kgrag.llm.replay.ReplayModel`). Crediting the recorded time keeps every method's
stage and total seconds what the method costs when it runs alone, while the run itself
finishes sooner. Without replays (`kgrag ask`, the app) the credit stays 0.

>>> t = now(); credit(2.0); now() - t >= 2.0
True
"""

from __future__ import annotations

import threading
import time

_lock = threading.Lock()
_credited = 0.0


def now() -> float:
    """Seconds on a monotonic clock, replayed calls' recorded time included."""
    return time.perf_counter() + _credited


def credited() -> float:
    """The seconds credited so far (`now()` minus the monotonic clock)."""
    return _credited


def credit(seconds: float) -> None:
    """Count `seconds` as elapsed (a replayed call's recorded duration)."""
    global _credited
    with _lock:
        _credited += max(0.0, seconds)
