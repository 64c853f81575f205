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
