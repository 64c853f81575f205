"""eval's commands. `kgrag eval`, `kgrag score`, `kgrag report`: answer a dataset into a
run directory, score it, report on runs. `kgrag progress`: how far a run has got.
`kgrag breakdown`: a run's score split by a question field (MedQuAD's question type).
`kgrag bench scoring`: seconds to score.
`kgrag sweep`: one MetaKGRAG parameter over a list of values, scored and plotted.
`kgrag evidence`: what the KG methods retrieve for each question, without answering.
`kgrag judge-agreement`: the G-Eval judge against hand labels (`eval.judge_check`).

    kgrag sweep --dataset csqa --domain commonsense --method metakgrag \\
        --param tau_coverage --values 0.4,0.5,0.6,0.7,0.8 --n 50 --out runs/sweep-tau
    kgrag evidence --dataset csqa --domain commonsense --n 300 --out runs/evidence-csqa

The root CLI (kgrag/cli.py) calls `register(app)` through the `kgrag.commands` entry
point.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kgrag.commands import cli_group, console, group, platform_for
from kgrag.errors import KgragError
from kgrag.platform import Platform


def register(app: typer.Typer) -> None:
    """Add `eval`, `score`, `progress`, `breakdown`, `report`, `bench scoring`, `sweep`,
    `evidence`, `judge-agreement` and `reader prior` to the root `kgrag` app."""
    app.command("eval")(eval_)
    app.command()(score)
    app.command()(progress)
    app.command()(breakdown)
    app.command()(report)
    group(app, "bench").command("scoring")(bench_scoring)
    group(app, "bench").command("geval")(bench_geval)
    app.command("sweep")(sweep)
    app.command("evidence")(evidence)
    app.command("judge-agreement")(judge_agreement)
    reader_app = cli_group("The multiple-choice reader (letter probabilities).")
    reader_app.command("prior")(reader_prior)
    reader_app.command("trust")(reader_trust)
    app.add_typer(reader_app, name="reader")


def eval_(
    dataset: Annotated[str, typer.Option(help="Built-in name (csqa, medqa, medquad, mmlu-law, "
                                               "mmlu-law-val, hotpotqa, 2wiki, nq) or a "
                                               "JSON Lines question file.")],
    methods: Annotated[str, typer.Option(help="Comma-separated method names.")] = "llm",
    n: Annotated[int | None, typer.Option(help="First N questions.")] = None,
    out: Annotated[Path | None, typer.Option(help="Run directory (default: "
                                                  "runs/<dataset>-<n>).")] = None,
    domain: Annotated[str | None, typer.Option(help="Graph for KG methods (default: the "
                                                     "dataset's domain).")] = None,
    model: Annotated[str | None, typer.Option(help="Chat model.")] = None,
    force: Annotated[bool, typer.Option(help="Write into a run of another config.")] = False,
    redo_errors: Annotated[bool, typer.Option(
        help="Answer again the questions whose last answer is an error.")] = False,
    replay: Annotated[bool, typer.Option(
        help="Answer a greedy request another method already sent (the same concepts "
             "prompt, the same evidence) with its first reply; its time is still "
             "charged to each method.")] = True,
    explanations: Annotated[bool, typer.Option(
        help="Decode the explanation the KG answer prompt asks for after the option. "
             "Off: an answer-first reply stops once its option is read (the same option; "
             "the trace marks the cut).")] = False,
    bias: Annotated[str | None, typer.Option(
        help="Multiple choice: position-bias correction of the letter reader: none, "
             "rotate (cyclic permutations averaged), prior (PriDe; `kgrag reader "
             "prior`) or prompt-prior (PriDe with each answer prompt's own prior; "
             "`kgrag reader prior --prompt answer_choose`). Default: the configured "
             "one (none), or prompt-prior on a dataset with shipped priors (csqa, "
             "medqa, mmlu-law).")] = None,
    rotations: Annotated[int | None, typer.Option(
        min=0, help="Passes for --bias rotate (0: one per option).")] = None,
) -> None:
    """Answer a dataset's questions with each method into a resumable run directory."""
    from eval.runner import run_eval

    names = [m.strip() for m in methods.split(",") if m.strip()]
    p = platform_for(model)
    _set_reader(p, bias or _published_bias(p, dataset, rotations), rotations)
    run_dir = out or Path("runs") / f"{Path(dataset).stem}-{n or 'all'}"
    run_eval(p, dataset, names, n=n, out=run_dir, domain=domain, force=force,
             redo_errors=redo_errors, replay=replay, explanations=explanations)
    console.print(f"predictions in {run_dir / 'predictions.jsonl'}; "
                  f"score with `kgrag score {run_dir}`")


def _published_bias(p: Platform, dataset: str, rotations: int | None) -> str | None:
    """The published runs' correction (`prompt-prior`, with the shipped priors) for a
    dataset that has priors of this model (`Platform.use_published_bias`), unless a bias
    is configured or rotations are asked for; a file `csqa.jsonl` is CommonsenseQA."""
    from kgrag.datasets import DATASETS

    if rotations is not None:
        return None
    name = dataset if dataset in DATASETS else Path(dataset).name.split(".")[0]
    bias = p.use_published_bias(name)
    if bias:
        console.print(f"multiple choice: position priors of {p.chat_name} on {name} "
                      f"divided out (--bias {bias}, the published setting; --bias none "
                      "turns it off)")
    return bias


def _set_reader(p: Platform, bias: str | None, rotations: int | None) -> None:
    """Override the configured letter reader's bias correction for this command."""
    if bias is not None or rotations is not None:
        from kgrag.reader import ReaderConfig

        update = {k: v for k, v in (("bias", bias), ("rotations", rotations)) if v is not None}
        p.settings.reader = ReaderConfig.model_validate(
            p.settings.reader.model_dump() | update)


def score(
    run: Annotated[Path, typer.Argument(help="Run directory.")],
    bertscore: Annotated[bool, typer.Option(help="Also BERTScore (open-ended).")] = False,
    geval: Annotated[bool, typer.Option(help="Also G-Eval (open-ended answers and "
                                             "explanations) with a local judge.")] = False,
    judge: Annotated[str | None, typer.Option(help="G-Eval judge model (default: the "
                                                   "configured chat model).")] = None,
    same: Annotated[int | None, typer.Option(help="Also a table and significance matrix of "
                                                  "every method on the run's first K "
                                                  "questions.")] = None,
    geval_complete: Annotated[bool, typer.Option(
        help="G-Eval only the questions every method has answered (a question's answers "
             "share the judge's KV cache; the rest waits for a later pass).")] = False,
    geval_stored: Annotated[bool, typer.Option(
        help="G-Eval without judging: only the questions whose answers geval.jsonl already "
             "holds for every dimension (a checkpoint while a judge lane is behind; the judge "
             "model is named, never loaded).")] = False,
) -> None:
    """Score a run's predictions into metrics.json (a separate pass)."""
    from eval.report import markdown
    from eval.scoring import score_run

    g = None
    if geval or judge or geval_stored:
        from eval.geval import load_judge
        from kgrag.config import load_settings

        g = load_judge(load_settings(), judge, stored_only=geval_stored)
        from eval.judge_check import judge_warning

        if warning := judge_warning(g.name):
            console.print(f"[yellow]warning:[/] {warning}")
    console.print(markdown(score_run(run, bertscore=bertscore, judge=g, progress=True,
                                   same=same, judge_complete=geval_complete,
                                   judge_stored=geval_stored)))


def progress(
    run: Annotated[Path, typer.Argument(help="Run directory.")],
    brief: Annotated[bool, typer.Option(help="Print only `least unjudged ready` (for "
                                             "scripts).")] = False,
    to: Annotated[int | None, typer.Option(min=1, help="Also what is left before every row "
                                                       "has N questions answered and judged, "
                                                       "in lane-hours at the latest pace.")
                  ] = None,
    methods: Annotated[str | None, typer.Option(help="Comma-separated methods (default: the "
                                                     "run's; one without answers counts 0).")
                       ] = None,
) -> None:
    """How far a run has got, without scoring it: answers and failures per method, the
    median seconds of each method's latest answers, and the answers G-Eval has judged and
    may judge now (their question answered by every method)."""
    from rich.table import Table

    from eval.progress import RECENT, run_progress

    p = run_progress(run, [m.strip() for m in methods.split(",") if m.strip()]
                     if methods else None)
    if brief:
        typer.echo(p.brief())
        return
    table = Table("method", "answered", "errors", f"s/q (latest {RECENT})", "G-Eval judged",
                  title=str(run))
    for m in p.methods:
        table.add_row(m.method, str(m.answered), str(m.errors),
                      "-" if m.seconds is None else f"{m.seconds:.1f}",
                      f"{m.judged} of {m.judgeable}" if m.judgeable else "-")
    console.print(table)
    if none := [m.method for m in p.methods if not m.answered]:
        console.print(f"no answers in this run from {', '.join(none)} (a method not run yet, "
                      f"or a misspelt name)")
    console.print(f"every method has answered {p.least}+ questions; {p.complete} questions "
                  f"are answered by every method")
    if p.unjudged:
        console.print(f"{p.unjudged} answers not judged yet, {p.ready} of them to questions "
                      f"every method answered (`kgrag score {run} --geval --geval-complete` "
                      f"judges those)")
    if to is not None:
        console.print(p.left(to).summary())


def breakdown(
    run: Annotated[Path, typer.Argument(help="Run directory.")],
    by: Annotated[str, typer.Option(help="Question field: qtype or source (MedQuAD), type "
                                         "or level (HotpotQA), type (2Wiki).")] = "qtype",
    same: Annotated[int | None, typer.Option(help="On the run's first K questions (default: "
                                                  "those every method answered).")] = None,
    methods: Annotated[str | None, typer.Option(help="Comma-separated methods (default: "
                                                     "every method of the run).")] = None,
    pair: Annotated[str | None, typer.Option(help="Two methods A,B: A − B per value with "
                                                  "its paired-bootstrap p.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Each method's score per value of a question field, on the same questions (ROUGE-L
    for open-ended answers, F1 for short answers, accuracy for multiple choice)."""
    import dataclasses
    import json

    from eval.breakdown import breakdown as split
    from eval.breakdown import markdown_table

    def names(text: str | None) -> list[str] | None:
        return [m.strip() for m in text.split(",") if m.strip()] if text else None

    two = names(pair)
    if two is not None and len(two) != 2:
        raise KgragError(f"--pair takes two methods A,B, not {pair!r}")
    b = split(run, by, same, names(methods), (two[0], two[1]) if two else None)
    if as_json:
        d = dataclasses.asdict(b)
        d["cells"] = {f"{m}|{v}": dataclasses.asdict(c) for (m, v), c in b.cells.items()}
        d["pair_tests"] = {v: {"diff": t[0], "p": t[1]} for v, t in b.pair_tests.items()}
        typer.echo(json.dumps(d, indent=2))
        return
    typer.echo(markdown_table(b))


def report(
    runs: Annotated[list[Path], typer.Argument(help="Run directories.")],
    out: Annotated[Path | None, typer.Option(help="Report directory.")] = None,
) -> None:
    """Write a Markdown/HTML report with tables and plots for one or more runs."""
    from eval.report import write_report

    path = write_report(runs, out or runs[0] / "report")
    console.print(f"report: {path}")


def bench_scoring(n: Annotated[int, typer.Option(help="Open-ended predictions to score.")] = 300,
                  ) -> None:
    """Seconds to score N MedQuAD predictions: ROUGE-L alone, then with BERTScore."""
    from eval.bench import bench_scoring as run

    r = run(Platform(), n)
    console.print(f"scoring {r.n} open-ended predictions: ROUGE-L (+CIs, pair tests) "
                  f"{r.rouge_s:.1f} s; with BERTScore ({r.n} pairs, model load included) "
                  f"{r.bertscore_s:.1f} s")


def bench_geval(
    n: Annotated[int, typer.Option(min=1, help="MedQuAD questions to answer.")] = 4,
    methods: Annotated[int, typer.Option(min=1, help="Synthetic answers per question "
                                                     "(one per method).")] = 3,
    judge: Annotated[str | None, typer.Option(help="Judge model (default: the chat "
                                                   "model).")] = None,
) -> None:
    """Seconds for the G-Eval judge on N x METHODS answers x 4 dimensions: method by method
    against question by question (the order `kgrag score --geval` uses, sharing each
    dimension's instructions and each question's reference answer in the KV cache)."""
    from eval.bench import bench_geval as run

    r = run(Platform(), n, methods, judge)
    per = 1 / max(r.answers, 1)
    console.print(f"G-Eval, judge {r.judge}, {r.answers} answers ({r.methods} per question) "
                  f"x 4 dimensions: method by method {r.by_method_s:.1f} s "
                  f"({r.by_method_s * per:.1f} s/answer); question by question "
                  f"{r.by_question_s:.1f} s ({r.by_question_s * per:.1f} s/answer); "
                  f"largest score difference {r.max_score_diff:.3f}")


def reader_prior(
    dataset: Annotated[str, typer.Option(help="csqa, medqa or mmlu-law: the prior is "
                                              "estimated from its calibration file "
                                              "(never an evaluation file).")],
    n: Annotated[int, typer.Option(min=1, help="Calibration questions (each read under "
                                               "every rotation of its options).")] = 120,
    model: Annotated[str | None, typer.Option(help="Chat model.")] = None,
    out: Annotated[Path | None, typer.Option(help="Prior file (default: where "
                                                  "`--bias prior` looks for it).")] = None,
    prompt: Annotated[str, typer.Option(help="Answer prompt it is estimated under: "
                                             "llm_choose (the `llm` row's, for --bias prior) "
                                             "or answer_choose (the KG rows', for --bias "
                                             "prompt-prior).")] = "llm_choose",
) -> None:
    """Estimate the model's prior over option positions (PriDe) for `kgrag eval --bias
    prior` or `prompt-prior`: from a training, knowledge-source or validation file only."""
    from eval.prior import PROMPTS, estimate_prior
    from kgrag.reader import prior_path

    if prompt not in PROMPTS:
        raise typer.BadParameter(f"one of: {', '.join(PROMPTS)}", param_hint="--prompt")
    p = platform_for(model)
    prior = estimate_prior(p.chat_model, dataset, p.settings.data_dir, n, prompt=prompt)
    root = p.reader_config().prior_dir
    assert root is not None  # resolved by the platform
    path = out or prior_path(root, p.chat_model.name, dataset, prompt)
    prior.save(path)
    shares = " · ".join(f"{lb} {v:.3f}" for lb, v in zip(prior.labels, prior.probs,
                                                           strict=True))
    console.print(f"position prior of {prior.model} on {dataset} under {prompt} from "
                  f"{prior.questions} questions of {prior.source}: {shares}\nwritten: {path}")


def reader_trust(
    dataset: Annotated[str, typer.Option(help="csqa, medqa or mmlu-law: calibrated on its "
                                              "calibration file (never an evaluation file).")],
    domain: Annotated[str | None, typer.Option(help="Graph whose evidence is calibrated "
                                                    "(default: the dataset's domain).")] = None,
    n: Annotated[int, typer.Option(min=1, help="Calibration questions.")] = 60,
    model: Annotated[str | None, typer.Option(help="Chat model.")] = None,
    bias: Annotated[str, typer.Option(help="The letter reader's bias correction, as the "
                                           "runs that use the trust read (none, rotate, "
                                           "prior).")] = "prior",
) -> None:
    """Calibrate how far `metakgrag-oa-trust` trusts a graph's evidence: answer calibration
    questions with `metakgrag-oa` (each one's own source record left out of the paths) and
    keep the policy (closed-book, gate, evidence) with the most correct answers."""
    from eval.trust import estimate_trust
    from metakg.trust import trust_path

    p = platform_for(model)
    _set_reader(p, bias, None)
    trust = estimate_trust(p, dataset, domain, n)
    root = p.reader_config().prior_dir
    assert root is not None  # resolved by the platform
    path = trust_path(root, trust.model, dataset, trust.domain, trust.bias)
    trust.save(path)
    counts = " · ".join(f"{k} {v}" for k, v in trust.correct.items())
    console.print(f"evidence trust of {trust.model} in {trust.domain} on {dataset}, "
                  f"{trust.questions} questions of {trust.source} (evidence read on "
                  f"{trust.evidence_read}): correct {counts} → policy {trust.policy}\n"
                  f"written: {path}")


def sweep(
    dataset: Annotated[str, typer.Option(help="Built-in dataset name or a question file.")],
    param: Annotated[str, typer.Option(help="A MetaKGConfig field: tau_coverage, n_max, "
                                            "n_starts, tau_c, delta, ...")],
    values: Annotated[str, typer.Option(help="Comma-separated values, e.g. 0.4,0.5,0.6.")],
    method: Annotated[str, typer.Option(help="A MetaKGRAG method (or kg-vanilla, tog).")
                      ] = "metakgrag",
    n: Annotated[int | None, typer.Option(help="First N questions.")] = None,
    out: Annotated[Path | None, typer.Option(help="Sweep directory (one run per value).")
                   ] = None,
    domain: Annotated[str | None, typer.Option(help="Graph for the KG method.")] = None,
    model: Annotated[str | None, typer.Option(help="Chat model.")] = None,
    force: Annotated[bool, typer.Option(help="Write into runs of another config.")] = False,
) -> None:
    """Run a KG method once per value of one MetaKGConfig parameter; score and plot it
    (accuracy with 95% CI against the value, as the MetaKGRAG paper's Figs. 3 and 5)."""
    from eval.plots import plot_sensitivity
    from eval.sweep import parse_values, points_table, read_manifest, run_sweep, score_sweep

    p = platform_for(model)
    parsed = parse_values(param, values, p.settings.metakg)
    out_dir = out or Path("runs") / f"sweep-{Path(dataset).stem}-{param}"
    run_sweep(p, dataset=dataset, method=method, param=param, values=parsed, n=n,
              out=out_dir, domain=domain, force=force)
    manifest = read_manifest(out_dir)
    points = score_sweep(out_dir)
    console.print("\n".join(points_table(manifest, points)))
    img = plot_sensitivity(param, {f"{manifest.dataset} {method}": points},
                           out_dir / f"sensitivity-{param}.png")
    console.print(f"plot: {img}; report with `kgrag report {out_dir}`")


def evidence(
    dataset: Annotated[str, typer.Option(help="Built-in dataset name or a question file.")],
    out: Annotated[Path, typer.Option(help="Evidence directory (resumable).")],
    methods: Annotated[str, typer.Option(help="Comma-separated KG methods.")] = (
        "kg-vanilla,metakgrag,metakgrag-no-cycle,metakgrag-no-completeness,"
        "metakgrag-no-relevance,metakgrag-no-restart"),
    n: Annotated[int | None, typer.Option(help="First N questions.")] = None,
    domain: Annotated[str | None, typer.Option(help="Domain graph.")] = None,
    param: Annotated[str | None, typer.Option(help="A MetaKGConfig field to vary.")] = None,
    values: Annotated[str | None, typer.Option(help="Its comma-separated values.")] = None,
    parallel: Annotated[int, typer.Option(min=1, help="Concept prompts decoded together "
                                          "(1: one call each, as kgrag eval asks).")] = 1,
    model: Annotated[str | None, typer.Option(help="Chat model (concept extraction).")
                     ] = None,
    score_only: Annotated[bool, typer.Option(help="Only rewrite the summary of OUT.")
                          ] = False,
    force: Annotated[bool, typer.Option(help="Write into a directory of another config.")
                     ] = False,
) -> None:
    """Gather each KG method's evidence for every question without generating answers:
    how often the answer's words are in it, under every ablation or parameter value
    (one concept extraction per question, kept for later runs)."""
    from eval.evidence import run_evidence
    from eval.evidence_summary import score_only as rescore
    from eval.evidence_summary import table

    if score_only:
        summaries = rescore(out)
    else:
        p = platform_for(model)
        summaries = run_evidence(p, dataset, out=out, n=n, domain=domain,
                                 methods=[m.strip() for m in methods.split(",") if m.strip()],
                                 param=param, values=values, parallel=parallel, force=force)
    console.print("\n".join(table(summaries)))
    console.print(f"written: {out / 'evidence.md'}")


def judge_agreement(
    labels: Annotated[Path, typer.Argument(help="Hand labels (JSON Lines, docs/judge/).")],
    run: Annotated[Path, typer.Argument(help="Run whose geval.jsonl holds the judge's "
                                             "scores of the labelled answers.")],
    judge: Annotated[str, typer.Option(help="Judge model name the scores are stored "
                                            "under.")] = "qwen2.5-coder-1.5b",
    json_out: Annotated[bool, typer.Option("--json", help="Print the check as JSON.")] = False,
    write: Annotated[bool, typer.Option(
        help="Record the verdict in eval/judge_checks.json (read by `kgrag score "
             "--geval`).")] = False,
) -> None:
    """The G-Eval judge against hand labels: Spearman ρ and quadratic-weighted κ per
    dimension with bootstrap CIs, and each side's correlation with answer length."""
    from eval.judge_check import check_judge, check_table, judge_scores, load_labels, record

    hand = load_labels(labels)  # a KgragError is printed by the root CLI, no traceback
    check = check_judge(hand, judge_scores(hand, run, judge), judge=judge,
                        labels_path=str(labels), run=str(run))
    if write:
        record(check)
    if json_out:
        print(check.model_dump_json(indent=2))
    else:
        for line in check_table(check):
            print(line)
