"""How one paired comparison moved as a run grew: A against B on the run's first N questions,
for N from FROM to TO in steps of STEP (default 4, the step of the dev300 chains).

    python scripts/pair_steps.py docs/results/hotpotqa-dev metarag rag 84 136

Each line: N, the exact matches (or correct answers) of A and of B, their difference, the
McNemar exact p and the paired-bootstrap p of F1 (when both rows have F1). The first N
questions are the order `kgrag score --same N` uses, so the line for N repeats that
table's pair.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

from eval.runner import RunLine, read_run
from eval.scoring import per_question_scores, question_order
from eval.stats import mcnemar, paired_bootstrap
from kgrag.errors import KgragError


def main(run: Path, a: str, b: str, lo: int, hi: int, step: int) -> None:
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
    for n in range(lo, hi + 1, step):
        qs = order[:n]
        if len(qs) < n or not all((m, q) in last for m in (a, b) for q in qs):
            print(f"{n}: {a} and {b} have not both answered the first {n}; stop")
            return
        sa = [per_question_scores(last[(a, q)]) for q in qs]
        sb = [per_question_scores(last[(b, q)]) for q in qs]
        key = "em" if "em" in sa[0] else "correct"
        ra = [s[key] > 0 for s in sa]
        rb = [s[key] > 0 for s in sb]
        mc = mcnemar(ra, rb)
        line = (f"{n}: {key} {sum(ra)} vs {sum(rb)} ({mc.b - mc.c:+d}), "
                f"McNemar p = {mc.p_exact:.3f}")
        if "f1" in sa[0]:
            pb = paired_bootstrap([s["f1"] for s in sa], [s["f1"] for s in sb])
            line += f"; F1 {100 * pb.diff:+.1f}, paired bootstrap p = {pb.p_value:.3f}"
        print(line)


if __name__ == "__main__":
    if len(sys.argv) not in (6, 7):
        sys.exit(__doc__)
    try:
        main(Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]),
             int(sys.argv[6]) if len(sys.argv) == 7 else 4)
    except KgragError as e:  # not a run directory, an unknown method: say so, no trace
        sys.exit(f"error: {e.message}" + (f"\n  → {e.hint}" if e.hint else ""))
