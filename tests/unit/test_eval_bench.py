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


@needs_data
def test_geval_bench_times_both_orders_on_the_same_prompts(tmp_path: Path,
                                                          monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The judge is asked every (answer, dimension) once per order; a judge whose score
    depends only on the prompt gives the same scores in both, so the difference is 0."""
    import math

    import eval.geval as geval
    from eval.bench import bench_geval
    from kgrag.llm.base import Capabilities, Generation, TokenLogprob
    from tests.doubles.scripted import ScriptedModel

    class PromptJudge(ScriptedModel):
        """Scores each prompt by its length, whatever the order it comes in."""

        def chat(self, messages, params):  # type: ignore[no-untyped-def]
            self.prompts.append(list(messages))
            k = str(1 + len(messages[-1].content) % 5)
            return Generation(k, 100, 1, seconds=0.0, logprobs=(
                TokenLogprob(k, math.log(0.9), ((k, math.log(0.9)),)),))

    model = PromptJudge([], capabilities=Capabilities(logprobs=True), name="judge-x")
    monkeypatch.setattr(geval, "load_judge", lambda settings, judge=None: geval.GEvalJudge(model))
    r = bench_geval(_P(tmp_path / "home"), 2, 2)  # type: ignore[arg-type]
    assert (r.answers, r.methods, r.judge, r.max_score_diff) == (4, 2, "judge-x", 0.0)
    assert len(model.prompts) == 1 + 2 * 4 * 4  # warm-up, then 16 prompts in each order
    first, second = model.prompts[1:17], model.prompts[17:]
    assert sorted(p[-1].content for p in first) == sorted(p[-1].content for p in second)

    def question(p: list) -> str:  # type: ignore[type-arg]
        return p[-1].content.split("\nAnswer:", 1)[0]  # all but the answer and the form

    # method by method: one method's two questions in turn; question by question: the two
    # methods' answers to one question in turn, sharing everything before the answer
    assert question(first[0]) != question(first[1])
    assert question(second[0]) == question(second[1]) != question(second[2])
    assert second[0] != second[1]
