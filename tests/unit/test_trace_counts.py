"""research/trace_counts.py: its per-method supporting-paragraph counts agree with `kgrag score`."""

from __future__ import annotations

import json
import re
import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
script = runpy.run_path(str(ROOT / "research" / "trace_counts.py"))
RUNS = [ROOT / "docs" / "results" / d for d in ("hotpotqa-dev", "2wiki-dev")]


@pytest.mark.results
@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_all_read_counts_are_the_scored_share(run: Path, capsys: pytest.CaptureFixture[str]
                                              ) -> None:
    same = json.loads((run / "metrics.json").read_text())["same"]
    k = same["k"]
    script["main"](run, k)
    out = capsys.readouterr().out
    counts = {m: (int(n), sum(int(x) for x in re.findall(r"\w+ (\d+), \d+ right", kinds)))
              for m, n, kinds in re.findall(r"^  ([\w-]+): all supporting read for (\d+) \((.*)\)$",
                                            out, re.M)}
    assert "seakr" in counts and "ircot" in counts, out
    for m, (n, by_type) in counts.items():
        assert by_type == n  # the types add up to the total
        share = same["methods"][m]["supporting_all"]["mean"]
        assert n == round(share * k), m


@pytest.mark.results
@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_exact_matches_by_type_add_up_to_the_scored_em(run: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    same = json.loads((run / "metrics.json").read_text())["same"]
    k = same["k"]
    script["main"](run, k)
    out = capsys.readouterr().out
    sizes = re.search(r"^exact matches by question type \((.*)\):$", out, re.M)
    assert sizes, out
    assert sum(int(n) for n in re.findall(r"\w+ (\d+)", sizes.group(1))) == k
    rows = dict(re.findall(r"^  ([\w-]+) by type: (.*)$", out, re.M))
    assert {"seakr", "kg-ppr"} <= rows.keys(), out
    for m, kinds in rows.items():
        right = sum(int(x) for x in re.findall(r"\w+ (\d+)", kinds))
        assert right == round(same["methods"][m]["em"]["mean"] * k), m


@pytest.mark.results
def test_metakgrag_cycle_counts_add_up(capsys: pytest.CaptureFixture[str]) -> None:
    """Cycles and stops count every start entity; the questions with and without a changed
    path are all the questions, and their exact matches are the scored ones."""
    run = RUNS[1]  # 2Wiki: metakgrag answered all 300
    same = json.loads((run / "metrics.json").read_text())["same"]
    k = same["k"]
    script["main"](run, k)
    out = capsys.readouterr().out
    m = re.search(r"^metakgrag, (\d+) questions, (\d+) start entities: cycles \{(.*)\}; stops "
                  r"\{(.*)\}; (\d+) paths changed; (\d+) questions with a changed path \((\d+) "
                  r"right\), (\d+) without \((\d+) right\)$", out, re.M)
    assert m, out
    n, starts = int(m[1]), int(m[2])
    assert n == k and n == int(m[6]) + int(m[8])
    for counts in (m[3], m[4]):
        assert sum(int(x) for x in re.findall(r": (\d+)", counts)) == starts
    assert int(m[5]) <= starts
    assert int(m[7]) + int(m[9]) == round(same["methods"]["metakgrag"]["em"]["mean"] * k)
