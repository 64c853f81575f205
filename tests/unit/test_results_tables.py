"""scripts/results_tables.py renders the README's tables from committed metrics.json."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
tables = runpy.run_path(str(ROOT / "scripts" / "results_tables.py"))


def test_one_row_per_scored_method_with_its_numbers() -> None:
    for run in sorted((ROOT / "docs" / "results").glob("*/metrics.json")):
        methods = json.loads(run.read_text())["methods"]
        text = tables["render"](run.parent)
        rows = [line for line in text.splitlines() if line.startswith("| `")]
        assert [r.split("`")[1] for r in rows] == list(methods)
        for row, m in zip(rows, methods.values(), strict=True):
            assert f"| {m['n']} |" in row


def test_percent_with_interval() -> None:
    assert tables["pct"]({"mean": 0.5, "low": 0.25, "high": 0.75}) == "50.0 [25.0, 75.0]"
    assert tables["pct"](None) == "–"
