"""Process-wide resources of the app, created once per server process.

`resources()` holds the one `Platform` (so one llama.cpp model and one Neo4j driver for
every browser session, via `st.cache_resource`) and the `ModelGate` that lets one
question at a time use the model. Tests replace `build_platform` before the first run.

    res = resources()
    res.platform.method("llm").answer(question)
"""

from __future__ import annotations

import argparse
import logging
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import streamlit as st

from app import icons
from app.asking import ModelGate
from kgrag.errors import KgragError
from kgrag.platform import Platform

log = logging.getLogger(__name__)
T = TypeVar("T")
BUSY_WAIT_S = 600.0  # how long a second session waits for the model before giving up


def build_platform() -> Platform:
    """The composition root for the app (replaced by tests with a scripted one)."""
    return Platform()


@dataclass
class Resources:
    platform: Platform
    gate: ModelGate


@st.cache_resource(show_spinner=False)
def resources() -> Resources:
    return Resources(build_platform(), ModelGate())


@dataclass(frozen=True)
class AppArgs:
    """Options after `--` of `streamlit run app/main.py -- --runs DIR`."""

    runs: Path


def app_args(argv: list[str] | None = None) -> AppArgs:
    parser = argparse.ArgumentParser(prog="kgrag app", add_help=False)
    parser.add_argument("--runs", type=Path, default=Path("runs"))
    known, _ = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    return AppArgs(runs=known.runs)


def session_id() -> str:
    """A stable id for this browser session (for the "busy" message)."""
    if "session_id" not in st.session_state:
        st.session_state["session_id"] = uuid.uuid4().hex[:8]
    return str(st.session_state["session_id"])


def show_error(e: KgragError, what: str = "") -> None:
    """A KgragError as the app shows it: what happened, and what to do."""
    st.error(f"{what + ': ' if what else ''}{e.message}", icon=icons.WARN)
    if e.hint:
        st.caption(f"→ {e.hint}")


def try_store(action: Callable[[], T], what: str) -> T | None:
    """Run a Neo4j read; on a KgragError (Neo4j down, bad credentials) show it, None."""
    try:
        return action()
    except KgragError as e:
        show_error(e, what)
        return None


def browser_base(platform: Platform) -> str:
    """Neo4j Browser's URL: the managed server's, or port `http_port` on NEO4J_URI's host."""
    s = platform.settings
    if s.managed_neo4j:
        return platform.neo4j.browser_url
    from urllib.parse import urlparse

    host = urlparse(s.neo4j.uri or "").hostname or "127.0.0.1"
    return f"http://{host}:{s.neo4j.http_port}/browser/"


def domains(platform: Platform) -> list[str]:
    """The built domains (`kg/domains`); raises KgragError when Neo4j is unreachable."""
    return [str(r["name"]) for r in platform.store.read("kg/domains")]


def neo4j_health(platform: Platform) -> tuple[bool, str]:
    """(reachable, one line for the sidebar)."""
    try:
        names = domains(platform)
    except KgragError as e:
        return False, e.message + (f" — {e.hint}" if e.hint else "")
    return True, f"{len(names)} domain graph{'s' if len(names) != 1 else ''}"
