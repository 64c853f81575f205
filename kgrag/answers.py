"""The one answer extractor: the short answer a reply states ("So the answer is: X").

Every method (the text methods' chain of thought, the KG methods' short answers, SeaKR's
steps), the scorer (`eval.scoring`) and the scripts read answers here, so a reply is cut
the same way wherever it is read. Normalisation (case, articles, punctuation) is the
scorer's job (`kgrag.normalize`), never this module's.

It replaced three parsers (`kgrag.answers`, the scorer's own, `textrag.seakr.text`); the
rules, and where each comes from:
- the marker is "the answer is" ("the final/correct/short answer is", "my answer is",
  "So the answer is:"), a line-opening "Answer:", or the reversed "X is the answer"
  (SeaKR's reasoner). Not "This answer is ...": the old scorer read the sentence after
  it as the answer of 61 committed replies (`cot` explaining its answer line);
- the last marker wins (models revise themselves). SeaKR reads its first one
  (`first=True`): its long chains of thought repeat "So the answer is X." until the token
  budget cuts the last one short ("So the answer is Gye");
- the answer is the first non-empty line after it; SeaKR (`sentence=True`) also stops at
  the end of its first sentence (a full stop after a word of 2+ characters followed by a
  capital or the end: "F.W. Murnau" stays whole, "St. Louis" would not, so the other
  methods keep the line);
- quotes, markdown emphasis, end-of-text tokens and a final full stop are stripped.

>>> find_answer("Puccini was born in Lucca.\\nSo the answer is: **Italy**.")
'Italy'
>>> find_answer("So the answer is: St. Louis."), find_answer("It is Lima. Then Y.", sentence=True)
('St. Louis', None)
>>> find_answer("The answer is Lima. Then Y.", sentence=True)
'Lima'
>>> find_answer("Genina died there. Rome is the answer") is None, find_answer("Italy") is None
(False, True)
>>> reply_answer("  Sonnac "), reply_answer("Answer: Greenwich Village, New York City")
('Sonnac', 'Greenwich Village, New York City')
"""

from __future__ import annotations

import re

ANSWER = re.compile(
    r"\b(?:(?:the|my)\s+(?:final\s+|correct\s+|short\s+)?answer\s+is\b\s*:?"
    r"|(?<![\w ])(?:final\s+|short\s+)?answer\s*:)",
    re.IGNORECASE,
)
_REVERSED = re.compile(r"(?:^|[.?!]\s*)([^.?!\n]*?)\s+is the answer\b", re.IGNORECASE)
# A sentence ends at a full stop after a word of 2+ characters (not an initial such as
# "F." in "F.W. Murnau") that is followed by a new word in capitals, or by the end.
_SENTENCE_END = re.compile(r"(?<=\w\w)\.(?=\s+[A-Z(\"']|\s*$)")
_END_JUNK = re.compile(r"(?:</s>|<\|endoftext\|>|<\|im_end\|>)\s*$")
EDGE = " \t*_`\"'“”‘’"


def clean_answer(text: str, *, sentence: bool = True) -> str | None:
    """The first non-empty line and sentence of `text`, without quotes, markup and a
    final full stop; None when nothing is left.

    >>> clean_answer("\\n  Paris. It is big.")
    'Paris'
    """
    line = next((ln for ln in text.splitlines() if ln.strip(EDGE)), "")
    line = _END_JUNK.sub("", line)
    end = _SENTENCE_END.search(line) if sentence else None
    if end:
        line = line[: end.start()]
    answer = line.strip(EDGE)
    if answer.endswith(".") and not answer.endswith(".."):
        answer = answer[:-1].rstrip(EDGE)
    return answer or None


def find_answer(text: str, *, first: bool = False, sentence: bool = False) -> str | None:
    """The answer `text` states after its last marker (`first`: its first one), or in
    "X is the answer"; None when it states none (or an empty one)."""
    found: list[tuple[int, int, str | None]] = [
        (m.start(), m.end(), None) for m in ANSWER.finditer(text)]
    found += [(m.start(1), m.end(), m.group(1)) for m in _REVERSED.finditer(text)]
    if not found:
        return None
    _, end, stated = min(found) if first else max(found)
    return clean_answer(stated if stated is not None else text[end:], sentence=sentence)


def has_answer(text: str) -> bool:
    """Whether `text` states an answer (a marker or "X is the answer"), even an empty one.

    >>> has_answer("So the answer is"), has_answer("Rome is big.")
    (True, False)
    """
    return ANSWER.search(text) is not None or _REVERSED.search(text) is not None


def reply_answer(text: str) -> str:
    """What the scorer compares with the gold answers: the stated answer, "" for a marker
    with nothing after it, and the whole reply, stripped, when it states none."""
    if not has_answer(text):
        return text.strip()
    return find_answer(text) or ""


def completion_answer(text: str) -> str:
    """The answer of a forced completion of "So the answer is": what it states after a
    marker, else its first line (the bare rest of the line).

    >>> completion_answer(" Lima.\\nMore"), completion_answer("So the answer is: Lima")
    ('Lima', 'Lima')
    """
    return find_answer(text) or clean_answer(text, sentence=False) or ""


# ours: a short answer (a name, date, number or short phrase, as the answer prompts ask)
# of more words than this describes rather than answers ("Alex Ferguson managed Manchester
# United from 1986 to 2013"); the KG methods and rag, ircot, flare (and their -ppr rows)
# then ask for it again with their forced completion of "So the answer is:"
SHORT_ANSWER_WORDS = 8


def runs_on(answer: str) -> bool:
    """Whether a stated short answer goes on past `SHORT_ANSWER_WORDS` words.

    >>> runs_on("Alex Ferguson"), runs_on("He managed the club from 1986 until 2013, 27 years")
    (False, True)
    """
    return len(answer.split()) > SHORT_ANSWER_WORDS
