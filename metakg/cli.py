"""metakg's commands: `kgrag graph coverage` (how far a graph's answers are from the
question's entities, no LLM) and `kgrag graph fit-paths|fit-fused` (kg-paths' and
kg-fused's weights, from training questions only). The root CLI (kgrag/cli.py) calls
`register(app)` through the `kgrag.commands` entry point.

    kgrag graph coverage --dataset csqa --n 100
"""

from __future__ import annotations

import sys
from typing import Annotated

import numpy as np
import typer

from kgrag.commands import console, err, group
from kgrag.platform import Platform


def register(app: typer.Typer) -> None:
    """Add `graph coverage` to the root `kgrag` app."""
    graph = group(app, "graph")
    graph.command("coverage")(graph_coverage)
    graph.command("fit-paths")(graph_fit_paths)
    graph.command("fit-fused")(graph_fit_fused)


def graph_coverage(
    dataset: Annotated[str, typer.Option(help="Built-in name (csqa, medqa, mmlu-law, "
                                               "hotpotqa, 2wiki, …) or a JSONL question file.")],
    domain: Annotated[str | None, typer.Option(help="Graph (default: the dataset's).")] = None,
    n: Annotated[int | None, typer.Option(min=1, help="First N questions.")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    all_phrases: Annotated[bool, typer.Option(
        "--all-phrases", help="Seeds: every matched phrase of the question, overlapping "
                              "ones too (kg-paths' rule), not only the maximal ones.")] = False,
) -> None:
    """How many questions' answers the graph reaches within 1, 2, 3 hops of the question's
    entities, beside the wrong options (no LLM; answers read only to score)."""
    from rich.progress import Progress

    from metakg.coverage import coverage_table, kind_table, run_coverage

    p = Platform()
    with Progress(console=err) as bar:  # on stderr: --json stays parseable
        task = bar.add_task(f"coverage of {dataset}", total=n)
        report = run_coverage(p.store, p.settings.data_dir, dataset, domain, n,
                              lambda i, total: bar.update(task, completed=i, total=total),
                              all_phrases=all_phrases)
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


def graph_fit_paths(
    domain: Annotated[str, typer.Option(help="Domain graph (its training file is read).")
                      ] = "commonsense",
    n: Annotated[int, typer.Option(min=10, help="Training questions (seeded sample).")] = 3000,
    l2: Annotated[float, typer.Option(min=0.0, help="L2 penalty of the logit.")] = 1.0,
) -> None:
    """Fit kg-paths (ours) on the domain's training questions only (never a dev file),
    each read without the facts of its own record; writes metakg/weights/."""
    from rich.progress import Progress

    from metakg.kg_paths import scorer_for
    from metakg.paths import PathModel
    from metakg.paths_fit import fit_paths, training_questions, write_weights

    p = Platform()
    qs = training_questions(p.settings.data_dir, domain, n)
    scorer = scorer_for(p, domain, PathModel(np.zeros(0)))
    with Progress(console=err) as bar:
        task = bar.add_task(f"paths of {len(qs)} training questions", total=len(qs))
        content = fit_paths(scorer, qs, domain, l2=l2,
                            progress=lambda i: bar.update(task, completed=i))
    path = write_weights(content, domain)
    console.print(f"{path}: {content['questions']} questions; held-out accuracy "
                  f"{content['heldout_accuracy']} on {content['heldout_questions']}, "
                  f"train {content['train_accuracy']}")


def graph_fit_fused(
    domain: Annotated[str, typer.Option(help="Domain graph (its training file is read).")
                      ] = "commonsense",
    n: Annotated[int, typer.Option(min=10, help="Training questions (seeded sample).")] = 150,
    seed: Annotated[int, typer.Option(help="Sample seed (other than fit-paths').")] = 1,
) -> None:
    """Fit kg-fused's weight λ (ours) on training questions only: the reader's letter
    distribution and the kg-paths scores, λ on a grid from 0 (the graph does not help)."""
    import json

    from rich.progress import Progress

    from metakg.kg_paths import weights_path
    from metakg.paths_fit import fit_fused_weight, reader_and_graph, training_questions

    p = Platform()
    qs = training_questions(p.settings.data_dir, domain, n, seed=seed)
    method = p.method("kg-fused", domain)
    with Progress(console=err) as bar:
        task = bar.add_task(f"reader on {len(qs)} training questions", total=len(qs))
        readers, scores, answers = reader_and_graph(
            method, qs, domain, lambda i: bar.update(task, completed=i),
            cache=p.settings.home / "paths" / f"fused_readers_{domain}.jsonl")
    lam, acc = fit_fused_weight(readers, scores, answers)
    path = weights_path(domain)
    content = json.loads(path.read_text())
    content.update({"fused_weight": lam, "fused_questions": len(qs), "fused_seed": seed,
                    "fused_accuracy_by_weight": acc,
                    "fused_command": "kgrag " + " ".join(sys.argv[1:])})
    path.write_text(json.dumps(content, indent=1) + "\n")
    console.print(f"{path}: fused weight {lam} (training accuracy by weight: {acc})")
