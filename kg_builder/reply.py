"""The extractor's output contract: a compact JSON reply, its schema, and its parser.

A reply is `{"triples": [{"n": 1, "h": "fox", "r": "lives in", "t": "forest",
"k": "spatial"}, ...]}`: objects with one-letter keys rather than bare
`[h, r, t]` arrays. Positional arrays would save about five tokens per triple, but
small quantised models swap or drop positions more often than they mislabel named
slots, and named fields let the schema constrain each slot separately (an enum for
the kind and the record number, a length cap for names). Under constrained decoding
the keys are forced tokens, so they cost time but never cause errors.

`n` stays even when a prompt holds one record: dropping it there (measured with
`kgrag bench extract --domain commonsense --records 12 --threads 2`) left records/min
about the same (5.20 vs 5.05) but gave 33 triples instead of 36, 15 rejected instead
of 2, and more reply tokens (1,341 vs 1,299).

>>> parse_reply('{"triples": [{"n": 1, "h": "fox", "r": "lives in", "t": "forest",'
...             ' "k": "spatial"}]}').items[0].t
'forest'
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from kgrag.errors import LLMOutputError


class TripleItem(BaseModel):
    """One triple as the model writes it. `n` is the record's number in the prompt."""

    model_config = ConfigDict(extra="ignore", coerce_numbers_to_str=True)

    n: int | None = None
    h: str
    r: str
    t: str
    k: str = ""


class ExtractionReply(BaseModel):
    """The whole reply, validated item by item (one bad item does not sink the rest)."""

    model_config = ConfigDict(extra="ignore")

    triples: list[Any]


@dataclass(frozen=True)
class ParsedReply:
    items: tuple[TripleItem, ...]
    invalid_items: int  # items that were not {n, h, r, t, k} objects


class ReplyError(LLMOutputError):
    """A reply with no usable JSON object of the expected shape."""


def extraction_schema(kinds: Sequence[str], records: int, *, max_per_record: int,
                      max_name_chars: int, max_relation_chars: int) -> dict[str, Any]:
    """JSON schema for llama.cpp's grammar sampler (enum, maxItems and maxLength are
    honoured; integer minimum/maximum are not, hence the enum of record numbers)."""
    name = {"type": "string", "minLength": 1, "maxLength": max_name_chars}
    item = {
        "type": "object",
        "properties": {
            "n": {"enum": list(range(1, records + 1))},
            "h": name,
            "r": {"type": "string", "minLength": 1, "maxLength": max_relation_chars},
            "t": name,
            "k": {"enum": list(kinds)},
        },
        "required": ["n", "h", "r", "t", "k"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "triples": {"type": "array", "items": item, "maxItems": records * max_per_record},
        },
        "required": ["triples"],
        "additionalProperties": False,
    }


def parse_reply(text: str) -> ParsedReply:
    """The triples of a reply. Decoding starts at the first bracket and stops at the end
    of the JSON value, so a Markdown fence or prose around it is ignored; a bare list
    is taken for the object; invalid items are counted. Raises `ReplyError` when there
    is no JSON, the JSON is broken or cut off, or no item is valid."""
    body = text.strip()
    starts = [i for i in (body.find("{"), body.find("[")) if i >= 0]
    if not starts:
        raise ReplyError("no JSON in the reply")
    try:
        obj, _ = json.JSONDecoder().raw_decode(body, min(starts))
    except json.JSONDecodeError as e:
        raise ReplyError(f"invalid JSON ({e.msg} at character {e.pos})") from e
    if isinstance(obj, list):
        obj = {"triples": obj}
    try:
        raw_items = ExtractionReply.model_validate(obj).triples
    except ValidationError as e:
        raise ReplyError('expected an object {"triples": [...]}') from e
    items, invalid = [], 0
    for raw in raw_items:
        try:
            items.append(TripleItem.model_validate(raw))
        except ValidationError:
            invalid += 1
    if invalid and not items:
        raise ReplyError(f"none of the {invalid} items has the fields n, h, r, t, k")
    return ParsedReply(tuple(items), invalid)
