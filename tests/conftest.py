"""Test tiers: unit (default, no network), `results` (the committed runs in docs/results),
`integration` (real Neo4j), `slow` (real models).

Tests that read the shared datasets (`../shared/data`) use `needs_data` or `require_data`:
they skip when the folder is absent, and fail under `CI=true`, where it must be present.

Unit tests cannot open sockets to anything but the loopback... nor even that: the
autouse fixture below refuses every connection attempt outside integration/slow tests.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = ROOT.parent / "shared" / "data"


def require_data(path: Path = DATA_DIR) -> Path:
    """`path` in the shared data folder; the test skips when it is absent, and fails
    under `CI=true` (a CI machine without the data must not pass by skipping)."""
    if not path.exists():
        message = f"{path} is absent (the shared data folder, ../shared/data)"
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail(f"{message}; CI=true needs it", pytrace=False)
        pytest.skip(message)
    return path


@pytest.fixture()
def shared_data() -> Path:
    """The shared data folder (see `require_data`)."""
    return require_data()


needs_data = pytest.mark.usefixtures("shared_data")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Tests under tests/integration and tests/slow carry their marker by location.
    for item in items:
        path = str(item.fspath)
        if f"{os.sep}integration{os.sep}" in path:
            item.add_marker(pytest.mark.integration)
        if f"{os.sep}slow{os.sep}" in path:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _no_network_in_unit_tests(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
                              ) -> None:
    if request.node.get_closest_marker("integration") or request.node.get_closest_marker("slow"):
        return
    real_connect = socket.socket.connect

    def refuse(self: socket.socket, address: object) -> None:
        if self.family == socket.AF_UNIX:
            return real_connect(self, address)  # type: ignore[arg-type]
        raise RuntimeError(f"unit test tried to connect to {address!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)


@pytest.fixture(scope="session")
def platform() -> Iterator[object]:
    """The real platform: the managed Neo4j (started if needed) or NEO4J_URI. Its store
    also speaks the tests' read-back statements of `tests/cypher/` as `test/<name>`."""
    from kgrag.platform import Platform

    p = Platform()
    if p.settings.managed_neo4j and not p.neo4j.status(probe=False).running:
        p.neo4j.start()
    p.store.add_statements("test", ROOT / "tests" / "cypher")
    p.store.apply_schema()
    yield p
    p.close()


@pytest.fixture()
def test_domain(platform: object) -> Iterator[str]:
    """A throw-away domain name; everything in it is deleted afterwards."""
    domain = f"test-{uuid.uuid4().hex[:10]}"
    yield domain
    platform.store.run_autocommit("graph/delete_domain", {"domain": domain})  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def test_model_name() -> str:
    return os.environ.get("KGRAG_TEST_MODEL", "qwen2.5-coder-0.5b")


def write_questions(tmp_path: Path, rows: list[dict]) -> Path:
    """A small question file in the CommonsenseQA format (for runner/sweep/report tests)."""
    path = tmp_path / "csqa_small.jsonl"
    path.write_text("\n".join(json.dumps(q) for q in rows) + "\n")
    return path


class FixedGraphStore:
    """A stand-in store that knows one small graph and answers only `graph/fingerprint`
    (what the runner reads of a domain when a KG method runs). `facts` may be changed to
    "regrow" the graph; every domain asked for is recorded."""

    def __init__(self, facts: list[tuple[str, str, str]] | None = None) -> None:
        self.facts = facts if facts is not None else [("fox", "lives in", "forest")]
        self.domains: list[str] = []

    def read(self, name: str, params: dict | None = None) -> list[dict]:
        from kg_builder.fingerprint import fact_key

        assert name == "graph/fingerprint", f"unexpected statement {name}"
        self.domains.append((params or {})["domain"])
        entities = sorted({k for h, _, t in self.facts for k in (h, t)})
        return [{"entities": entities, "facts": [fact_key(*f) for f in self.facts],
                 "chunks": 1}]
