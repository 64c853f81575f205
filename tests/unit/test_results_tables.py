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
        text, _, same = tables["render"](run.parent).partition("the same first")
        rows = [line for line in text.splitlines() if line.startswith("| `")]
        assert [r.split("`")[1] for r in rows] == list(methods)
        for row, m in zip(rows, methods.values(), strict=True):
            assert f"| {m['n']} |" in row
        recorded = json.loads(run.read_text()).get("same")
        if recorded and recorded["methods"]:  # a table of K-question rows, then the matrix
            same_rows = [ln for ln in same.splitlines() if ln.startswith("| `")]
            k = len(recorded["methods"])
            assert [r.split("`")[1] for r in same_rows[:k]] == list(recorded["methods"])
            assert all(f"| {recorded['k']} |" in r for r in same_rows[:k])
            assert len(same_rows) == 2 * k and same_rows[k].count("·") == 1


def test_percent_with_interval() -> None:
    assert tables["pct"]({"mean": 0.5, "low": 0.25, "high": 0.75}) == "50.0 [25.0, 75.0]"
    assert tables["pct"](None) == "–"
