"""Graph evidence with the sentences that back it (ours; LightRAG, GraphRAG and HippoRAG 2
likewise return source text beside the graph's entities and relations).

Every fact keeps the ids of the chunks it was extracted from (`REL.chunk_ids`). For an
evidence set, one round trip (`metakg/evidence_sources`) reads the first `per_fact`
chunks of each fact; within them the sentence sharing most of the fact's words (head,
relation and tail, case folded, a plural's final s dropped) backs the fact, the shorter
one on a tie. A fact whose words appear in no sentence has none. Sentences are given in
evidence order until `budget_tokens` (about 4/3 tokens a word) is spent; one longer than
`max_words` words is cut there ("…").

    backed = source_sentences(store, "mydocs", triples, max_tokens=400)
    with_sources(lines, backed)[0]
    # -> 'Evidence 1: okafor discovered comet\\n  Source: "In 1934 … Okafor, discovered …"'

`source_passages` gives the chunks themselves instead (`source_unit = "passage"`): every
chunk of the evidence facts, ranked by the question's content words it holds, then by the
number of facts it backs, within its own budget, shown after the evidence lines.

>>> best_sentence("Rain fell. Paul Okafor discovered the comet. It is bright.",
...               fact_words("paul okafor", "discovered", "comet"))
'Paul Okafor discovered the comet.'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

if TYPE_CHECKING:
    from kgrag.store import GraphStore
    from metakg.graph import Triple

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[A-Z0-9\"'(\[])|\n+")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOP = frozenset((
    "a", "an", "the", "of", "in", "on", "at", "to", "for", "by", "with", "and", "or", "is",
    "are", "was", "were", "be", "been", "its", "it", "this", "that", "as", "from", "has",
    "have", "had"))
TOKENS_PER_WORD = 4 / 3
PASSAGE_WORDS = 150  # a source passage is cut after this many words


class SourceSentence(BaseModel):
    """The sentence of a chunk that backs one evidence fact (the trace shows them); in
    passage mode (`source_passages`) the whole chunk, with its title and every fact it
    backs."""

    fact: int  # 1-based, as "Evidence i" (passage mode: the first fact it backs)
    chunk: str
    sentence: str
    title: str = ""  # passage mode: the chunk's document title
    facts: list[int] = []  # passage mode: every evidence fact whose chunks include it


def _stem(word: str) -> str:
    w = word.casefold()
    return w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w


def words(text: str) -> set[str]:
    """Content words of `text`, case folded, a plural's final s dropped."""
    return {_stem(w) for w in _WORD.findall(text) if w.casefold() not in _STOP}


def fact_words(head: str, relation: str, tail: str) -> set[str]:
    """The words a backing sentence should share with the fact (its relation's `_` as
    spaces)."""
    return words(f"{head} {relation.replace('_', ' ')} {tail}")


def sentences(text: str) -> list[str]:
    """The sentences of a chunk (line breaks end one too)."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def best_sentence(text: str, wanted: set[str]) -> str | None:
    """The sentence of `text` sharing most of `wanted`, the shorter on a tie; None when
    none shares any."""
    scored = [(len(words(s) & wanted), -len(s), s) for s in sentences(text)]
    best = max(scored, default=None)
    return best[2] if best and best[0] > 0 else None


def clip(sentence: str, max_words: int) -> str:
    """`sentence` cut after `max_words` words ("…" marks the cut)."""
    parts = sentence.split()
    return sentence if len(parts) <= max_words else " ".join(parts[:max_words]) + " …"


@dataclass(frozen=True)
class Budget:
    """How much source text the evidence may carry."""

    max_tokens: int = 400
    max_words: int = 60  # per sentence
    per_fact: int = 3  # chunks read per fact


def _chunk_rows(store: GraphStore, domain: str, triples: Sequence[Triple],
                per_fact: int) -> list[dict[str, Any]]:
    """{i, chunk, text, title} of each fact's first `per_fact` chunks (i: 1-based)."""
    return store.read("metakg/evidence_sources", {
        "domain": domain, "per_fact": per_fact,
        "facts": [{"i": i, "head": t.head, "predicate": t.relation, "tail": t.tail}
                  for i, t in enumerate(triples, 1)]})


def source_sentences(store: GraphStore, domain: str, triples: Sequence[Triple],
                     budget: Budget | None = None) -> list[SourceSentence]:
    """The backing sentence of each fact that has one, in evidence order, within the
    budget (module docstring); one round trip."""
    b = budget or Budget()
    if not triples:
        return []
    rows = _chunk_rows(store, domain, triples, b.per_fact)
    chunks: dict[int, list[tuple[str, str]]] = {}
    for r in rows:
        chunks.setdefault(int(r["i"]), []).append((str(r["chunk"]), str(r["text"] or "")))
    out: list[SourceSentence] = []
    spent = 0.0
    for i, t in enumerate(triples, 1):
        wanted = fact_words(t.head, t.relation, t.tail)
        found = [(len(words(s) & wanted), -len(s), s, cid)
                 for cid, text in chunks.get(i, []) if (s := best_sentence(text, wanted))]
        if not found:
            continue
        _, _, sentence, cid = max(found)
        sentence = clip(sentence, b.max_words)
        cost = len(sentence.split()) * TOKENS_PER_WORD
        if spent + cost > b.max_tokens:
            break
        spent += cost
        out.append(SourceSentence(fact=i, chunk=cid, sentence=sentence))
    return out


def source_passages(store: GraphStore, domain: str, triples: Sequence[Triple],
                    question: str, budget: Budget | None = None) -> list[SourceSentence]:
    """The chunks behind the evidence facts as whole passages (ours): ranked by the
    question's content words they hold (title and text), then by how many evidence facts
    they back, then by their first fact; given until `budget.max_tokens` is spent, each cut
    after `budget.max_words` words. One round trip (`metakg/evidence_sources`)."""
    b = budget or Budget()
    if not triples:
        return []
    rows = _chunk_rows(store, domain, triples, b.per_fact)
    backs: dict[str, list[int]] = {}
    text: dict[str, tuple[str, str]] = {}
    for r in rows:
        cid = str(r["chunk"])
        backs.setdefault(cid, [])
        if int(r["i"]) not in backs[cid]:
            backs[cid].append(int(r["i"]))
        text[cid] = (str(r.get("title") or ""), str(r["text"] or ""))
    wanted = words(question)
    ranked = sorted(backs, key=lambda c: (-len(words(" ".join(text[c])) & wanted),
                                          -len(backs[c]), min(backs[c]), c))
    out: list[SourceSentence] = []
    spent = 0.0
    for cid in ranked:
        title, body = text[cid]
        passage = clip(" ".join(body.split()), b.max_words)
        cost = len(f"{title} {passage}".split()) * TOKENS_PER_WORD
        if not passage or spent + cost > b.max_tokens:
            continue
        spent += cost
        facts = sorted(backs[cid])
        out.append(SourceSentence(fact=facts[0], chunk=cid, sentence=passage, title=title,
                                  facts=facts))
    return out


def with_sources(lines: Sequence[str], backed: Sequence[SourceSentence]) -> list[str]:
    """The evidence lines, each fact followed by its source sentence, if it has one.

    >>> with_sources(["Evidence 1: a r b", "Evidence 2: c r d"],
    ...              [SourceSentence(fact=2, chunk="x", sentence="C r D.")])
    ['Evidence 1: a r b', 'Evidence 2: c r d\\n  Source: "C r D."']
    """
    passages = [s for s in backed if s.facts]
    if passages:
        return [*lines, *(render_passage(k, s) for k, s in enumerate(passages, 1))]
    by_fact = {s.fact: s.sentence for s in backed}
    return [f'{line}\n  Source: "{by_fact[i]}"' if i in by_fact else line
            for i, line in enumerate(lines, 1)]


def render_passage(k: int, s: SourceSentence) -> str:
    """A source passage as the answer prompt shows it, after the evidence lines.

    >>> render_passage(1, SourceSentence(fact=2, chunk="c", sentence="Okafor found it.",
    ...                                  title="Comet", facts=[2, 5]))
    'Source passage 1 (backs evidence 2, 5) — Comet: Okafor found it.'
    """
    title = f"{s.title}: " if s.title else ""
    return (f"Source passage {k} (backs evidence {', '.join(map(str, s.facts))}) — "
            f"{title}{s.sentence}")
