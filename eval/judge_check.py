"""Does the G-Eval judge agree with a human reading? Hand labels against the judge's scores.

`kgrag judge-agreement LABELS RUN` reads hand labels (one JSON line per judged answer: the
question, reference and answer, a 1–5 score per G-Eval dimension of `eval/prompts/` and a
line of reasoning; `docs/judge/`) and the judge's stored scores of the same answers in
`RUN/geval.jsonl` (`kgrag score RUN --geval` writes them; a stored score counts only when
it judged this very answer with the current prompt, `eval.geval.stored_key`). For each
dimension and for the mean of the four (`OVERALL`) it reports:

- Spearman's ρ between the hand label and the judge's score, scipy's p-value, and a
  percentile bootstrap 95% CI over answers (seeded);
- quadratic-weighted Cohen's κ (Cohen 1968) between the hand label and the judge's score
  rounded to the nearest whole score (G-Eval's score is a probability-weighted mean, not a
  category; the overall κ rounds both sides' four-dimension means), with its bootstrap CI;
- each side's ρ with the answer's length in words: a judge that tracks length more than
  the human reading scores verbosity.

The judge is *above chance* when the bootstrap CIs of both overall ρ and overall κ lie
above 0 (our rule). `judge_warning` reads the verdicts recorded with `--write` in
`eval/judge_checks.json`, so `kgrag score --geval` can warn about a judge that failed.

>>> round(weighted_kappa([1, 2, 3, 4, 5], [1, 2, 3, 4, 5]), 3)
1.0
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from eval.agreement import spearman
from eval.geval import (
    DIMENSIONS,
    MAX_FIELD_CHARS,
    SCORES,
    GevalCache,
    GevalItem,
    GEvalJudge,
    stored_key,
)
from kgrag.errors import KgragError

OVERALL = "mean of 4"
CHECKS = Path(__file__).with_name("judge_checks.json")
N_RESAMPLES = 2000
SEED = 42


class HandLabel(BaseModel):
    """One hand-judged answer: what the judge read, the human scores and why."""

    n: int
    question_id: str
    method: str
    question: str
    reference: str
    answer: str
    coherence: int = Field(ge=1, le=5)
    consistency: int = Field(ge=1, le=5)
    fluency: int = Field(ge=1, le=5)
    relevance: int = Field(ge=1, le=5)
    note: str = Field(min_length=1)

    def item(self) -> GevalItem:
        """The G-Eval item the judge read for this answer (`eval.geval.geval_item`)."""
        return GevalItem(self.question, self.reference[:MAX_FIELD_CHARS],
                         self.answer.strip()[:MAX_FIELD_CHARS])

    def score(self, dimension: str) -> float:
        if dimension == OVERALL:
            return float(np.mean([getattr(self, d) for d in DIMENSIONS]))
        return float(getattr(self, dimension))


class Stat(BaseModel):
    """A statistic with its bootstrap 95% CI (NaN bounds: too few resamples defined it)."""

    value: float
    low: float
    high: float
    p_value: float | None = None


class DimensionAgreement(BaseModel):
    """The judge against the hand labels on one dimension (or `OVERALL`)."""

    dimension: str
    n: int
    rho: Stat
    kappa: Stat
    human_mean: float
    judge_mean: float
    human_length_rho: float
    judge_length_rho: float


class JudgeCheck(BaseModel):
    """The whole check: per-dimension rows, the verdict and where the data came from."""

    judge: str
    labels: str
    run: str
    rows: list[DimensionAgreement]
    above_chance: bool


def load_labels(path: Path) -> list[HandLabel]:
    """The hand labels of `path`; a bad line is an error naming its line number."""
    if not path.is_file():
        raise KgragError(f"no hand-label file {path}")
    labels = []
    for i, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip():
            continue
        try:
            labels.append(HandLabel.model_validate_json(raw))
        except ValidationError as e:
            raise KgragError(f"{path}:{i}: not a hand label: {e.errors()[0]['msg']}") from None
    keys = [(lb.method, lb.question_id) for lb in labels]
    if len(set(keys)) != len(keys):
        raise KgragError(f"{path}: an answer (method, question) is labelled twice")
    if not labels:
        raise KgragError(f"{path}: no hand labels")
    return labels


def judge_scores(labels: Sequence[HandLabel], run: Path, judge: str) -> list[dict[str, float]]:
    """The judge's stored score of each labelled answer per dimension, in label order."""
    reader = GEvalJudge(None, name=judge)
    cache = GevalCache(run / "geval.jsonl")
    out, missing = [], []
    for lb in labels:
        dims: dict[str, float] = {}
        for d in DIMENSIONS:
            rec = cache.get(stored_key(reader, lb.method, lb.question_id, lb.item(), d))
            if rec is None or rec.score is None:
                missing.append(f"{lb.method}/{lb.question_id}/{d}")
            else:
                dims[d] = rec.score
        out.append(dims)
    if missing:
        raise KgragError(f"{len(missing)} labelled (answer, dimension) pairs have no stored "
                         f"score of judge {judge!r} in {run / 'geval.jsonl'}, e.g. "
                         f"{', '.join(missing[:3])}",
                         hint=f"judge them with `kgrag score {run} --geval --judge {judge}`")
    return out


def weighted_kappa(a: Sequence[int], b: Sequence[int], k: int = len(SCORES)) -> float:
    """Quadratic-weighted Cohen's κ of two raters' scores 1..k (NaN: no expected
    disagreement, e.g. both raters constant on the same score)."""
    if len(a) != len(b):
        raise ValueError(f"paired lists differ in length: {len(a)} and {len(b)}")
    observed = np.zeros((k, k))
    for x, y in zip(a, b, strict=True):
        if not (1 <= x <= k and 1 <= y <= k):
            raise ValueError(f"scores must lie in 1..{k}: {x}, {y}")
        observed[x - 1, y - 1] += 1
    observed /= max(len(a), 1)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    i, j = np.indices((k, k))
    weights = (i - j) ** 2 / (k - 1) ** 2
    denominator = float((weights * expected).sum())
    if denominator == 0:
        return math.nan
    return 1.0 - float((weights * observed).sum()) / denominator


def to_score(x: float) -> int:
    """The nearest whole score (halves round up), clipped to 1..5."""
    return min(max(math.floor(x + 0.5), SCORES[0]), SCORES[-1])


def _rho(x: Sequence[float], y: Sequence[float]) -> float:
    r = spearman(x, y)
    return math.nan if r is None else r[0]


def _kappa(x: Sequence[float], y: Sequence[float]) -> float:
    return weighted_kappa([to_score(v) for v in x], [to_score(v) for v in y])


def bootstrap_stat(x: Sequence[float], y: Sequence[float], stat: str, *,
                   n_resamples: int = N_RESAMPLES, seed: int = SEED) -> Stat:
    """`stat` ("rho" or "kappa") of the pairs and its percentile 95% CI over resampled
    pairs (resamples where it is undefined, e.g. a constant side, are left out); ρ also
    carries scipy's p-value."""
    xs, ys = np.asarray(x, float), np.asarray(y, float)
    idx = np.random.default_rng(seed).integers(0, len(xs), (n_resamples, len(xs)))
    if stat == "rho":
        values = _rowwise_rho(xs[idx], ys[idx])
        r = spearman(list(xs), list(ys))
        value, p_value = (math.nan, None) if r is None else r
    else:
        values = np.array([_kappa(list(xs[i]), list(ys[i])) for i in idx])
        value, p_value = _kappa(list(xs), list(ys)), None
    values = values[~np.isnan(values)]
    low, high = (np.percentile(values, [2.5, 97.5]) if len(values) >= n_resamples // 2
                 else (math.nan, math.nan))
    return Stat(value=value, low=float(low), high=float(high), p_value=p_value)


def _rowwise_rho(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman's ρ of each row pair (average ranks for ties; NaN for a constant row)."""
    from scipy.stats import rankdata

    ra, rb = rankdata(a, axis=1), rankdata(b, axis=1)
    ra -= ra.mean(axis=1, keepdims=True)
    rb -= rb.mean(axis=1, keepdims=True)
    denominator = np.sqrt((ra * ra).sum(axis=1) * (rb * rb).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, (ra * rb).sum(axis=1) / denominator, np.nan)


def check_judge(labels: Sequence[HandLabel], judged: Sequence[dict[str, float]], *,
                judge: str, labels_path: str = "", run: str = "",
                n_resamples: int = N_RESAMPLES) -> JudgeCheck:
    """The agreement rows for every dimension and `OVERALL`, and the verdict."""
    words = [float(len(lb.answer.split())) for lb in labels]
    rows = []
    for d in (*DIMENSIONS, OVERALL):
        human = [lb.score(d) for lb in labels]
        machine = [float(np.mean(list(j.values()))) if d == OVERALL else j[d] for j in judged]
        rows.append(DimensionAgreement(
            dimension=d, n=len(human),
            rho=bootstrap_stat(human, machine, "rho", n_resamples=n_resamples),
            kappa=bootstrap_stat(human, machine, "kappa", n_resamples=n_resamples),
            human_mean=float(np.mean(human)), judge_mean=float(np.mean(machine)),
            human_length_rho=_rho(human, words), judge_length_rho=_rho(machine, words)))
    overall = rows[-1]
    above = overall.rho.low > 0 and overall.kappa.low > 0  # NaN compares False
    return JudgeCheck(judge=judge, labels=labels_path, run=run, rows=rows, above_chance=above)


def check_table(check: JudgeCheck) -> list[str]:
    """The Markdown table and verdict of a check."""
    def f(s: Stat) -> str:
        return f"{s.value:+.2f} [{s.low:+.2f}, {s.high:+.2f}]"

    lines = [f"Judge `{check.judge}` against {check.rows[0].n} hand-labelled answers "
             f"({check.labels}; judge scores from {check.run}/geval.jsonl)", "",
             "| dimension | n | human mean | judge mean | Spearman ρ [95% CI] | p | "
             "weighted κ [95% CI] | ρ human–length | ρ judge–length |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in check.rows:
        p = "–" if r.rho.p_value is None else (f"{r.rho.p_value:.3f}"
                                                if r.rho.p_value >= 0.001 else "<0.001")
        lines.append(f"| {r.dimension} | {r.n} | {r.human_mean:.2f} | {r.judge_mean:.2f} | "
                     f"{f(r.rho)} | {p} | {f(r.kappa)} | {r.human_length_rho:+.2f} | "
                     f"{r.judge_length_rho:+.2f} |")
    verdict = ("above chance" if check.above_chance else
               "NOT above chance: its G-Eval scores rank nothing")
    return lines + ["", f"Verdict (overall ρ and κ CIs above 0): the judge is {verdict}."]


def record(check: JudgeCheck, path: Path = CHECKS) -> None:
    """Keep the check's verdict in `path` (by judge name) for `judge_warning`."""
    checks = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    overall = check.rows[-1]
    checks[check.judge] = {"above_chance": check.above_chance, "labels": check.labels,
                           "run": check.run, "n": overall.n, "rho": round(overall.rho.value, 3),
                           "kappa": round(overall.kappa.value, 3)}
    path.write_text(json.dumps(checks, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def judge_warning(judge: str, path: Path = CHECKS) -> str | None:
    """A warning when `judge` was checked against hand labels and is not above chance."""
    if not path.is_file():
        return None
    c = json.loads(path.read_text(encoding="utf-8")).get(judge)
    if not c or c["above_chance"]:
        return None
    return (f"the G-Eval judge {judge!r} is not above chance against {c['n']} hand-labelled "
            f"answers (Spearman ρ {c['rho']:+.2f}, weighted κ {c['kappa']:+.2f}; "
            f"`kgrag judge-agreement {c['labels']} {c['run']}`): its scores rank nothing")
