"""The same questions answered twice (another machine, graph or llama.cpp build): for each
method both runs answered, how many answers and evidence lists are identical, and the mean
ROUGE-L (open-ended) or EM (short answers) of each run over the shared questions.

    python research/compare_answers.py runs/medquad-graphB docs/results/medquad-dev300

Greedy decoding is deterministic on one machine, not across llama.cpp builds (the CPU
features ggml was compiled with): a method that reads no graph (`llm`) shows that part
alone; the KG rows add what a changed graph does to their evidence.
"""

from __future__ import annotations

from pathlib import Path
from statistics import mean
from typing import Annotated

import typer

from eval.metrics import exact_match, rouge_l
from eval.runner import RunLine, read_run
from kgrag.script import run_script


def quality(line: RunLine) -> float:
    """ROUGE-L for an open-ended question, else exact match (in %)."""
    answer, gold = line.prediction.answer, line.question.answers
    if line.question.kind == "open_ended":
        return 100 * rouge_l(answer, gold)
    return 100 * exact_match(answer, gold)


def main(a: Annotated[Path, typer.Argument(help="A run directory.")],
         b: Annotated[Path, typer.Argument(help="The run directory to compare it with.")]
         ) -> None:
    """Identical answers and evidence, and mean quality, of A against B per method."""
    _, lines_a = read_run(a)
    _, lines_b = read_run(b)
    by_b = {(ln.prediction.method, ln.question.id): ln for ln in lines_b}
    methods = sorted({ln.prediction.method for ln in lines_a})
    print(f"{a} against {b}: shared questions, identical answers, identical evidence, "
          "mean ROUGE-L/EM % of each")
    for method in methods:
        pairs = [(ln, by_b[key]) for ln in lines_a if ln.prediction.method == method
                 and (key := (method, ln.question.id)) in by_b]
        if not pairs:
            print(f"  {method:20s} no shared questions")
            continue
        same = sum(x.prediction.answer == y.prediction.answer for x, y in pairs)
        same_evidence = sum(x.prediction.evidence == y.prediction.evidence for x, y in pairs)
        qa = mean(quality(x) for x, _ in pairs)
        qb = mean(quality(y) for _, y in pairs)
        print(f"  {method:20s} {len(pairs):4d} {same:4d} {same_evidence:4d}   "
              f"{qa:5.1f} vs {qb:5.1f}")


if __name__ == "__main__":
    run_script(main, __doc__)
