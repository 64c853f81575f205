"""The graph seam of the KG methods: one `GraphBackend` per store, one `QuestionGraph` per
question.

A `QuestionGraph` is the cycle's `NeighbourSource` and `EntityIndex` plus the few batched
reads the other KG methods need (vanilla facts, Think-on-Graph relations and entities),
and it owns the `Similarity` that holds the question, the concepts and every entity it
has returned. Implemented by `metakg.neo4j_source.CypherBackend` (Neo4j); the unit tests
use `tests.doubles.memory.MemoryBackend` (triples in memory).

Names in the `Similarity`: entities by key, the question as `QUESTION`, a concept as
`concept_name(text)`. The NUL prefix keeps a concept "fox" apart from an entity "fox".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

import numpy as np

from metakg.graph import Adjustments, Candidate, Triple
from metakg.similarity import Similarity

if TYPE_CHECKING:
    from kgrag.store import GraphStore

Direction = Literal["out", "in"]
QUESTION = "\x00question"
_CONCEPT = "\x00concept:"


def concept_name(text: str) -> str:
    """The name a concept has in the question's `Similarity`."""
    return _CONCEPT + text


def label(name: str) -> str:
    """The text of a concept or question name; entity keys come back unchanged."""
    if name == QUESTION:
        return "Q"
    return name.removeprefix(_CONCEPT)


@dataclass(frozen=True)
class DomainInfo:
    """What `GraphBackend.check` found: the counts of a built domain."""

    domain: str
    entities: int
    embedded: int
    facts: int
    indexed: int = 0  # entities of every domain in the shared vector index (0: unknown)


@dataclass(frozen=True)
class Fact:
    """A fact reached from `source`: `target` is its other end, `score` = sim(target, Q)."""

    source: str
    triple: Triple
    target: str
    score: float


@dataclass(frozen=True)
class RelationOption:
    """A relation Think-on-Graph can follow from `entity`: `neighbours` unvisited
    entities reached, the best of them with cosine `best` to the question."""

    entity: str
    predicate: str
    direction: Direction
    neighbours: int
    best: float


class QuestionGraph(Protocol):
    """One domain seen from one question (see the module docstring)."""

    sim: Similarity

    def name(self, key: str) -> str:
        """The display name of an entity key (the key itself if never seen)."""
        ...

    def candidates(self, current: str, visited: frozenset[str], adjustments: Adjustments
                   ) -> Sequence[Candidate]: ...

    def nearest(self, concept: str, k: int) -> Sequence[tuple[str, float]]: ...

    def prefetch(self, concepts: Sequence[str], k: int) -> None:
        """Look up the `k` nearest entities of several concepts at once (a hint)."""
        ...

    def facts(self, keys: Sequence[str], k: int) -> list[Fact]:
        """Per key, its `k` facts whose other entity is most similar to Q, best first."""
        ...

    def relations(self, keys: Sequence[str], visited: frozenset[str], limit: int
                  ) -> list[RelationOption]:
        """Per key, its best `limit` (predicate, direction) pairs towards unvisited
        entities, ranked by `best`."""
        ...

    def expand(self, picks: Sequence[RelationOption], visited: frozenset[str], limit: int
               ) -> list[Fact]:
        """Per pick, the `limit` unvisited entities it reaches most similar to Q."""
        ...


class GraphBackend(Protocol):
    """Opens question graphs over one store; `store` (or None) is what the method's
    usage accounting counts Cypher round trips on."""

    @property
    def store(self) -> GraphStore | None: ...

    def check(self, domain: str) -> DomainInfo:
        """The domain's counts; raises `DomainNotBuilt` when it is not built."""
        ...

    def open(self, domain: str, question: str, concepts: Sequence[str],
             exclude_documents: Sequence[str] = ()) -> QuestionGraph:
        """Embed the question and concepts (named `QUESTION`, `concept_name(c)`);
        option-anchored paths skip facts that come only from `exclude_documents`."""
        ...


def unit(vector: Sequence[float] | np.ndarray) -> np.ndarray:
    """L2-normalised float64 copy (stored vectors may be float16 round trips)."""
    v = np.asarray(vector, dtype=np.float64)
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


class CandidateOps:
    """`facts`, `relations` and `expand` derived from `candidates`, one call per entity.

    The reference semantics of the batched Cypher statements (the test double
    `tests.doubles.memory.MemoryGraph` uses it).
    """

    def candidates(self, current: str, visited: frozenset[str], adjustments: Adjustments
                   ) -> Sequence[Candidate]:
        raise NotImplementedError

    def _around(self, key: str, visited: frozenset[str]) -> list[tuple[Candidate, Direction]]:
        found = self.candidates(key, visited | {key}, {})
        ranked = sorted(found, key=lambda c: (-c.weight, c.target, c.triple.relation))
        return [(c, "out" if c.triple.head == key else "in") for c in ranked]

    def facts(self, keys: Sequence[str], k: int) -> list[Fact]:
        return [Fact(key, c.triple, c.target, c.weight)
                for key in keys for c, _ in self._around(key, frozenset())[:k]]

    def relations(self, keys: Sequence[str], visited: frozenset[str], limit: int
                  ) -> list[RelationOption]:
        out: list[RelationOption] = []
        for key in keys:
            groups: dict[tuple[str, Direction], list[float]] = {}
            for c, direction in self._around(key, visited):
                groups.setdefault((c.triple.relation, direction), []).append(c.weight)
            options = [RelationOption(key, p, d, len(ws), max(ws)) for (p, d), ws in groups.items()]
            options.sort(key=lambda o: (-o.best, o.predicate, o.direction))
            out.extend(options[:limit])
        return out

    def expand(self, picks: Sequence[RelationOption], visited: frozenset[str], limit: int
               ) -> list[Fact]:
        out: list[Fact] = []
        for pick in picks:
            reached = [c for c, d in self._around(pick.entity, visited)
                       if c.triple.relation == pick.predicate and d == pick.direction]
            out.extend(Fact(pick.entity, c.triple, c.target, c.weight) for c in reached[:limit])
        return out
