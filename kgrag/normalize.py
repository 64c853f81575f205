"""SQuAD-style answer normalisation, shared by the metrics and the option-text matcher.

>>> normalize_answer("  The  Eiffel-Tower! ")
'eiffeltower'
"""

from __future__ import annotations

import re
import string

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """Lowercase, drop ASCII punctuation and the articles a/an/the, squeeze whitespace.

    The official SQuAD v1.1 / HotpotQA `normalize_answer`, step for step (same order:
    lowercase, punctuation, articles, whitespace), so scores compare with published ones.

    >>> normalize_answer("An apple, a day")
    'apple day'
    """
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())
