"""scripts/pair_steps.py: its line for N repeats the McNemar test of `kgrag score --same N`."""

from __future__ import annotations

import json
import re
import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
script = runpy.run_path(str(ROOT / "scripts" / "pair_steps.py"))
RUNS = [p.parent for p in sorted((ROOT / "docs" / "results").glob("*/metrics.json"))
        if (json.loads(p.read_text()).get("same") or {}).get("methods")]


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_the_line_for_k_is_the_same_table_pair(run: Path, capsys: pytest.CaptureFixture[str]
                                               ) -> None:
    same = json.loads((run / "metrics.json").read_text())["same"]
    k = same["k"]
    tests = [t for t in same["pairs"] if "McNemar" in t["metric"]]
    assert tests
    for t in tests[:2]:
        script["main"](run, t["a"], t["b"], k, k, 4)
        line = capsys.readouterr().out.strip()
        m = re.fullmatch(rf"{k}: \w+ (\d+) vs (\d+) \(([+-]\d+)\), McNemar p = (\d\.\d+).*", line)
        assert m, line
        assert int(m[3]) == t["statistic"]
        assert float(m[4]) == pytest.approx(t["p_value"], abs=5e-4)


def test_it_stops_where_a_row_has_not_answered(capsys: pytest.CaptureFixture[str]) -> None:
    run = RUNS[0]
    same = json.loads((run / "metrics.json").read_text())["same"]
    a, b = list(same["methods"])[:2]
    script["main"](run, a, b, 10_000, 10_000, 4)
    assert "have not both answered the first 10000; stop" in capsys.readouterr().out


def test_an_unknown_method_is_a_clear_error() -> None:
    with pytest.raises(script["KgragError"], match="no 'nope' answers"):
        script["main"](RUNS[0], "nope", "rag", 4, 4, 4)
