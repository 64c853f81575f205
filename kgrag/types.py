"""Typed values that cross every seam: questions, predictions, usage, traces.

Every method answers `answer(question) -> Prediction`; the runner writes Predictions as
JSON lines and scoring reads them back, so all of these are pydantic models.

>>> q = Question(id="q1", text="Where would you find a fox?", dataset="csqa",
...              choices=[Choice(label="A", text="forest"), Choice(label="B", text="sea")],
...              answers=["A"])
>>> q.is_multiple_choice
True
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

QuestionKind = Literal["multiple_choice", "short_answer", "open_ended"]


class Choice(BaseModel):
    model_config = ConfigDict(frozen=True)

    label: str  # "A", "B", ...
    text: str


class Passage(BaseModel):
    """A paragraph of text (Wikipedia, a gold context, a source chunk)."""

    model_config = ConfigDict(frozen=True)

    id: str
    title: str = ""
    text: str


class Question(BaseModel):
    """One evaluation or user question, whatever the dataset."""

    model_config = ConfigDict(frozen=True)

    id: str
    text: str
    dataset: str = "user"
    domain: str | None = None  # the graph KG methods use
    kind: QuestionKind = "short_answer"
    choices: list[Choice] = Field(default_factory=list)
    answers: list[str] = Field(default_factory=list)  # gold: option labels or answer strings
    contexts: list[Passage] = Field(default_factory=list)  # gold-context setting
    supporting: list[str] = Field(default_factory=list)  # ids/titles of gold supporting passages
    meta: dict[str, str] = Field(default_factory=dict)

    @property
    def is_multiple_choice(self) -> bool:
        return bool(self.choices)

    def choices_block(self) -> str:
        return "\n".join(f"{c.label}. {c.text}" for c in self.choices)


class Usage(BaseModel):
    """What answering one question cost."""

    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retrievals: int = 0
    cypher_queries: int = 0
    # of llm_calls, those answered from an identical greedy call of another method in the
    # same run (`kgrag.llm.replay`); their tokens and recorded seconds are still counted
    replayed_calls: int = 0
    seconds: float = 0.0
    # of seconds, those credited for replayed calls: counted so that a method costs what it
    # costs alone, but not spent by this run (`kgrag.clock`)
    replayed_seconds: float = 0.0
    stage_seconds: dict[str, float] = Field(default_factory=dict)


class TraceStep(BaseModel):
    """One step of a method's reasoning, as shown in the CLI and the app."""

    stage: str  # e.g. "concepts", "cycle", "retrieve", "generate"
    summary: str
    data: dict[str, Any] = Field(default_factory=dict)
    seconds: float = 0.0


class Prediction(BaseModel):
    """A method's answer to one question, with evidence, trace and cost."""

    question_id: str
    method: str
    answer: str  # the model's final answer text; option labels are parsed in eval/
    evidence: list[str] = Field(default_factory=list)
    trace: list[TraceStep] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    error: str | None = None  # set when the method failed on this question
    setting: str = "closed-book"  # closed-book | open | gold | kg
