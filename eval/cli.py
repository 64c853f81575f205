"""`kgrag sweep`: one MetaKGRAG parameter over a list of values, scored and plotted.

    kgrag sweep --dataset csqa --domain commonsense --method metakgrag \\
        --param tau_coverage --values 0.4,0.5,0.6,0.7,0.8 --n 50 --out runs/sweep-tau

The root CLI adds the command with `register(app)`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

console = Console()


def register(app: typer.Typer) -> None:
    """Add `sweep` to the root `kgrag` app."""
    app.command("sweep")(sweep)


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
