"""SeaKR's text handling: search queries from a pseudo-generated step, and final answers.

Query building follows the official `_build_query` + `_filter_words`
(`SEAKR/reasoner.py:176-203`): a word of the greedy step is kept when every token of it
had probability ≥ 0.9 (`max(1 - p) ≤ prob_threshold = 0.1`), or when it occurs in the
question or in the previous step; uncertain words are dropped (FLARE-style masking).
Then the official code keeps only spaCy's open-class POS (NOUN, ADJ, VERB, PROPN, NUM,
ADV) and drops {thus, answer, is, so}. kgrag has no spaCy pipeline, so the POS filter is
approximated by dropping the closed-class English words in `FUNCTION_WORDS`
(determiners, pronouns, prepositions, conjunctions, auxiliaries and modals, particles);
the differences: main-verb "have"/"do", which spaCy keeps and this list drops, and the
wh-adverbs (when, where, why, how), which spaCy tags ADV and this list drops.

>>> toks = [TokenProb(" Paris", 0.99), TokenProb(" was", 0.95), TokenProb(" founded", 0.97),
...         TokenProb(" in", 0.99), TokenProb(" 508", 0.2)]
>>> build_query(toks, question="When was Paris founded?", previous_step="")
'Paris founded'

Final answers are read by `kgrag.answers.find_answer(text, first=True, sentence=True)`: the
first "the answer is" and its first sentence, as the official reasoner reads them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kgrag.answers import find_answer, has_answer
from textrag.seakr.uncertainty import TokenProb

# Closed-class English words: spaCy tags these DET, PRON, ADP, CCONJ, SCONJ, AUX, PART or
# INTJ, which SeaKR's POS filter removes. Plus the official extra stop list.
_CLOSED_CLASS = """
a an the this that these those each every either neither some any no all both another such
what which whose whichever whatever who whom whoever whomever when where why how
i me my mine myself you your yours yourself yourselves he him his himself she her hers
herself it its itself we us our ours ourselves they them their theirs themselves
one ones someone somebody something anyone anybody anything everyone everybody everything
nobody nothing none
of in on at by for with about against between into through during before after above below
to from up down out off over under around among amongst within without upon onto toward
towards across along behind beyond near per via since until till than like as amid despite
and or but nor yet if because although though while whereas whether unless once
is are was were be been being am do does did doing done have has had having
will would shall should can could may might must ought
not n't 's 'd 'll 're 've 'm to there here
oh yes
"""
FUNCTION_WORDS: frozenset[str] = frozenset(_CLOSED_CLASS.split()) | {"thus", "answer", "so"}

_WORD = re.compile(r"\w+(?:[-'’]\w+)*")
_POSSESSIVE = re.compile(r"['’]s$", re.IGNORECASE)


def words(text: str) -> list[str]:
    """Words of `text` (letters/digits, inner hyphens and apostrophes kept)."""
    return [_POSSESSIVE.sub("", m.group()) for m in _WORD.finditer(text)]


def content_words(text: str) -> list[str]:
    """`text`'s words without function words (the stand-in for SeaKR's POS filter)."""
    return [w for w in words(text) if w.lower() not in FUNCTION_WORDS]


def sure_words(tokens: Sequence[TokenProb], question: str, previous_step: str,
               prob_threshold: float = 0.1) -> list[str]:
    """Words of the generated text that the model was sure of, or that it copied from
    the question or the previous step. A word's uncertainty is the largest 1 - p over the
    tokens that overlap it; without token probabilities no word counts as sure."""
    text = "".join(t.text for t in tokens)
    starts, pos = [], 0
    for t in tokens:
        starts.append(pos)
        pos += len(t.text)
    known = {w.lower() for w in words(question) + words(previous_step)}
    kept = []
    for m in _WORD.finditer(text):
        word = _POSSESSIVE.sub("", m.group())
        over = [t.prob for t, s in zip(tokens, starts, strict=True)
                if s < m.end() and s + len(t.text) > m.start()]
        sure = bool(over) and max(1.0 - p for p in over) <= prob_threshold
        if sure or word.lower() in known:
            kept.append(word)
    return kept


def build_query(tokens: Sequence[TokenProb], question: str, previous_step: str,
                prob_threshold: float = 0.1, max_words: int = 64) -> str:
    """SeaKR's search query for a pseudo-generated step; the filtered question when no
    word survives. Long queries keep their last `max_words` words (the official
    retriever truncates the query to its last 64 tokens)."""
    kept = [w for w in sure_words(tokens, question, previous_step, prob_threshold)
            if w.lower() not in FUNCTION_WORDS]
    if not kept:
        kept = content_words(question)
    return " ".join(kept[-max_words:])


def drop_answer_sentences(step: str) -> str:
    """The step without its sentences that state the answer (official `filter_last_step`)."""
    parts = re.split(r"(?<=[.!?])\s+", step.strip())
    return " ".join(p for p in parts if p and not has_answer(p))


def seakr_answer(text: str) -> str | None:
    """The answer a SeaKR step or chain of thought states, read as the official reasoner
    reads it: its first "the answer is" and the first sentence after it (its chains of
    thought repeat the answer line until the token budget cuts the last one short)."""
    return find_answer(text, first=True, sentence=True)
