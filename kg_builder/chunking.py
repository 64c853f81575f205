"""Splitting long texts into extraction-sized pieces at sentence boundaries.

>>> split_sentences("Aspirin thins blood. It can cause bleeding.", max_chars=25)
['Aspirin thins blood.', 'It can cause bleeding.']
>>> lines = ["# Title", "", "One.", "Two.", "", "Three."]
>>> [(p.first_line, p.text, p.heading) for p in paragraphs(enumerate(lines, start=1))]
[(3, 'One. Two.', 'Title'), (6, 'Three.', 'Title')]
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# A sentence ends at . ! or ? followed by space and an upper-case letter, digit or quote;
# "e.g. the" and "2.5 mg" do not end one.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[A-Z0-9\"'(\[])")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")


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
    """A blank-line-separated block of a text file, with the Markdown heading above it."""

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

    def flush() -> None:
        if block:
            out.append(Paragraph(" ".join(s.strip() for s in block), start, heading))
            block.clear()

    for number, line in lines:
        match = _HEADING.match(line) if markdown else None
        if match:
            flush()
            heading = match.group(1)
        elif not line.strip():
            flush()
        else:
            if not block:
                start = number
            block.append(line)
    flush()
    return out
