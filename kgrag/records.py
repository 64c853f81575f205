"""Typed records of the dataset files, one pydantic model per file format.

Each model validates one JSON line exactly as the public dataset ships it and turns it
into a `kgrag.types.Question`. `kgrag.datasets` picks the format and reads the file; this
module knows nothing about files.

>>> fmt = detect_format({"question": "who wrote Hamlet", "answer": ["Shakespeare"]})
>>> fmt.name
'nq'
>>> q = fmt.parse({"question": "who wrote Hamlet", "answer": ["Shakespeare"]},
...               RecordContext(dataset="nq", domain="wikipedia", line=1))
>>> q.id, q.answers
('nq:1', ['Shakespeare'])
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from kgrag.errors import DataError
from kgrag.types import Choice, Passage, Question


@dataclass(frozen=True)
class RecordContext:
    """Where a record comes from: used for fallback ids and the Question's labels."""

    dataset: str
    domain: str
    line: int  # 1-based line number in the file

    def fallback_id(self) -> str:
        return f"{self.dataset}:{self.line}"


class QuestionRecord(BaseModel):
    """Base of the record models: one validated JSON line that can become a Question."""

    # Unknown fields are ignored: the files carry extras (metamap_phrases, entity_ids...).
    model_config = ConfigDict(extra="ignore", frozen=True)

    def to_question(self, ctx: RecordContext) -> Question:
        raise NotImplementedError


def _mcq(record_id: str | None, text: str, options: Mapping[str, str], answer: str,
         ctx: RecordContext, meta: dict[str, str]) -> Question:
    choices = [Choice(label=label, text=str(t).strip()) for label, t in options.items()]
    labels = [c.label for c in choices]
    if answer not in labels:
        raise ValueError(f"answer {answer!r} is not one of the option labels {labels}")
    return Question(id=record_id or ctx.fallback_id(), text=text.strip(), dataset=ctx.dataset,
                    domain=ctx.domain, kind="multiple_choice", choices=choices,
                    answers=[answer], meta=meta)


class _CsqaChoice(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    label: str
    text: str


class _CsqaStem(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    stem: str
    choices: list[_CsqaChoice] = Field(min_length=2)
    question_concept: str | None = None


class CsqaRecord(QuestionRecord):
    """CommonsenseQA: `{"id", "answerKey", "question": {"stem", "choices", ...}}`."""

    id: str | None = None
    answer_key: str = Field(validation_alias="answerKey")
    question: _CsqaStem

    def to_question(self, ctx: RecordContext) -> Question:
        options = {c.label: c.text for c in self.question.choices}
        meta = {"concept": self.question.question_concept} if self.question.question_concept \
            else {}
        return _mcq(self.id, self.question.stem, options, self.answer_key, ctx, meta)


class MedQARecord(QuestionRecord):
    """MedQA-USMLE (MIRAGE): `{"question", "options": {"A": ...}, "answer_idx", "answer"}`."""

    id: str | None = None
    question: str
    options: dict[str, str] = Field(min_length=2)
    answer_idx: str
    answer: str | None = None  # the correct option's text
    meta_info: str | None = None

    def to_question(self, ctx: RecordContext) -> Question:
        meta = {k: v for k, v in (("answer_text", self.answer), ("step", self.meta_info)) if v}
        return _mcq(self.id, self.question, self.options, self.answer_idx, ctx, meta)


class MmluRecord(QuestionRecord):
    """MMLU (as stored here): `{"id", "question", "options": {"A": ...}, "answer": "C"}`."""

    id: str | None = None
    question: str
    options: dict[str, str] = Field(min_length=2)
    answer: str

    def to_question(self, ctx: RecordContext) -> Question:
        return _mcq(self.id, self.question, self.options, self.answer, ctx, {})


class MedQuadRecord(QuestionRecord):
    """MedQuAD: `{"qid", "qtype", "question", "answer", "focus", "source", "url", ...}`,
    with optional `supporting_titles` (as `OpenQARecord`)."""

    qid: str | None = None
    question: str
    answer: str = Field(min_length=1)
    supporting_titles: list[str] = Field(default_factory=list)
    qtype: str | None = None
    focus: str | None = None
    source: str | None = None
    url: str | None = None
    subset: str | None = None

    def to_question(self, ctx: RecordContext) -> Question:
        fields = ("qtype", "focus", "source", "url", "subset")
        meta = {f: v for f in fields if (v := getattr(self, f))}
        return Question(id=self.qid or ctx.fallback_id(), text=self.question.strip(),
                        dataset=ctx.dataset, domain=ctx.domain, kind="open_ended",
                        answers=[self.answer.strip()], meta=meta,
                        supporting=_titles(self.supporting_titles))


class MultiHopRecord(QuestionRecord):
    """HotpotQA / 2WikiMultihopQA: `{"_id", "question", "answer", "context",
    "supporting_facts"}`; 2Wiki adds gold `evidences` triples and maybe answer aliases."""

    id: str | None = Field(default=None, validation_alias=AliasChoices("_id", "id"))
    question: str
    answer: str
    context: list[tuple[str, list[str]]]
    supporting_facts: list[tuple[str, int]]
    aliases: list[str] = Field(default_factory=list,
                               validation_alias=AliasChoices("answer_aliases", "aliases"))
    type: str | None = None
    level: str | None = None
    evidences: list[tuple[str, str, str]] | None = None

    def to_question(self, ctx: RecordContext) -> Question:
        qid = self.id or ctx.fallback_id()
        meta = {f: v for f in ("type", "level") if (v := getattr(self, f))}
        if self.evidences is not None:
            # Question.meta holds strings only; the triples travel as JSON.
            meta["evidences"] = json.dumps([list(t) for t in self.evidences])
        return Question(id=qid, text=self.question.strip(), dataset=ctx.dataset,
                        domain=ctx.domain, kind="short_answer",
                        answers=_unique([self.answer, *self.aliases]),
                        contexts=self._passages(qid),
                        supporting=_unique([title for title, _ in self.supporting_facts]),
                        meta=meta)

    def _passages(self, qid: str) -> list[Passage]:
        # Paragraph text as wiki_passages.jsonl.gz stores it, so a gold paragraph and its
        # corpus copy compare equal: HotpotQA sentences keep their own leading spaces and
        # are concatenated, 2Wiki sentences are stripped and joined by a space; then
        # whitespace runs (incl. no-break spaces) become one space.
        spaced = any(s[:1].isspace() for _, sentences in self.context for s in sentences[1:])
        joiner = "" if spaced else " "
        seen: set[tuple[str, str]] = set()
        passages: list[Passage] = []
        for title, sentences in self.context:
            text = " ".join(joiner.join(sentences).split())
            if (title, text) in seen:  # 2Wiki repeats a paragraph in a few questions
                continue
            seen.add((title, text))
            passages.append(Passage(id=f"{qid}/{len(passages)}", title=title, text=text))
        return passages


class OpenQARecord(QuestionRecord):
    """NQ-open: `{"question", "answer": [...]}` (a single answer string is accepted too).

    A question file of one's own may add `supporting_titles`: the titles of the passages
    that answer it (a heading path such as `Guide > Setup`, a record's title, or a file's
    name), which `kgrag corpus recall` looks for in the top k.

    >>> OpenQARecord(question="q", answer="a", supporting_titles=["Guide "]).to_question(
    ...     RecordContext("mine", "mydocs", 1)).supporting
    ['Guide']
    """

    id: str | None = None
    question: str
    answer: list[str] | str
    supporting_titles: list[str] = Field(default_factory=list)

    def to_question(self, ctx: RecordContext) -> Question:
        answers = [self.answer] if isinstance(self.answer, str) else self.answer
        answers = _unique([a.strip() for a in answers if a.strip()])
        if not answers:
            raise ValueError("no non-empty gold answer")
        return Question(id=self.id or ctx.fallback_id(), text=self.question.strip(),
                        dataset=ctx.dataset, domain=ctx.domain, kind="short_answer",
                        answers=answers, supporting=_titles(self.supporting_titles))


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(i for i in items if i))


def _titles(items: list[str]) -> list[str]:
    """Supporting titles as given, stripped, without blanks and repeats."""
    return _unique([" ".join(t.split()) for t in items])


@dataclass(frozen=True)
class RecordFormat:
    """A file format: how to recognise its records and the model that parses them."""

    name: str
    model: type[QuestionRecord]
    domain: str  # default domain of a file in this format
    matches: Callable[[Mapping[str, Any]], bool]

    def parse(self, record: Mapping[str, Any], ctx: RecordContext) -> Question:
        """Validate one decoded JSON record and build its Question (raises on bad data)."""
        question = self.model.model_validate(record).to_question(ctx)
        if not question.text:
            raise ValueError("empty question text")
        if not question.answers or not all(a.strip() for a in question.answers):
            raise ValueError("empty gold answer")
        return question


def _has(*keys: str) -> Callable[[Mapping[str, Any]], bool]:
    return lambda r: all(k in r for k in keys)


# Most specific first: detection takes the first format whose keys the record has.
FORMATS: tuple[RecordFormat, ...] = (
    RecordFormat("csqa", CsqaRecord, "commonsense",
                 lambda r: "answerKey" in r and isinstance(r.get("question"), dict)),
    RecordFormat("medqa", MedQARecord, "medical", _has("question", "options", "answer_idx")),
    RecordFormat("mmlu", MmluRecord, "legal", _has("question", "options", "answer")),
    RecordFormat("multihop", MultiHopRecord, "wikipedia",
                 _has("question", "answer", "context", "supporting_facts")),
    RecordFormat("medquad", MedQuadRecord, "medical", _has("qid", "question", "answer")),
    RecordFormat("nq", OpenQARecord, "wikipedia", _has("question", "answer")),
)


def format_named(name: str) -> RecordFormat:
    """The record format called `name` (`csqa`, `medqa`, `mmlu`, `multihop`, ...)."""
    for fmt in FORMATS:
        if fmt.name == name:
            return fmt
    raise KeyError(f"unknown record format {name!r}; known: {[f.name for f in FORMATS]}")


def detect_format(record: Mapping[str, Any]) -> RecordFormat:
    """The format of a file, judged from the keys of its first record.

    >>> detect_format({"question": "q", "options": {"A": "x"}, "answer_idx": "A"}).name
    'medqa'
    """
    for fmt in FORMATS:
        if fmt.matches(record):
            return fmt
    raise DataError(f"unrecognised question format with keys {sorted(record)}",
                    hint=f"known formats: {', '.join(f.name for f in FORMATS)} "
                    "(README, Evaluation)")
