"""Reading option letters out of model replies (short answers: `kgrag.answers`).

Parsing is conservative: a reply that names no option, or several, parses to `None`,
which the scorer counts as a Fail (the MetaKGRAG tables' "fail" column), never as a guess.

>>> parse_choice("So the answer is: C", "ABCDE")
'C'
>>> parse_choice("A or B, hard to say", "ABCD") is None
True
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from kgrag.normalize import normalize_answer
from kgrag.types import Question

# "The (correct|final) answer is", "Answer:", "the best option would be", "I choose".
_STATEMENT = re.compile(
    r"(?:\b(?:(?:correct|final|best|right)\s+)?(?:answer|option|choice)"
    r"(?:\s+(?:to|for)\s+(?:this|the)\s+question)?"
    r"(?:\s*(?:\bis\b|\bwould\s+be\b|\bshould\s+be\b|\bmust\s+be\b|\bwill\s+be\b|[:=]))+"
    r"|\b(?:i\s+(?:would\s+|will\s+)?|i'd\s+)(?:choose|chose|pick|select|go\s+with))"
    r"\s*(?:(?:option|choice|letter)\b\s*)?",
    re.IGNORECASE,
)
# "B is correct", "(C) is the best answer", "Option D would be the most likely".
_VERDICT = re.compile(
    r"(?<![\w'])[(\[]?(?P<core>[A-Z0-9]{1,2})[)\]]?\s+(?i:is|would\s+be|seems\s+to\s+be)\s+"
    r"(?i:the\s+)?(?i:correct|right|best|most\s+(?:likely|appropriate|accurate))\b"
)
# A label as written: "(B)", "B.", "b)", "[C]", "'B'", "B"...
_TOKEN = re.compile(r"(?P<open>[(\[\"']?)(?P<core>[^\s()\[\].,:;!?'\"]+)(?P<close>[)\]\"']?)"
                    r"(?P<after>[.,:;!?)]*)")
# "A or B", "A and C", "A/B", "A, C": hedging between options.
_CONJUNCTION = re.compile(r"\s*(?:or|and|/|,|&)\s*", re.IGNORECASE)
_EDGE_JUNK = "*_`\"' \t"
_WORD_LABELS = frozenset({"A", "I"})  # labels that are also English words
_CONNECTIVE = re.compile(r"\s+(?:because|since|as|is|was|seems|would|should|-|\u2013|\u2014)"
                         r"(?:\s|$)", re.IGNORECASE)


@dataclass(frozen=True)
class _Hit:
    label: str
    end: int  # just after the label and its closing bracket (before trailing punctuation)
    marked: bool  # bracketed, followed by punctuation, or the last thing in the text


def _label_at(text: str, pos: int, labels: Sequence[str]) -> _Hit | None:
    """The option label written at `pos`, or None.

    A lower-case label counts only when marked ("(b)", "b.", "b" at the end), so the
    article in "the answer is a farm house" is not read as option A.
    """
    m = _TOKEN.match(text, pos)
    if m is None:
        return None
    marked = bool(m["open"] or m["close"] or m["after"]) or not text[m.end():].strip()
    if m["core"] in labels:
        return _Hit(m["core"], m.end("close"), marked)
    if marked and m["core"].upper() in labels:
        return _Hit(m["core"].upper(), m.end("close"), marked)
    return None


def _also_named(text: str, hit: _Hit, labels: Sequence[str]) -> set[str]:
    """The labels a hedge right after a label adds ("B or C" -> {"C"})."""
    m = _CONJUNCTION.match(text, hit.end)
    other = _label_at(text, m.end(), labels) if m else None
    return {other.label} if other and other.label in labels else set()


def _plausible(text: str, hit: _Hit, labels: Sequence[str], texts: Sequence[str] | None) -> bool:
    """False when an unmarked "A" (or "I") reads as the English word, as in "A farm house".

    It stays a label when a connective follows ("A because ...") or its own option text.
    """
    if hit.marked or hit.label not in _WORD_LABELS:
        return True
    rest = text[hit.end:]
    if _CONNECTIVE.match(rest):
        return True
    if texts is None:
        return False
    option = normalize_answer(texts[list(labels).index(hit.label)])
    return bool(option) and (normalize_answer(rest) + " ").startswith(option + " ")


def _from_statements(text: str, labels: Sequence[str], texts: Sequence[str] | None) -> set[str]:
    """The label(s) of the last explicit answer statement (models revise themselves)."""
    found: list[tuple[int, set[str]]] = []
    for m in _STATEMENT.finditer(text):
        hit = _label_at(text, m.end(), labels)
        if hit is not None and _plausible(text, hit, labels, texts):
            found.append((m.start(), {hit.label} | _also_named(text, hit, labels)))
    found += [(m.start(), {m["core"]}) for m in _VERDICT.finditer(text) if m["core"] in labels]
    return max(found, key=lambda f: f[0])[1] if found else set()


def _from_line_starts(text: str, labels: Sequence[str], texts: Sequence[str] | None) -> set[str]:
    """Labels opening the reply ("B", "B.", "(B) text") or another line ("C", "D) ...").

    Several different ones (an enumeration of the options, a changed mind) make the
    reply ambiguous, except in the answer-then-explanation layout (see
    `_answer_then_explanation`). A bare "A" opening the reply may be the article: it counts only
    when that option's text or a connective follows (see `_plausible`).
    """
    lines = [ln.strip(_EDGE_JUNK) for ln in text.splitlines() if ln.strip(_EDGE_JUNK)]
    per_line: list[set[str]] = []
    for i, line in enumerate(lines):
        hit = _label_at(line, 0, labels)
        # Only the reply's first line may open with an unmarked label ("B because ...").
        ok = hit is not None and (hit.marked or (i == 0 and _plausible(line, hit, labels, texts)))
        per_line.append({hit.label} | _also_named(line, hit, labels) if ok and hit else set())
    if _answer_then_explanation(per_line):
        return per_line[0]
    return set().union(*per_line) if per_line else set()


def _answer_then_explanation(per_line: Sequence[set[str]]) -> bool:
    """The reply opens with one label, prose follows, and the label does not come back at
    a line start: "A. midwest / Explanation: … / B. countryside - not a location / C. …".

    That is the answer-then-explanation layout the KG answer prompts ask for (MetaKGRAG
    Table 7); the later lines discuss the rejected options. A plain list of options
    ("A. midwest / B. countryside") still counts as several labels, i.e. a Fail.
    """
    if len(per_line) < 2 or len(per_line[0]) != 1 or per_line[1]:
        return False
    first = next(iter(per_line[0]))
    return all(first not in found for found in per_line[1:])


def _from_option_text(text: str, labels: Sequence[str], texts: Sequence[str]) -> set[str]:
    """Options whose whole text appears in the reply, minus those inside a longer match."""
    reply = f" {normalize_answer(text)} "
    options = {label: normalize_answer(t) for label, t in zip(labels, texts, strict=True)}
    hits = {label: t for label, t in options.items() if t and f" {t} " in reply}
    return {label for label, t in hits.items()
            if not any(t != u and f" {t} " in f" {u} " for u in hits.values())}


def _opening_label(text: str, labels: Sequence[str], texts: Sequence[str] | None
                   ) -> str | None:
    """The one label the reply opens with ("D. make peace", "(B) because …"), unless the
    next line opens with another label (the reply is a list of the options)."""
    lines = [ln.strip(_EDGE_JUNK) for ln in text.splitlines() if ln.strip(_EDGE_JUNK)]
    if not lines:
        return None
    hit = _label_at(lines[0], 0, labels)
    if hit is None or not _plausible(lines[0], hit, labels, texts):
        return None
    if _also_named(lines[0], hit, labels):
        return None  # "B or C"
    if len(lines) > 1:
        second = _label_at(lines[1], 0, labels)
        if second is not None and second.marked and second.label != hit.label:
            return None
    return hit.label


def parse_choice(reply: str, labels: Sequence[str],
                 texts: Sequence[str] | None = None, answer_first: bool = False) -> str | None:
    """The option label a reply chose, or None when it names none or several (a Fail).

    `answer_first`: the prompt asked for the option first and an explanation after (the
    KG answer prompt of MetaKGRAG's Table 7, `llm`'s prompt). Then a reply that opens
    with one label has chosen it, whatever the explanation goes on to list or discuss
    ("D. make peace / Explanation: … The options are: A. take time / B. …"). A reply
    that opens otherwise is read as below.

    Tried in order, the first that finds something decides: an explicit statement
    ("Answer: B", "The answer is B because", "So the answer is: (C)", "E is correct"; the
    last one wins), labels opening the reply ("B", "B.", "(B) text") or a line ("C"), then
    - when `texts` are given - the one option whose whole text the reply contains. More
    than one label found by the deciding step (a hedge, an enumeration) gives None.

    >>> parse_choice("(B) record albums", ["A", "B", "C"])
    'B'
    >>> parse_choice("I'd say countryside.", "ABC", ["midwest", "countryside", "estate"])
    'B'
    >>> parse_choice("Either midwest or estate.", "ABC", ["midwest", "countryside", "estate"])
    """
    labels = [str(label) for label in labels]
    if texts is not None and len(texts) != len(labels):
        raise ValueError(f"{len(labels)} labels but {len(texts)} option texts")
    text = reply.replace("**", "").replace("__", "").strip()
    if not text:
        return None
    if answer_first and (opening := _opening_label(text, labels, texts)) is not None:
        return opening
    stages = [lambda: _from_statements(text, labels, texts),
              lambda: _from_line_starts(text, labels, texts)]
    if texts is not None:
        stages.append(lambda: _from_option_text(text, labels, texts))
    for stage in stages:
        found = stage()
        if found:
            return found.pop() if len(found) == 1 else None
    return None


def answer_settled(reply: str, labels: Sequence[str],
                   texts: Sequence[str] | None = None) -> bool:
    """Whether `reply`, a prefix of an answer-first reply, already fixes what
    `parse_choice(…, answer_first=True)` reads from every continuation of it.

    That is so once the reply opens with one label (`_opening_label`), its first line is
    complete, and the next non-empty line cannot open with another label: it is complete
    too, or its first word is complete and is no label ("Explanation: …"). The answer-first
    reading looks at those two lines only, so a decoder may stop there (`SettledChoice`):
    greedy decoding of the rest could change the explanation, never the option read.

    >>> answer_settled("B. hardware store\\n\\nExplanation: The", "ABCDE")
    True
    >>> answer_settled("B. hardware store\\n\\nExplan", "ABCDE")  # "Explanation" or "B."?
    False
    >>> answer_settled("B. hardware store\\nC. ", "ABCDE")  # perhaps a list of the options
    False
    >>> answer_settled("The evidence says\\nthat ", "ABCDE")  # not answer-first
    False
    """
    labels = [str(label) for label in labels]
    text = reply.replace("**", "").replace("__", "")
    lines: list[tuple[str, bool]] = []  # (content without edge junk, complete)
    for part in text.splitlines(keepends=True):
        raw = part.splitlines()[0] if part.splitlines() else ""
        content = raw.strip(_EDGE_JUNK)
        if content:
            lines.append((content, len(raw) < len(part)))
    if len(lines) < 2 or not lines[0][1]:
        return False
    second, complete = lines[1]
    if not complete:
        m = _TOKEN.match(second)
        rest = text.splitlines()[-1].lstrip(_EDGE_JUNK)  # the raw partial line
        if m is None or m["core"].upper() in labels or not re.match(r"\S+\s", rest):
            return False
    return _opening_label(text.strip(), labels, texts) is not None


# Multiple-choice prompts that ask for the option first and the explanation after:
# `kgrag/prompts/llm_mcq.txt` and the KG answer prompt (MetaKGRAG Table 7). The scorer
# reads their replies by the opening option, and `kgrag eval` stops them there.
ANSWER_FIRST_PROMPTS = frozenset({"llm_mcq", "answer_mcq"})


@dataclass(frozen=True)
class SettledChoice:
    """A `GenerationParams.until` rule: stop an answer-first multiple-choice reply once
    its option is settled (`answer_settled`). A dataclass, so that a replayed request's
    key (`kgrag.llm.replay.request_key`) is the same in every process."""

    labels: tuple[str, ...]
    texts: tuple[str, ...] | None = None

    def __call__(self, reply: str) -> bool:
        return answer_settled(reply, self.labels, self.texts)

    @classmethod
    def of(cls, question: Question) -> SettledChoice:
        return cls(tuple(c.label for c in question.choices),
                   tuple(c.text for c in question.choices))


def settled_rule(question: Question, prompt: str) -> SettledChoice | None:
    """`QAMethod.settled` for `kgrag eval`: stop a multiple-choice reply to an
    answer-first prompt once its option is read; None for every other reply.

    >>> from kgrag.types import Choice
    >>> q = Question(id="1", text="?", choices=[Choice(label="A", text="oven")])
    >>> settled_rule(q, "answer_mcq") is not None, settled_rule(q, "cot_mcq")
    (True, None)
    """
    if not question.is_multiple_choice or prompt not in ANSWER_FIRST_PROMPTS:
        return None
    return SettledChoice.of(question)


def parse_question_choice(reply: str, question: Question, answer_first: bool = False
                          ) -> str | None:
    """`parse_choice` with the labels and option texts of a multiple-choice question.

    >>> from kgrag.types import Choice
    >>> q = Question(id="1", text="?", choices=[Choice(label="A", text="oven"),
    ...              Choice(label="B", text="fridge")])
    >>> parse_question_choice("In the fridge.", q)
    'B'
    """
    if not question.choices:
        raise ValueError(f"question {question.id} has no options")
    return parse_choice(reply, [c.label for c in question.choices],
                        [c.text for c in question.choices], answer_first=answer_first)
