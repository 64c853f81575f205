"""What other evidence policies would have scored, replayed from `metakgrag-oa`'s traces.

Every `metakgrag-oa` answer records the reader's option distribution without evidence
(`choose-closed`, the `llm` row's pass) and, where paths were found, with the
option-grouped evidence (`choose-evidence`). From those two distributions alone, with no
model call, this prints the correct answers of:

- closed-book: always the distribution without evidence (the `llm` row);
- evidence: the evidence reading wherever there was one, else closed-book;
- product: the renormalised product of the two distributions (a product of experts);
- gate: what `metakgrag-oa` answered (its evidence gate, `metakg/gate.py`);
- either right: the questions where one of the two readings was right (an upper bound
  for any gate that picks one of them).

Post hoc by construction: it reads the gold answers to count, so it measures policies and
never chooses one for a run.

    python research/gate_policies.py docs/results/reader-csqa-kgfull [--n 100]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eval.runner import read_run  # noqa: E402
from eval.scoring import per_question_scores  # noqa: E402
from kgrag.llm.letters import argmax  # noqa: E402

POLICIES = ("closed-book", "evidence", "product", "gate", "either right")


def policy_counts(run: Path, method: str = "metakgrag-oa", n: int | None = None
                  ) -> dict[str, int]:
    _, lines = read_run(run)
    lines = [ln for ln in lines if ln.prediction.method == method]
    if n is not None:
        order = {q: i for i, q in enumerate(dict.fromkeys(ln.question.id for ln in lines))}
        lines = [ln for ln in lines if order[ln.question.id] < n]
    out = dict.fromkeys(("questions", *POLICIES), 0)
    for ln in lines:
        steps = {s.stage: s for s in ln.prediction.trace}
        if "choose-closed" not in steps:
            continue
        gold = set(ln.question.answers)
        closed = steps["choose-closed"].data["letters"]
        read = steps["choose-evidence"].data["letters"] if "choose-evidence" in steps else None
        product = closed
        if read is not None:
            joint = {k: closed[k] * read.get(k, 0.0) for k in closed}
            total = sum(joint.values()) or 1.0
            product = {k: v / total for k, v in joint.items()}
        right = {
            "closed-book": argmax(closed) in gold,
            "evidence": argmax(read if read is not None else closed) in gold,
            "product": argmax(product) in gold,
            "gate": per_question_scores(ln).get("correct", 0.0) > 0,
        }
        right["either right"] = right["closed-book"] or right["evidence"]
        out["questions"] += 1
        for k, v in right.items():
            out[k] += v
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--method", default="metakgrag-oa")
    ap.add_argument("--n", type=int, help="only the first N questions the method answered")
    args = ap.parse_args()
    print("| run | questions | " + " | ".join(POLICIES) + " |")
    print("|---|---|" + "---|" * len(POLICIES))
    for run in args.runs:
        c = policy_counts(run, args.method, args.n)
        print(f"| {run.name} | {c['questions']} | " + " | ".join(str(c[p]) for p in POLICIES)
              + " |")


if __name__ == "__main__":
    main()
