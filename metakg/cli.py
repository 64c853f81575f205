"""metakg's command: `kgrag graph coverage` (how far a graph's answers are from the
question's entities, no LLM). The root CLI (kgrag/cli.py) calls `register(app)` through
the `kgrag.commands` entry point.

    kgrag graph coverage --dataset csqa --n 100
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from kgrag.commands import console, err, group
from kgrag.platform import Platform


def register(app: typer.Typer) -> None:
    """Add `graph coverage` to the root `kgrag` app."""
    group(app, "graph").command("coverage")(graph_coverage)


def graph_coverage(
    dataset: Annotated[str, typer.Option(help="Built-in name (csqa, medqa, mmlu-law, "
                                               "hotpotqa, 2wiki, …) or a JSONL question file.")],
    domain: Annotated[str | None, typer.Option(help="Graph (default: the dataset's).")] = None,
    n: Annotated[int | None, typer.Option(min=1, help="First N questions.")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """How many questions' answers the graph reaches within 1, 2, 3 hops of the question's
    entities, beside the wrong options (no LLM; answers read only to score)."""
    from rich.progress import Progress

    from metakg.coverage import coverage_table, kind_table, run_coverage

    p = Platform()
    with Progress(console=err) as bar:  # on stderr: --json stays parseable
        task = bar.add_task(f"coverage of {dataset}", total=n)
        report = run_coverage(p.store, p.settings.data_dir, dataset, domain, n,
                              lambda i, total: bar.update(task, completed=i, total=total))
    if as_json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
        return
    console.print("\n".join(coverage_table({report.dataset: report})), soft_wrap=True)
    console.print("\n".join(kind_table(report)), soft_wrap=True)
    console.print(f"{report.questions} questions ({report.skipped} skipped), "
                  f"{report.mean_seeds:.1f} question entities on average; correct target "
                  f"names an entity {100 * report.correct_matched:.1f}%, wrong "
                  f"{100 * report.wrong_matched:.1f}%; {report.truncated} questions hit a "
                  f"cap; {report.round_trips} round trips, {report.seconds:.1f} s "
                  f"(median {report.median_ms:.0f} ms)", soft_wrap=True)
