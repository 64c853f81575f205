"""Position bias of a `--bias rotate` run, read back from its traces (no model needed).

Each multiple-choice prediction of a rotate run keeps every pass's letter distribution
(the `choose` step's `passes`, with their `shifts`); the pass with shift 0 is exactly the
single pass of `--bias none`. From them this prints, per method, the accuracy and the
letters chosen beside the gold letters for:
- `none`: the shift-0 pass alone;
- `rotate`: the average over the rotations (what the run answered);
- `prior` (with --prior FILE, from `kgrag reader prior`): the shift-0 pass divided by the
  position prior (PriDe), i.e. what `--bias prior` answers.

    python research/reader_bias.py docs/results/reader-csqa-100-rotate \\
        --prior ~/.cache/kgrag/priors/qwen2.5-coder-1.5b/csqa.json
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from kgrag.llm.letters import argmax
from kgrag.reader import PositionPrior, divide_prior


def _row(name: str, picks: list[tuple[str, list[str]]], labels: list[str]) -> str:
    chosen = Counter(p for p, _ in picks)
    gold = Counter(g[0] for _, g in picks)
    right = sum(p in g for p, g in picks)
    n = len(picks)
    ratio = max((chosen[lb] / n) / (gold[lb] / n) for lb in labels if gold[lb])
    letters = " · ".join(f"{lb} {chosen[lb]}/{gold[lb]}" for lb in labels)
    return f"| {name} | {n} | {right} ({100 * right / n:.0f}%) | {letters} | {ratio:.2f} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--prior", type=Path, default=None)
    args = ap.parse_args()
    prior = PositionPrior.load(args.prior) if args.prior else None
    by_method: dict[str, dict[str, tuple[dict, list[str]]]] = {}
    for line in (args.run / "predictions.jsonl").read_text().splitlines():
        r = json.loads(line)
        steps = [s for s in r["prediction"]["trace"] if s["stage"] == "choose"
                 and "shifts" in s["data"]]
        if steps:
            by_method.setdefault(r["prediction"]["method"], {})[r["question"]["id"]] = (
                steps[-1]["data"], r["question"]["answers"])
    print("| reading | n | correct | chosen/gold per letter | max ratio |")
    print("|---|---|---|---|---|")
    for method, rows in by_method.items():
        data = list(rows.values())
        labels = sorted(data[0][0]["letters"])
        first = [(argmax(d["passes"][d["shifts"].index(0)]), g) for d, g in data]
        print(_row(f"{method}, none (shift-0 pass)", first, labels))
        print(_row(f"{method}, {data[0][0]['correction']} ({len(data[0][0]['shifts'])} passes)",
                   [(d["label"], g) for d, g in data], labels))
        if prior is not None:
            p = prior.of(labels)
            debiased = [(argmax(divide_prior(d["passes"][d["shifts"].index(0)], p)), g)
                        for d, g in data]
            print(_row(f"{method}, prior ({prior.source}, {prior.questions} q)", debiased,
                       labels))


if __name__ == "__main__":
    main()
