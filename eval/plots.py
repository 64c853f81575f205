"""The report's plots: accuracy with CIs, cost–accuracy, ablation bars, sensitivity curves.

Every plot function takes scored metrics and a path, writes a PNG there and returns the
path, or returns None when there is nothing to draw. matplotlib is imported inside each
function (Agg backend), so importing this module costs nothing.

    plot_accuracy(metrics, Path("report/accuracy.png"))
    # -> PosixPath('report/accuracy.png')
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eval.scoring import Interval, MethodMetrics, RunMetrics

if TYPE_CHECKING:
    from eval.sweep import SweepPoint

ABLATION_COLOR, FULL_COLOR = "#DD8452", "#4C72B0"


def main_metric(m: MethodMetrics) -> tuple[str, Interval] | None:
    """The headline number of a method: accuracy, else EM, else ROUGE-L."""
    for name, x in (("accuracy", m.accuracy), ("EM", m.em), ("ROUGE-L", m.rouge_l)):
        if x is not None:
            return name, x
    return None


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _bars(rows: Sequence[tuple[str, Interval]], title: str, path: Path,
          colors: Sequence[str] | None = None, ylabel: str = "score % (95% CI)") -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(4, 0.8 * len(rows) + 2), 3.2))
    means = [x.mean * 100 for _, x in rows]
    errs = [[(x.mean - x.low) * 100 for _, x in rows], [(x.high - x.mean) * 100 for _, x in rows]]
    ax.bar([n for n, _ in rows], means, yerr=errs, capsize=4, color=colors or FULL_COLOR)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.tick_params(axis="x", rotation=30)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_accuracy(metrics: RunMetrics, path: Path) -> Path | None:
    """Bar chart of the main metric per method with its CI."""
    rows = [(m.method, mm[1]) for m in metrics.methods.values() if (mm := main_metric(m))]
    if not rows:
        return None
    return _bars(rows, f"{Path(metrics.dataset).stem} — {metrics.model}", path)


def plot_ablation(metrics: RunMetrics, ablations: dict[str, tuple[str, ...]],
                  path: Path) -> Path | None:
    """Bars of each full method beside its ablation variants (Table 6 of MetaKGRAG)."""
    rows: list[tuple[str, Interval]] = []
    colors: list[str] = []
    for full, variants in ablations.items():
        present = [v for v in variants if v in metrics.methods]
        if not present:
            continue
        for name in ([full] if full in metrics.methods else []) + present:
            mm = main_metric(metrics.methods[name])
            if mm is not None:
                rows.append((name, mm[1]))
                colors.append(FULL_COLOR if name == full else ABLATION_COLOR)
    if not rows:
        return None
    return _bars(rows, f"ablations — {Path(metrics.dataset).stem}", path, colors)


def plot_cost(metrics: RunMetrics, path: Path) -> Path | None:
    """Cost–accuracy scatter: median seconds per question against the main metric (CI)."""
    rows = [(m.method, m.median_seconds, mm[1]) for m in metrics.methods.values()
            if (mm := main_metric(m))]
    if not rows:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.4))
    for name, sec, x in rows:
        ax.errorbar(sec, x.mean * 100, yerr=[[(x.mean - x.low) * 100], [(x.high - x.mean) * 100]],
                    fmt="o", capsize=3)
        ax.annotate(name, (sec, x.mean * 100), fontsize=8, xytext=(3, 3),
                    textcoords="offset points")
    ax.set_xlabel("median seconds / question")
    ax.set_ylabel("score % (95% CI)")
    ax.set_title(f"cost and accuracy — {Path(metrics.dataset).stem}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_sensitivity(param: str, curves: dict[str, list[SweepPoint]], path: Path) -> Path | None:
    """Score with CI against a parameter's value, one line per (dataset, method) sweep
    (the MetaKGRAG paper's Figs. 3 and 5)."""
    curves = {label: pts for label, pts in curves.items() if pts}
    if not curves:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.4))
    for label, pts in curves.items():
        xs = [p.value for p in pts]
        ys = [p.score.mean * 100 for p in pts]
        errs = [[(p.score.mean - p.score.low) * 100 for p in pts],
                [(p.score.high - p.score.mean) * 100 for p in pts]]
        ax.errorbar(xs, ys, yerr=errs, marker="o", capsize=3, label=label)
    ax.set_xlabel(param)
    ax.set_title(f"sensitivity to {param}")
    ax.set_ylabel(f"{next(iter(curves.values()))[0].metric} % (95% CI)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
