"""IM-RAG's Progress Tracker: per-round retrieval progress against gold supporting passages.

After Yang et al., "IM-RAG" (SIGIR 2024), §3.2.4 and §4.2.4. In round i the Refiner's
top passage pr_i is compared with every gold supporting passage SP not matched yet:

- Eq. 1: p_closest = argmax_{p in SP} cos(pr_i, p)
- Eq. 2: d_i = 1 - cos(pr_i, p_closest); p_closest is then removed from SP, so the next
  round is scored against what is still missing (the paper's dependency between turns).
- Eq. 5: the accumulated score D = sum_i gamma^i (1 - d_i), i counted from 1.

The paper uses D as a PPO reward and, with the threshold phi_r, as a switch to the
Answerer (Eq. 6). kgrag trains nothing, and gold passages do not exist for a user's
question, so here D only *reports* progress (and whether D > phi_r) whenever gold
supporting facts exist (HotpotQA, 2Wiki); it never steers the loop.

Two cases the paper leaves open get an explicit rule: a round without a refined
passage, or with no gold passage left, scores d_i = 1 (no progress, nothing removed).

Passage EM (Table 1's retrieval metric, here over the rounds' top passages): the set of
the pr_i titles equals the set of gold supporting titles; passage recall is the share
of gold titles among them.

    tracker = ProgressTracker(embedder, gold_passages, gamma=0.9, phi_r=0.3)
    tracker.observe(top_passage).distance
    # -> 0.2
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kgrag.embed import Embedder
from kgrag.types import Passage, Question


def passage_text(p: Passage) -> str:
    """How a paragraph is embedded: its title line, then its text."""
    return f"{p.title}\n{p.text}" if p.title else p.text


@dataclass(frozen=True)
class RoundProgress:
    """One round's Progress Tracker entry (all values JSON-serialisable)."""

    round: int  # i, from 1
    top: str | None  # title of pr_i, the Refiner's top passage (None: nothing refined)
    closest: str | None  # title of p_closest (Eq. 1), removed from SP afterwards
    similarity: float | None  # cos(pr_i, p_closest)
    distance: float  # d_i (Eq. 2)
    reward: float  # gamma^i (1 - d_i): this round's term of Eq. 5
    accumulated: float  # D after this round (Eq. 5)
    above_threshold: bool  # D > phi_r: Eq. 6 would hand over to the Answerer
    gold_hit: bool  # pr_i is itself a gold supporting passage (same title)
    remaining: int  # gold passages not matched yet


@dataclass(frozen=True)
class ProgressSummary:
    """The question's retrieval progress after the last round."""

    accumulated: float
    passage_em: bool
    passage_recall: float
    gold: tuple[str, ...]
    tops: tuple[str, ...]


class ProgressTracker:
    """Scores each round's top passage against the gold supporting passages.

        t = ProgressTracker.for_question(question, embedder, gamma=0.9, phi_r=0.3)
        t is None   # no supporting facts (a user's question): nothing to track
        # -> False
    """

    def __init__(self, embedder: Embedder, gold: Sequence[Passage], *, gamma: float,
                 phi_r: float) -> None:
        if not 0.0 < gamma < 1.0:
            raise ValueError(f"gamma must be in (0, 1) (the paper's gamma < 1), got {gamma}")
        if not gold:
            raise ValueError("the Progress Tracker needs at least one gold supporting passage")
        self.embedder, self.gamma, self.phi_r = embedder, gamma, phi_r
        self.gold_titles = tuple(dict.fromkeys(p.title or p.id for p in gold))
        self._remaining = list(gold)
        self.rounds: list[RoundProgress] = []
        self.accumulated = 0.0

    @classmethod
    def for_question(cls, question: Question, embedder: Embedder, *, gamma: float,
                     phi_r: float) -> ProgressTracker | None:
        """The tracker of a question whose gold supporting paragraphs are known, else None.

        SP = the question's context paragraphs whose title is a supporting-fact title.
        """
        titles = set(question.supporting)
        gold = [p for p in question.contexts if p.title in titles]
        return cls(embedder, gold, gamma=gamma, phi_r=phi_r) if gold else None

    def observe(self, top: Passage | None) -> RoundProgress:
        """Score round i's top passage (Eq. 1, 2), remove p_closest, accumulate (Eq. 5)."""
        i = len(self.rounds) + 1
        closest: Passage | None = None
        similarity: float | None = None
        if top is not None and self._remaining:
            sims = _cosines(self.embedder, passage_text(top),
                            [passage_text(p) for p in self._remaining])
            j = int(np.argmax(sims))  # Eq. 1 (the first gold passage wins a tie)
            closest, similarity = self._remaining.pop(j), float(sims[j])
        distance = 1.0 - similarity if similarity is not None else 1.0  # Eq. 2
        reward = self.gamma ** i * (1.0 - distance)
        self.accumulated += reward  # Eq. 5
        progress = RoundProgress(
            round=i, top=None if top is None else (top.title or top.id),
            closest=None if closest is None else (closest.title or closest.id),
            similarity=similarity, distance=distance, reward=reward,
            accumulated=self.accumulated, above_threshold=self.accumulated > self.phi_r,
            gold_hit=top is not None and (top.title or top.id) in self.gold_titles,
            remaining=len(self._remaining))
        self.rounds.append(progress)
        return progress

    def summary(self) -> ProgressSummary:
        """D and Passage EM / recall over the rounds' top passages."""
        tops = tuple(dict.fromkeys(r.top for r in self.rounds if r.top is not None))
        gold = set(self.gold_titles)
        return ProgressSummary(accumulated=self.accumulated, passage_em=set(tops) == gold,
                               passage_recall=len(gold & set(tops)) / len(gold),
                               gold=self.gold_titles, tops=tops)


def _cosines(embedder: Embedder, text: str, others: list[str]) -> np.ndarray:
    """cos(text, o) for every o; normalised here so any embedder's scale is harmless."""
    v = np.asarray(embedder.embed([text, *others]), dtype=np.float64)
    v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    return np.asarray(v[1:] @ v[0])
