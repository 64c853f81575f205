"""A small in-memory Okapi BM25 index, for ranking a question's own paragraphs.

The gold-context setting hands a question its ~10 paragraphs; ranking them with the
same scoring family as the open-domain retriever (Lucene BM25, k1=1.2, b=0.75, the
smoothed idf `ln(1 + (N - n + 0.5) / (n + 0.5))`) keeps the two settings comparable.

>>> index = OkapiBM25(["the fox lives in the forest", "the sea is salty"])
>>> index.scores("where do foxes live? fox forest")[0] > 0
True
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

_WORD = re.compile(r"\w+")

# Function words that carry no evidence; Lucene's standard analyzer keeps them too, but
# a 10-paragraph pool gives them idf > 0, which lets "the" outrank a real match.
STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "did", "do", "does", "for", "from", "had",
    "has", "have", "he", "her", "his", "how", "in", "is", "it", "its", "of", "on", "or", "she",
    "so", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "were",
    "what", "when", "where", "which", "who", "whom", "whose", "why", "will", "with",
})


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens without stopwords."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


class OkapiBM25:
    """BM25 over a fixed list of documents (strings), scored against a query string."""

    def __init__(self, documents: Sequence[str], *, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self._docs = [Counter(tokenize(d)) for d in documents]
        self._lengths = [sum(c.values()) for c in self._docs]
        self._avg = (sum(self._lengths) / len(self._lengths)) if self._lengths else 0.0
        df: Counter[str] = Counter()
        for c in self._docs:
            df.update(c.keys())
        n = len(self._docs)
        self._idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def __len__(self) -> int:
        return len(self._docs)

    def scores(self, query: str) -> list[float]:
        """One score per document, in document order (0.0 when no query term occurs)."""
        terms = tokenize(query)
        out = []
        for counts, length in zip(self._docs, self._lengths, strict=True):
            norm = self.k1 * (1 - self.b + self.b * length / self._avg) if self._avg else self.k1
            s = 0.0
            for t in terms:  # a repeated query term counts again, as in Lucene
                tf = counts.get(t, 0)
                if tf:
                    s += self._idf[t] * tf * (self.k1 + 1) / (tf + norm)
            out.append(s)
        return out
