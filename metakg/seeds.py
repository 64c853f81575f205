"""Deterministic question → entity matching (no LLM): the seeds of `kgrag graph coverage`
and of `kg-ppr`.

A text's candidate phrases are its word n-grams (1 to `MAX_NGRAM` words) that neither
start nor end with a function word ("the", "of", "where", …); each is turned into an
entity key with `kg_builder.normalize.entity_key` (case-folded, last word singular,
leading article dropped), the same function the builders key entities with. The keys
are looked up in the domain in one round trip (`metakg/match_keys`), keys that entity
resolution merged away are followed to the entity they now live under
(`kg/merged_keys`, read once per domain), and the matches are reduced to a maximal,
non-overlapping set: longest phrase first, then leftmost ("heart attack" wins over
"heart" and "attack"). This is how HippoRAG 2 links query phrases to graph nodes,
except that it uses exact keys where HippoRAG uses NER plus embeddings: a deviation
that keeps coverage cheap and reproducible.

Options (multiple choice): the whole option text's key if it is an entity, otherwise
the maximal matches inside the option text, without the keys the question itself names
(an option word that the question repeats says nothing about the option).

>>> [p.key for p in phrases("Where would you find a fox?")]
['find', 'find a fox', 'fox']
>>> maximal([Phrase(0, 2, "heart attack", "heart attack"), Phrase(0, 1, "heart", "heart")])
[Phrase(start=0, end=2, text='heart attack', key='heart attack')]
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kg_builder.normalize import entity_key, only_function_words

if TYPE_CHECKING:
    from kgrag.store import GraphStore

MAX_NGRAM = 4
MAX_LOOKUP = 5000  # candidate keys per round trip (a 1 MB question would make ~10^6)
MAX_CACHED = 200_000  # looked-up keys remembered between texts
_TOKEN = re.compile(r"[^\W_]+(?:['’.-][^\W_]+)*")

Lookup = Callable[[Sequence[str]], set[str]]  # candidate keys → those that are entities


@dataclass(frozen=True)
class Phrase:
    """Words [start, end) of a text and their entity key."""

    start: int
    end: int
    text: str
    key: str


def tokens(text: str) -> list[str]:
    """The words of `text` (NFKC), keeping inner apostrophes, dots and hyphens."""
    return _TOKEN.findall(unicodedata.normalize("NFKC", text))


def phrases(text: str, max_n: int = MAX_NGRAM) -> list[Phrase]:
    """Every n-gram (n ≤ `max_n`) whose first and last words are content words."""
    words = tokens(text)
    content = [not only_function_words(w) for w in words]
    out = []
    for i in range(len(words)):
        if not content[i]:
            continue
        for j in range(i + 1, min(len(words), i + max_n) + 1):
            if content[j - 1]:
                span = " ".join(words[i:j])
                key = entity_key(span)
                if key:
                    out.append(Phrase(i, j, span, key))
    return out


def maximal(found: Iterable[Phrase]) -> list[Phrase]:
    """Non-overlapping phrases, longest first then leftmost; returned in text order."""
    taken: list[Phrase] = []
    used: set[int] = set()
    for p in sorted(found, key=lambda p: (p.start - p.end, p.start)):
        span = set(range(p.start, p.end))
        if not span & used:
            taken.append(p)
            used |= span
    return sorted(taken, key=lambda p: p.start)


@dataclass(frozen=True)
class Matched:
    """The entities a text names: keys in text order (unique), and the phrases."""

    keys: tuple[str, ...]
    phrases: tuple[Phrase, ...]


class EntityMatcher:
    """Matches texts to one domain's entity keys (see the module docstring).

    `lookup` answers which candidate keys exist; `redirect` maps merged-away keys to
    their entity. `StoreLookup` builds both from Neo4j.

    >>> m = EntityMatcher(lambda keys: {k for k in keys if k in {"fox", "forest"}})
    >>> m.match("Where would you find a fox in the forests?").keys
    ('fox', 'forest')
    """

    def __init__(self, lookup: Lookup, redirect: Mapping[str, str] | None = None,
                 max_n: int = MAX_NGRAM) -> None:
        self.lookup, self.redirect, self.max_n = lookup, dict(redirect or {}), max_n
        self._known: dict[str, bool] = {}  # key → is an entity (filled by lookups)

    def _resolve(self, key: str) -> str:
        return self.redirect.get(key, key)

    def known(self, keys: Iterable[str]) -> set[str]:
        """Which of `keys` (after redirects) are entities; keys seen before (since the
        last `prefetch`) cost no lookup."""
        keys = {self._resolve(k) for k in keys}
        if len(self._known) > MAX_CACHED:
            self._known.clear()
        wanted = sorted(k for k in keys if k not in self._known)
        for i in range(0, len(wanted), MAX_LOOKUP):
            part = wanted[i:i + MAX_LOOKUP]
            found = self.lookup(part)
            self._known.update((k, k in found) for k in part)
        return {k for k in keys if self._known[k]}

    def prefetch(self, texts: Iterable[str], extra: Iterable[str] = ()) -> None:
        """Look up every candidate key of `texts`, and the keys `extra`, at once (one
        round trip for a question and its options); forgets earlier texts' keys."""
        self._known.clear()
        keys = set(extra)
        for t in texts:
            keys |= {p.key for p in phrases(t, self.max_n)}
            keys.add(entity_key(t))
        self.known(k for k in keys if k)

    def match(self, text: str) -> Matched:
        cands = phrases(text, self.max_n)
        found = self.known(p.key for p in cands)
        hits = maximal(p for p in cands if self._resolve(p.key) in found)
        keys = tuple(dict.fromkeys(self._resolve(p.key) for p in hits))
        return Matched(keys, tuple(hits))

    def match_option(self, text: str, exclude: Iterable[str] = ()) -> Matched:
        """An option's entities: its whole text's key if that is an entity, else the
        maximal matches inside it without the keys in `exclude` (the question's)."""
        whole = self._resolve(entity_key(text)) if text.strip() else ""
        if whole and whole in self.known([whole]):
            n = len(tokens(text))
            return Matched((whole,), (Phrase(0, n, text, whole),))
        inner = self.match(text)
        skip = set(exclude)
        hits = tuple(p for p in inner.phrases if self._resolve(p.key) not in skip)
        return Matched(tuple(k for k in inner.keys if k not in skip), hits)


def title_keys(title: str) -> list[str]:
    """Candidate keys of a Wikipedia title: the whole title, then without a trailing
    parenthetical ("Big Stone Gap (film)" → "big stone gap (film)", "big stone gap")."""
    keys = [entity_key(title)]
    bare = re.sub(r"\s*\([^()]*\)\s*$", "", title).strip()
    if bare and bare != title:
        keys.append(entity_key(bare))
    return [k for k in dict.fromkeys(keys) if k]


def store_matcher(store: GraphStore, domain: str) -> EntityMatcher:
    """An `EntityMatcher` over `domain` in Neo4j: one round trip per lookup, the merged
    keys read once here."""
    redirect = {r["merged"]: r["key"] for r in store.read("kg/merged_keys", {"domain": domain})}

    def lookup(keys: Sequence[str]) -> set[str]:
        rows = store.read("metakg/match_keys", {"domain": domain, "keys": list(keys)})
        return {r["key"] for r in rows}

    return EntityMatcher(lookup, redirect)
