# Over 400 lines: prompt, parse, retry and accounting share the extractor's state.
"""The LLM triple extractor: chunks → typed, normalised, provenance-carrying triples.

Short records can be batched several to a prompt (`batch_size`, default 1), numbered
`[1]`, `[2]`, …; every triple in the reply carries its record number, so each triple maps
back to its chunk. Prompts are answered `parallel` at a time (default 6) in one stream
(`kgrag.llm.base.chat_stream`; with llama.cpp, parallel sequences with continuous
batching), and results come back as each reply finishes.

Bad-reply policy (explicit, per batch):
1. Ask once (temperature `config.temperature`, seed `config.seed`, JSON schema when
   `config.constrained`), parse and validate.
2. If the reply is unusable (no JSON, broken or cut-off JSON, no valid item), retry once:
   `retry="repair"` re-sends the prompt with a note naming the error (seed + 1);
   `retry="resample"` re-sends it unchanged at `retry_temperature` (seed + 1).
3. If that fails too, record an `ExtractionFailure` (record ids, error, raw reply
   truncated) and move on. Model/backend errors are not bad replies: they propagate.

Within a usable reply, invalid items, unknown record numbers, empty, self-referential
or over-long triples and duplicates are dropped and counted; per record at most
`max_triples_per_record` triples are kept (the rest are counted as `capped`).
Names are kept as data — quotes, backticks, Cypher-looking text, emoji — with
whitespace collapsed; they only ever travel to Neo4j as query parameters.

    extractor = TripleExtractor(model, "commonsense")
    result = extractor.extract(chunks)
    result.triples["commonsense:csqa_train:61fe6e87…"][0]
    # -> Triple(head='people', relation='found in', tail='populated areas', kind='spatial', …)
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kg_builder.domains import DomainSpec, domain_spec
from kg_builder.normalize import clean_name, entity_key, only_function_words, relation_text
from kg_builder.reply import ParsedReply, ReplyError, TripleItem, extraction_schema, parse_reply
from kg_builder.sources import Chunk
from kgrag.llm.base import (
    Capabilities,
    ChatModel,
    Generation,
    GenerationParams,
    Message,
    chat_stream,
    require,
)
from kgrag.prompt import PromptTemplate, package_prompt

log = logging.getLogger(__name__)


class ExtractConfig(BaseModel):
    """Extraction settings (part of a build job's resolved config)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Records per prompt. 1: with several, qwen2.5-coder-1.5b extracts from the first
    # record and leaves about 40% of the others empty (`kgrag bench extract --batch-size
    # 1,2,4`, README "Measured figures"), for no more triples per minute.
    batch_size: int = Field(default=1, ge=1, le=16)
    # Prompts answered together as parallel llama.cpp sequences (`kgrag.llm.many`;
    # other backends answer them one by one). Decoding is compute-bound on 2 cores, so
    # more sequences help less and less: `kgrag bench extract --parallel 1,4,6,8`.
    parallel: int = Field(default=6, ge=1, le=16)
    batch_record_chars: int = Field(default=600, ge=0)  # longer records go alone
    batch_chars: int = Field(default=2400, ge=1)  # total record text per batched prompt
    max_triples_per_record: int = Field(default=12, ge=1, le=64)
    max_name_chars: int = Field(default=80, ge=8)
    max_relation_chars: int = Field(default=60, ge=8)
    max_tokens_per_record: int = Field(default=640, ge=32)
    temperature: float = 0.0
    seed: int = 42
    retry: Literal["repair", "resample"] = "repair"
    retry_temperature: float = 0.7  # for retry="resample"
    retry_confidence: float = Field(default=0.8, ge=0.0, le=1.0)  # triples from a retried reply
    constrained: bool = True  # send the JSON schema (needs the json_schema capability)
    raw_reply_chars: int = Field(default=800, ge=0)  # how much of a failed reply to keep


@dataclass(frozen=True)
class Triple:
    """One extracted fact with its provenance.

    `head`/`tail` are display names, `head_key`/`tail_key` the entity identities within
    the domain (see `kg_builder.normalize`). `confidence` is 1.0 for triples from a
    first reply and `retry_confidence` for triples from a retried one.

    >>> Triple("Fox", "lives in", "forest", "spatial", "fox", "forest", "c:1", 1.0).head_key
    'fox'
    """

    head: str
    relation: str
    tail: str
    kind: str
    head_key: str
    tail_key: str
    record_id: str
    confidence: float = 1.0
    extractor: str = "llm"  # what read the fact: "llm", "spacy" (kg_builder.fast_extract)


@dataclass(frozen=True)
class CoOccurrence:
    """Two entities named in one sentence of a chunk (the fast extractor's co-occurrence
    edge, a kind of its own: `:CO_OCCURS`, never a `:REL` fact). `weight` counts the
    sentences of the chunk that name both; the keys are ordered (head_key < tail_key)."""

    head: str
    tail: str
    head_key: str
    tail_key: str
    record_id: str
    weight: int = 1


@dataclass(frozen=True)
class ExtractionFailure:
    """A batch whose replies were unusable twice; its records produced no triples."""

    record_ids: tuple[str, ...]
    error: str
    raw_reply: str  # the last reply, truncated
    attempts: int


@dataclass
class ExtractStats:
    """Counters of one extraction run (summed over batches by `add`)."""

    calls: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    records: int = 0  # records that got a usable reply
    failed_records: int = 0
    triples: int = 0  # kept
    invalid_items: int = 0  # reply items without the n/h/r/t/k fields
    bad_record_refs: int = 0  # items naming a record number not in the batch
    unknown_kinds: int = 0  # kept with kind "other"
    capped: int = 0  # valid triples over max_triples_per_record
    rejected: Counter[str] = field(default_factory=Counter)  # empty, self, too_long,
    # function_words, duplicate
    cooccurrences: int = 0  # co-occurrence pairs (fast extractor)
    skipped: Counter[str] = field(default_factory=Counter)  # records not read, by reason
    # (fast extractor: empty, binary, not_english); they are no parse failures

    def add(self, other: ExtractStats) -> None:
        for name, value in vars(other).items():
            if name in ("rejected", "skipped"):
                getattr(self, name).update(value)
            else:
                setattr(self, name, getattr(self, name) + value)


@dataclass
class ExtractionResult:
    """Triples per record id (every record with a usable reply has a key, maybe with
    an empty list), the failed batches, and the counters."""

    triples: dict[str, list[Triple]] = field(default_factory=dict)
    failures: list[ExtractionFailure] = field(default_factory=list)
    stats: ExtractStats = field(default_factory=ExtractStats)
    cooccurrences: dict[str, list[CoOccurrence]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # record id → reason

    def add(self, other: ExtractionResult) -> None:
        self.triples.update(other.triples)
        self.failures.extend(other.failures)
        self.stats.add(other.stats)
        self.cooccurrences.update(other.cooccurrences)
        self.skipped.update(other.skipped)

    @classmethod
    def collect(cls, parts: Iterable[tuple[list[Chunk], ExtractionResult]]
                ) -> ExtractionResult:
        """One result of an extractor's `stream` of (batch, result) pairs."""
        result = cls()
        for _, part in parts:
            result.add(part)
        return result

    def all_cooccurrences(self) -> Iterator[CoOccurrence]:
        for pairs in self.cooccurrences.values():
            yield from pairs

    def all_triples(self) -> Iterator[Triple]:
        for triples in self.triples.values():
            yield from triples


class TripleExtractor:
    """Extracts triples from chunks with any `ChatModel` (see the module docstring).

        ex = TripleExtractor(ScriptedModel(['{"triples": []}']), "commonsense")
        ex.extract_batch([chunk]).triples
        # -> {'commonsense:csqa_train:075e…': []}
    """

    def __init__(self, model: ChatModel, domain: str, config: ExtractConfig | None = None,
                 *, spec: DomainSpec | None = None) -> None:
        self.config = config or ExtractConfig()
        if self.config.constrained:
            require(model, Capabilities(json_schema=True), "triple extraction")
        self.model = model
        self.spec = spec or domain_spec(domain)
        self.template: PromptTemplate = package_prompt(__file__, self.spec.prompt)
        self.repair_template: PromptTemplate = package_prompt(__file__, "extract_repair")
        self._schemas: dict[int, dict[str, Any]] = {}

    def prompt_digest(self) -> str:
        """Hash of the prompt files in use (for build-job records)."""
        return f"{self.template.digest}-{self.repair_template.digest}"

    # ------------------------------------------------------------------ batching, prompts
    def batches(self, chunks: Iterable[Chunk]) -> Iterator[list[Chunk]]:
        """Short records in groups of up to `batch_size` (and `batch_chars`); a long record
        is yielded alone at once, so short ones around it still fill whole batches."""
        cfg = self.config
        batch: list[Chunk] = []
        size = 0
        for chunk in chunks:
            if len(chunk.text) > cfg.batch_record_chars:
                yield [chunk]
                continue
            if batch and (len(batch) >= cfg.batch_size or size + len(chunk.text) > cfg.batch_chars):
                yield batch
                batch, size = [], 0
            batch.append(chunk)
            size += len(chunk.text)
        if batch:
            yield batch

    def messages(self, batch: Sequence[Chunk]) -> list[Message]:
        return self.template.render(kinds=self.spec.kinds_block(), records=render_records(batch),
                                    max_triples=self.config.max_triples_per_record)

    def schema(self, records: int) -> dict[str, Any]:
        if records not in self._schemas:
            cfg = self.config
            self._schemas[records] = extraction_schema(
                self.spec.kind_names, records, max_per_record=cfg.max_triples_per_record,
                max_name_chars=cfg.max_name_chars, max_relation_chars=cfg.max_relation_chars)
        return self._schemas[records]

    # ------------------------------------------------------------------ extraction
    def extract(self, chunks: Iterable[Chunk]) -> ExtractionResult:
        """All chunks (use `stream` to handle each batch as it is done)."""
        return ExtractionResult.collect(self.stream(chunks))

    def stream(self, chunks: Iterable[Chunk], on_reply: Callable[[int], None] | None = None
               ) -> Iterator[tuple[list[Chunk], ExtractionResult]]:
        """(batch, result) pairs as they are done: every first prompt goes to the model in
        one stream, `parallel` at a time (`kgrag.llm.base.chat_stream`), so a finished
        record's slot takes the next record at once; the retries of unusable replies
        follow at the end, alone. `on_reply(records)` is called as each first reply
        arrives (for progress bars). Stopping early (an interrupt) loses only the replies
        still being decoded and the pending retries: a job redoes those when resumed."""
        batches = [b for b in self.batches(chunks) if b]
        requests = [(self.messages(b), self._params(len(b), retry=False)) for b in batches]
        retries: list[tuple[int, Generation, ExtractionResult, ReplyError]] = []
        last = time.perf_counter()
        for i, reply in chat_stream(self.model, requests, parallel=self.config.parallel):
            now = time.perf_counter()
            result = ExtractionResult()
            self._count(reply, now - last, result.stats)
            last = now
            if on_reply is not None:
                on_reply(len(batches[i]))
            try:
                parsed = parse_reply(reply.text)
            except ReplyError as bad:
                retries.append((i, reply, result, bad))
                continue
            self._collect(batches[i], parsed, 1.0, result)
            yield batches[i], result
        for i, reply, result, error in retries:
            yield batches[i], self._retry(batches[i], requests[i][0], reply, error, result)

    def extract_batch(self, batch: Sequence[Chunk]) -> ExtractionResult:
        """One prompt (plus at most one retry) for the records of `batch`."""
        if not batch:
            return ExtractionResult()
        result = ExtractionResult()
        messages = self.messages(batch)
        reply = self._call(messages, self._params(len(batch), retry=False), result.stats)
        try:
            parsed = parse_reply(reply.text)
        except ReplyError as first:
            return self._retry(batch, messages, reply, first, result)
        self._collect(batch, parsed, 1.0, result)
        return result

    def _retry(self, batch: Sequence[Chunk], messages: list[Message], reply: Generation,
               first: ReplyError, result: ExtractionResult) -> ExtractionResult:
        """The one retry after an unusable first reply; a failure if it is unusable too."""
        result.stats.retries += 1
        error = _describe(first, reply)
        log.info("retrying batch %s: %s", batch[0].id, error)
        reply = self._call(self._retry_messages(messages, error, len(batch)),
                           self._params(len(batch), retry=True), result.stats)
        try:
            parsed = parse_reply(reply.text)
        except ReplyError as second:
            self._fail(batch, f"{error}; retry: {_describe(second, reply)}", reply, result)
            return result
        self._collect(batch, parsed, self.config.retry_confidence, result)
        return result

    def _call(self, messages: list[Message], params: GenerationParams,
              stats: ExtractStats) -> Generation:
        start = time.perf_counter()
        reply = self.model.chat(messages, params)
        self._count(reply, time.perf_counter() - start, stats)
        return reply

    @staticmethod
    def _count(reply: Generation, seconds: float, stats: ExtractStats) -> None:
        stats.seconds += seconds
        stats.calls += 1
        stats.prompt_tokens += reply.prompt_tokens
        stats.completion_tokens += reply.completion_tokens

    def _params(self, records: int, *, retry: bool) -> GenerationParams:
        cfg = self.config
        resample = retry and cfg.retry == "resample"
        return GenerationParams(
            max_tokens=cfg.max_tokens_per_record * records,
            temperature=cfg.retry_temperature if resample else cfg.temperature,
            seed=cfg.seed + 1 if retry else cfg.seed,
            json_schema=self.schema(records) if cfg.constrained else None,
        )

    def _retry_messages(self, messages: list[Message], error: str,
                        records: int) -> list[Message]:
        if self.config.retry == "resample":
            return messages
        note = self.repair_template.render(error=error,
                                           max_triples=self.config.max_triples_per_record)
        last = messages[-1]
        return [*messages[:-1], Message(last.role, f"{last.content}\n\n{note[-1].content}")]

    def _fail(self, batch: Sequence[Chunk], error: str, reply: Generation,
              result: ExtractionResult) -> None:
        ids = tuple(c.id for c in batch)
        log.warning("extraction failed for %d record(s) %s: %s", len(ids), ids[0], error)
        raw = reply.text[: self.config.raw_reply_chars]
        result.failures.append(ExtractionFailure(ids, error, raw, attempts=2))
        result.stats.failed_records += len(ids)

    def _collect(self, batch: Sequence[Chunk], parsed: ParsedReply, confidence: float,
                 result: ExtractionResult) -> None:
        stats = result.stats
        stats.records += len(batch)
        stats.invalid_items += parsed.invalid_items
        per_record: list[list[Triple]] = [[] for _ in batch]
        seen: set[tuple[str, str, str, str]] = set()
        for item in parsed.items:
            index = _record_index(item, len(batch))
            if index is None:
                stats.bad_record_refs += 1
                continue
            triple, reason = self._triple(item, batch[index].id, confidence, stats)
            if triple is None:
                stats.rejected[reason] += 1
                continue
            signature = (triple.record_id, triple.head_key, triple.relation, triple.tail_key)
            if signature in seen:
                stats.rejected["duplicate"] += 1
            elif len(per_record[index]) >= self.config.max_triples_per_record:
                stats.capped += 1
            else:
                seen.add(signature)
                per_record[index].append(triple)
        for chunk, triples in zip(batch, per_record, strict=True):
            result.triples[chunk.id] = triples
            stats.triples += len(triples)
        if stats.capped:
            log.info("batch %s: %d triples over the cap dropped", batch[0].id, stats.capped)

    def _triple(self, item: TripleItem, record_id: str, confidence: float,
                stats: ExtractStats) -> tuple[Triple | None, str]:
        """A normalised triple, or None and the reason it was rejected."""
        cfg = self.config
        head, tail, relation = clean_name(item.h), clean_name(item.t), relation_text(item.r)
        head_key, tail_key = entity_key(head), entity_key(tail)
        if not (head_key and tail_key and relation):
            return None, "empty"
        if len(head) > cfg.max_name_chars or len(tail) > cfg.max_name_chars or len(
                relation) > cfg.max_relation_chars:
            return None, "too_long"
        if only_function_words(head) or only_function_words(tail):
            return None, "function_words"  # "impulse is not", "it causes pain": no entity
        if head_key == tail_key:
            return None, "self"
        kind = item.k.strip().casefold()
        if kind not in self.spec.kind_names:
            stats.unknown_kinds += 1
            kind = "other"
        return Triple(head, relation, tail, kind, head_key, tail_key, record_id, confidence), ""


def render_records(batch: Sequence[Chunk]) -> str:
    """`[1] (title: …; core concept: …)` then the record text, blank-line separated."""
    blocks = []
    for number, chunk in enumerate(batch, start=1):
        labels = [f"title: {chunk.title}"] if chunk.title else []
        if chunk.focus:
            labels.append(f"core concept: {chunk.focus}")
        prefix = f"[{number}]" + (f" ({'; '.join(labels)})" if labels else "")
        blocks.append(f"{prefix}\n{chunk.text.strip()}")
    return "\n\n".join(blocks)


def _record_index(item: TripleItem, records: int) -> int | None:
    """0-based index of the item's record; a single-record batch may omit `n`."""
    if item.n is None:
        return 0 if records == 1 else None
    return item.n - 1 if 1 <= item.n <= records else None


def _describe(error: ReplyError, reply: Generation) -> str:
    if reply.finish_reason == "length":
        return f"{error.message}; the reply was cut off at the token limit, give fewer triples"
    return error.message
