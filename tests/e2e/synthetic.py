"""A synthetic run directory for the Results page (load-time measure, not a result).

Answers are made up: `n` multiple-choice questions, each answered by every method, with a
fixed pattern of right, wrong and unparseable answers, so filters have something to find.
"""

from __future__ import annotations

import random
from pathlib import Path

from eval.runner import RunConfig, RunLine
from kgrag.types import Choice, Prediction, Question, TraceStep, Usage


def write_synthetic_run(out: Path, n: int = 300, methods: tuple[str, ...] = ("llm", "cot"),
                        seed: int = 7) -> Path:
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    config = RunConfig(dataset="synthetic", dataset_path="synthetic.jsonl", domain=None,
                       methods=list(methods), n=n, model="synthetic", model_backend="none",
                       model_sha256=None, embedding_model="none", seed=seed,
                       kgrag_version="test", git_revision="", prompts_digest="",
                       cypher_digest="")
    (out / "config.json").write_text(config.model_dump_json(indent=2))
    labels = "ABCDE"
    with (out / "predictions.jsonl").open("w", encoding="utf-8") as f:
        for i in range(n):
            gold = labels[i % 5]
            q = Question(id=f"syn-{i:04d}", text=f"Synthetic question {i}: where is thing {i}?",
                         dataset="synthetic", kind="multiple_choice",
                         choices=[Choice(label=c, text=f"place {c.lower()}{i}") for c in labels],
                         answers=[gold])
            for m in methods:
                roll = rng.random()
                answer = (f"The answer is {gold}." if roll < 0.6 else
                          f"The answer is {labels[(i + 1) % 5]}." if roll < 0.9 else "Not sure.")
                trace = [TraceStep(stage="generate", summary=answer, data={"step": 1})]
                pred = Prediction(question_id=q.id, method=m, answer=answer, trace=trace,
                                  usage=Usage(llm_calls=1, seconds=rng.uniform(0.5, 3.0)))
                f.write(RunLine(question=q, prediction=pred).model_dump_json() + "\n")
    return out
