"""The one interface every QA method implements, baselines included.

`answer()` is a template method: it times the call, collects LLM and Cypher usage,
turns a method's exception into a recorded error, and returns a `Prediction`.
Subclasses implement only `_answer()` and declare the model capabilities they need.

    class Echo(QAMethod):
        name = "echo"
        def _answer(self, q, trace):
            return Answer(text=q.text)
    Echo(model).answer(Question(id="1", text="hi")).answer
    # -> 'hi'
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar, TypeVar

from kgrag import clock
from kgrag.errors import KgragError
from kgrag.llm.base import Capabilities, ChatModel, GenerationParams, require
from kgrag.reader import (
    CLOSED_BOOK_PROMPT,
    PRIOR_BIASES,
    Choice,
    PositionPrior,
    ReaderConfig,
    Render,
    find_prior,
    option_text,
    read_choice,
)
from kgrag.store import GraphStore
from kgrag.types import Prediction, Question, TraceStep, Usage

log = logging.getLogger(__name__)

# A question may take at most this share of the model's context window: the prompt
# around it (exemplars, passages, evidence) and the reply need the rest.
QUESTION_SHARE = 0.25
CHARS_PER_TOKEN = 4  # estimate for backends that do not tokenize in-process


@dataclass
class Answer:
    """What `_answer` returns; the base class adds usage and timing."""

    text: str
    evidence: list[str] = field(default_factory=list)
    retrievals: int = 0
    setting: str = "closed-book"


class Trace:
    """Collects trace steps with their durations while a method runs."""

    def __init__(self) -> None:
        self.steps: list[TraceStep] = []
        self._t = clock.now()
        self.stage_seconds: dict[str, float] = {}

    def add(self, stage: str, summary: str, **data: object) -> TraceStep:
        now = clock.now()
        step = TraceStep(stage=stage, summary=summary, data=dict(data), seconds=now - self._t)
        self.stage_seconds[stage] = self.stage_seconds.get(stage, 0.0) + step.seconds
        self._t = now
        self.steps.append(step)
        return step


class QAMethod(ABC):
    """Base of every method. Subclasses set `name`, `needs`, and implement `_answer`."""

    name: ClassVar[str] = "method"
    needs: ClassVar[Capabilities] = Capabilities()

    def __init__(self, model: ChatModel, store: GraphStore | None = None) -> None:
        require(model, self.needs, self.name)
        self.model = model
        self.store = store
        # (question, prompt name) -> a rule that says when the reply's option is read, or
        # None: for an answer-first prompt (MetaKGRAG's Table 7: the option, then an
        # explanation) decoding can stop there (`GenerationParams.until`), the same option
        # without the explanation. `kgrag eval` sets `kgrag.parsing.settled_rule` unless
        # --explanations, which asks the scorer's own list of answer-first prompts; None
        # (`kgrag ask`, the app): replies are decoded whole.
        self.settled: Callable[[Question, str], Callable[[str], bool] | None] | None = None
        # How multiple-choice answers are read (`kgrag.reader`); the platform sets the
        # configured one. A multiple-choice question needs `option_logprobs`, checked on
        # first use so that open-question-only backends still answer open questions.
        self.reader = ReaderConfig()
        self._priors: dict[tuple[str, str], PositionPrior] = {}

    def _until(self, question: Question, prompt: str) -> Callable[[str], bool] | None:
        """`GenerationParams.until` for the reply to `question` under the named prompt."""
        return None if self.settled is None else self.settled(question, prompt)

    # ------------------------------------------------------------------ multiple choice
    def choose(self, question: Question, render: Render, trace: Trace, *, prompt: str,
               context: str = "") -> tuple[str, Choice]:
        """The shared multiple-choice answer step: read the option (`read`), and with
        `reader.explain` generate an explanation of that option afterwards (for the app).
        Returns the reply text ("B. forest", then the explanation) and the choice."""
        choice = self.read(question, render, trace, prompt=prompt)
        return self.reply_text(question, choice, context, trace), choice

    def read(self, question: Question, render: Render, trace: Trace, *, prompt: str,
             stage: str = "choose") -> Choice:
        """Read the option from the letter probabilities (`kgrag.reader.read_choice`) and
        trace its distribution as a `stage` step (the scorer reads the last "choose")."""
        require(self.model, Capabilities(option_logprobs=True), f"{self.name} (multiple choice)")
        choice = read_choice(self.model, question, render, self.reader,
                             self._prior(question, prompt))
        trace.add(stage, f"{option_text(question, choice.label)} (p={choice.confidence:.2f}, "
                  f"{len(choice.passes)} pass{'es' if len(choice.passes) > 1 else ''}, "
                  f"bias {choice.correction})",
                  prompt=prompt, prompt_tokens=choice.prompt_tokens, **choice.trace_data())
        return choice

    def reply_text(self, question: Question, choice: Choice, context: str, trace: Trace
                   ) -> str:
        text = option_text(question, choice.label)
        if self.reader.explain:
            text = f"{text}\n{self._explain(question, choice.label, context, trace)}"
        return text

    def _explain(self, question: Question, label: str, context: str, trace: Trace) -> str:
        from kgrag.prompt import package_prompt

        messages = package_prompt(__file__, "explain_mcq").render(
            context=context or "(none)", question=question.text,
            choices=question.choices_block(), answer=option_text(question, label))
        reply = self.model.chat(messages, GenerationParams(max_tokens=160))
        trace.add("explain", reply.text.strip(), prompt="explain_mcq",
                  completion_tokens=reply.completion_tokens)
        return reply.text.strip()

    def _prior(self, question: Question, prompt: str) -> PositionPrior | None:
        """The position prior of this model on the question's dataset: with `bias="prior"`
        the `llm` row's prompt's for every prompt, with `"prompt-prior"` `prompt`'s own."""
        if self.reader.bias not in PRIOR_BIASES or self.reader.prior_dir is None:
            return None
        under = prompt if self.reader.bias == "prompt-prior" else CLOSED_BOOK_PROMPT
        key = (question.dataset, under)
        if key not in self._priors:
            path = find_prior(self.reader.prior_dir, self.model.name, question.dataset, under)
            if not path.is_file():
                option = "" if under == CLOSED_BOOK_PROMPT else f" --prompt {under}"
                raise KgragError(f"no position prior for {self.model.name} on "
                                 f"{question.dataset} under prompt {under} ({path})",
                                 hint=f"run `kgrag reader prior --dataset "
                                 f"{question.dataset}{option}`")
            self._priors[key] = PositionPrior.load(path)
        return self._priors[key]

    def prepare(self, domain: str | None) -> None:
        """Refuse now what would fail on the first question (an unbuilt domain graph),
        so a run writes nothing it cannot use. Nothing to check by default."""
        return None

    def answer(self, question: Question) -> Prediction:
        u = self.model.usage
        calls0, p0, c0, r0 = u.calls, u.prompt_tokens, u.completion_tokens, u.replayed
        q0 = self.store.stats.queries if self.store else 0
        trace = Trace()
        start, credited0 = clock.now(), clock.credited()
        error = None
        try:
            question = fit_question(self.model, question, trace)
            result = self._answer(question, trace)
        except KgragError:
            raise  # infrastructure problems (Neo4j down, model missing or failing) stop the run
        except Exception as e:  # noqa: BLE001 - one bad question must not end a run
            log.exception("%s failed on %s", self.name, question.id)
            result, error = Answer(text=""), f"{type(e).__name__}: {e}"
        usage = Usage(
            llm_calls=self.model.usage.calls - calls0,
            prompt_tokens=self.model.usage.prompt_tokens - p0,
            completion_tokens=self.model.usage.completion_tokens - c0,
            retrievals=result.retrievals,
            cypher_queries=(self.store.stats.queries - q0) if self.store else 0,
            replayed_calls=self.model.usage.replayed - r0,
            seconds=clock.now() - start,
            replayed_seconds=clock.credited() - credited0,
            stage_seconds=trace.stage_seconds,
        )
        return Prediction(question_id=question.id, method=self.name, answer=result.text,
                          evidence=result.evidence, trace=trace.steps, usage=usage,
                          error=error, setting=result.setting)

    @abstractmethod
    def _answer(self, question: Question, trace: Trace) -> Answer: ...


def fit_question(model: ChatModel, question: Question, trace: Trace) -> Question:
    """The question, cut to `QUESTION_SHARE` of the model's context if longer; the cut is
    logged and traced ("truncate" step), never silent. The beginning and the end are kept
    (the end usually holds what is asked), the middle is replaced by " … "."""
    n_ctx = int(getattr(model, "context_tokens", 0) or 4096)
    budget = max(16, int(n_ctx * QUESTION_SHARE))
    tokenize = getattr(model, "tokenize", None)
    if callable(tokenize):
        tokens = tokenize(question.text)
        if len(tokens) <= budget:
            return question
        half = budget // 2
        text = (model.detokenize(tokens[:half]).rstrip() + " … "  # type: ignore[attr-defined]
                + model.detokenize(tokens[-half:]).lstrip())  # type: ignore[attr-defined]
        size, unit = len(tokens), "tokens"
    else:
        limit = budget * CHARS_PER_TOKEN
        if len(question.text) <= limit:
            return question
        half = limit // 2
        text = question.text[:half].rstrip() + " … " + question.text[-half:].lstrip()
        size, unit = len(question.text), "characters"
    note = (f"question truncated: {size} {unit} is more than {QUESTION_SHARE:.0%} of the "
            f"model's {n_ctx}-token context; its middle was cut")
    log.warning("%s (%s)", note, question.id)
    trace.add("truncate", note, original_size=size, unit=unit, budget_tokens=budget)
    return question.model_copy(update={"text": text})


M = TypeVar("M", bound=QAMethod)


def named(cls: type[M], name: str) -> type[M]:
    """`cls` under a registry name, so that each variant's predictions carry its own
    `method` (the runner resumes and scores by (method, question id)): `rag-gold` must not
    answer as `rag`."""
    return cls if cls.name == name else type(f"{cls.__name__}[{name}]", (cls,), {"name": name})
