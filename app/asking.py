"""Answering questions from the app: input checks, the model gate, and the answer job.

No Streamlit here (the pages call these), and no method logic: a job calls
`Platform.method(name, domain).answer(question)` for each chosen method and scores the
prediction with `eval.scoring.per_question_scores`, as `kgrag score` would.

Why a process-wide gate on top of the model's own lock: one llama.cpp model serves every
browser session of the app, and a method's `answer()` makes many model calls and reads the
model's usage counters before and after. Two questions in flight at once would interleave
those calls and mix their LLM-call and token counts. So one job at a time holds the gate for
all its methods; a second session sees "busy" and waits.

    gate = ModelGate()
    job = AnswerJob(platform, gate, question, ["llm", "cot"], domain=None)
    gate.acquire("session-1", "2 methods", wait_s=0) and job.start()
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from eval.runner import RunLine
from eval.scoring import per_question_scores
from kgrag.errors import KgragError
from kgrag.types import Choice, Prediction, Question

if TYPE_CHECKING:
    from kgrag.platform import Platform

log = logging.getLogger(__name__)
MAX_QUESTION_CHARS = 10_000


# ---------------------------------------------------------------------- input
@dataclass(frozen=True)
class CheckedText:
    """A question text after the app's checks; `problem` set means do not answer."""

    text: str
    problem: str | None = None
    notice: str | None = None  # answered, but the user should know (e.g. it was capped)


def check_question_text(raw: str, limit: int = MAX_QUESTION_CHARS) -> CheckedText:
    """Strip, refuse empty text, cap very long text at `limit` characters (and say so).

    >>> check_question_text("   ").problem
    'The question is empty: type one, or pick one from a dataset.'
    >>> c = check_question_text("x" * 10_001); len(c.text), c.notice is not None
    (10000, True)
    """
    text = raw.strip()
    if not text:
        return CheckedText("", problem="The question is empty: type one, or pick one from a "
                                       "dataset.")
    if len(text) > limit:
        return CheckedText(text[:limit], notice=f"The question had {len(text):,} characters; "
                                                f"only the first {limit:,} are used.")
    return CheckedText(text)


def parse_choices(text: str) -> list[Choice]:
    """Answer options typed one per line as `A. text`, `A) text`, `A: text` or `A=text`.

    >>> [(c.label, c.text) for c in parse_choices("A. forest\\nb) sea\\n\\n")]
    [('A', 'forest'), ('B', 'sea')]
    """
    choices = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        label, body = line[:1], line[1:].lstrip()
        if not label.isalnum() or body[:1] not in {".", ")", ":", "="}:
            raise ValueError(f"write each option as 'A. text', not {line!r}")
        if not body[1:].strip():
            raise ValueError(f"option {label.upper()} has no text")
        choices.append(Choice(label=label.upper(), text=body[1:].strip()))
    labels = [c.label for c in choices]
    if len(set(labels)) != len(labels):
        raise ValueError("two options have the same label")
    return choices


def user_question(text: str, domain: str | None, choices: Sequence[Choice] = ()) -> Question:
    """A typed question (no gold answer) for the chosen domain."""
    return Question(id="app", text=text, domain=domain, choices=list(choices),
                    kind="multiple_choice" if choices else "short_answer")


# ---------------------------------------------------------------------- the gate
@dataclass(frozen=True)
class Holder:
    """Who holds the model gate, for the "busy" message."""

    owner: str
    label: str
    since: float  # time.monotonic()

    def seconds(self) -> float:
        return time.monotonic() - self.since


class ModelGate:
    """One question at a time for the one process-wide model.

    A plain `threading.Lock` (not an RLock) because the answer job's worker thread releases
    what the page's script thread acquired: if the page is stopped or rerun meanwhile, the
    job still finishes and frees the model; nothing is released while the model is busy.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holder: Holder | None = None

    @property
    def holder(self) -> Holder | None:
        return self._holder

    def acquire(self, owner: str, label: str, *, wait_s: float,
                on_wait: Callable[[Holder | None, float], None] | None = None,
                poll_s: float = 0.25) -> bool:
        """Take the gate, waiting up to `wait_s`; `on_wait(holder, waited)` while busy."""
        start = time.monotonic()
        while True:
            remaining = start + wait_s - time.monotonic()
            got = (self._lock.acquire(timeout=min(poll_s, remaining)) if remaining > 0
                   else self._lock.acquire(blocking=False))
            if got:
                self._holder = Holder(owner, label, time.monotonic())
                return True
            waited = time.monotonic() - start
            if waited >= wait_s:
                return False
            if on_wait is not None:  # the page shows "busy" and stays stoppable
                on_wait(self._holder, waited)

    def release(self) -> None:
        self._holder = None
        self._lock.release()

    def busy(self) -> bool:
        return self._lock.locked()


# ---------------------------------------------------------------------- the job
@dataclass
class MethodOutcome:
    """One method's result for the asked question."""

    method: str
    prediction: Prediction | None = None
    problem: str | None = None  # the method could not run (KgragError: message and hint)
    scores: dict[str, float] = field(default_factory=dict)  # empty without gold answers


@dataclass(frozen=True)
class Progress:
    """What the page shows while the job runs."""

    method: str | None  # the method answering now (None: finished)
    index: int  # 0-based position of `method` among the chosen methods
    total: int
    seconds: float  # since the job started
    llm_calls: int  # model calls of the current method so far
    done: tuple[str, ...]


class AnswerJob:
    """Answers one question with several methods, one after another, in a worker thread.

    The caller acquires `gate` first; the worker releases it when the last method is done.
    Outcomes appear in `outcomes` as each method finishes, so the page can show them live.
    """

    def __init__(self, platform: Platform, gate: ModelGate, question: Question,
                 methods: Sequence[str], domain: str | None) -> None:
        self.platform, self.gate, self.question = platform, gate, question
        self.methods, self.domain = list(methods), domain
        self.outcomes: dict[str, MethodOutcome] = {}
        self.started = time.monotonic()
        self.finished: float | None = None
        self._current: str | None = None
        self._calls0 = 0
        self._thread = threading.Thread(target=self._run, name="kgrag-app-answer", daemon=True)

    def start(self) -> AnswerJob:
        self._thread.start()
        return self

    def wait(self, timeout: float | None = None) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def done(self) -> bool:
        return self.finished is not None

    def progress(self) -> Progress:
        current = self._current
        calls = self._model_calls() - self._calls0 if current else 0
        index = self.methods.index(current) if current in self.methods else len(self.outcomes)
        return Progress(current, index, len(self.methods), time.monotonic() - self.started,
                        max(calls, 0), tuple(self.outcomes))

    def _model_calls(self) -> int:
        model = self.platform.__dict__.get("chat_model")  # never load the model just to count
        return model.usage.calls if model is not None else 0

    def _run(self) -> None:
        try:
            for name in self.methods:
                self._current, self._calls0 = name, self._model_calls()
                self.outcomes[name] = self._answer(name)
        finally:
            self._current = None
            self.finished = time.monotonic()
            self.gate.release()

    def _answer(self, name: str) -> MethodOutcome:
        try:
            method = self.platform.method(name, self.domain)
            prediction = method.answer(self.question)
        except KgragError as e:  # Neo4j down, domain not built, model missing, ...
            text = f"{e.message} — {e.hint}" if e.hint else e.message
            return MethodOutcome(name, problem=text)
        except Exception as e:  # noqa: BLE001 - one broken method must not hide the others
            log.exception("%s failed in the app", name)
            return MethodOutcome(name, problem=f"{type(e).__name__}: {e}")
        scores = per_question_scores(RunLine(question=self.question, prediction=prediction)) \
            if self.question.answers else {}
        return MethodOutcome(name, prediction=prediction, scores=scores)


@dataclass(frozen=True)
class Answered:
    """A finished job as the Ask page keeps it (and hands it to the Reasoning page)."""

    question: Question
    domain: str | None
    outcomes: dict[str, MethodOutcome]
    seconds: float
    notice: str | None = None

    @classmethod
    def of(cls, job: AnswerJob, notice: str | None = None) -> Answered:
        end = job.finished or time.monotonic()
        return cls(job.question, job.domain, dict(job.outcomes), end - job.started, notice)


@dataclass(frozen=True)
class ReasoningSource:
    """What the Reasoning page shows: one question and the predictions of its methods."""

    question: Question
    domain: str | None
    predictions: dict[str, Prediction]
    origin: str  # "the Ask page" or "run <dir>"


def verdict(question: Question, outcome: MethodOutcome) -> str:
    """A short correctness label for the outcome ("" when there is no gold answer).

        verdict(mcq, MethodOutcome("llm", prediction=pred, scores={"correct": 1.0}))
        # -> 'correct'
    """
    s = outcome.scores
    if not question.answers or outcome.prediction is None:
        return ""
    if "correct" in s:
        return "correct" if s["correct"] else ("no option found" if s.get("fail") else "wrong")
    if "em" in s:
        return f"EM {s['em']:.0f} · F1 {s['f1']:.2f}"
    if "rouge_l" in s:
        return f"ROUGE-L {s['rouge_l']:.2f}"
    return ""
