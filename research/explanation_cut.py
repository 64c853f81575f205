"""What stopping answer-first replies at their option saves, and that it keeps the option.

    python research/explanation_cut.py --dataset csqa --domain commonsense --method metakgrag --n 8

Answers the first N questions of a dataset twice with one method, on the real model:
once with the whole reply decoded (`kgrag ask`, `kgrag eval --explanations`) and once
stopped as soon as the option is read (`kgrag eval`'s default, `kgrag.parsing.
settled_rule`). Replays are off, so both decode. Prints, per question, the option each
reading gives, whether the cut reply is the start of the whole one, the answer call's
completion tokens and the seconds of the generate stage; then the medians. Exits 1 if an
option differs.
"""

from __future__ import annotations

import statistics
from typing import Annotated

import typer

from kgrag.config import load_settings
from kgrag.datasets import load_dataset
from kgrag.parsing import parse_question_choice, settled_rule
from kgrag.platform import Platform
from kgrag.script import run_script
from kgrag.types import Prediction


def _generate(pred: Prediction) -> tuple[int, float]:
    step = [s for s in pred.trace if s.stage == "generate"][-1]
    return int(step.data.get("completion_tokens", 0)), pred.usage.stage_seconds.get(
        "generate", step.seconds or 0.0)


def main(dataset: Annotated[str, typer.Option(help="Built-in name or question file.")],
         domain: Annotated[str | None, typer.Option(help="Graph of the KG method.")] = None,
         method_name: Annotated[str, typer.Option("--method", help="Method.")] = "metakgrag",
         n: Annotated[int, typer.Option(help="First N questions.")] = 8) -> None:
    """Answer the first N questions twice, whole and cut at the option; exit 1 if an
    option differs."""
    p = Platform(load_settings())
    questions = load_dataset(dataset, p.settings.data_dir, limit=n).questions
    method = p.method(method_name, domain)
    method.prepare(domain)
    rows, differ = [], 0
    print(f"{method_name} on the first {len(questions)} of {dataset} "
          f"({p.settings.model.chat})")
    print(" q  option whole/cut  prefix  tokens whole/cut  generate s whole/cut")
    for i, q in enumerate(questions, 1):
        q = q.model_copy(update={"domain": domain or q.domain})
        method.settled = None
        whole = method.answer(q)
        method.settled = settled_rule
        cut = method.answer(q)
        a, b = (parse_question_choice(x.answer, q, answer_first=True) for x in (whole, cut))
        (tw, sw), (tc, sc) = _generate(whole), _generate(cut)
        differ += a != b
        rows.append((tw, tc, sw, sc))
        print(f"{i:2d}  {a or 'Fail':>5s} / {b or 'Fail':<5s}  "
              f"{'yes' if whole.answer.startswith(cut.answer) else 'NO':>6s}  "
              f"{tw:6d} / {tc:<6d}  {sw:9.1f} / {sc:.1f}")
    med = [statistics.median(col) for col in zip(*rows, strict=True)]
    print(f"median: tokens {med[0]:.0f} / {med[1]:.0f}, generate {med[2]:.1f} s / "
          f"{med[3]:.1f} s; options differ on {differ} of {len(rows)}")
    if differ:
        raise typer.Exit(1)


if __name__ == "__main__":
    run_script(main, __doc__)
