"""Reports: Markdown (and HTML) tables in the papers' layouts, plus plots.

Method rows are grouped as the MetaKGRAG paper's tables group them (Without retrieval /
KG-RAG / Text RAG / Ours); every number carries its bootstrap 95% CI, and a section lists
the paired significance tests.

>>> write_report([Path("runs/csqa-50")], Path("runs/csqa-50/report"))
"""

from __future__ import annotations

import html
from pathlib import Path

from eval.bertscore import BERTSCORE_LAYER, BERTSCORE_MODEL
from eval.scoring import Interval, MethodMetrics, RunMetrics, score_run

GROUPS: list[tuple[str, tuple[str, ...]]] = [
    ("Without retrieval", ("llm", "cot")),
    ("KG-RAG", ("kg-vanilla", "tog")),
    ("Text RAG", ("rag", "ircot", "flare", "metarag", "imrag")),
    ("Ours / adaptive", ("seakr", "metakgrag")),
    ("Ablations", ("metakgrag-no-cycle", "metakgrag-no-completeness", "metakgrag-no-relevance",
                   "metakgrag-no-restart")),
]


def _group(method: str) -> str:
    for name, members in GROUPS:
        if method in members or any(method.startswith(m + "-") for m in members):
            return name
    return "Other"


def _ci(x: Interval | None, scale: float = 100.0) -> str:
    if x is None:
        return "–"
    return f"{x.mean * scale:.1f} [{x.low * scale:.1f}, {x.high * scale:.1f}]"


def _row(m: MethodMetrics) -> list[str]:
    cells = [m.method, m.setting, str(m.n)]
    if m.accuracy is not None:
        cells += [_ci(m.accuracy), str(m.correct), str(m.wrong), str(m.fail)]
    if m.em is not None:
        cells += [_ci(m.em), _ci(m.f1), f"{(m.precision or 0) * 100:.1f}",
                  f"{(m.recall or 0) * 100:.1f}"]
    if m.rouge_l is not None:
        cells += [_ci(m.rouge_l), _ci(m.bertscore_f1)]
    cells += [f"{m.llm_calls:.1f}", f"{m.retrievals:.1f}", f"{m.cypher_queries:.1f}",
              f"{m.median_seconds:.1f}"]
    if m.prr:
        cells.append(", ".join(f"{k} {v:.2f}" for k, v in m.prr.items()))
    else:
        cells.append("–")
    return cells


def _header(m: MethodMetrics) -> list[str]:
    cols = ["method", "setting", "n"]
    if m.accuracy is not None:
        cols += ["accuracy % [95% CI]", "correct", "wrong", "fail"]
    if m.em is not None:
        cols += ["EM % [CI]", "F1 % [CI]", "P %", "R %"]
    if m.rouge_l is not None:
        cols += ["ROUGE-L % [CI]", "BERTScore F1 % [CI]"]
    return cols + ["LLM calls/q", "retrievals/q", "Cypher/q", "median s/q", "PRR"]


def markdown(metrics: RunMetrics) -> str:
    lines = [f"## {metrics.dataset} — model {metrics.model}", "",
             f"Run: `{metrics.run}`", ""]
    methods = list(metrics.methods.values())
    if not methods:
        return "\n".join(lines + ["(no predictions yet)", ""])
    header = _header(methods[0])
    lines += ["| group | " + " | ".join(header) + " |",
              "|" + "---|" * (len(header) + 1)]
    for group, _ in [*GROUPS, ("Other", ())]:
        for m in methods:
            if _group(m.method) == group:
                lines.append(f"| {group} | " + " | ".join(_row(m)) + " |")
    if any(m.rouge_l for m in methods):
        lines += ["", f"BERTScore uses {BERTSCORE_MODEL}, layer {BERTSCORE_LAYER} (offline; not "
                  "comparable to roberta-large BERTScore)."]
    if metrics.pairs:
        lines += ["", "### Paired tests (same questions)", "",
                  "| A | B | metric | statistic | p |", "|---|---|---|---|---|"]
        lines += [f"| {t.a} | {t.b} | {t.metric} | {t.statistic:+.3f} | {t.p_value:.4f} |"
                  for t in metrics.pairs]
    lines += [""] + [f"> {n}" for n in metrics.notes]
    return "\n".join(lines) + "\n"


def plot_accuracy(metrics: RunMetrics, path: Path) -> Path | None:
    """Bar chart of the main metric per method with its CI."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [(m.method, m.accuracy or m.em or m.rouge_l) for m in metrics.methods.values()]
    rows = [(name, x) for name, x in rows if x is not None]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(max(4, 0.8 * len(rows) + 2), 3.2))
    means = [x.mean * 100 for _, x in rows]
    errs = [[(x.mean - x.low) * 100 for _, x in rows], [(x.high - x.mean) * 100 for _, x in rows]]
    ax.bar([n for n, _ in rows], means, yerr=errs, capsize=4, color="#4C72B0")
    ax.set_ylabel("score % (95% CI)")
    ax.set_title(f"{metrics.dataset} — {metrics.model}")
    ax.tick_params(axis="x", rotation=30)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_cost(metrics: RunMetrics, path: Path) -> Path | None:
    """Cost–accuracy scatter: median seconds per question against the main metric."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [(m.method, m.median_seconds, (m.accuracy or m.em or m.rouge_l))
            for m in metrics.methods.values()]
    rows = [(n, s, x) for n, s, x in rows if x is not None]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(5, 3.4))
    for name, sec, x in rows:
        ax.scatter(sec, x.mean * 100)
        ax.annotate(name, (sec, x.mean * 100), fontsize=8, xytext=(3, 3),
                    textcoords="offset points")
    ax.set_xlabel("median seconds / question")
    ax.set_ylabel("score %")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_report(runs: list[Path], out: Path, *, bertscore: bool = False) -> Path:
    """Score each run (if needed), then write report.md, report.html and plots into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    parts, images = ["# kgrag evaluation report", ""], []
    for i, run in enumerate(runs):
        metrics_path = run / "metrics.json"
        metrics = (RunMetrics.model_validate_json(metrics_path.read_text())
                   if metrics_path.is_file() else score_run(run, bertscore=bertscore))
        parts.append(markdown(metrics))
        for kind, fn in (("accuracy", plot_accuracy), ("cost", plot_cost)):
            img = fn(metrics, out / f"{i:02d}-{Path(metrics.dataset).stem}-{kind}.png")
            if img:
                parts.append(f"![{kind}]({img.name})\n")
                images.append(img)
    md = "\n".join(parts)
    (out / "report.md").write_text(md)
    (out / "report.html").write_text(
        "<!doctype html><meta charset='utf-8'><title>kgrag report</title>"
        f"<pre style='white-space:pre-wrap'>{html.escape(md)}</pre>"
        + "".join(f"<img src='{p.name}' style='max-width:48%'>" for p in images))
    return out / "report.md"
