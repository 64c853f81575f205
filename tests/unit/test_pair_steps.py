"""research/pair_steps.py: its line for N repeats the tests of `kgrag score --same N`, and
its closing lines sum the steps up."""

from __future__ import annotations

import json
import re
import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
script = runpy.run_path(str(ROOT / "research" / "pair_steps.py"))
# runs scored with --same whose answers are right or wrong (an open-ended run such as
# MedQuAD has no McNemar pairs, so no pair_steps line)
RUNS = [p.parent for p in sorted((ROOT / "docs" / "results").glob("*/metrics.json"))
        if any("McNemar" in t["metric"]
               for t in (json.loads(p.read_text()).get("same") or {}).get("pairs") or [])]


@pytest.mark.results
@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_the_line_for_k_is_the_same_table_pair(run: Path, capsys: pytest.CaptureFixture[str]
                                               ) -> None:
    same = json.loads((run / "metrics.json").read_text())["same"]
    k = same["k"]
    tests = [t for t in same["pairs"] if "McNemar" in t["metric"]]
    assert tests
    f1 = {(t["a"], t["b"]): t for t in same["pairs"] if "bootstrap" in t["metric"]}
    for t in tests[:2]:
        script["main"](run, t["a"], t["b"], k, k, 4)
        line = capsys.readouterr().out.strip()
        m = re.fullmatch(rf"{k}: \w+ (\d+) vs (\d+) \(([+-]\d+)\), McNemar p = (\d\.\d+)"
                         r"(?:; F1 ([+-]\d+\.\d), paired bootstrap p = (\d\.\d+))?", line)
        assert m, line
        assert int(m[3]) == t["statistic"]
        assert float(m[4]) == pytest.approx(t["p_value"], abs=5e-4)
        if (t["a"], t["b"]) in f1:  # the same resamples of the same questions: the same p
            assert float(m[5]) == pytest.approx(100 * f1[(t["a"], t["b"])]["statistic"], abs=0.051)
            assert float(m[6]) == pytest.approx(f1[(t["a"], t["b"])]["p_value"], abs=5e-4)


def test_steps_join_into_runs() -> None:
    assert script["spans"]([76, 80, 140, 144, 148, 208], 4) == "76–80, 140–148, 208"
    assert script["spans"]([], 4) == "none"
    assert script["spans"]([12, 20], 4) == "12, 20"


def test_the_closing_lines_sum_the_steps_up() -> None:
    Step = script["Step"]
    steps = [Step(72, "em", 8, 0.128, 9.2, 0.30), Step(76, "em", 10, 0.041, 3.5, 0.04),
             Step(80, "em", 12, 0.041, 5.0, 0.06), Step(84, "em", 9, 0.2, 4.0, 0.011)]
    em, f1 = script["summary"](steps, 4)
    assert em == "em (steps 72–84): p < 0.05 at 76–80; p 0.041–0.200; difference +8 to +12"
    assert f1 == ("F1 (steps 72–84): p < 0.05 at 76, 84; p 0.011–0.300; "
                  "difference +3.5 to +9.2 points")


@pytest.mark.results
def test_it_stops_where_a_row_has_not_answered(capsys: pytest.CaptureFixture[str]) -> None:
    run = RUNS[0]
    same = json.loads((run / "metrics.json").read_text())["same"]
    a, b = list(same["methods"])[:2]
    script["main"](run, a, b, 10_000, 10_000, 4)
    assert "have not both answered the first 10000; stop" in capsys.readouterr().out


@pytest.mark.results
def test_an_unknown_method_is_a_clear_error() -> None:
    with pytest.raises(script["KgragError"], match="no 'nope' answers"):
        script["main"](RUNS[0], "nope", "rag", 4, 4, 4)
