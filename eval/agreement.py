"""How far the G-Eval judge agrees with the reference-based metrics: Spearman's ρ.

A small local judge (1.5B) is a weak judge; this measures how its scores rank answers
against ROUGE-L and BERTScore F1, which read the same reference. Three levels:

- `answers`: every judged answer of the run pooled (one point per method and question);
  the judge's score is the mean of its four dimensions (the dimensions it gave a score
  on), each dimension also on its own. The p-value is scipy's (t approximation).
- `questions`: for each question answered by at least three methods, ρ between the
  methods' G-Eval and their metric on that question (does the judge order the rows of one
  question as the metric does?); reported is the mean ρ over those questions, no p-value.
  Questions where either side is constant (all ties) have no ρ and are left out.
- `methods`: ρ between the methods' mean G-Eval and mean metric (the table's order).

Beside the metrics, the answer's length in words (`LENGTH`) at the same levels: not a
quality metric but a probe for a judge that scores long answers higher (a verbosity bias
of LLM judges), which would also rank the verbose rows first.

>>> judge_agreement({("llm", "q1"): {"coherence": 3.0}, ("rag", "q1"): {"coherence": 4.0},
...                  ("cot", "q1"): {"coherence": 2.0}},
...                 {"ROUGE-L": {("llm", "q1"): 0.2, ("rag", "q1"): 0.3, ("cot", "q1"): 0.1}}
...                 )[0].rho
1.0
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from statistics import mean
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import BaseModel

if TYPE_CHECKING:
    from eval.geval import GevalRecord

Key = tuple[str, str]  # (method, question id)
Level = Literal["answers", "questions", "methods"]
MIN_METHODS_PER_QUESTION = 3
LENGTH = "answer words"  # the length probe's name in the table's metric column


class Agreement(BaseModel):
    """Spearman's ρ between the judge's G-Eval (a dimension, or the mean of all) and a
    reference-based metric at one level (see the module docstring)."""

    metric: str
    level: Level
    dimension: str  # "mean of 4" or one dimension
    rho: float
    p_value: float | None
    n: int  # answers, questions or methods


def spearman(x: Sequence[float], y: Sequence[float]) -> tuple[float, float | None] | None:
    """ρ and its p-value (None for fewer than 3 points or a constant side)."""
    if len(x) != len(y):
        raise ValueError(f"paired lists differ in length: {len(x)} and {len(y)}")
    if len(x) < 3 or len(set(x)) < 2 or len(set(y)) < 2:
        return None
    from scipy.stats import spearmanr

    r = spearmanr(x, y)
    rho, p = float(r.statistic), float(r.pvalue)
    return rho, (None if math.isnan(p) else p)


def _judge_scores(judged: Mapping[Key, Mapping[str, float | None]], dimension: str | None
                  ) -> dict[Key, float]:
    out = {}
    for key, dims in judged.items():
        vals = [v for d, v in dims.items() if v is not None and dimension in (None, d)]
        if vals:
            out[key] = mean(vals)
    return out


def _levels(g: Mapping[Key, float], m: Mapping[Key, float], metric: str, dim: str
            ) -> list[Agreement]:
    keys = sorted(set(g) & set(m))
    out = []
    if (r := spearman([g[k] for k in keys], [m[k] for k in keys])) is not None:
        out.append(Agreement(metric=metric, level="answers", dimension=dim, rho=r[0],
                             p_value=r[1], n=len(keys)))
    by_question: dict[str, list[Key]] = defaultdict(list)
    for k in keys:
        by_question[k[1]].append(k)
    rhos = [r[0] for ks in by_question.values() if len(ks) >= MIN_METHODS_PER_QUESTION
            and (r := spearman([g[k] for k in ks], [m[k] for k in ks])) is not None]
    if rhos:
        out.append(Agreement(metric=metric, level="questions", dimension=dim,
                             rho=mean(rhos), p_value=None, n=len(rhos)))
    by_method: dict[str, list[Key]] = defaultdict(list)
    for k in keys:
        by_method[k[0]].append(k)
    methods = sorted(by_method)
    gm = [mean(g[k] for k in by_method[x]) for x in methods]
    mm = [mean(m[k] for k in by_method[x]) for x in methods]
    if (r := spearman(gm, mm)) is not None:
        out.append(Agreement(metric=metric, level="methods", dimension=dim, rho=r[0],
                             p_value=r[1], n=len(methods)))
    return out


def judge_agreement(judged: Mapping[Key, Mapping[str, float | None]],
                    metrics: Mapping[str, Mapping[Key, float]]) -> list[Agreement]:
    """ρ of the judge against each metric: the mean of the dimensions at every level, and
    each dimension on its own over the pooled answers. `judged`: (method, question) →
    dimension → score (None: unparsed); `metrics`: name → (method, question) → value."""
    dims = sorted({d for dims in judged.values() for d in dims})
    out: list[Agreement] = []
    for metric, values in metrics.items():
        out += _levels(_judge_scores(judged, None), values, metric, f"mean of {len(dims)}")
        for d in dims:
            out += [a for a in _levels(_judge_scores(judged, d), values, metric, d)
                    if a.level == "answers"]
    return out


def agreement_lines(rows: Sequence[Agreement], judge: str) -> list[str]:
    """The report's Markdown for `rows` (nothing without rows)."""
    if not rows:
        return []
    lines = ["", f"### Judge agreement (Spearman ρ, judge `{judge}`)", "",
             f"The judge `{judge}` is a small local model, and a judge that small (1.5B or "
             "less) is a weak one: its G-Eval scores are evidence only as far as they agree "
             "with the metrics that read the reference. Pooled answers: every judged "
             "(method, question) answer; per question: the "
             f"mean ρ over questions answered by at least {MIN_METHODS_PER_QUESTION} methods "
             "(ranking the rows of one question); methods: the rows' means. G-Eval is the "
             f"mean of its dimensions unless one is named. `{LENGTH}` is not a metric but "
             "a probe: a judge that agrees with the answer's length more than with the "
             "reference-based metrics scores verbosity.", ""]
    return lines + agreement_table(rows)


def agreement_table(rows: Sequence[Agreement]) -> list[str]:
    """The Markdown table of `rows` (the report's, and docs/results.md's `agreement`
    marker)."""
    lines = ["| G-Eval | metric | level | ρ | p | n |", "|---|---|---|---|---|---|"]
    for a in rows:
        p = "–" if a.p_value is None else (f"{a.p_value:.3f}" if a.p_value >= 0.001
                                            else "<0.001")
        lines.append(f"| {a.dimension} | {a.metric} | {a.level} | {a.rho:+.2f} | {p} | "
                     f"{a.n} |")
    return lines


def geval_means(records: list[GevalRecord], qids: list[str]) -> list[float]:
    """Each question's mean G-Eval over its scored dimensions (NaN: none scored)."""
    by_q: dict[str, list[float]] = defaultdict(list)
    for r in records:
        if r.score is not None:
            by_q[r.question_id].append(r.score)
    return [float(np.mean(by_q[q])) if by_q.get(q) else float("nan") for q in qids]


def run_agreement(judged: list[GevalRecord], scores: dict[str, dict[str, list]],
               qids: dict[str, list[str]], words: dict[str, list[int]] | None = None
               ) -> list[Agreement]:
    """The judge's agreement with ROUGE-L and BERTScore in a scored run: `judged` are the
    run's G-Eval records, `scores` each method's per-question lists (`rouge_l`,
    `bertscore_f1`) in the order of `qids`; `words`, each answer's length in the same
    order, adds the length probe (`LENGTH`)."""
    dims: dict[tuple[str, str], dict[str, float | None]] = defaultdict(dict)
    for r in judged:
        dims[(r.method, r.question_id)][r.dimension] = r.score
    metrics = {label: {(m, q): v for m in scores if key in scores[m]
                       for q, v in zip(qids[m], scores[m][key], strict=True)}
               for label, key in (("ROUGE-L", "rouge_l"), ("BERTScore F1", "bertscore_f1"))}
    if words:
        metrics[LENGTH] = {(m, q): float(n) for m in words
                           for q, n in zip(qids[m], words[m], strict=True)}
    return judge_agreement(dims, {k: v for k, v in metrics.items() if v})
