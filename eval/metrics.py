"""Answer metrics: SQuAD/HotpotQA normalisation, EM and F1, ROUGE-L, G-Eval weighting.

The normaliser and the token F1 reproduce the official SQuAD v1.1 and HotpotQA scorers,
so numbers compare with published ones. Option-letter parsing, answer extraction and
the statistics live in `kgrag.parsing` and `eval.stats` and are re-exported here.

>>> score_answer("The Cat", ["cat", "dog"]).em
1.0
>>> round(score_answer("the big cat", ["big dog"]).f1, 2)
0.5
>>> rouge_l("the cat lay on a mat", "the cat sat on the mat")
0.6666666666666666
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eval.stats import (
    ConfidenceInterval,
    McNemarResult,
    PairedBootstrapResult,
    bootstrap_ci,
    mcnemar,
    mcnemar_counts,
    paired_bootstrap,
)
from kgrag.normalize import normalize_answer
from kgrag.parsing import parse_choice

__all__ = [
    "AnswerScore", "ConfidenceInterval", "McNemarResult", "PairedBootstrapResult",
    "bootstrap_ci", "exact_match", "f1_score", "geval_score", "mcnemar",
    "mcnemar_counts", "normalize_answer", "paired_bootstrap", "parse_choice", "rouge_l",
    "score_answer",
]

# HotpotQA: a yes/no/noanswer prediction or gold earns no partial credit unless equal.
_SPECIAL_ANSWERS = frozenset({"yes", "no", "noanswer"})


@dataclass(frozen=True)
class AnswerScore:
    """EM and token F1 (with its precision and recall) of one prediction."""

    em: float
    f1: float
    precision: float
    recall: float


def _golds(gold: str | Sequence[str]) -> list[str]:
    golds = [gold] if isinstance(gold, str) else list(gold)
    if not golds:
        raise ValueError("no gold answer to score against")
    return golds


def exact_match(prediction: str, gold: str | Sequence[str]) -> float:
    """1.0 when the normalised prediction equals any normalised gold answer, else 0.0.

    >>> exact_match("Paris.", ["paris", "Paris, France"])
    1.0
    """
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(g) for g in _golds(gold)))


def _token_f1(prediction: str, gold: str) -> tuple[float, float, float]:
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    if pred != ref and (pred in _SPECIAL_ANSWERS or ref in _SPECIAL_ANSWERS):
        return 0.0, 0.0, 0.0
    pred_tokens, ref_tokens = pred.split(), ref.split()
    same = sum((Counter(pred_tokens) & Counter(ref_tokens)).values())
    if same == 0:
        return 0.0, 0.0, 0.0
    precision, recall = same / len(pred_tokens), same / len(ref_tokens)
    return 2 * precision * recall / (precision + recall), precision, recall


def f1_score(prediction: str, gold: str | Sequence[str]) -> tuple[float, float, float]:
    """Token F1, precision and recall against the best-matching gold answer.

    >>> f1_score("the big cat", "big dog")
    (0.5, 0.5, 0.5)
    >>> f1_score("yes", "no")
    (0.0, 0.0, 0.0)
    """
    return max((_token_f1(prediction, g) for g in _golds(gold)), key=lambda s: s[0])


def score_answer(prediction: str, gold: str | Sequence[str]) -> AnswerScore:
    """EM and F1 (best match over the gold answers) of one short answer.

    >>> score_answer("Greenwich Village", ["Greenwich Village, New York City"]).recall
    0.4
    """
    f1, precision, recall = f1_score(prediction, gold)
    return AnswerScore(em=exact_match(prediction, gold), f1=f1, precision=precision,
                       recall=recall)


@functools.cache
def _rouge_scorer() -> Any:
    # rouge-score pulls in nltk (seconds to import): load it on first use, once.
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


def rouge_l(prediction: str, reference: str | Sequence[str]) -> float:
    """ROUGE-L F-measure (rouge-score, Porter stemmer), best over the references.

    >>> rouge_l("cats running", "cat runs")   # stems: cat run / cat run
    1.0
    """
    scorer = _rouge_scorer()
    return max(float(scorer.score(ref, prediction)["rougeL"].fmeasure)
               for ref in _golds(reference))


def geval_score(token_logprobs: Mapping[str, float],
                scores: Sequence[int] = (1, 2, 3, 4, 5)) -> float:
    """G-Eval's probability-weighted score: sum(p_i * i) / sum(p_i) over valid score tokens.

    `token_logprobs` maps candidate tokens (e.g. the top logprobs at the score position)
    to their log-probabilities. Tokens are matched to scores after stripping whitespace,
    so "4" and " 4" both count for 4; tokens that are not a valid score are ignored and
    the rest renormalised (Liu et al. 2023, "G-Eval").

    >>> import math
    >>> geval_score({"5": math.log(0.5), "4": math.log(0.3), "x": math.log(0.2)})
    4.625
    """
    valid = {str(s): s for s in scores}
    matched = [(valid[t.strip()], lp) for t, lp in token_logprobs.items()
               if t.strip() in valid and lp > -math.inf]
    if not matched:
        raise ValueError(f"none of the tokens {sorted(token_logprobs)} is a score in {scores}")
    top = max(lp for _, lp in matched)  # subtract the max: exp() cannot overflow/underflow
    weights = [(score, math.exp(lp - top)) for score, lp in matched]
    total = sum(w for _, w in weights)
    return sum(score * w for score, w in weights) / total
