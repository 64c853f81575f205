"""IM-RAG's Refiner: re-rank and condense the Retriever's passages for the Reasoner.

After Yang et al., "IM-RAG" (SIGIR 2024), §3.2.3 and §4.2.3. The paper re-ranks with
RankVicuna, a 7B listwise re-ranker, on a GPU. kgrag's default is a cheaper re-ranker,
`EmbeddingRefiner`, chosen for three reasons:

- cost: a listwise LLM pass over 10 paragraphs is a ~2,000-token prompt per round, i.e.
  up to three long extra prompts per question on a shared 2-core CPU; MiniLM (already
  loaded for the dense index and the Progress Tracker) scores them in milliseconds;
- reliability: small local models keep a permutation format poorly (the paper's own
  Table 3, first row, failed on format with a 7B model);
- no RankVicuna checkpoint is available offline.

Scoring: w·cos(p, query) + (1 - w)·cos(p, question), since the paper's Refiner selects
passages "based on the retrieved information and the initial question" (§3.2.5).
Passages already shown in an earlier round are filtered out (the paper's Refiner also
filters, §3.2.3), and each kept paragraph is condensed to its first sentence (which
names the subject, what a multi-hop bridge needs) plus its sentences closest to the same
mixed target, in their original order.

`PassThroughRefiner` is the Table 3 ablation without Refiner: the Retriever's top 5,
whole and in its order (§5.2). Any other re-ranker (an LLM listwise one) plugs in
behind the `Refiner` protocol.

    EmbeddingRefiner(embedder).refine("Who directed Psycho?", "Psycho director", hits, set())
    # -> [Refined(passage=Passage(id='p7', ...), text='Psycho is a 1960 film ...',
    #             score=0.71, rank=3)]
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from kgrag.embed import Embedder
from kgrag.types import Passage
from textrag.imrag.progress import passage_text
from textrag.reasoning import sentence_end
from textrag.retrieval import Retrieved


@dataclass(frozen=True)
class Refined:
    """A passage as the Reasoner reads it (the Progress Tracker reads `passage`)."""

    passage: Passage  # the retrieved paragraph, whole
    text: str  # what goes into the monologue: condensed or whole
    score: float  # the refiner's relevance score (the retriever's when passed through)
    rank: int  # the retriever's rank, from 1


@runtime_checkable
class Refiner(Protocol):
    name: str
    depth: int  # how many passages it wants from the Retriever

    def refine(self, question: str, query: str, hits: Sequence[Retrieved],
               seen: Set[str]) -> list[Refined]:
        """The passages to show, best first; `seen` holds ids shown in earlier rounds."""
        ...


class PassThroughRefiner:
    """No Refiner (Table 3 ablation, §5.2): the Retriever's top `k` as they come."""

    name = "none"

    def __init__(self, k: int = 5) -> None:
        self.depth = k

    def refine(self, question: str, query: str, hits: Sequence[Retrieved],
               seen: Set[str]) -> list[Refined]:
        return [Refined(h.passage, h.passage.text, h.score, h.rank) for h in hits[:self.depth]]


class EmbeddingRefiner:
    """Re-rank by embedding similarity to the query and the question; keep `keep`
    unseen passages, each condensed to at most `max_sentences` sentences.

        EmbeddingRefiner(embedder, depth=10, keep=3).depth
        # -> 10
    """

    name = "embedding"

    def __init__(self, embedder: Embedder, *, depth: int = 10, keep: int = 3,
                 max_sentences: int = 3, query_weight: float = 0.5) -> None:
        if keep < 1 or depth < keep or max_sentences < 1 or not 0.0 <= query_weight <= 1.0:
            raise ValueError("need 1 <= keep <= depth, max_sentences >= 1, 0 <= weight <= 1")
        self.embedder, self.depth, self.keep = embedder, depth, keep
        self.max_sentences, self.query_weight = max_sentences, query_weight

    def refine(self, question: str, query: str, hits: Sequence[Retrieved],
               seen: Set[str]) -> list[Refined]:
        fresh = [h for h in hits if h.passage.id not in seen]
        if not fresh:
            return []
        w = self.query_weight
        v = _unit(self.embedder.embed([query, question,
                                       *(passage_text(h.passage) for h in fresh)]))
        target = w * v[0] + (1.0 - w) * v[1]  # dot with it = w·cos(q) + (1-w)·cos(Q)
        scores = v[2:] @ target
        order = sorted(range(len(fresh)), key=lambda j: -scores[j])[:self.keep]  # stable
        return [Refined(fresh[j].passage, self._condense(fresh[j].passage.text, target),
                        float(scores[j]), fresh[j].rank) for j in order]

    def _condense(self, text: str, target: np.ndarray) -> str:
        """The first sentence plus the sentences closest to `target`, in text order."""
        sentences = split_sentences(text)
        if len(sentences) <= self.max_sentences:
            return text
        sims = _unit(self.embedder.embed(sentences[1:])) @ target
        best = sorted(range(len(sims)), key=lambda j: -sims[j])[:self.max_sentences - 1]
        return " ".join(sentences[i] for i in sorted({0, *(j + 1 for j in best)}))


def split_sentences(text: str) -> list[str]:
    """Sentences of a paragraph (abbreviations such as "St." do not end one).

    >>> split_sentences("St. Louis is a city. It lies on the Mississippi.")
    ['St. Louis is a city.', 'It lies on the Mississippi.']
    """
    out, start = [], 0
    while start < len(text):
        end = sentence_end(text, start)
        if end <= start:  # a newline right at `start`: step over it
            start += 1
            continue
        piece = text[start:end].strip()
        if piece:
            out.append(piece)
        start = end
    return out


def _unit(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12)
