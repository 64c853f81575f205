"""Reports: Markdown and self-contained HTML, in the papers' table layout, with plots.

Method rows are grouped as the MetaKGRAG paper's tables group them: Without retrieval,
KG-RAG, Self-refine (retrieval that monitors and revises itself: FLARE, IRCoT, MetaRAG,
SeaKR, IM-RAG) and MetaKGRAG (the paper's "Ours" row), plus groups the paper has no rows
for: Text RAG (standard single-shot retrieval), kgrag's own extensions, named "Ours: …"
(graph-guided text RAG, option-aware MetaKGRAG), and Ablations (each next to its full
method in the ablation bar plot). `-gold` variants sit in their method's group; the
setting column says which rows used gold context. Every number carries its bootstrap
95% CI; a section lists the paired significance tests. A sweep directory (`kgrag sweep`)
becomes a sensitivity curve. Notes say when a run mixes configurations or code versions,
skipped dataset lines, or has predictions its metrics.json did not score.

    write_report([Path("runs/csqa-50"), Path("runs/sweep-tau")], Path("runs/report"))
    # -> PosixPath('runs/report/report.md')
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

from eval.agreement import agreement_lines
from eval.bertscore import BERTSCORE_LAYER, BERTSCORE_MODEL
from eval.compare import compare_markdown, plot_score_seconds
from eval.geval import DIMENSIONS
from eval.html import markdown_to_html
from eval.plots import plot_ablation, plot_accuracy, plot_cost, plot_sensitivity
from eval.runner import read_run
from eval.scoring import (
    GEVAL_AT_EQUAL_LENGTH,
    EvidenceSplit,
    Interval,
    MethodMetrics,
    OptionCount,
    PairTest,
    RunMetrics,
    SameQuestions,
    score_run,
)
from eval.sweep import SweepPoint, points_table, read_manifest, score_sweep
from kg_builder.domains import PAPER_PROTOCOL_DOMAIN, PAPER_PROTOCOL_TITLE

__all__ = ["ABLATIONS", "GROUPS", "markdown", "plot_accuracy", "plot_cost", "write_report"]

GROUPS: list[tuple[str, tuple[str, ...]]] = [
    ("Without retrieval", ("llm", "cot", "kg-no-evidence")),
    ("KG-RAG", ("kg-vanilla", "tog")),
    ("Text RAG", ("rag",)),
    ("Ours: graph-guided text RAG", ("kg-ppr", "ircot-ppr", "metarag-ppr")),
    ("Self-refine", ("flare", "ircot", "metarag", "seakr", "imrag")),
    ("MetaKGRAG", ("metakgrag",)),  # the paper's method (its tables' "Ours")
    ("Ours: option-aware MetaKGRAG", ("metakgrag-oa", "metakgrag-oa-trust")),
    ("Ours: graph path scores", ("kg-paths", "kg-fused")),
]
# Full method → its ablation variants (MetaKGRAG Table 6, SeaKR Table 3, IM-RAG Table 3).
ABLATIONS: dict[str, tuple[str, ...]] = {
    "metakgrag": ("metakgrag-no-cycle", "metakgrag-no-completeness", "metakgrag-no-relevance",
                  "metakgrag-no-restart"),
    "seakr": ("seakr-no-sa-retrieval", "seakr-no-sa-rerank", "seakr-knowledge-only",
              "seakr-rationales-only"),
    "imrag": ("imrag-no-refiner", "imrag-no-answerer"),
}
GROUP_ORDER = [name for name, _ in GROUPS] + ["Ablations", "Other"]


def _base(method: str) -> str:
    return method.removesuffix("-gold")


def _group(method: str) -> str:
    base = _base(method)
    if any(base in variants for variants in ABLATIONS.values()):
        return "Ablations"
    for name, members in GROUPS:
        if base in members:
            return name
    return "Other"


def _ci(x: Interval | None, scale: float = 100.0, digits: int = 1) -> str:
    if x is None:
        return "–"
    return f"{x.mean * scale:.{digits}f} [{x.low * scale:.{digits}f}, {x.high * scale:.{digits}f}]"


def _geval(dim: str) -> Callable[[MethodMetrics], str]:
    return lambda m: _ci(m.geval.scores.get(dim), 1.0, 2) if m.geval else "–"


def _prr(m: MethodMetrics) -> str:
    return ", ".join(f"{k} {v:.2f}" for k, v in m.prr.items()) if m.prr else "–"


def _has(attr: str) -> Callable[[MethodMetrics], bool]:
    return lambda m: getattr(m, attr) is not None


_ABBREV = {"coherence": "Coh.", "consistency": "Cons.", "fluency": "Flu.", "relevance": "Rel."}
# (header, cell, shown when any method has it)
Column = tuple[str, Callable[[MethodMetrics], str], Callable[[MethodMetrics], bool]]
_ALWAYS: Callable[[MethodMetrics], bool] = lambda m: True  # noqa: E731
COLUMNS: list[Column] = [
    ("method", lambda m: m.method, _ALWAYS),
    ("setting", lambda m: m.setting, _ALWAYS),
    ("n", lambda m: str(m.n), _ALWAYS),
    ("accuracy % [95% CI]", lambda m: _ci(m.accuracy), _has("accuracy")),
    ("correct", lambda m: str(m.correct) if m.correct is not None else "–", _has("accuracy")),
    ("wrong", lambda m: str(m.wrong) if m.wrong is not None else "–", _has("accuracy")),
    ("fail", lambda m: str(m.fail) if m.fail is not None else "–", _has("accuracy")),
    ("EM % [CI]", lambda m: _ci(m.em), _has("em")),
    ("F1 % [CI]", lambda m: _ci(m.f1), _has("em")),
    ("P %", lambda m: f"{m.precision * 100:.1f}" if m.precision is not None else "–", _has("em")),
    ("R %", lambda m: f"{m.recall * 100:.1f}" if m.recall is not None else "–", _has("em")),
    ("ROUGE-L % [CI]", lambda m: _ci(m.rouge_l), _has("rouge_l")),
    ("BERTScore F1 % [CI]", lambda m: _ci(m.bertscore_f1), _has("bertscore_f1")),
    *((f"G-Eval {_ABBREV.get(d, d)} (1–5) [CI]", _geval(d), _has("geval")) for d in DIMENSIONS),
    ("G-Eval n", lambda m: f"{m.geval.answers}" if m.geval else "–", _has("geval")),
    ("words/answer (median)", lambda m: f"{m.answer_words:.0f}" if m.answer_words is not None
     else "–", _has("answer_words")),
    ("LLM calls/q", lambda m: f"{m.llm_calls:.1f}", _ALWAYS),
    ("of them replayed/q", lambda m: f"{m.replayed_calls:.2f}", lambda m: m.replayed_calls > 0),
    ("tokens/q", lambda m: f"{m.prompt_tokens + m.completion_tokens:.0f}", _ALWAYS),
    ("retrievals/q", lambda m: f"{m.retrievals:.1f}", _ALWAYS),
    ("Cypher/q", lambda m: f"{m.cypher_queries:.1f}", _ALWAYS),
    ("median s/q", lambda m: f"{m.median_seconds:.1f}", _ALWAYS),
    ("answer in evidence % [CI]", lambda m: _ci(m.evidence_hit), _has("evidence_hit")),
    ("retrieval ms (median, no LLM)", lambda m: f"{m.retrieval_ms:.0f}"
     if m.retrieval_ms is not None else "–", _has("retrieval_ms")),
    ("concepts matched % / starts/q", lambda m: (
        f"{m.matching['kept_share'] * 100:.0f} / {m.matching['starts_per_question']:.1f}"
        if m.matching else "–"), _has("matching")),
    ("PRR", _prr, _has("prr")),
    ("Passage EM % [CI]", lambda m: _ci(m.passage_em), _has("passage_em")),
    ("passage recall %", lambda m: f"{m.passage_recall * 100:.1f}"
     if m.passage_recall is not None else "–", _has("passage_recall")),
    ("all supporting read % [CI]", lambda m: _ci(m.supporting_all), _has("supporting_all")),
    ("supporting read (mean share) %", lambda m: f"{m.supporting_share * 100:.1f}"
     if m.supporting_share is not None else "–", _has("supporting_share")),
]


def _table(methods: list[MethodMetrics]) -> list[str]:
    cols = [c for c in COLUMNS if any(c[2](m) for m in methods)]
    lines = ["| group | " + " | ".join(h for h, _, _ in cols) + " |",
             "|" + "---|" * (len(cols) + 1)]
    for group in GROUP_ORDER:
        for m in methods:
            if _group(m.method) == group:
                lines.append(f"| {group} | " + " | ".join(cell(m) for _, cell, _ in cols) + " |")
    return lines


def _metric_notes(metrics: RunMetrics) -> list[str]:
    methods = list(metrics.methods.values())
    lines = []
    if any(m.bertscore_f1 for m in methods):
        lines += ["", f"BERTScore uses {BERTSCORE_MODEL}, layer {BERTSCORE_LAYER} (offline; not "
                  "comparable to roberta-large BERTScore)."]
    if metrics.geval is not None:
        g = metrics.geval
        unparsed = sum(m.geval.unparsed for m in methods if m.geval)
        lines += ["", f"G-Eval: judge `{g.judge}`, {', '.join(g.dimensions)} on a {g.scale} "
                  f"scale (probability-weighted over the score tokens, top-{g.top_logprobs} "
                  f"logprobs); Table 9 of the MetaKGRAG paper prints 0–100 without a stated "
                  f"mapping. Judged: open-ended answers and explanations; empty answers score "
                  f"1. Cost per answer: {g.llm_calls_per_answer:.1f} LLM calls, "
                  f"{g.prompt_tokens_per_answer:.0f}+{g.completion_tokens_per_answer:.1f} "
                  f"tokens, {g.seconds_per_answer:.1f} s ({g.answers} answers); "
                  f"{unparsed} replies without a score token left out."]
    if any(t.metric == GEVAL_AT_EQUAL_LENGTH for t in metrics.pairs):
        lines += ["", f"`{GEVAL_AT_EQUAL_LENGTH}`: the G-Eval difference expected where both "
                  "answers are equally long (per question, the difference regressed on the "
                  "log ratio of their lengths in words; the intercept, bootstrapped over "
                  "questions), after length-controlled AlpacaEval (arXiv:2404.04475). A "
                  "difference that shrinks here is partly the judge's taste for length."]
    return lines


def _graph_note(metrics: RunMetrics) -> str:
    g = metrics.graph
    if g is None:
        return ""
    return (f" · graph `{metrics.domain}`: {g.entities:,} entities, {g.facts:,} facts, "
            f"{g.chunks:,} chunks, keys `{g.digest}`")


def heading(metrics: RunMetrics) -> str:
    """A run's table heading; a run over the paper-protocol graph says what that graph
    holds (issue 43: it is built from the evaluation questions and their answers)."""
    if metrics.domain == PAPER_PROTOCOL_DOMAIN:
        return f"{metrics.dataset}, {PAPER_PROTOCOL_TITLE} — model {metrics.model}"
    return f"{metrics.dataset} — model {metrics.model}"


def markdown(metrics: RunMetrics) -> str:
    """One run's section: the grouped table, metric notes, paired tests, run notes."""
    lines = [f"## {heading(metrics)}", "",
             f"Run: `{metrics.run}`" + _graph_note(metrics), ""]
    methods = list(metrics.methods.values())
    if not methods:
        return "\n".join(lines + ["(no predictions yet)", ""])
    lines += _table(methods) + _metric_notes(metrics) + _options_section(methods)
    lines += agreement_lines(metrics.agreement, metrics.geval.judge if metrics.geval else "?")
    if metrics.pairs:
        lines += ["", "### Paired tests (same questions)", "",
                  "| A | B | metric | shared questions | statistic | p |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| {t.a} | {t.b} | {t.metric} | {t.n or '–'} | {t.statistic:+.3f} | "
                  f"{t.p_value:.4f} |" for t in metrics.pairs]
    if metrics.same is not None:
        lines += _same_section(metrics.same)
    if metrics.evidence_split:
        lines += _evidence_section(metrics.evidence_split)
    lines += [""] + [f"> {n}" for n in metrics.notes]
    return "\n".join(lines) + "\n"


def _p(p: float) -> str:
    return f"{p:.3f}" if p >= 0.001 else "<0.001"


def _evidence_section(rows: list[EvidenceSplit]) -> list[str]:
    ref = rows[0].reference
    lines = ["", "### KG methods by the evidence they had", "",
             f"Each KG method's correct answers on the questions where it had KG evidence "
             f"(with and without the correct option's text in it) or none, beside `{ref}` "
             "(closed book) on exactly those questions; McNemar exact p.", "",
             f"| method | questions | n | correct | `{ref}` correct | p |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {r.method} | {r.subset} | {r.n} | {r.correct} | {r.reference_correct} | "
              f"{_p(r.p_value)} |" for r in rows]
    return lines


def _same_section(same: SameQuestions) -> list[str]:
    methods = list(same.methods.values())
    lines = ["", f"### The same {same.k} questions, every method", "",
             f"Each method below answered all of the run's first {same.k} questions and is "
             "scored on exactly those (no BERTScore or G-Eval here)."
             + (f" Left out (fewer answers): {', '.join(same.left_out)}." if same.left_out
                else ""), ""]
    lines += _table(methods) + _options_section(methods, same.k)
    matrix = significance_matrix([m.method for m in methods], same.pairs)
    if matrix:
        lines += ["", f"Significance matrix on these {same.k} questions: row minus column "
                  "(questions only the row got right minus questions only the column got "
                  "right), McNemar exact p in brackets.", ""] + matrix
    return lines


def _options_section(methods: list[MethodMetrics], k: int | None = None) -> list[str]:
    """Multiple choice: each method's answers by option label, beside how often each label
    is the correct one (a label chosen far more often than it is correct is a bias), the
    largest chosen/gold ratio, and the reader's mean probability per label."""
    rows = [m for m in methods if m.options]
    if not rows:
        return []
    labels = sorted({label for m in rows for label in m.options or {}})
    where = f"these {k} questions" if k else "each method's questions"
    lines = ["", f"Options chosen on {where}: chosen (right), and how many of the method's "
             "questions have each label as the correct one; max ratio = the largest "
             "(share chosen) / (share correct) over the labels (target ≤ 1.5); mean p = "
             "the reader's mean probability of each label.", "",
             "| method | " + " | ".join(labels) + " | Fail | correct labels | max ratio "
             "| mean p |",
             "|---|" + "---|" * (len(labels) + 4)]
    for m in rows:
        opts = m.options or {}
        cells = [f"{opts[lb].chosen} ({opts[lb].correct})" if lb in opts else "–"
                 for lb in labels]
        gold = " · ".join(f"{lb} {opts[lb].gold}" for lb in labels if lb in opts)
        lines.append(f"| {m.method} | " + " | ".join(cells) + f" | {m.fail or 0} | {gold} | "
                     f"{_max_ratio(opts)} | {_mean_mass(opts, m.n)} |")
    gated = [m for m in rows if m.gate]
    if gated:
        lines += ["", "Evidence gate: questions answered closed-book (the gate fired) and "
                  "correct answers on each side.", "",
                  "Switches: the evidence moved the choice and the gate kept it, with the "
                  "correct answers it gave and those the closed-book choice had. Evidence "
                  "choice reached: how often the reader, given the evidence, chose an option "
                  "a path reaches, beside the share of options paths reach.", "",
                  "| method | questions | fired | correct when fired | correct with evidence "
                  "| switches | right / closed-book right | evidence choice reached "
                  "| options reached |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for m in gated:
            g = m.gate or {}
            kept = g["questions"] - g["fired"]
            lines.append(
                f"| {m.method} | {g['questions']} | {g['fired']} | "
                f"{g['fired_correct']}/{g['fired']} | {g['kept_correct']}/{kept} | "
                f"{g.get('switched', 0)} | {g.get('switched_correct', 0)} / "
                f"{g.get('switched_closed_correct', 0)} | "
                f"{_share(g.get('read_reached', 0), g.get('read', 0))} | "
                f"{_share(g.get('options_reached', 0), g.get('options', 0))} |")
    return lines


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({part / whole:.0%})" if whole else "–"


def _max_ratio(opts: dict[str, OptionCount]) -> str:
    chosen = sum(o.chosen for o in opts.values())
    gold = sum(o.gold for o in opts.values())
    ratios = [(o.chosen / chosen) / (o.gold / gold) for o in opts.values()
              if o.gold and chosen and gold]
    return f"{max(ratios):.2f}" if ratios else "–"


def _mean_mass(opts: dict[str, OptionCount], n: int) -> str:
    if not n or all(o.mass is None for o in opts.values()):
        return "–"
    return " · ".join(f"{lb} {(o.mass or 0.0) / n:.2f}" for lb, o in opts.items())


def significance_matrix(order: list[str], pairs: list[PairTest]) -> list[str]:
    """A methods × methods Markdown table of the McNemar tests (EM or accuracy) in `pairs`:
    cell (row, column) is row's wins minus column's wins with the exact p.

    The one matrix of the project: `kgrag report`, `kgrag score --same` and the marked
    tables of the README and docs/results.md (`eval.tables`) all print this.

    >>> t = PairTest(a="rag", b="llm", metric="em (McNemar exact)", statistic=3, p_value=0.25)
    >>> significance_matrix(["rag", "llm"], [t])[2]
    '| `rag` | · | +3 (0.250) |'
    >>> tie = PairTest(a="rag", b="llm", metric="em (McNemar exact)", statistic=0, p_value=1)
    >>> significance_matrix(["rag", "llm"], [tie])[3]  # a tie is +0 both ways, never -0
    '| `llm` | +0 (1.000) | · |'
    """
    tests = {(t.a, t.b): t for t in pairs if "McNemar" in t.metric}
    if not tests:
        return []
    lines = ["| | " + " | ".join(f"`{m}`" for m in order) + " |",
             "|---|" + "---|" * len(order)]
    for a in order:
        cells = []
        for b in order:
            t, sign = tests.get((a, b)), 1.0
            if t is None:
                t, sign = tests.get((b, a)), -1.0
            cells.append("·" if a == b else "–" if t is None else  # + 0.0: no "-0"
                         f"{sign * t.statistic + 0.0:+.0f} ({t.p_value:.3f})")
        lines.append(f"| `{a}` | " + " | ".join(cells) + " |")
    return lines


def scored_every_line(metrics: RunMetrics, run: Path) -> bool:
    """Whether metrics.json counts exactly the (method, question) pairs the run's
    predictions hold, read as scoring reads them. File times alone cannot tell: a git
    checkout writes files in its own order, so a fresh clone often has a metrics.json
    "older" than the predictions it scored. A pair answered again in place (`kgrag eval
    --redo-errors`) keeps the counts: rescore after it."""
    _, lines = read_run(run)
    counts = Counter(line.prediction.method for line in lines)
    return counts == Counter({m: mm.n for m, mm in metrics.methods.items()})


def load_metrics(run: Path, *, bertscore: bool = False) -> RunMetrics:
    """metrics.json if it is there and readable, else a fresh scoring pass; a metrics.json
    that did not score every prediction is used but flagged (rescoring would drop G-Eval)."""
    path, preds = run / "metrics.json", run / "predictions.jsonl"
    if not path.is_file():
        return score_run(run, bertscore=bertscore)
    try:
        metrics = RunMetrics.model_validate_json(path.read_text())
    except ValueError:
        metrics = score_run(run, bertscore=bertscore)
        metrics.notes.append("metrics.json was written by another kgrag version; rescored "
                             "(without G-Eval/BERTScore unless asked)")
        return metrics
    if (preds.is_file() and preds.stat().st_mtime > path.stat().st_mtime
            and not scored_every_line(metrics, run)):
        metrics.notes.append(f"predictions.jsonl has answers metrics.json did not score: "
                             f"run `kgrag score {run}` again")
    return metrics


def _run_section(i: int, run: Path, out: Path, bertscore: bool) -> list[str]:
    metrics = load_metrics(run, bertscore=bertscore)
    parts = [markdown(metrics)]
    stem = f"{i:02d}-{Path(metrics.dataset).stem}"
    plots = (("accuracy", lambda p: plot_accuracy(metrics, p)),
             ("ablation", lambda p: plot_ablation(metrics, ABLATIONS, p)),
             ("cost", lambda p: plot_cost(metrics, p)))
    for kind, fn in plots:
        img = fn(out / f"{stem}-{kind}.png")
        if img:
            parts.append(f"![{kind}]({img.name})\n")
    parts += _type_section(run, metrics)
    ablations = [v for vs in ABLATIONS.values() for v in vs]
    scatter = plot_score_seconds(metrics, out / f"{stem}-compare.png", exclude=ablations)
    parts.append(compare_markdown(metrics, scatter.name if scatter else None))
    return parts


def _type_section(run: Path, metrics: RunMetrics) -> list[str]:
    """The leading score by question type (`kgrag breakdown`), when the questions have one."""
    from eval.breakdown import markdown_table, type_breakdown

    b = type_breakdown(run, metrics.same)
    return ["", "### By question type", "", markdown_table(b), ""] if b else []


def _sweep_sections(sweeps: list[Path], out: Path) -> list[str]:
    by_param: dict[str, dict[str, list[SweepPoint]]] = defaultdict(dict)
    parts = []
    for sweep in sweeps:
        manifest = read_manifest(sweep)
        points = score_sweep(sweep, rescore=False)
        label = f"{Path(manifest.dataset).stem} {manifest.method}"
        by_param[manifest.param][label] = points
        parts += [f"## Sensitivity: {manifest.param} — {label}", "", f"Sweep: `{sweep}`", "",
                  *points_table(manifest, points), ""]
    for param, curves in by_param.items():
        img = plot_sensitivity(param, curves, out / f"sensitivity-{param}.png")
        if img:
            parts.append(f"![sensitivity {param}]({img.name})\n")
    return parts


def write_report(runs: list[Path], out: Path, *, bertscore: bool = False) -> Path:
    """Write report.md, report.html (self-contained) and the plots into `out`. Each path
    is a run directory (scored if needed) or a sweep directory (`kgrag sweep`)."""
    out.mkdir(parents=True, exist_ok=True)
    parts = ["# kgrag evaluation report", ""]
    sweeps = [r for r in runs if (r / "sweep.json").is_file()]
    for i, run in enumerate(r for r in runs if r not in sweeps):
        parts += _run_section(i, run, out, bertscore)
    parts += _sweep_sections(sweeps, out)
    md = "\n".join(parts)
    (out / "report.md").write_text(md)
    (out / "report.html").write_text(markdown_to_html(md, out))
    return out / "report.md"
