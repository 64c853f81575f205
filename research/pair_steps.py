"""How one paired comparison moved as a run grew: A against B on the run's first N questions,
for N from FROM to TO in steps of STEP (default 4, the step of the dev300 chains).

    python research/pair_steps.py docs/results/hotpotqa-dev metarag rag 84 136

Each line: N, the exact matches (or correct answers) of A and of B, their difference, the
McNemar exact p and the paired-bootstrap p of F1 (when both rows have F1). The first N
questions are the ones `kgrag score --same N` takes, in the order it resamples them, so
the line for N repeats that table's pair. Over more than one step, closing lines sum the
run up: the steps where each p was below 0.05 (consecutive steps joined, "140–184"), the
range of each p and of the difference.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from eval.runner import RunLine, read_run
from eval.scoring import per_question_scores, question_order
from eval.stats import mcnemar, paired_bootstrap
from kgrag.errors import KgragError
from kgrag.script import run_script


def main(run: Annotated[Path, typer.Argument(help="Run directory.")],
         a: Annotated[str, typer.Argument(help="Method A.")],
         b: Annotated[str, typer.Argument(help="Method B.")],
         lo: Annotated[int, typer.Argument(help="FROM: the first N.")],
         hi: Annotated[int, typer.Argument(help="TO: the last N.")],
         step: Annotated[int, typer.Argument(help="STEP between two N.")] = 4) -> None:
    """A against B on the run's first N questions, for N from FROM to TO."""
    _, lines = read_run(run)  # the newer line of a repeated (method, question) wins
    by_method: dict[str, list[RunLine]] = defaultdict(list)
    for ln in lines:
        by_method[ln.prediction.method].append(ln)
    for m in (a, b):
        if m not in by_method:
            raise KgragError(f"{run} has no {m!r} answers",
                             hint=f"its methods: {', '.join(sorted(by_method))}")
    order = question_order(by_method)
    last = {(ln.prediction.method, ln.question.id): ln for ln in lines}
    steps: list[Step] = []
    for n in range(lo, hi + 1, step):
        # `same_questions` scores each row's answers sorted by question id; the bootstrap's
        # resamples index that list, so the same order gives the table's p exactly.
        qs = sorted(order[:n])
        if len(qs) < n or not all((m, q) in last for m in (a, b) for q in qs):
            print(f"{n}: {a} and {b} have not both answered the first {n}; stop")
            break
        sa = [per_question_scores(last[(a, q)]) for q in qs]
        sb = [per_question_scores(last[(b, q)]) for q in qs]
        key = "em" if "em" in sa[0] else "correct"
        ra = [s[key] > 0 for s in sa]
        rb = [s[key] > 0 for s in sb]
        mc = mcnemar(ra, rb)
        line = (f"{n}: {key} {sum(ra)} vs {sum(rb)} ({mc.b - mc.c:+d}), "
                f"McNemar p = {mc.p_exact:.3f}")
        f1 = None
        if "f1" in sa[0]:
            f1 = paired_bootstrap([s["f1"] for s in sa], [s["f1"] for s in sb])
            line += f"; F1 {100 * f1.diff:+.1f}, paired bootstrap p = {f1.p_value:.3f}"
        print(line)
        steps.append(Step(n, key, mc.b - mc.c, mc.p_exact,
                          None if f1 is None else 100 * f1.diff,
                          None if f1 is None else f1.p_value))
    if len(steps) > 1:
        for text in summary(steps, step):
            print(text)


@dataclass(frozen=True)
class Step:
    n: int
    key: str  # "em" or "correct"
    diff: int  # A's right answers minus B's
    p: float  # McNemar exact
    f1_diff: float | None  # points
    f1_p: float | None  # paired bootstrap


def spans(ns: list[int], step: int) -> str:
    """Steps as joined runs: [76, 80, 140, 144, 148] with step 4 -> "76–80, 140–148"."""
    runs: list[list[int]] = []
    for n in ns:
        if runs and n - runs[-1][-1] == step:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}–{r[-1]}" for r in runs) or "none"


def summary(steps: list[Step], step: int) -> list[str]:
    """The closing lines: where each p was below 0.05, its range, the difference's range."""
    span = f"{steps[0].n}–{steps[-1].n}"
    key = steps[0].key
    out = [f"{key} (steps {span}): p < 0.05 at {spans([s.n for s in steps if s.p < 0.05], step)}"
           f"; p {min(s.p for s in steps):.3f}–{max(s.p for s in steps):.3f}"
           f"; difference {min(s.diff for s in steps):+d} to {max(s.diff for s in steps):+d}"]
    f1 = [s for s in steps if s.f1_p is not None]
    if f1:
        out.append(f"F1 (steps {span}): p < 0.05 at "
                   f"{spans([s.n for s in f1 if s.f1_p < 0.05], step)}"
                   f"; p {min(s.f1_p for s in f1):.3f}–{max(s.f1_p for s in f1):.3f}"
                   f"; difference {min(s.f1_diff for s in f1):+.1f} to "
                   f"{max(s.f1_diff for s in f1):+.1f} points")
    return out


if __name__ == "__main__":
    run_script(main, __doc__)
