"""Splitting texts into passages: extraction-sized pieces, and the passages of documents.

The built-in sources split a long record at sentence boundaries by characters
(`split_sentences`). A user's documents (`--source` Markdown, text, JSONL) become
passages of at most `CHUNK_WORDS` words (a setting: `kgrag build --chunk-words`):
paragraphs under the same heading are packed together, a long paragraph is split
between sentences (`split_words`), and the heading path (`Guide > Setup`) is the title.

>>> split_sentences("Aspirin thins blood. It can cause bleeding.", max_chars=25)
['Aspirin thins blood.', 'It can cause bleeding.']
>>> lines = ["# Title", "", "One.", "Two.", "", "Three."]
>>> [(p.first_line, p.text, p.heading) for p in paragraphs(enumerate(lines, start=1))]
[(3, 'One. Two.', 'Title'), (6, 'Three.', 'Title')]
>>> [(p.text, p.heading) for p in pack(paragraphs(enumerate(lines, start=1)), 100)]
[('One. Two.\\n\\nThree.', 'Title')]
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# A sentence ends at . ! or ? followed by space and an upper-case letter, digit or quote;
# "e.g. the" and "2.5 mg" do not end one.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[A-Z0-9\"'(\[])")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
CHUNK_WORDS = 150  # words per passage at most: ~100-200-word passages, as in DPR's 100
MAX_WORD_CHARS = 40  # a "word" longer than this (base64, a URL run) counts as several


def word_count(text: str) -> int:
    """Words of `text`, a very long token counting once per `MAX_WORD_CHARS` characters."""
    return sum(1 + (len(w) - 1) // MAX_WORD_CHARS for w in text.split())


def split_words(text: str, max_words: int) -> list[str]:
    """Pack whole sentences into pieces of at most `max_words` words (`word_count`); a
    sentence longer than that is cut between words, a token longer than the whole
    budget between characters, so no piece exceeds `max_words`.

    >>> split_words("One two three. Four five. Six.", 3)
    ['One two three.', 'Four five. Six.']
    """
    if max_words < 1:
        raise ValueError(f"max_words must be >= 1, got {max_words}")
    text = " ".join(text.split())
    if word_count(text) <= max_words:
        return [text] if text else []
    pieces: list[str] = []
    current: list[str] = []
    used = 0
    for sentence in _SENTENCE_END.split(text):
        for part in _word_pieces(sentence.strip(), max_words):
            n = word_count(part)
            if current and used + n > max_words:
                pieces.append(" ".join(current))
                current, used = [], 0
            current.append(part)
            used += n
    if current:
        pieces.append(" ".join(current))
    return pieces


def _word_pieces(sentence: str, max_words: int) -> list[str]:
    """`sentence` cut into runs of at most `max_words` words (`word_count`)."""
    if word_count(sentence) <= max_words:
        return [sentence] if sentence else []
    tokens: list[str] = []
    for w in sentence.split():  # over-long tokens become MAX_WORD_CHARS-character parts
        tokens += [w[i:i + MAX_WORD_CHARS] for i in range(0, len(w), MAX_WORD_CHARS)]
    return [" ".join(tokens[i:i + max_words]) for i in range(0, len(tokens), max_words)]


def split_sentences(text: str, max_chars: int) -> list[str]:
    """Pack whole sentences into pieces of at most ~`max_chars` characters.

    A single sentence longer than `max_chars` is cut at the last space before the limit
    (or hard at the limit when it has no space), so no piece exceeds `max_chars`.
    """
    text = text.strip()
    if len(text) <= max_chars:
        return [text] if text else []
    pieces: list[str] = []
    current = ""
    for sentence in _SENTENCE_END.split(text):
        for part in _hard_split(sentence.strip(), max_chars):
            if current and len(current) + 1 + len(part) > max_chars:
                pieces.append(current)
                current = part
            else:
                current = f"{current} {part}" if current else part
    if current:
        pieces.append(current)
    return pieces


def _hard_split(sentence: str, max_chars: int) -> Iterable[str]:
    while len(sentence) > max_chars:
        cut = sentence.rfind(" ", 0, max_chars + 1)
        cut = cut if cut > max_chars // 2 else max_chars
        yield sentence[:cut].strip()
        sentence = sentence[cut:].strip()
    if sentence:
        yield sentence


@dataclass(frozen=True)
class Paragraph:
    """A blank-line-separated block of a text file, with the Markdown heading path above
    it (`Guide > Setup`)."""

    text: str
    first_line: int  # 1-based line number of the paragraph's first line
    heading: str = ""


def paragraphs(lines: Iterable[tuple[int, str]], *, markdown: bool = True) -> list[Paragraph]:
    """Blank-line-separated paragraphs of (line number, line) pairs; in Markdown, `#`
    headings become the titles of the paragraphs below them, not text.

    Lines inside a paragraph are joined with single spaces (hard-wrapped prose). A line
    the caller skipped (undecodable) is simply absent and does not break a paragraph.
    """
    out: list[Paragraph] = []
    block: list[str] = []
    start = 0
    heading = ""
    path: list[tuple[int, str]] = []  # (level, heading) from the top

    def flush() -> None:
        if block:
            out.append(Paragraph(" ".join(s.strip() for s in block), start, heading))
            block.clear()

    for number, line in lines:
        match = _HEADING.match(line) if markdown else None
        if match:
            flush()
            level = len(match.group(1))
            path = [(lv, h) for lv, h in path if lv < level] + [(level, match.group(2))]
            heading = " > ".join(h for _, h in path if h)
        elif not line.strip():
            flush()
        else:
            if not block:
                start = number
            block.append(line)
    flush()
    return out


@dataclass(frozen=True)
class Piece:
    """A passage of a document: its text, the line it starts on, its heading path, and
    whether it is part of a paragraph that was split."""

    text: str
    first_line: int
    heading: str = ""
    split: bool = False


def pack(paras: Iterable[Paragraph], max_words: int = CHUNK_WORDS) -> list[Piece]:
    """Passages of at most `max_words` words: consecutive paragraphs under the same
    heading joined (with a blank line), a longer paragraph split by `split_words`."""
    out: list[Piece] = []
    group: list[Paragraph] = []
    used = 0

    def flush() -> None:
        nonlocal used
        if group:
            out.append(Piece("\n\n".join(g.text for g in group), group[0].first_line,
                             group[0].heading))
            group.clear()
        used = 0

    for para in paras:
        n = word_count(para.text)
        if group and (para.heading != group[0].heading or used + n > max_words):
            flush()
        if n > max_words:
            out += [Piece(t, para.first_line, para.heading, True)
                    for t in split_words(para.text, max_words)]
            continue
        group.append(para)
        used += n
    flush()
    return out
