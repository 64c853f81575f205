"""metakg's commands: `kgrag graph coverage` (how far a graph's answers are from the
question's entities, no LLM) and `kgrag graph fit-paths|fit-fused` (kg-paths' and
kg-fused's weights, from training questions only). The root CLI (kgrag/cli.py) calls
`register(app)` through the `kgrag.commands` entry point.

    kgrag graph coverage --dataset csqa --n 100
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from kgrag.commands import console, err, group
from kgrag.errors import KgragError
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
    all_phrases: Annotated[bool | None, typer.Option(
        "--all-phrases/--maximal-phrases",
        help="Seeds: every matched phrase of the question, overlapping ones too (kg-paths' "
             "rule), or only the maximal ones. Default: all for multiple choice, maximal "
             "for open questions.", show_default=False)] = None,
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
    n: Annotated[int, typer.Option(min=50, help="Training questions (seeded order).")] = 3000,
    seed: Annotated[int, typer.Option(help="Seed of the training questions' order.")] = 7,
    l2: Annotated[float | None, typer.Option(
        min=0.0, help="L2 penalty of the logit (default: chosen by 5-fold CV).")] = None,
    leave_out: Annotated[str, typer.Option(
        help="What each training question is read without: its own record in the graph, "
             "or every record of its training file (`source`: when the evaluation "
             "questions come from another dataset than the graph's records, as MedQA's "
             "from MedMCQA's).")] = "record",
    drop_presence: Annotated[bool, typer.Option(
        "--drop-presence", help="Hold the option-presence features (has_entity, "
                                "option_degree, only_question_entity) at 0: a training "
                                "question's own record made its answer's entity.")] = False,
) -> None:
    """Fit kg-paths (ours) on the domain's training questions only (never a dev file),
    each read without the facts of its own record; writes metakg/weights/."""
    from rich.progress import Progress

    from metakg.kg_paths import scorer_for
    from metakg.paths import PathModel
    from metakg.paths_fit import PRESENCE, fit_paths, training_questions, write_weights

    if leave_out not in ("record", "source"):
        raise KgragError(f"unknown --leave-out {leave_out!r}", hint="record or source")
    p = Platform()
    qs = training_questions(p.settings.data_dir, domain, n, seed=seed)
    scorer = scorer_for(p, domain, PathModel(np.zeros(0)))
    with Progress(console=err) as bar:
        task = bar.add_task(f"paths of {len(qs)} training questions", total=len(qs))
        content = fit_paths(scorer, qs, domain, l2=l2, cache=_records_cache(p, domain),
                            progress=lambda i: bar.update(task, completed=i),
                            leave_out=leave_out,  # type: ignore[arg-type]
                            drop=PRESENCE if drop_presence else ())
    content["seed"] = seed
    path = write_weights(content, domain)
    console.print(f"{path}: {content['questions']} questions, L2 {content['l2']}; "
                  f"5-fold CV accuracy {content['cv_accuracy']} (crude count "
                  f"{content['cv_accuracy_crude_count']}), train {content['train_accuracy']}")


def _records_cache(p: Platform, domain: str) -> Path:
    return p.settings.home / "paths" / f"records_{domain}.jsonl"


def graph_fit_fused(
    domain: Annotated[str, typer.Option(help="Domain graph (its training file is read).")
                      ] = "commonsense",
    n: Annotated[int, typer.Option(min=10, help="Training questions: the first N of "
                                                "fit-paths' sample.")] = 200,
    min_words: Annotated[int, typer.Option(
        min=0, help="Fit on the first N training questions of at least this many words "
                    "that fit-paths did not see (their kg-paths scores are held out by "
                    "construction): a sample shaped like the evaluation questions, e.g. "
                    "MedQA's long vignettes against MedMCQA's median of 11 words. "
                    "0: the first N of fit-paths' sample.")] = 0,
) -> None:
    """Fit kg-fused's weight λ (ours) on training questions only: the reader's letter
    distribution and held-out kg-paths scores, λ on a grid from 0 (the graph does not
    help)."""
    import json

    from rich.progress import Progress

    from metakg.kg_paths import fit_records, load_model, weights_path
    from metakg.paths_fit import (
        DATASET_OF,
        fit_fused_weight,
        held_out_scores,
        model_scores,
        reader_letters,
        training_questions,
    )

    p = Platform()
    p.use_published_bias(DATASET_OF.get(domain, domain))  # letters read as kgrag eval does
    meta = load_model(domain).meta
    sample = training_questions(p.settings.data_dir, domain, int(meta["questions"]),  # type: ignore[call-overload]
                                seed=int(meta.get("seed", 7)))  # type: ignore[call-overload]
    method = p.method("kg-fused", domain)
    scorer = method.scorer(sample[0])  # type: ignore[attr-defined]
    leave_out = str(meta.get("leave_out", "record"))
    if min_words:
        seen = {q.id for q in sample}
        unseen = [q for q in training_questions(p.settings.data_dir, domain, None,
                                                seed=int(meta.get("seed", 7)))  # type: ignore[call-overload]
                  if q.id not in seen and len(q.text.split()) >= min_words]
        rows = fit_records(scorer, unseen[:n], domain, cache=_records_cache(p, domain),
                           leave_out=leave_out)  # type: ignore[arg-type]
        scores = model_scores(rows, scorer.model)
    else:
        rows = fit_records(scorer, sample, domain, cache=_records_cache(p, domain),
                           leave_out=leave_out)  # type: ignore[arg-type]
        scores = held_out_scores(rows, float(meta["l2"]),  # type: ignore[arg-type]
                                 list(meta.get("dropped_features", ())))[:n]  # type: ignore[call-overload]
    qs = [q for q, _, _ in rows[:n]]
    if not qs:
        raise KgragError(f"no training question of {domain} has {min_words} words or more "
                         "outside fit-paths' sample", hint="lower --min-words")
    with Progress(console=err) as bar:
        task = bar.add_task(f"reader on {len(qs)} training questions", total=len(qs))
        readers = reader_letters(
            method, qs, domain, lambda i: bar.update(task, completed=i),
            cache=p.settings.home / "paths" / f"fused_readers_{domain}.jsonl")
    lam, acc = fit_fused_weight(readers, scores, [q.answers[0] for q in qs])
    path = weights_path(domain)
    content = json.loads(path.read_text())
    content.update({"fused_weight": lam, "fused_questions": len(qs), "fused_min_words": min_words,
                    "fused_accuracy_by_weight": acc,
                    "fused_command": "kgrag " + " ".join(sys.argv[1:])})
    content.pop("fused_seed", None)
    path.write_text(json.dumps(content, indent=1) + "\n")
    console.print(f"{path}: fused weight {lam} (training accuracy by weight: {acc})")
