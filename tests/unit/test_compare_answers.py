"""research/compare_answers.py: identical answers and evidence per method over the questions
two runs share, and each run's mean quality there."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

from eval.runner import RunConfig, RunLine
from kgrag.types import Prediction, Question, Usage

ROOT = Path(__file__).resolve().parents[2]
script = runpy.run_path(str(ROOT / "research" / "compare_answers.py"))


def _run(path: Path, answers: dict[tuple[str, str], tuple[str, list[str]]]) -> Path:
    path.mkdir()
    config = RunConfig(
        dataset="medquad", dataset_path="x.jsonl", domain="medical",
        methods=sorted({m for m, _ in answers}), n=None, model="m", model_backend="llama",
        model_sha256=None, embedding_model="e", seed=42, kgrag_version="0",
        git_revision="abc", prompts_digest="p", cypher_digest="c", code_versions=["0+abc"])
    (path / "config.json").write_text(config.model_dump_json())
    with (path / "predictions.jsonl").open("w") as f:
        for (method, qid), (text, evidence) in answers.items():
            q = Question(id=qid, text=f"What is {qid}?", dataset="medquad", kind="open_ended",
                         answers=[f"{qid} is a skin disease."])
            pred = Prediction(question_id=qid, method=method, answer=text, evidence=evidence,
                              usage=Usage(llm_calls=1, seconds=1.0))
            f.write(RunLine(question=q, prediction=pred).model_dump_json() + "\n")
    return path


def test_counts_identical_answers_and_evidence_on_shared_questions_only(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _run(tmp_path / "a", {("llm", "acne"): ("acne is a skin disease.", []),
                              ("llm", "gout"): ("gout hurts.", []),
                              ("kg", "acne"): ("acne is a skin disease.", ["p1"]),
                              ("kg", "flu"): ("flu.", ["p9"])})
    b = _run(tmp_path / "b", {("llm", "acne"): ("acne is a skin disease.", []),
                              ("llm", "gout"): ("gout is a skin disease.", []),
                              ("kg", "acne"): ("acne is a disease.", ["p2"])})
    script["main"](a, b)
    rows = {line.split()[0]: line.split()[1:] for line in capsys.readouterr().out.splitlines()[1:]}
    # kg: only acne is shared (flu is not in b); different answer and evidence
    assert rows["kg"][:3] == ["1", "0", "0"] and rows["kg"][3:] == ["100.0", "vs", "88.9"]
    assert rows["llm"][:3] == ["2", "1", "2"]
