"""One comparison of every method of a run: its row (setting, headline score, cost), a
scatter of the score against seconds per question, and per question each method's answer
beside the evidence it read (paths for graph methods, passages for text methods).

The app's Compare page and the report's comparison section both read it; nothing here
scores anything itself (the numbers are `eval.scoring`'s).

>>> from eval.report import load_metrics
>>> metrics = load_metrics(Path("docs/results/hotpotqa-dev"))  # doctest: +SKIP
>>> [(r.method, r.setting, r.headline) for r in compare_rows(metrics)][:2]  # doctest: +SKIP
[('cot', 'closed-book', 'F1'), ('llm', 'closed-book', 'F1')]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from eval.runner import RunLine
from eval.scoring import Interval, MethodMetrics, RunMetrics
from textrag.ppr import PPR_FACTORIES

SettingClass = Literal["closed-book", "open", "gold", "kg", "hybrid"]
SETTING_ORDER: tuple[SettingClass, ...] = ("closed-book", "open", "gold", "hybrid", "kg")
SETTING_COLORS = {"closed-book": "#8C8C8C", "open": "#4C72B0", "gold": "#DD8452",
                  "hybrid": "#55A868", "kg": "#C44E52"}
# Methods that read passages chosen through a domain graph (text answer, graph retrieval).
HYBRID_METHODS = frozenset(PPR_FACTORIES)


def setting_class(method: str, setting: str) -> SettingClass:
    """A method's setting as the comparison groups it: the predictions' settings ("kg",
    "kg-none", "open", "gold", "closed-book"), with graph-guided passage retrieval
    (`HYBRID_METHODS`) as "hybrid".

    >>> setting_class("metakgrag", "kg,kg-none"), setting_class("kg-ppr", "open")
    ('kg', 'hybrid')
    """
    parts = set(setting.split(","))
    if method.removesuffix("-gold") in HYBRID_METHODS:
        return "hybrid"
    if any(p.startswith("kg") for p in parts):
        return "kg"
    if "gold" in parts:
        return "gold"
    if "open" in parts:
        return "open"
    return "closed-book"


@dataclass(frozen=True)
class CompareRow:
    """One method's row: its setting, headline score with CI, and cost per question."""

    method: str
    setting: SettingClass
    n: int
    headline: str  # "F1", "accuracy" or "ROUGE-L"
    score: Interval
    em: Interval | None
    seconds: float  # mean seconds per question
    median_seconds: float
    llm_calls: float


def headline(m: MethodMetrics) -> tuple[str, Interval] | None:
    """F1 for short answers, accuracy for multiple choice, ROUGE-L for open answers."""
    for name, x in (("F1", m.f1), ("accuracy", m.accuracy), ("ROUGE-L", m.rouge_l)):
        if x is not None:
            return name, x
    return None


def compare_rows(metrics: RunMetrics) -> list[CompareRow]:
    """Every scored method's row, by setting (closed-book, open, gold, hybrid, kg) and then
    by headline score, best first."""
    rows = []
    for m in metrics.methods.values():
        h = headline(m)
        if h is None:
            continue
        rows.append(CompareRow(m.method, setting_class(m.method, m.setting), m.n, h[0], h[1],
                               m.em, m.seconds, m.median_seconds, m.llm_calls))
    return sorted(rows, key=lambda r: (SETTING_ORDER.index(r.setting), -r.score.mean))


def _pct(x: Interval | None) -> str:
    return "–" if x is None else f"{x.mean * 100:.1f} [{x.low * 100:.1f}, {x.high * 100:.1f}]"


def compare_table(rows: Sequence[CompareRow]) -> list[str]:
    """The rows as a Markdown table."""
    if not rows:
        return []
    name = rows[0].headline if len({r.headline for r in rows}) == 1 else "score"
    lines = [f"| method | setting | n | {name} % [95% CI] | EM % | s/question (mean) | "
             "median s | LLM calls/q |", "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r.method} | {r.setting} | {r.n} | {_pct(r.score)} | "
              f"{'–' if r.em is None else f'{r.em.mean * 100:.1f}'} | {r.seconds:.1f} | "
              f"{r.median_seconds:.1f} | {r.llm_calls:.1f} |" for r in rows]
    return lines


def compare_markdown(metrics: RunMetrics, image: str | None = None) -> str:
    """The report's comparison section for one run (table, then the scatter if drawn)."""
    rows = compare_rows(metrics)
    if not rows:
        return ""
    lines = [f"### Comparison — {Path(metrics.dataset).stem}", "",
             "Every method of the run with its setting (closed-book: no retrieval; open: "
             "passages retrieved from the corpus; gold: the question's own paragraphs; "
             "hybrid: passages chosen through the domain graph; kg: graph evidence), its "
             "headline score and its cost. Methods ran on different numbers of questions "
             "where n differs; `kgrag score --same K` compares them on the same K.", "",
             *compare_table(rows)]
    if image:
        lines += ["", f"![score against seconds per question]({image})"]
    return "\n".join(lines) + "\n"


def plot_score_seconds(metrics: RunMetrics, path: Path, exclude: Sequence[str] = ()
                       ) -> Path | None:
    """Scatter of the headline score (95% CI bars) against mean seconds per question, one
    point per method (those in `exclude`, e.g. ablations, left out), coloured by setting;
    the x axis is logarithmic (closed-book rows take seconds, graph rows minutes)."""
    rows = [r for r in compare_rows(metrics) if r.seconds > 0 and r.method not in exclude]
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for setting in SETTING_ORDER:
        group = [r for r in rows if r.setting == setting]
        if not group:
            continue
        ax.errorbar([r.seconds for r in group], [r.score.mean * 100 for r in group],
                    yerr=[[(r.score.mean - r.score.low) * 100 for r in group],
                          [(r.score.high - r.score.mean) * 100 for r in group]],
                    fmt="o", capsize=3, color=SETTING_COLORS[setting], label=setting)
        for r in group:
            ax.annotate(f"{r.method} ({r.n})", (r.seconds, r.score.mean * 100), fontsize=7,
                        xytext=(4, 3), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_xlabel("mean seconds per question (log scale)")
    name = rows[0].headline if len({r.headline for r in rows}) == 1 else "score"
    ax.set_ylabel(f"{name} % (95% CI)")
    ax.set_title(f"{Path(metrics.dataset).stem}: {name} against cost — {metrics.model}",
                 fontsize=9)
    ax.legend(fontsize=7, title="setting", title_fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# ---------------------------------------------------------------------- evidence
@dataclass(frozen=True)
class EvidenceItem:
    """One piece of what a method read: a graph path or triple, or a passage."""

    kind: Literal["path", "triple", "passage"]
    title: str  # the path or triple as text, or the passage's title
    text: str = ""  # a passage's text, where the run kept it


def evidence_items(line: RunLine, limit: int = 12) -> list[EvidenceItem]:
    """What the prediction read, for showing beside its answer: a graph method's final
    paths (MetaKGRAG's refinements) or its evidence triples; a text method's passages
    (text from the evidence itself, "title: text", or from the question's own paragraphs
    where the title matches). Closed-book predictions read nothing."""
    pred = line.prediction
    paths = [_path_text(s.data) for s in pred.trace if s.stage == "refine"]
    if paths := [p for p in paths if p]:
        return [EvidenceItem("path", p) for p in paths[:limit]]
    if pred.setting.startswith("kg"):
        return [EvidenceItem("triple", e) for e in pred.evidence[:limit]]
    known = {p.title: p.text for p in line.question.contexts}
    return [_passage(e, known) for e in pred.evidence[:limit]]


def _passage(e: str, known: dict[str, str]) -> EvidenceItem:
    """An evidence string as a passage: a bare title (its text from `known`), or
    "title: text" (a known title first, as titles can hold ": " themselves)."""
    if e in known:
        return EvidenceItem("passage", e, known[e])
    title = next((t for t in known if e.startswith(f"{t}: ")), None)
    if title is None:
        title, _, _ = e.partition(": ")
    return EvidenceItem("passage", title, e[len(title) + 2:] if len(e) > len(title) else "")


def _path_text(data: dict[str, Any]) -> str:
    final, names = data.get("final"), data.get("names") or {}
    if not isinstance(final, dict) or not final.get("entities"):
        return ""
    return " → ".join(str(names.get(e, e)) for e in final["entities"])
