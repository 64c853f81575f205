"""The scoring benchmark's synthetic run: real MedQuAD questions, off-by-one answers."""

from __future__ import annotations

from pathlib import Path

from eval.bench import write_synthetic_run
from eval.runner import read_run
from eval.scoring import score_run
from kgrag.config import Settings
from tests.conftest import DATA_DIR, needs_data


class _P:
    def __init__(self, home: Path) -> None:
        self.settings = Settings(home=home, data_dir=DATA_DIR)


@needs_data
def test_synthetic_run_scores_like_a_real_one(tmp_path: Path) -> None:
    n = write_synthetic_run(_P(tmp_path / "home"), tmp_path / "run", 12)  # type: ignore[arg-type]
    assert n == 12
    _, lines = read_run(tmp_path / "run")
    assert len(lines) == 12 and all(ln.prediction.answer for ln in lines)
    # answers come from the next question's reference (neighbouring MedQuAD questions can
    # share a sentence, so most, not all, differ from their own reference)
    assert sum(ln.prediction.answer not in ln.question.answers[0] for ln in lines) >= 9
    m = score_run(tmp_path / "run").methods["bench"]
    assert m.n == 12 and m.rouge_l is not None and 0.0 < m.rouge_l.mean < 0.5
