"""`kgrag sweep`: one MetaKGRAG parameter over a list of values, scored and plotted.
`kgrag evidence`: what the KG methods retrieve for each question, without answering.

    kgrag sweep --dataset csqa --domain commonsense --method metakgrag \\
        --param tau_coverage --values 0.4,0.5,0.6,0.7,0.8 --n 50 --out runs/sweep-tau
    kgrag evidence --dataset csqa --domain commonsense --n 300 --out runs/evidence-csqa

The root CLI adds the command with `register(app)`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

console = Console()


def register(app: typer.Typer) -> None:
    """Add `sweep` and `evidence` to the root `kgrag` app."""
    app.command("sweep")(sweep)
    app.command("evidence")(evidence)


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
    from kgrag.cli import _platform

    p = _platform(model)
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
    from eval.evidence import run_evidence, table
    from eval.evidence import score_only as rescore
    from kgrag.cli import _platform

    if score_only:
        summaries = rescore(out)
    else:
        p = _platform(model)
        summaries = run_evidence(p, dataset, out=out, n=n, domain=domain,
                                 methods=[m.strip() for m in methods.split(",") if m.strip()],
                                 param=param, values=values, parallel=parallel, force=force)
    console.print("\n".join(table(summaries)))
    console.print(f"written: {out / 'evidence.md'}")
