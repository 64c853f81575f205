"""`kgrag demo --no-app` (what `make demo` runs, without the app) end to end: the real
Neo4j, the committed graph exports, a real small GGUF model, every example question."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kg_builder.demo import demo_exports

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.integration
def test_demo_answers_every_example_with_every_method() -> None:
    env = dict(os.environ, KGRAG_MODEL__CHAT=os.environ.get("KGRAG_TEST_MODEL",
                                                            "qwen2.5-coder-0.5b"))
    out = subprocess.run([sys.executable, "-m", "kgrag.cli", "demo", "--no-app"], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    text = " ".join(out.stdout.split())  # rich wraps long lines
    assert text.count("Q: ") == 3 and text.count("gold: ") == 3
    for graph in demo_exports():  # one export per domain, the full graph where committed
        assert str(graph.relative_to(ROOT / "data" / "graphs")) in text
    for method in ("llm", "kg-vanilla", "metakgrag", "rag-gold", "imrag-gold"):
        assert f"{method} (" in text, method  # "name (seconds, calls): answer"
    assert "Traceback" not in out.stderr
