"""`eval.scoring.gate_counts`: how the evidence gate decided, read from the traces."""

from __future__ import annotations

from eval.runner import RunLine
from eval.scoring import gate_counts
from kgrag.types import Choice, Prediction, Question, TraceStep

OPTIONS = [Choice(label=lb, text=t) for lb, t in zip("ABCD", ["w", "x", "y", "z"], strict=True)]


def _line(gold: str, closed: str, read: str | None, supported: list[str], use: bool) -> RunLine:
    q = Question(id=f"q{gold}{closed}{read}", text="Which?", kind="multiple_choice",
                 choices=OPTIONS, answers=[gold])
    trace = [TraceStep(stage="choose-closed", summary="", data={"label": closed})]
    if read is not None:
        trace.append(TraceStep(stage="choose-evidence", summary="", data={"label": read}))
    trace.append(TraceStep(stage="gate", summary="",
                           data={"use_evidence": use, "supported": supported}))
    answer = read if use and read else closed
    return RunLine(question=q, prediction=Prediction(
        question_id=q.id, method="metakgrag-oa", answer=answer, trace=trace))


def test_switches_and_the_reached_evidence_choices_are_counted() -> None:
    lines = [
        _line("B", "A", "B", ["B"], use=True),       # a kept switch, right (closed was wrong)
        _line("A", "A", "C", ["C"], use=True),       # a kept switch, wrong (closed was right)
        _line("A", "A", "A", ["A", "B"], use=True),  # agreement: no switch
        _line("D", "D", "B", ["B", "D"], use=False),  # fired: closed-book, right
        _line("C", "C", None, [], use=False),         # no evidence read
    ]
    g = gate_counts(lines)
    assert g is not None
    assert (g["questions"], g["fired"], g["fired_correct"], g["kept_correct"]) == (5, 2, 2, 2)
    assert (g["switched"], g["switched_correct"], g["switched_closed_correct"]) == (2, 1, 1)
    assert (g["read"], g["read_reached"]) == (4, 4)
    assert (g["options"], g["options_reached"]) == (16, 6)


def test_a_method_without_a_gate_has_no_counts() -> None:
    q = Question(id="q", text="Which?", kind="multiple_choice", choices=OPTIONS, answers=["A"])
    line = RunLine(question=q, prediction=Prediction(question_id="q", method="llm", answer="A"))
    assert gate_counts([line]) is None
