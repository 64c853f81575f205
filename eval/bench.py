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

from eval.datasets import load_dataset
from eval.runner import RunLine, build_config, prepare_run
from eval.scoring import score_run
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
    judge: str
    by_answer_s: float  # every dimension of one answer, then the next answer
    by_dimension_s: float  # one dimension over every answer (`judge_method`'s order)
    max_score_diff: float  # largest |score| difference between the two orders


def bench_geval(p: Platform, n: int = 8, judge: str | None = None) -> GevalBench:
    """Seconds for the G-Eval judge to score `n` synthetic MedQuAD answers on its four
    dimensions in the two orders: answer by answer (each prompt starts with another
    dimension's instructions) and dimension by dimension, where consecutive prompts share the
    instructions and the llama backend reuses them from its KV cache. Same prompts, same
    scores (up to floating-point noise of a reused cache); only the time differs."""
    from eval.geval import GevalCache, geval_item, judge_method, load_judge

    j = load_judge(p.settings, judge)
    with tempfile.TemporaryDirectory(prefix="kgrag-bench-geval-") as tmp:
        run = Path(tmp)
        write_synthetic_run(p, run, n)
        lines = [RunLine.model_validate_json(raw) for raw in
                 (run / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
        items = [(ln, it) for ln in lines
                 if (it := geval_item(ln.question, ln.prediction.answer)) is not None
                 and it.answer]
        if not items:
            raise KgragError(f"none of the first {n} MedQuAD questions has a reference "
                             "answer to judge", hint="raise --n")
        j.score(items[0][1], j.dimensions[-1])  # model load and first-call setup
        t0 = time.perf_counter()
        first = {(ln.question.id, d): j.score(it, d).score
                 for ln, it in items for d in j.dimensions}
        t1 = time.perf_counter()
        _, records = judge_method(j, GevalCache(run / "geval.jsonl"), "bench",
                                  [ln for ln, _ in items])
        t2 = time.perf_counter()
    diffs = [abs(r.score - s) for r in records
             if r.score is not None and (s := first[(r.question_id, r.dimension)]) is not None]
    return GevalBench(answers=len(items), judge=j.name, by_answer_s=t1 - t0,
                      by_dimension_s=t2 - t1, max_score_diff=max(diffs, default=0.0))
