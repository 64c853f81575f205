"""An in-memory graph for tests and small demos: a `NeighbourSource` and an `EntityIndex`.

It scores edges exactly as the Cypher source is meant to (w_original from
`MetaKGConfig.edge_weight`, plus the adjustment of the target entity) and counts its
calls, so tests can check that a walk costs one source call per hop.

>>> import numpy as np
>>> from metakg.config import MetaKGConfig
>>> from metakg.graph import Triple
>>> sim = Similarity({"Q": np.array([1.0, 0.0]), "a": np.array([0.0, 1.0]),
...                   "b": np.array([0.6, 0.8])})
>>> g = InMemoryGraph([Triple("a", "r", "b")], sim, "Q", MetaKGConfig())
>>> [(c.target, round(c.weight, 2)) for c in g.candidates("a", frozenset({"a"}), {})]
[('b', 0.6)]
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from metakg.config import MetaKGConfig
from metakg.graph import Adjustments, Candidate, Triple
from metakg.similarity import Similarity


class InMemoryGraph:
    """Triples plus the question they are scored against.

    Every entity needs a vector in `sim`; with `edge_weight="triple_question"` every
    rendered triple ("h r t") needs one too. Self-loops are ignored.
    """

    def __init__(self, triples: Iterable[Triple], sim: Similarity, question: str,
                 cfg: MetaKGConfig) -> None:
        self._sim = sim
        self._question = question
        self._edge_weight = cfg.edge_weight
        self._out: dict[str, list[Candidate]] = defaultdict(list)
        self.entities: list[str] = []
        seen: set[str] = set()
        for t in triples:
            for e in (t.head, t.tail):
                if e not in seen:
                    sim.vector(e)  # fail at construction, not in the middle of a walk
                    seen.add(e)
                    self.entities.append(e)
            if t.head == t.tail:
                continue
            self._out[t.head].append(Candidate(t, t.tail, self._weight(t, t.tail)))
            if cfg.traverse_incoming:
                self._out[t.tail].append(Candidate(t, t.head, self._weight(t, t.head)))
        self.calls = 0

    def _weight(self, triple: Triple, target: str) -> float:
        if self._edge_weight == "tail_question":
            return self._sim.sim(target, self._question)
        return self._sim.sim(triple.render(), self._question)

    def candidates(self, current: str, visited: frozenset[str], adjustments: Adjustments
                   ) -> Sequence[Candidate]:
        """Unvisited neighbours of `current`, best adjusted weight first (as ORDER BY)."""
        self.calls += 1
        found = [c for c in self._out.get(current, []) if c.target not in visited]
        return sorted(found, key=lambda c: -(c.weight + adjustments.get(c.target, 0.0)))

    def nearest(self, concept: str, k: int) -> Sequence[tuple[str, float]]:
        """The `k` entities most similar to `concept`, best first (ties by name)."""
        scored = [(e, self._sim.sim(concept, e)) for e in self.entities]
        return sorted(scored, key=lambda es: (-es[1], es[0]))[:k]
