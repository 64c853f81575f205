"""LLM replies of the KG methods as typed values, and the bad-reply policy.

Every structured step asks with a JSON schema (constrained decoding), validates the reply
into a pydantic model, and on a bad reply (no JSON, broken or cut-off JSON, wrong shape,
an id out of range) retries once with a note naming the error
(`prompts/json_repair.txt`, seed + 1). If the retry is bad too, `ask_json` returns no
value and the caller applies its documented fallback and says so in the trace.

>>> parse_json('Sure! {"concepts": ["fox", "den"]}', ConceptsReply).concepts
['fox', 'den']
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from kgrag.errors import LLMOutputError
from kgrag.llm.base import ChatModel, Generation, GenerationParams, Message
from kgrag.prompt import package_prompt

T = TypeVar("T", bound=BaseModel)


class ReplyError(LLMOutputError):
    """A reply that is not the expected JSON object."""


class ConceptsReply(BaseModel):
    """ExtractConcepts (`prompts/concepts.txt`)."""

    model_config = ConfigDict(extra="ignore")
    concepts: list[str]


class RelationsReply(BaseModel):
    """Think-on-Graph relation pruning (`prompts/tog_relations.txt`): option numbers."""

    model_config = ConfigDict(extra="ignore")
    relations: list[int]


class FactsReply(BaseModel):
    """Think-on-Graph entity pruning (`prompts/tog_entities.txt`): candidate numbers."""

    model_config = ConfigDict(extra="ignore")
    facts: list[int]


class SufficientReply(BaseModel):
    """Think-on-Graph's reasoning step (`prompts/tog_sufficient.txt`)."""

    model_config = ConfigDict(extra="ignore")
    sufficient: bool


def concepts_schema(max_concepts: int, max_chars: int = 80) -> dict[str, Any]:
    """JSON schema of `ConceptsReply` for llama.cpp's grammar sampler."""
    item = {"type": "string", "minLength": 1, "maxLength": max_chars}
    return _object("concepts", {"type": "array", "items": item, "maxItems": max_concepts})


def numbers_schema(field: str, options: int, most: int) -> dict[str, Any]:
    """{field: [numbers]}: distinct-looking picks among 1..options, at most `most`
    (an enum, since llama.cpp ignores integer minimum/maximum)."""
    item = {"enum": list(range(1, options + 1))}
    return _object(field, {"type": "array", "items": item, "maxItems": most})


def sufficient_schema() -> dict[str, Any]:
    return _object("sufficient", {"type": "boolean"})


def _object(field: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {field: schema}, "required": [field],
            "additionalProperties": False}


def parse_json(text: str, model: type[T]) -> T:
    """The first JSON object of `text` (prose or a Markdown fence around it is ignored),
    validated into `model`. Raises `ReplyError` saying what was wrong."""
    start = text.find("{")
    if start < 0:
        raise ReplyError("no JSON object in the reply")
    try:
        obj, _ = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as e:
        raise ReplyError(f"invalid JSON ({e.msg} at character {e.pos})") from e
    try:
        return model.model_validate(obj)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "reply"
        raise ReplyError(f"{where}: {first['msg']}") from e


@dataclass(frozen=True)
class Attempt:
    reply: str
    error: str | None


@dataclass(frozen=True)
class Asked(Generic[T]):
    """The outcome of `ask_json`: the value (None after two bad replies) and each try."""

    value: T | None
    attempts: tuple[Attempt, ...]

    def trace(self) -> dict[str, Any]:
        """JSON-serialisable record of the replies, for a trace step."""
        return {"replies": [a.reply for a in self.attempts],
                "errors": [a.error for a in self.attempts if a.error],
                "retried": len(self.attempts) > 1, "failed": self.value is None}


def ask_json(model: ChatModel, messages: Sequence[Message], reply: type[T],
             schema: dict[str, Any], *, example: str, max_tokens: int,
             check: Callable[[T], None] | None = None, seed: int | None = None,
             first: Generation | None = None) -> Asked[T]:
    """Ask for a JSON reply; on a bad one retry once with a repair note; then give up.

    `check` adds semantic validation (raise `ValueError`), e.g. option numbers in range.
    `first` is a reply to `messages` already in hand (one of a batch, `json_params`):
    it is the first attempt, so only a retry asks the model.
    """
    attempts: list[Attempt] = []
    asked = list(messages)
    for attempt in range(2):
        params = json_params(schema, max_tokens, None if seed is None else seed + attempt)
        g = first if attempt == 0 and first is not None else model.chat(asked, params)
        try:
            value = parse_json(g.text, reply)
            if check is not None:
                check(value)
        except (ReplyError, ValueError) as e:
            error = _describe(e, g)
            attempts.append(Attempt(g.text, error))
            asked = _repair(messages, error, example)
            continue
        attempts.append(Attempt(g.text, None))
        return Asked(value, tuple(attempts))
    return Asked(None, tuple(attempts))


def json_params(schema: dict[str, Any], max_tokens: int, seed: int | None = None
                ) -> GenerationParams:
    """The generation settings of one `ask_json` attempt."""
    return GenerationParams(max_tokens=max_tokens, json_schema=schema, seed=seed)


def _describe(e: Exception, g: Generation) -> str:
    cut = " (cut off at the token limit)" if g.finish_reason == "length" else ""
    return f"{e}{cut}"


def _repair(messages: Sequence[Message], error: str, example: str) -> list[Message]:
    note = package_prompt(__file__, "json_repair").render(error=error, example=example)
    last = messages[-1]
    return [*messages[:-1], Message(last.role, f"{last.content}\n\n{note[-1].content}")]


def in_range(field: str, options: int) -> Callable[[BaseModel], None]:
    """A `check` for numbered picks: every number is one of 1..options."""

    def check(value: BaseModel) -> None:
        bad = [n for n in getattr(value, field) if not 1 <= n <= options]
        if bad:
            raise ValueError(f"{field}: {bad} not among the options 1..{options}")

    return check
