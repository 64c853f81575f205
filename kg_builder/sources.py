"""Source files → typed `Chunk`s: the reading machinery, and user files.

The four built-in domains' files and their row formats are in `kg_builder.corpora`;
user files (JSONL with `text`, Markdown, plain text) are read by `user_source`. Each
record becomes one chunk, or several when its long part (an answer, an explanation, a
passage, a paragraph) is split at sentence boundaries; a record's question is repeated
in every piece so each chunk can be read alone.

Ids are stable across runs: `<domain>:<source stem>:<record id | L<line>>[:<piece>]`,
the piece number only when a record was split. A broken line is logged, counted in the
`LoadReport` and skipped; it never stops a load.

    chunks, report = load(user_source(Path("notes.md"), "my-notes"))
    chunks[0].id, report.skipped
    # -> ('my-notes:notes:L3', 0)
"""

from __future__ import annotations

import gzip
import json
import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kg_builder.chunking import CHUNK_WORDS, pack, paragraphs, split_sentences, split_words
from kg_builder.normalize import collapse
from kgrag.errors import KgragError

log = logging.getLogger(__name__)

_DOMAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_SUFFIXES = (".gz", ".jsonl", ".json", ".md", ".markdown", ".txt", ".text")


class Chunk(BaseModel):
    """One unit of source text for extraction: a whole record or one piece of it.

    `document_id` names the record (a CommonsenseQA question, a MedQuAD answer, a user
    file); `line` is where the record starts in `source`, for people to look it up.

    >>> Chunk(id="legal:law:L3", domain="legal", document_id="legal:law:L3",
    ...       text="Question: … Answer: …", source="law.jsonl", line=3).piece
    0
    """

    model_config = ConfigDict(frozen=True)

    id: str
    domain: str
    document_id: str
    text: str
    source: str  # file name, e.g. "csqa_train.jsonl"
    line: int  # 1-based line of the record in `source`
    piece: int = 0  # index of this piece within its record (0 when not split)
    title: str = ""  # passage title or Markdown heading
    focus: str = ""  # the record's core concept (CSQA question_concept, MedQuAD focus)
    meta: dict[str, str] = Field(default_factory=dict)


@dataclass(frozen=True)
class LoadIssue:
    source: str
    line: int
    error: str


@dataclass
class LoadReport:
    """What one source produced and what it skipped (with line numbers)."""

    source: str
    records: int = 0
    chunks: int = 0
    skipped: int = 0
    issues: list[LoadIssue] = field(default_factory=list)
    # documents of records the source leaves out on purpose (`JsonlSource.leave_out`)
    left_out: list[str] = field(default_factory=list)
    split: int = 0  # records or paragraphs too long for one chunk, split into several

    def __str__(self) -> str:
        why = "; ".join(sorted({i.error for i in self.issues})[:3])
        return (f"{self.source}: {self.records:,} records → {self.chunks:,} chunks "
                f"({self.split:,} long ones split), {self.skipped:,} skipped"
                + (f" ({why})" if why else ""))

    def skip(self, line: int, error: str) -> None:
        log.warning("%s line %d skipped: %s", self.source, line, error)
        self.skipped += 1
        self.issues.append(LoadIssue(self.source, line, error[:300]))


@dataclass(frozen=True)
class RowContext:
    """Where a row comes from; builds its ids and pieces."""

    domain: str
    stem: str
    source: str
    line: int
    max_chars: int | None
    max_words: int | None = None  # a user's documents: passages of at most this many words

    def document_id(self, record_id: str | None) -> str:
        return f"{self.domain}:{self.stem}:{record_id if record_id else f'L{self.line}'}"

    def chunks(self, doc_id: str, head: str, body: str = "", *, title: str = "",
               focus: str = "", meta: dict[str, str] | None = None) -> list[Chunk]:
        """`head` (kept whole, repeated in each piece) + `body` (split when long)."""
        body = body.strip()
        pieces = (split_words(body, self.max_words) if self.max_words is not None else
                  [body] if self.max_chars is None else split_sentences(body, self.max_chars))
        texts = [f"{head}\n{p}".strip() for p in pieces] or [head.strip()]
        many = len(texts) > 1
        return [Chunk(id=f"{doc_id}:{i}" if many else doc_id, domain=self.domain,
                      document_id=doc_id, text=t, source=self.source, line=self.line,
                      piece=i, title=title, focus=focus, meta=meta or {})
                for i, t in enumerate(texts)]


RowParser = Callable[[Any, RowContext], list[Chunk]]


class Source(Protocol):
    """A file that yields chunks; problems go to the report, never raise per line."""

    @property
    def domain(self) -> str: ...

    @property
    def path(self) -> Path: ...

    @property
    def name(self) -> str: ...

    def read(self, report: LoadReport) -> Iterator[Chunk]: ...


def source_stem(path: Path) -> str:
    """`csqa_train.jsonl` → `csqa_train`; `wiki_passages.jsonl.gz` → `wiki_passages`."""
    name = path.name
    while name.lower().endswith(_SUFFIXES):
        name = name[: name.rfind(".")]
    return name


def _check_domain(domain: str) -> None:
    if not _DOMAIN_NAME.match(domain):
        raise KgragError(f"invalid domain name {domain!r}",
                         hint="use letters, digits, '_', '-' or '.' (ids use ':' as separator)")


@dataclass(frozen=True)
class _FileSource:
    """What every file source shares: its domain (checked on construction) and path, and
    the file name as the source's name. Subclasses add their fields and `read`."""

    domain: str
    path: Path

    def __post_init__(self) -> None:
        _check_domain(self.domain)

    @property
    def name(self) -> str:
        """The file name, or the label a source was given (files of the same name in
        several folders, e.g. LegalBench's `<task>/train.jsonl`)."""
        return getattr(self, "label", "") or self.path.name

    @property
    def stem(self) -> str:
        """The id part naming this source: `source_stem` of its name, '/' as '.'."""
        return source_stem(Path(self.name.replace("/", ".")))


@dataclass(frozen=True)
class JsonlSource(_FileSource):
    """A JSON Lines file (optionally gzipped) read row by row with a `RowParser`.

    >>> src = JsonlSource("wikipedia", Path("wiki_passages.jsonl.gz"), parse_passage)
    >>> report = LoadReport(src.name); chunks = list(src.read(report))
    """

    parser: RowParser
    max_chars: int | None = 1000
    label: str = ""  # the source's name when the file name is not unique
    max_words: int | None = None  # split by words instead (a user's JSONL: `CHUNK_WORDS`)
    # 1-based lines read but not built from (a knowledge source's records that repeat an
    # evaluation question's answer: `kg_builder.corpora`); their documents are reported in
    # `LoadReport.left_out`, so a build can take back what an earlier build made of them
    leave_out: frozenset[int] = frozenset()

    def read(self, report: LoadReport) -> Iterator[Chunk]:
        seen: set[str] = set()
        if self.max_words is not None and not _readable_text(self.path, report):
            return
        for number, row in _json_lines(self.path, report):
            ctx = RowContext(self.domain, self.stem, self.name, number, self.max_chars,
                             self.max_words)
            try:
                chunks = self.parser(row, ctx)
            except (ValidationError, ValueError, TypeError, KeyError) as e:
                report.skip(number, f"{type(e).__name__}: {collapse(str(e))}")
                continue
            if not chunks:
                report.skip(number, "no text")
                continue
            if number in self.leave_out:
                report.left_out.append(chunks[0].document_id)
                continue
            if chunks[0].document_id in seen:
                report.skip(number, f"duplicate record id {chunks[0].document_id}")
                continue
            seen.add(chunks[0].document_id)
            report.records += 1
            report.chunks += len(chunks)
            report.split += len(chunks) > 1
            yield from chunks


def _readable_text(path: Path, report: LoadReport) -> bool:
    """False (with the reason in `report`) for an empty file or a binary one (a NUL byte
    in its first 8 KiB, as git decides): a user's document is text."""
    with _open_binary(path) as f:
        head = f.read(8192)
    if not head.strip():
        report.skip(1, "empty file")
        return False
    if b"\0" in head:
        report.skip(1, "binary file (NUL bytes), not text")
        return False
    return True


def _open_binary(path: Path) -> Any:
    return gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb")


def _decoded_lines(path: Path, report: LoadReport) -> Iterator[tuple[int, str]]:
    """(line number, text) of every line; undecodable lines are reported and skipped."""
    number = 0
    try:
        with _open_binary(path) as f:
            for number, raw in enumerate(f, start=1):
                try:
                    yield number, raw.decode("utf-8").rstrip("\r\n")
                except UnicodeDecodeError as e:
                    report.skip(number, f"not UTF-8: {e}")
    except (OSError, EOFError) as e:  # a truncated or corrupt gzip stream: stop here
        report.skip(number + 1, f"unreadable from here on: {e}")


def _json_lines(path: Path, report: LoadReport) -> Iterator[tuple[int, Any]]:
    for number, text in _decoded_lines(path, report):
        if not text.strip():
            continue
        try:
            yield number, json.loads(text)
        except json.JSONDecodeError as e:
            report.skip(number, f"invalid JSON: {e}")

# ------------------------------------------------------------------ user JSONL
class _PassageRow(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str | int | None = None
    title: str = ""
    text: str


def parse_passage(row: Any, ctx: RowContext) -> list[Chunk]:
    """Wikipedia passages and user JSONL (`text`, optional `id` and `title`)."""
    r = _PassageRow.model_validate(row)
    if not r.text.strip():
        raise ValueError("empty text")
    record_id = None if r.id is None else collapse(str(r.id))
    return ctx.chunks(ctx.document_id(record_id), "", collapse(r.text), title=r.title)


# ------------------------------------------------------------------ plain text, Markdown
@dataclass(frozen=True)
class TextSource(_FileSource):
    """A Markdown or plain-text file as passages of at most `max_words` words
    (`kg_builder.chunking.pack`): paragraphs under one heading packed together, long ones
    split between sentences, the heading path as title.

    Chunk ids use the passage's first line (`L3`, and `L3:0`, `L3:1`… for the pieces of
    a split paragraph); the document is the whole file.

        list(TextSource("notes", Path("notes.md")).read(LoadReport("notes.md")))[0].id
        # -> 'notes:notes:L3'
    """

    markdown: bool = True
    max_words: int = CHUNK_WORDS
    label: str = ""  # the source's name when the file name is not unique

    def read(self, report: LoadReport) -> Iterator[Chunk]:
        if not _readable_text(self.path, report):
            return
        stem = self.stem
        doc_id = f"{self.domain}:{stem}"
        pieces = pack(paragraphs(_decoded_lines(self.path, report), markdown=self.markdown),
                      self.max_words)
        seen: dict[int, int] = {}
        for piece in pieces:
            i = seen[piece.first_line] = seen.get(piece.first_line, -1) + 1
            base = f"{doc_id}:L{piece.first_line}"
            report.records += not piece.split or i == 0
            report.split += piece.split and i == 0
            report.chunks += 1
            yield Chunk(id=f"{base}:{i}" if piece.split else base, domain=self.domain,
                        document_id=doc_id, text=piece.text, source=self.name,
                        line=piece.first_line, piece=i, title=piece.heading)


def user_source(path: Path, domain: str, *, chunk_words: int = CHUNK_WORDS) -> Source:
    """A user's file by its suffix: JSONL (`text`, optional `id`, `title`; one passage a
    record unless longer than `chunk_words`), Markdown, text (`TextSource`)."""
    name = path.name.lower()
    if not path.is_file():
        raise KgragError(f"no such file: {path}")
    if name.endswith((".jsonl", ".jsonl.gz")):
        return JsonlSource(domain, path, parse_passage, None, max_words=chunk_words)
    if name.endswith((".md", ".markdown")):
        return TextSource(domain, path, markdown=True, max_words=chunk_words)
    if name.endswith((".txt", ".text")):
        return TextSource(domain, path, markdown=False, max_words=chunk_words)
    raise KgragError(f"cannot read {path}: unknown file type",
                     hint="give a .jsonl (with a 'text' field), .md or .txt file")

def load(source: Source) -> tuple[list[Chunk], LoadReport]:
    """Read a whole source into memory (fine for these sizes: ≤ 15k records)."""
    report = LoadReport(source.name)
    return list(source.read(report)), report
