"""Median seconds per question of every method of a run, over a range of its questions.

    python research/seconds.py docs/results/hotpotqa-dev 13 28

Questions are numbered 1, 2, … in dataset order (`eval.scoring.question_order`, as for
`kgrag score --same`), so a range picks the questions of given steps, for example those
that ran with nothing else on the machine. Without a range: every question.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path
from typing import Annotated

import typer

from eval.runner import RunLine, read_run
from eval.scoring import question_order
from kgrag.script import run_script


def main(run: Annotated[Path, typer.Argument(help="Run directory.")],
         first: Annotated[int, typer.Argument(help="First question (1-based).")] = 1,
         last: Annotated[int | None, typer.Argument(help="Last question.")] = None) -> None:
    """Median seconds per question of every method over questions FIRST to LAST."""
    _, lines = read_run(run)
    by_method: dict[str, list[RunLine]] = defaultdict(list)
    for ln in lines:
        by_method[ln.prediction.method].append(ln)
    order = {q: i for i, q in enumerate(question_order(by_method), 1)}
    secs: dict[str, list[float]] = defaultdict(list)
    for ln in lines:
        if first <= order[ln.question.id] <= (last or len(order)):
            secs[ln.prediction.method].append(ln.prediction.usage.seconds)
    print(f"questions {first}-{last or len(order)} of {run}: median s/q (n)")
    for method, s in sorted(secs.items(), key=lambda kv: -statistics.median(kv[1])):
        print(f"  {method:28s} {statistics.median(s):7.1f}  ({len(s)})")


if __name__ == "__main__":
    run_script(main, __doc__)
