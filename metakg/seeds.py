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

`wide` rules (`kgrag graph coverage`; kg-ppr keeps the noun-phrase rules): a concept need
not be a noun. Also candidates are single verbs and adjectives under their own form and
their lemma ("chopping" → "chop", "caught" → "catch", "happiest" → "happy"), unless the lemma
is a light word that names no concept (`LIGHT_WORDS`: "go", "find", "likely", …); and verb
phrases keyed by the verb's lemma ("taking tests" → "take test", "locked up" → "lock up",
WordNet's multi-word verbs; a light verb only with a noun: "go to bed", not "go to"); and
every multi-word n-gram under ConceptNet's normal form (each word's lemma, stop words
dropped: "revolving doors" → "revolve door", "go to bed" → "go bed"). A
matched span counts under every form of it that is an entity ("sleeping" and "sleep"),
and an option's whole text under each of its forms. The same rules read the question,
the correct option and the wrong ones.

>>> [p.key for p in phrases("Where would you find a fox?")]
['find', 'find a fox', 'fox']
>>> maximal([Phrase(0, 2, "heart attack", "heart attack"), Phrase(0, 1, "heart", "heart")])
[Phrase(start=0, end=2, text='heart attack', key='heart attack')]
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kg_builder.normalize import concept_form, entity_key, only_function_words

if TYPE_CHECKING:
    from kgrag.store import GraphStore

MAX_NGRAM = 4
MAX_LOOKUP = 5000  # candidate keys per round trip (a 1 MB question would make ~10^6)
MAX_CACHED = 200_000  # looked-up keys remembered between texts
_TOKEN = re.compile(r"[^\W_]+(?:['’.-][^\W_]+)*")

Lookup = Callable[[Sequence[str]], set[str]]  # candidate keys → those that are entities
# A text → its tokens as (start character, coarse part of speech, lemma): spaCy's
# `(t.idx, t.pos_, t.lemma_)`; `spacy_tagger()` builds it.
Tagger = Callable[[str], list[tuple[int, str, str]]]
FIRST_POS = frozenset({"NOUN", "PROPN", "ADJ", "NUM", "X"})  # a phrase may start with
LAST_POS = frozenset({"NOUN", "PROPN", "NUM", "X"})  # … and must end with (its head)
OPEN_POS = frozenset({"VERB", "ADJ"})  # wide: single words of these are candidates too
PARTICLE_POS = frozenset({"ADP", "PART", "ADV"})  # wide: a verb phrase may end with ("lock up")
# Lemmas too light to name a concept on their own (wide rules; they still start verb
# phrases, "go to bed"): light and modal verbs, and adjectives of degree or likelihood.
LIGHT_WORDS = frozenset((
    "be", "have", "do", "get", "go", "make", "take", "put", "give", "come", "let", "want",
    "need", "like", "use", "find", "see", "say", "tell", "know", "think", "seem", "become",
    "try", "keep", "happen", "look", "will", "would", "can", "could", "may", "might", "must",
    "shall", "should", "likely", "unlikely", "able", "unable", "many", "much", "more", "most",
    "few", "several", "same", "different", "other", "such", "own", "certain", "sure",
))


@dataclass(frozen=True)
class Phrase:
    """Words [start, end) of a text and their entity key."""

    start: int
    end: int
    text: str
    key: str


def _spans(text: str) -> list[tuple[int, str]]:
    """(start character, word) of each word; a possessive 's is dropped ("heifer's")."""
    return [(m.start(), re.sub(r"['’]s$", "", m.group(0)))
            for m in _TOKEN.finditer(text)]


def tokens(text: str) -> list[str]:
    """The words of `text` (NFKC), keeping inner apostrophes, dots and hyphens."""
    return [w for _, w in _spans(unicodedata.normalize("NFKC", text))]


def _tags(text: str, spans: list[tuple[int, str]], tagger: Tagger
          ) -> list[tuple[str, str] | None]:
    """Each word's (part of speech, lemma) from the tagger's token that contains its first
    character; None where the tagger has no token there."""
    tagged = sorted(tagger(text))
    starts = [t[0] for t in tagged]
    out: list[tuple[str, str] | None] = []
    for start, _ in spans:
        i = bisect.bisect_right(starts, start) - 1
        out.append((tagged[i][1], tagged[i][2]) if i >= 0 else None)
    return out


def phrases(text: str, max_n: int = MAX_NGRAM, tagger: Tagger | None = None,
            wide: bool = False) -> list[Phrase]:
    """Every n-gram (n ≤ `max_n`) whose first and last words are content words; with a
    `tagger`, also only noun phrases (first word a noun, proper noun, adjective or
    number, last word a noun, proper noun or number), each with a second key whose last
    word is its lemma ("mice" → "mouse", as the fast extractor's lemmatised names);
    `wide` adds single verbs and adjectives and verb phrases (module docstring)."""
    text = unicodedata.normalize("NFKC", text)
    spans = _spans(text)
    words = [w for _, w in spans]
    content = [bool(w) and not only_function_words(w) for w in words]
    tags = _tags(text, spans, tagger) if tagger and words else None
    out: list[Phrase] = []
    for i in range(len(words)):
        for j in range(i + 1, min(len(words), i + max_n) + 1):
            keys = _keys(words[i:j], content[i:j], tags[i:j] if tags else None, wide)
            span = " ".join(words[i:j])
            out.extend(Phrase(i, j, span, k) for k in dict.fromkeys(keys) if k)
    return out


def _keys(words: list[str], content: list[bool], tags: list[tuple[str, str] | None] | None,
          wide: bool) -> list[str]:
    """The candidate keys of one n-gram (`phrases`); none if it is no candidate."""
    if tags is None:
        return [entity_key(" ".join(words))] if content[0] and content[-1] else []
    first, last = tags[0], tags[-1]
    if first is None or last is None:
        return []
    keys = []
    if content[0] and content[-1] and first[0] in FIRST_POS and last[0] in LAST_POS:
        keys.append(entity_key(" ".join(words)))
        if last[1]:
            keys.append(entity_key(" ".join([*words[:-1], last[1]])))
    if not wide or not first[1]:
        return keys
    if len(words) > 1 and content[0] and content[-1] and all(tags):
        form = concept_form([t[1] if t else w for t, w in zip(tags, words, strict=True)])
        if form:  # ConceptNet's normal form: "revolving doors" → "revolve door"
            keys.append(entity_key(form))
    if len(words) == 1 and first[0] in OPEN_POS and content[0] \
            and first[1].casefold() not in LIGHT_WORDS:
        keys += [entity_key(words[0]), entity_key(first[1])]
    elif len(words) > 1 and first[0] == "VERB" and (
            (content[-1] and last[0] in LAST_POS)  # "take test"; "go to bed"
            or (last[0] in PARTICLE_POS and first[1].casefold() not in LIGHT_WORDS)):
        keys.append(entity_key(" ".join([first[1], *words[1:]])))  # "lock up", not "go to"
    return keys


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
    their entity (`store_matcher` builds both from Neo4j). With a `tagger` (spaCy,
    `spacy_tagger`) only noun phrases are candidates; without one, every n-gram is.

    >>> m = EntityMatcher(lambda keys: {k for k in keys if k in {"fox", "forest"}})
    >>> m.match("Where would you find a fox in the forests?").keys
    ('fox', 'forest')
    """

    def __init__(self, lookup: Lookup, redirect: Mapping[str, str] | None = None,
                 max_n: int = MAX_NGRAM, tagger: Tagger | None = None,
                 wide: bool = False) -> None:
        self.lookup, self.redirect, self.max_n = lookup, dict(redirect or {}), max_n
        self.tagger, self.wide = tagger, wide
        self._known: dict[str, bool] = {}  # key → is an entity (filled by lookups)
        self._phrases: dict[str, list[Phrase]] = {}  # text → its candidates

    def phrases(self, text: str) -> list[Phrase]:
        """The candidate phrases of `text` (remembered until the next `prefetch`)."""
        if text not in self._phrases:
            if len(self._phrases) > 1000:
                self._phrases.clear()
            self._phrases[text] = phrases(text, self.max_n, self.tagger, self.wide)
        return self._phrases[text]

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
        self._phrases.clear()
        keys = set(extra)
        for t in texts:
            keys |= {p.key for p in self.phrases(t)}
            keys.add(entity_key(t))
        self.known(k for k in keys if k)

    def match(self, text: str) -> Matched:
        cands = self.phrases(text)
        found = self.known(p.key for p in cands)
        hits = maximal(p for p in cands if self._resolve(p.key) in found)
        if self.wide:  # every form of a chosen span that is an entity
            chosen = {(p.start, p.end) for p in hits}
            hits = [p for p in cands
                    if (p.start, p.end) in chosen and self._resolve(p.key) in found]
        keys = tuple(dict.fromkeys(self._resolve(p.key) for p in hits))
        return Matched(keys, tuple(hits))

    def match_all(self, text: str) -> tuple[str, ...]:
        """Every candidate phrase's key that is an entity, overlapping ones too ("bake
        cookie" and "cookie"), in text order: the seeds of kg-paths and of
        `kgrag graph coverage --all-phrases`."""
        cands = [self._resolve(p.key) for p in self.phrases(text)]
        found = self.known(cands)
        return tuple(dict.fromkeys(k for k in cands if k in found))

    def match_option(self, text: str, exclude: Iterable[str] = ()) -> Matched:
        """An option's entities: its whole text's key if that is an entity (`wide`: each
        form of the whole text that is one), else the maximal matches inside it without
        the keys in `exclude` (the question's)."""
        n = len(tokens(text))
        whole = [self._resolve(entity_key(text))] if text.strip() else []
        if self.wide and whole:
            whole += [self._resolve(p.key) for p in self.phrases(text)
                      if p.start == 0 and p.end == n]
        found = self.known(whole)
        keys = tuple(k for k in dict.fromkeys(whole) if k and k in found)
        if keys:
            return Matched(keys, tuple(Phrase(0, n, text, k) for k in keys))
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


def spacy_tagger() -> Tagger:
    """Parts of speech and lemmas from the fast extractor's spaCy pipeline (the pinned
    en_core_web_sm 3.8; `kg_builder.fast_extract.load_pipeline`), so questions are read
    the way the graph's names were made."""
    from kg_builder.fast_extract import load_pipeline

    nlp = load_pipeline()

    def tag(text: str) -> list[tuple[int, str, str]]:
        doc = nlp(text[: nlp.max_length])
        return [(t.idx, t.pos_, t.lemma_) for t in doc]

    return tag


def store_matcher(store: GraphStore, domain: str, tagger: Tagger | None = None,
                  wide: bool = False) -> EntityMatcher:
    """An `EntityMatcher` over `domain` in Neo4j: one round trip per lookup, the merged
    keys read once here."""
    redirect = {r["merged"]: r["key"] for r in store.read("kg/merged_keys", {"domain": domain})}

    def lookup(keys: Sequence[str]) -> set[str]:
        rows = store.read("metakg/match_keys", {"domain": domain, "keys": list(keys)})
        return {r["key"] for r in rows}

    return EntityMatcher(lookup, redirect, tagger=tagger, wide=wide)
