"""`kgrag bench scoring`: how long the scoring pass takes on N open-ended predictions.

The issue's figure is "300 predictions scored with ROUGE-L and BERTScore on 2 cores". The
benchmark writes a run directory of N MedQuAD dev questions whose "predictions" are the
first sentence of the *next* question's reference answer (deterministic, different from
the gold, realistic length), then times `score_run` without and with BERTScore. No LLM
is involved, so the figure is the scorer's alone.

>>> bench_scoring(Platform(), n=300)   # doctest: +SKIP
ScoringBench(n=300, rouge_s=..., bertscore_s=...)
"""

from __future__ import annotations

import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from eval.runner import RunLine, build_config, prepare_run
from eval.scoring import score_run
from kgrag.datasets import load_dataset
from kgrag.errors import KgragError
from kgrag.types import Prediction

if TYPE_CHECKING:
    from kgrag.platform import Platform


@dataclass(frozen=True)
class ScoringBench:
    n: int
    rouge_s: float  # score_run without BERTScore (ROUGE-L, CIs, pair tests)
    bertscore_s: float  # score_run with BERTScore (model load included)


def _first_sentence(text: str) -> str:
    return re.split(r"(?<=[.!?])\s+", text.strip(), maxsplit=1)[0]


def write_synthetic_run(p: Platform, out: Path, n: int) -> int:
    """A run directory of `n` MedQuAD questions with off-by-one reference sentences."""
    questions = load_dataset("medquad", p.settings.data_dir, limit=n).questions
    if not questions:
        raise KgragError("no MedQuAD dev questions found",
                         hint=f"check KGRAG_DATA_DIR ({p.settings.data_dir})")
    config = build_config(p, "medquad", Path("medquad"), "medical", ["bench"], n)
    prepare_run(out, config, force=True)
    with (out / "predictions.jsonl").open("w", encoding="utf-8") as f:
        for i, q in enumerate(questions):
            other = questions[(i + 1) % len(questions)].answers
            answer = _first_sentence(other[0]) if other else ""
            pred = Prediction(question_id=q.id, method="bench", answer=answer)
            f.write(RunLine(question=q, prediction=pred).model_dump_json() + "\n")
    return len(questions)


def bench_scoring(p: Platform, n: int = 300) -> ScoringBench:
    with tempfile.TemporaryDirectory(prefix="kgrag-bench-scoring-") as tmp:
        run = Path(tmp)
        got = write_synthetic_run(p, run, n)
        t0 = time.perf_counter()
        score_run(run)
        t1 = time.perf_counter()
        score_run(run, bertscore=True)
        t2 = time.perf_counter()
    return ScoringBench(n=got, rouge_s=t1 - t0, bertscore_s=t2 - t1)


@dataclass(frozen=True)
class GevalBench:
    answers: int
    methods: int
    judge: str
    by_method_s: float  # each method's answers dimension by dimension, one method after another
    by_question_s: float  # per dimension, every method's answer to a question in turn
    max_score_diff: float  # largest |score| difference between the two orders


ANSWER_CHARS = 900  # synthetic answers: ~200 tokens, the median of MedQuAD dev300's answers


def _synthetic_answers(p: Platform, n: int, methods: int) -> list[RunLine]:
    """`methods` answers to each of the first `n` MedQuAD questions: method k answers
    question i with the reference of question i+k cut to ~ANSWER_CHARS (wrong but fluent,
    of the length the run's real answers have)."""
    questions = load_dataset("medquad", p.settings.data_dir, limit=n + methods).questions
    if len(questions) <= methods:
        raise KgragError("too few MedQuAD dev questions with reference answers",
                         hint=f"check KGRAG_DATA_DIR ({p.settings.data_dir})")
    lines = []
    for k in range(1, methods + 1):
        for i, q in enumerate(questions[:n]):
            other = questions[(i + k) % len(questions)].answers
            text = other[0][:ANSWER_CHARS].rsplit(" ", 1)[0] if other else ""
            lines.append(RunLine(question=q, prediction=Prediction(
                question_id=q.id, method=f"bench-{k}", answer=text)))
    return lines


def bench_geval(p: Platform, n: int = 4, methods: int = 3,
                judge: str | None = None) -> GevalBench:
    """Seconds for the G-Eval judge to score `methods` synthetic answers to each of `n`
    MedQuAD questions on its four dimensions, in two orders. Method by method (the order
    before `judge_run`): one method's answers dimension by dimension, so consecutive prompts
    share only the dimension's instructions. Question by question (`judge_run`, what `kgrag
    score --geval` does): within a dimension every method's answer to one question in turn,
    so consecutive prompts also share the question and its reference answer in the llama
    backend's KV cache. Same prompts, same scores; only the time differs."""
    from eval.geval import GevalCache, geval_item, judge_method, judge_run, load_judge

    j = load_judge(p.settings, judge)
    lines = _synthetic_answers(p, n, methods)
    by_method: dict[str, list[RunLine]] = {}
    for ln in lines:
        by_method.setdefault(ln.prediction.method, []).append(ln)
    first = next(it for ln in lines if (it := geval_item(ln.question, ln.prediction.answer)))
    j.score(first, j.dimensions[-1])  # model load and first-call setup
    with tempfile.TemporaryDirectory(prefix="kgrag-bench-geval-") as tmp:
        t0 = time.perf_counter()
        one = [r for m, group in by_method.items()
               for r in judge_method(j, GevalCache(Path(tmp) / "a.jsonl"), m, group)[1]]
        t1 = time.perf_counter()
        two = [r for _, recs in judge_run(j, GevalCache(Path(tmp) / "b.jsonl"),
                                           by_method).values() for r in recs]
        t2 = time.perf_counter()
    scores = {r.key(): r.score for r in one}
    diffs = [abs(r.score - s) for r in two
             if r.score is not None and (s := scores[r.key()]) is not None]
    return GevalBench(answers=len(lines), methods=methods, judge=j.name, by_method_s=t1 - t0,
                      by_question_s=t2 - t1, max_score_diff=max(diffs, default=0.0))
