"""The Results page's data: run directories, per-question rows and their filters.

Pure functions over `eval.runner.read_run` and the scoring functions of `eval/`: the
app scores a prediction exactly as `kgrag score` does, never with its own rules.

    runs = find_runs(Path("runs"))
    config, lines = read_run(runs[0].path)
    rows = question_rows(lines, config.methods)
    [r.id for r in filter_rows(rows, "disagree", "llm", "metakgrag")]
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from eval.runner import RunLine
from eval.scoring import RunMetrics, chosen_option, per_question_scores, score_run
from kgrag.answers import reply_answer
from kgrag.normalize import normalize_answer
from kgrag.types import Question

log = logging.getLogger(__name__)

FILTERS = {
    "all": "all questions",
    "disagree": "A and B give different answers",
    "a_only": "A right, B wrong",
    "b_only": "A wrong, B right",
    "both_wrong": "both wrong",
    "errors": "A or B failed with an error",
}


@dataclass(frozen=True)
class RunInfo:
    """A run directory as the run picker lists it."""

    path: Path
    dataset: str
    model: str
    methods: tuple[str, ...]
    updated: float  # mtime of predictions.jsonl (or config.json)

    @property
    def label(self) -> str:
        return f"{self.path.name} — {self.dataset}, {', '.join(self.methods)}, {self.model}"


def find_runs(root: Path) -> list[RunInfo]:
    """Run directories under `root` (and `root` itself), newest first; broken ones skipped."""
    if not root.is_dir():
        return []
    candidates = [root, *sorted(p for p in root.iterdir() if p.is_dir())]
    runs = []
    for d in candidates:
        cfg = d / "config.json"
        if not cfg.is_file():
            continue
        try:
            data = json.loads(cfg.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            log.warning("skipping %s: %s", d, e)
            continue
        preds = d / "predictions.jsonl"
        updated = (preds if preds.is_file() else cfg).stat().st_mtime
        runs.append(RunInfo(d, str(data.get("dataset", "?")), str(data.get("model", "?")),
                            tuple(data.get("methods", [])), updated))
    return sorted(runs, key=lambda r: -r.updated)


def run_metrics(run: Path) -> tuple[RunMetrics, bool]:
    """metrics.json when it is newer than the predictions; otherwise score now (which, as
    `kgrag score` does, writes metrics.json). Returns (metrics, scored now)."""
    metrics, preds = run / "metrics.json", run / "predictions.jsonl"
    if metrics.is_file() and (not preds.is_file()
                              or metrics.stat().st_mtime >= preds.stat().st_mtime):
        try:
            return RunMetrics.model_validate_json(metrics.read_text(encoding="utf-8")), False
        except ValueError as e:
            log.warning("%s is unreadable (%s); scoring again", metrics, e)
    return score_run(run), True


@dataclass
class MethodCell:
    """One method's prediction for one question."""

    answer: str
    parsed: str  # the option label, or the normalised short answer: compared for "disagree"
    score: float | None  # correct (0/1), EM, or ROUGE-L
    error: str | None
    seconds: float
    llm_calls: int


@dataclass
class QuestionRow:
    id: str
    question: Question
    cells: dict[str, MethodCell] = field(default_factory=dict)

    def gold(self) -> str:
        q = self.question
        if q.is_multiple_choice:
            texts = {c.label: c.text for c in q.choices}
            return ", ".join(f"{a}. {texts.get(a, '')}".strip() for a in q.answers)
        return " | ".join(q.answers)


def main_score(scores: dict[str, float]) -> float | None:
    for key in ("correct", "em", "rouge_l"):
        if key in scores:
            return scores[key]
    return None


def parsed_answer(line: RunLine) -> str:
    q, pred = line.question, line.prediction
    if pred.error:
        return ""
    if q.is_multiple_choice:
        return chosen_option(line) or ""
    return normalize_answer(reply_answer(pred.answer))


def question_rows(lines: Sequence[RunLine], methods: Sequence[str]) -> list[QuestionRow]:
    """One row per question, in the order questions first appear, with a cell per method."""
    rows: dict[str, QuestionRow] = {}
    for line in lines:
        row = rows.setdefault(line.question.id, QuestionRow(line.question.id, line.question))
        p = line.prediction
        row.cells[p.method] = MethodCell(
            answer=p.answer, parsed=parsed_answer(line), score=main_score(
                per_question_scores(line)), error=p.error, seconds=p.usage.seconds,
            llm_calls=p.usage.llm_calls)
    order = {m: i for i, m in enumerate(methods)}
    for row in rows.values():
        row.cells = dict(sorted(row.cells.items(), key=lambda kv: order.get(kv[0], 1_000)))
    return list(rows.values())


def _right(cell: MethodCell | None) -> bool | None:
    if cell is None or cell.score is None:
        return None
    return cell.score >= 0.5


def filter_rows(rows: Sequence[QuestionRow], mode: str, a: str | None = None,
                b: str | None = None, text: str = "") -> list[QuestionRow]:
    """Rows matching the filter `mode` (see FILTERS) for methods `a`, `b`, and `text`."""
    if mode not in FILTERS:
        raise ValueError(f"unknown filter {mode!r}")
    needle = text.strip().lower()
    out = []
    for row in rows:
        if needle and needle not in row.question.text.lower() and needle != row.id.lower():
            continue
        if mode != "all" and not _matches(row, mode, a, b):
            continue
        out.append(row)
    return out


def _matches(row: QuestionRow, mode: str, a: str | None, b: str | None) -> bool:
    ca, cb = row.cells.get(a or ""), row.cells.get(b or "")
    if mode == "errors":
        return any(c is not None and bool(c.error) for c in (ca, cb))
    if ca is None or cb is None:
        return False  # the two methods did not both answer this question
    ra, rb = _right(ca), _right(cb)
    if mode == "disagree":
        return ca.parsed != cb.parsed or ra != rb
    if mode == "a_only":
        return ra is True and rb is False
    if mode == "b_only":
        return ra is False and rb is True
    return ra is False and rb is False  # both_wrong


def table(rows: Sequence[QuestionRow], methods: Sequence[str], width: int = 90
          ) -> list[dict[str, object]]:
    """Rows for st.dataframe: question, gold, and per method its answer and score."""
    out = []
    for row in rows:
        rec: dict[str, object] = {"id": row.id, "question": _short(row.question.text, width),
                                  "gold": _short(row.gold(), 40)}
        for m in methods:
            c = row.cells.get(m)
            rec[f"{m}"] = "" if c is None else ("⚠ " + _short(c.error or "", 40) if c.error
                                                else _short(c.answer, 60))
            rec[f"{m} score"] = None if c is None else c.score
        out.append(rec)
    return out


def _short(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"
