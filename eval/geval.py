"""G-Eval (Liu et al., 2023) with a local judge model.

G-Eval scores a text on one dimension at a time with three parts: the criteria and the
evaluation steps (G-Eval's auto chain-of-thought: generated once per task, then frozen
in the prompt), a form to fill in ("Evaluation Form (scores ONLY): - Coherence:"), and
a score that is the probability-weighted sum over the score tokens,
sum_i p(i)·i / sum_i p(i) for i in 1..5, read from the judge's next-token distribution.

The dimensions are those of the MetaKGRAG paper's Table 9 (coherence, consistency,
fluency, relevance); each is one template, `eval/prompts/geval_<dimension>.txt`, with
`$question`, `$reference` and `$answer`. The judge generates a few tokens greedily with
its top-k log-probabilities per position; the position where it writes the score (the
first generated token that is a score) gives the distribution. `geval_score` in
`eval.metrics` does the weighting.

What is judged (`geval_item`): open-ended answers (MedQuAD) against the reference
answer, and multiple-choice replies that carry an explanation (at least
`MIN_EXPLANATION_WORDS` words) against the correct option. Explicit policies: an empty
or failed open-ended answer scores the minimum (1) without a judge call; a judge reply
with no score token is left out of the mean and counted (`unparsed`).

Deviations from the paper, stated in the report: fluency uses 1–5 (G-Eval's SummEval
prompt uses 1–3) so one scale covers the four columns; Table 9 prints 0–100 numbers
without saying how they map from G-Eval's scale, so kgrag reports the 1–5 scale.

    judge = GEvalJudge(platform.chat_model)
    judge.score(GevalItem("What is X?", "X is ...", "X is ..."), "fluency").score
    # -> 4.62
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel
from tqdm import tqdm

from eval.metrics import geval_score
from eval.runner import RunLine
from kgrag.errors import ModelError
from kgrag.llm.base import Capabilities, ChatModel, Generation, GenerationParams, require
from kgrag.prompt import PromptTemplate, package_prompt
from kgrag.types import Question

if TYPE_CHECKING:
    from kgrag.config import Settings

DIMENSIONS: tuple[str, ...] = ("coherence", "consistency", "fluency", "relevance")
SCORES: tuple[int, ...] = (1, 2, 3, 4, 5)
MIN_EXPLANATION_WORDS = 5  # a multiple-choice reply shorter than this is a bare option
MAX_FIELD_CHARS = 2000  # reference and answer are cut here so the prompt fits n_ctx
_HINT = ("G-Eval reads the judge's next-token log-probabilities: use the llama.cpp backend "
         "(KGRAG_MODEL__BACKEND=llama) with `--judge <model>` (`kgrag models list`), or an "
         "OpenAI-compatible server that returns top_logprobs")


class GevalUnparsed(ValueError):
    """The judge's reply holds no score token within its few generated tokens."""


@dataclass(frozen=True)
class GevalItem:
    """What a judge sees: the question, the reference answer and the answer to rate."""

    question: str
    reference: str
    answer: str

    @property
    def digest(self) -> str:
        text = f"{self.question}\x00{self.reference}\x00{self.answer}"
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class GevalScore:
    """One dimension's G-Eval score of one answer, its score distribution and cost."""

    dimension: str
    score: float | None  # None: the reply held no score token (policy: counted, not averaged)
    probabilities: dict[str, float]  # score token → probability, renormalised over SCORES
    reply: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float


def geval_item(question: Question, answer: str, error: str | None = None) -> GevalItem | None:
    """The item to judge for one prediction, or None when G-Eval does not apply.

    >>> q = Question(id="1", text="What is acne?", kind="open_ended", answers=["A skin ..."])
    >>> geval_item(q, "Acne is a skin condition.").reference
    'A skin ...'
    """
    text = "" if error else answer.strip()
    if question.kind == "open_ended" and question.answers:
        return GevalItem(question.text, question.answers[0][:MAX_FIELD_CHARS],
                         text[:MAX_FIELD_CHARS])
    if question.is_multiple_choice and len(text.split()) >= MIN_EXPLANATION_WORDS:
        gold = {c.label: c.text for c in question.choices}
        reference = "; ".join(f"{label}. {gold.get(label, '')}" for label in question.answers)
        return GevalItem(f"{question.text}\n{question.choices_block()}",
                         f"The correct option is {reference}", text[:MAX_FIELD_CHARS])
    return None


def score_distribution(g: Generation, scores: Sequence[int] = SCORES) -> dict[str, float]:
    """Log-probabilities of the candidate tokens at the position where the judge writes
    its score: the first generated token that is a score. When the judge wrote none (a
    small judge often opens with "**" or a newline), the first position whose top
    alternatives include score tokens: G-Eval reads the distribution over the score
    tokens at the form position, whatever was sampled there. Same-text tokens are merged;
    `geval_score` renormalises over the score tokens."""
    if g.logprobs is None:
        raise ModelError("the judge returned no token log-probabilities", hint=_HINT)
    valid = {str(s) for s in scores}
    written = [tok for tok in g.logprobs if tok.token.strip() in valid]
    offered = [tok for tok in g.logprobs if any(t.strip() in valid for t, _ in tok.top)]
    for tok in written[:1] or offered[:1]:
        if not tok.top:
            raise ModelError("the judge returned no top alternatives for the score token",
                             hint=_HINT)
        candidates = list(tok.top)
        if all(text != tok.token for text, _ in tok.top):
            candidates.append((tok.token, tok.logprob))
        merged: dict[str, float] = {}
        for text, lp in candidates:
            key = text.strip()
            merged[key] = _logaddexp(merged[key], lp) if key in merged else float(lp)
        return merged
    raise GevalUnparsed(f"no score token in the judge's reply {g.text!r}")


def _logaddexp(a: float, b: float) -> float:
    top = max(a, b)
    if top == -math.inf:
        return top
    return top + math.log(math.exp(a - top) + math.exp(b - top))


class GEvalJudge:
    """Scores answers on G-Eval dimensions with a chat model that offers logprobs.

        judge = GEvalJudge(model, dimensions=("fluency",))
        judge.score(item, "fluency").probabilities
        # -> {'4': 0.7, '5': 0.3}
    """

    needs = Capabilities(logprobs=True)

    def __init__(self, model: ChatModel | None, *, name: str | None = None,
                 dimensions: Sequence[str] = DIMENSIONS, top_logprobs: int = 20,
                 max_tokens: int = 6) -> None:
        """`model=None` with a `name`: a judge that only reads the scores stored under that
        name (`kgrag score --geval-stored`); asking it to score raises `ModelError`."""
        if model is None:
            if not name:
                raise ValueError("a G-Eval judge without a model needs the name of the model "
                                 "whose stored scores it reads")
        else:
            try:
                require(model, self.needs, "G-Eval")
            except ModelError as e:
                raise ModelError(e.message, hint=_HINT) from None
        # a loaded model's own name keys its scores; `name` only names a missing model
        self._name = model.name if model is not None else str(name)
        unknown = [d for d in dimensions if d not in DIMENSIONS]
        if unknown:
            raise ValueError(f"unknown G-Eval dimensions {unknown}; known: {DIMENSIONS}")
        self.model = model
        self.dimensions = tuple(dimensions)
        self.templates: dict[str, PromptTemplate] = {
            d: package_prompt(__file__, f"geval_{d}") for d in self.dimensions}
        self.params = GenerationParams(max_tokens=max_tokens, temperature=0.0, logprobs=True,
                                       top_logprobs=top_logprobs)

    @property
    def name(self) -> str:
        return self._name

    def template_digest(self, dimension: str) -> str:
        return self.templates[dimension].digest

    def score(self, item: GevalItem, dimension: str) -> GevalScore:
        """Fill in the form for one dimension and weight the score tokens."""
        if self.model is None:
            raise ModelError(f"the G-Eval judge {self.name!r} only reads stored scores, and "
                             f"{dimension!r} of this answer is not stored",
                             hint="score without --geval-stored to judge it")
        messages = self.templates[dimension].render(
            question=item.question, reference=item.reference, answer=item.answer)
        g = self.model.chat(messages, self.params)
        try:
            logprobs = score_distribution(g)
        except GevalUnparsed:
            return GevalScore(dimension, None, {}, g.text, g.prompt_tokens,
                              g.completion_tokens, g.seconds)
        valid = {k: v for k, v in logprobs.items() if k in {str(s) for s in SCORES}}
        top = max(valid.values())
        total = sum(math.exp(v - top) for v in valid.values())
        probs = {k: math.exp(v - top) / total for k, v in sorted(valid.items())}
        return GevalScore(dimension, geval_score(logprobs, SCORES), probs, g.text,
                          g.prompt_tokens, g.completion_tokens, g.seconds)


class GevalRecord(BaseModel):
    """One line of `<run>/geval.jsonl`: a judged (answer, dimension), reused on rescoring."""

    method: str
    question_id: str
    dimension: str
    judge: str
    template: str  # the template's digest
    item: str  # the GevalItem's digest: a changed answer is judged again
    score: float | None  # None: the judge wrote no score token
    probabilities: dict[str, float] = {}
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    llm_calls: int = 1  # 0 for the policy score of an empty answer

    def key(self) -> tuple[str, ...]:
        return (self.method, self.question_id, self.dimension, self.judge, self.template,
                self.item)


class GevalCache:
    """`<run>/geval.jsonl`, appended as answers are judged, so scoring can resume."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.records: dict[tuple[str, ...], GevalRecord] = {}
        if path.is_file():
            for raw in path.read_text(encoding="utf-8").splitlines():
                try:
                    rec = GevalRecord.model_validate_json(raw)
                except ValueError:
                    continue  # a torn last line: that answer is judged again
                self.records[rec.key()] = rec

    def get(self, key: tuple[str, ...]) -> GevalRecord | None:
        return self.records.get(key)

    def add(self, rec: GevalRecord) -> None:
        self.records[rec.key()] = rec
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(rec.model_dump(mode="json")) + "\n")


@dataclass
class MethodGeval:
    """One method's G-Eval scores per dimension, and the counts the policies produce."""

    values: dict[str, list[float]]
    answers: int = 0  # answers G-Eval applies to
    empty: int = 0  # of which empty or failed: scored the minimum without a judge call
    unparsed: int = 0  # (answer, dimension) pairs whose reply held no score token


class GevalCost(BaseModel):
    """The judge and what judging one answer cost (all dimensions together)."""

    judge: str
    scale: str = "1-5"
    dimensions: list[str]
    top_logprobs: int
    answers: int  # answers the judge read (cached ones included)
    llm_calls_per_answer: float = 0.0
    prompt_tokens_per_answer: float = 0.0
    completion_tokens_per_answer: float = 0.0
    seconds_per_answer: float = 0.0


def judge_run(judge: GEvalJudge, cache: GevalCache, by_method: Mapping[str, Sequence[RunLine]],
              *, progress: bool = False) -> dict[str, tuple[MethodGeval, list[GevalRecord]]]:
    """G-Eval every applicable prediction of a run's methods (judged pairs come from `cache`).

    The judge reads in the order that shares the most prompt: one dimension at a time, and
    within it one question at a time, every method's answer to it in turn. Consecutive
    prompts then share the dimension's instructions and the question with its reference
    answer (MedQuAD's references, ~380 tokens, are longer than the answers), which the
    llama backend keeps in its KV cache (`kgrag.llm.prefix`) instead of evaluating them
    again. The prompts and the scores are the same in any order (`kgrag bench geval`
    measures the orders); each method's results follow its own lines."""
    todo = {m: [(ln, item) for ln in lines if (item := geval_item(
        ln.question, ln.prediction.answer, ln.prediction.error)) is not None]
        for m, lines in by_method.items()}
    by_question: dict[str, list[tuple[str, GevalItem]]] = {}
    for method, items in todo.items():
        for ln, item in items:
            by_question.setdefault(ln.question.id, []).append((method, item))
    judged: dict[tuple[str, str, str], GevalRecord] = {}
    bar = tqdm(total=sum(map(len, todo.values())) * len(judge.dimensions), desc="G-Eval",
               unit="score", disable=not progress, dynamic_ncols=True)
    for dim in judge.dimensions:
        for qid, answers in by_question.items():
            for method, item in answers:
                judged[(method, qid, dim)] = _judged(judge, cache, method, qid, item, dim)
                bar.update(1)
    bar.close()
    out = {}
    for method, items in todo.items():
        result = MethodGeval(values={d: [] for d in judge.dimensions}, answers=len(items),
                             empty=sum(not item.answer for _, item in items))
        used = [judged[(method, ln.question.id, d)] for d in judge.dimensions for ln, _ in items]
        for rec in used:
            if rec.score is None:
                result.unparsed += 1
            else:
                result.values[rec.dimension].append(rec.score)
        out[method] = (result, used)
    return out


def judge_method(judge: GEvalJudge, cache: GevalCache, method: str, lines: Sequence[RunLine],
                 *, progress: bool = False) -> tuple[MethodGeval, list[GevalRecord]]:
    """`judge_run` for one method: its answers dimension by dimension."""
    return judge_run(judge, cache, {method: lines}, progress=progress)[method]


def _head(judge: GEvalJudge, method: str, qid: str, item: GevalItem, dim: str) -> GevalRecord:
    """The record of judging `item` on `dim`, before its score."""
    return GevalRecord(method=method, question_id=qid, dimension=dim, judge=judge.name,
                       template=judge.template_digest(dim), item=item.digest, score=None)


def stored_key(judge: GEvalJudge, method: str, qid: str, item: GevalItem, dim: str
               ) -> tuple[str, ...]:
    """The `GevalCache` key under which this judge's score of `item` on `dim` is kept."""
    return _head(judge, method, qid, item, dim).key()


def _judged(judge: GEvalJudge, cache: GevalCache, method: str, qid: str, item: GevalItem,
            dim: str) -> GevalRecord:
    head = _head(judge, method, qid, item, dim)
    cached = cache.get(head.key())
    if cached is not None:
        return cached
    if not item.answer:  # policy: an empty or failed answer gets the lowest score
        rec = head.model_copy(update={"score": float(SCORES[0]), "llm_calls": 0})
    else:
        s = judge.score(item, dim)
        rec = head.model_copy(update={
            "score": s.score, "probabilities": s.probabilities, "prompt_tokens": s.prompt_tokens,
            "completion_tokens": s.completion_tokens, "seconds": s.seconds})
    cache.add(rec)
    return rec


def geval_cost(judge: GEvalJudge, records: Sequence[GevalRecord]) -> GevalCost:
    """Mean judge cost per answer over the records that called the judge."""
    per_answer: dict[tuple[str, str], list[GevalRecord]] = defaultdict(list)
    for rec in records:
        if rec.llm_calls:
            per_answer[(rec.method, rec.question_id)].append(rec)
    n = len(per_answer)
    cost = GevalCost(judge=judge.name, dimensions=list(judge.dimensions),
                     top_logprobs=judge.params.top_logprobs, answers=n)
    if n:
        def mean(field: str) -> float:
            return sum(getattr(r, field) for recs in per_answer.values() for r in recs) / n

        cost.llm_calls_per_answer = mean("llm_calls")
        cost.prompt_tokens_per_answer = mean("prompt_tokens")
        cost.completion_tokens_per_answer = mean("completion_tokens")
        cost.seconds_per_answer = mean("seconds")
    return cost


def load_judge(settings: Settings, judge: str | None = None, *,
               stored_only: bool = False) -> GEvalJudge:
    """A judge on `judge` (a registry name or .gguf path; default: the configured chat
    model, as the paper judged with one of its own models), built by a `Platform`.
    `stored_only`: the judge's name without its model, to read stored scores (no GGUF
    needed, nothing loaded)."""
    from kgrag.platform import Platform

    s = settings.model_copy(deep=True)
    if judge:
        s.model = s.model.model_copy(update={"chat": judge})
    p = Platform(s)
    if stored_only:
        return GEvalJudge(None, name=p.chat_name)
    return GEvalJudge(p.chat_model)
