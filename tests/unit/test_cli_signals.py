"""`kgrag build` stops on SIGTERM as on Ctrl-C (a background job ignores SIGINT)."""

from __future__ import annotations

import os
import signal

import pytest

from kg_builder.cli import _stop_on_sigterm


def test_sigterm_raises_keyboard_interrupt() -> None:
    before = signal.getsignal(signal.SIGTERM)
    try:
        _stop_on_sigterm()
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
            signal.sigtimedwait([], 0.1)  # give the handler its chance to run
    finally:
        signal.signal(signal.SIGTERM, before)
