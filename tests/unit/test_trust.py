"""Calibrated evidence trust (`metakg.trust`, `eval.trust`): the policy from the counts,
calibration questions named after their own source record, and the tally from traces."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.prior import calibration_questions
from eval.runner import RunLine
from eval.trust import as_calibration, source_document, tally
from kgrag.errors import DataError, KgragError
from kgrag.types import Choice, Prediction, Question, TraceStep
from metakg.kg_method import SOURCE_DOCUMENT
from metakg.trust import EvidenceTrust, choose_policy, trust_path

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
OPTIONS = [Choice(label=lb, text=t) for lb, t in zip("ABC", ["x", "y", "z"], strict=True)]


def test_the_most_correct_policy_wins_and_ties_use_the_evidence_less() -> None:
    assert choose_policy({"closed-book": 30, "gate": 31, "evidence": 29}) == "gate"
    assert choose_policy({"closed-book": 30, "gate": 30, "evidence": 30}) == "closed-book"
    assert choose_policy({"closed-book": 28, "gate": 30, "evidence": 30}) == "gate"
    assert choose_policy({"closed-book": 25, "gate": 27, "evidence": 30}) == "evidence"


def test_a_trust_file_round_trips(tmp_path: Path) -> None:
    t = EvidenceTrust("m", "mmlu-law", "legal", "legal/val.jsonl", 60,
                      {"closed-book": 20, "gate": 22, "evidence": 25}, 40, "prior")
    path = trust_path(tmp_path, "m", "mmlu-law", "legal")
    t.save(path)
    assert path.name == "mmlu-law.legal.trust.json" and '"policy": "evidence"' in (
        path.read_text())
    assert EvidenceTrust.load(path) == t
    # a calibration under `prompt-prior` has its own file; `none` and `prior` the first one
    assert trust_path(tmp_path, "m", "mmlu-law", "legal", "none") == path
    assert trust_path(tmp_path, "m", "mmlu-law", "legal", "prompt-prior").name == (
        "mmlu-law.legal.prompt-prior.trust.json")
    path.write_text('{"model": "m", "questions"')  # cut short
    with pytest.raises(KgragError, match="unreadable"):
        EvidenceTrust.load(path)
    path.write_text('{"model": "m", "unknown": 1}')
    with pytest.raises(KgragError, match="kgrag reader trust"):
        EvidenceTrust.load(path)


def test_a_calibration_question_names_its_own_record() -> None:
    q = Question(id="075e", text="Q?", kind="multiple_choice", choices=OPTIONS,
                 answers=["B"], dataset="medmcqa")
    c = as_calibration(q, "csqa", "commonsense", "commonsense/csqa_train.jsonl")
    assert c.meta[SOURCE_DOCUMENT] == "commonsense:csqa_train:075e"
    assert (c.dataset, c.domain) == ("csqa", "commonsense")
    assert source_document("medical", "medical/medmcqa_dev.jsonl", "45ab") == (
        "medical:medmcqa_dev:45ab")
    with pytest.raises(DataError, match="has no answer"):
        as_calibration(q.model_copy(update={"answers": []}), "csqa", "commonsense", "f")


@pytest.mark.skipif(not (DATA / "medical" / "medmcqa_dev.jsonl").is_file(),
                    reason="shared data folder not present")
def test_medmcqa_calibration_questions_carry_their_answer() -> None:
    relative, qs = calibration_questions("medqa", DATA, 5)
    assert relative == "medical/medmcqa_dev.jsonl"
    assert all(len(q.answers) == 1 and q.answers[0] in "ABCD" for q in qs)


def _line(gold: str, closed: str, read: str | None, answer: str) -> RunLine:
    q = Question(id=f"{gold}{closed}{read}", text="?", kind="multiple_choice",
                 choices=OPTIONS, answers=[gold])
    def letters(lb: str) -> dict[str, float]:
        return {x: (0.8 if x == lb else 0.1) for x in "ABC"}
    trace = [TraceStep(stage="choose-closed", summary="", data={"letters": letters(closed)})]
    if read is not None:
        trace.append(TraceStep(stage="choose-evidence", summary="",
                               data={"letters": letters(read)}))
    return RunLine(question=q, prediction=Prediction(question_id=q.id, method="metakgrag-oa",
                                                     answer=answer, trace=trace))


def test_the_tally_counts_each_policy_from_the_trace() -> None:
    lines = [
        _line("A", "A", "B", "A"),   # closed right, evidence wrong, the gate kept closed
        _line("B", "A", "B", "B"),   # evidence right, the gate switched
        _line("C", "C", None, "C"),  # no path: every policy answers closed-book
        _line("A", "B", "C", "C"),   # all wrong
    ]
    t = tally(lines, model="m", dataset="csqa", domain="commonsense", source="f", bias="prior")
    assert t.correct == {"closed-book": 2, "gate": 3, "evidence": 2}
    assert (t.questions, t.evidence_read, t.policy, t.bias) == (4, 3, "gate", "prior")


def test_a_calibration_keeps_its_replies_for_the_next_one(tmp_path: Path) -> None:
    """A second calibration (e.g. under another bias correction) replays the first's
    replies from the file beside the trust files instead of decoding them again."""
    import json
    from types import SimpleNamespace
    from typing import Any

    from eval.trust import estimate_trust
    from kgrag.llm.base import GenerationParams, Message
    from kgrag.llm.replay import ReplayModel
    from kgrag.reader import ReaderConfig
    from metakg.trust import replay_path
    from tests.doubles.scripted import ScriptedModel

    train = tmp_path / "commonsense" / "csqa_train.jsonl"
    train.parent.mkdir()
    train.write_text("\n".join(json.dumps({"id": f"t{i}", "answerKey": "A", "question": {
        "stem": f"Train {i}?", "choices": [{"label": x, "text": f"{x}{i}"} for x in "ABC"]}})
        for i in range(2)))

    class Method:  # decodes once per question, then reads closed-book "A"
        def __init__(self, model: Any) -> None:
            self.model = model

        def prepare(self, domain: str) -> None:
            return None

        def answer(self, q: Question) -> Prediction:
            self.model.chat([Message("user", q.text)], GenerationParams(max_tokens=8))
            step = TraceStep(stage="choose-closed", summary="",
                             data={"letters": {"A": 0.8, "B": 0.1, "C": 0.1}})
            return Prediction(question_id=q.id, method="metakgrag-oa", answer="A. x",
                              trace=[step])

    class Platform:
        def __init__(self, replies: list[str]) -> None:
            self.chat_model: Any = ScriptedModel(replies, name="m")
            self.settings = SimpleNamespace(data_dir=tmp_path,
                                            reader=ReaderConfig(bias="prior"))

        def reader_config(self) -> ReaderConfig:
            return ReaderConfig(bias="prior", prior_dir=tmp_path / "priors")

        def replay_repeats(self) -> ReplayModel:
            model = ReplayModel(self.chat_model)
            self.chat_model = model
            return model

        def method(self, name: str, domain: str) -> Method:
            return Method(self.chat_model)

    first = estimate_trust(Platform(["c0", "c1"]), "csqa", "commonsense", 2,  # type: ignore[arg-type]
                           progress=False)
    assert replay_path(tmp_path / "priors", "m", "csqa", "commonsense").is_file()
    again = Platform([])  # nothing left to decode: every reply comes from the file
    assert estimate_trust(again, "csqa", "commonsense", 2, progress=False) == first  # type: ignore[arg-type]
    assert again.chat_model.usage.replayed == 2
