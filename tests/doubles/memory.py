"""An in-memory KG backend for unit tests: `InMemoryGraph` (a `NeighbourSource` and an
`EntityIndex`), `MemoryGraph` (a `QuestionGraph` over it) and `MemoryBackend` (a
`GraphBackend`: entities and triples in memory, embedded per question).

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

>>> import numpy as np
>>> class Two:  # a fake embedder: "fox" and everything else
...     name, dimensions = "two", 2
...     def embed(self, texts):
...         return np.array([[1.0, 0.0] if "fox" in t.lower() else [0.0, 1.0] for t in texts])
>>> from metakg.backend import concept_name
>>> b = MemoryBackend({"fox": "Fox", "den": "den"}, [Triple("fox", "lives in", "den")], Two())
>>> g = b.open("toy", "Where does a fox sleep?", ["fox"])
>>> g.nearest(concept_name("fox"), 1)
[('fox', 1.0)]
>>> [(f.target, f.score) for f in g.facts(["fox"], 3)]
[('den', 0.0)]
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from kgrag.errors import DomainNotBuilt
from metakg.backend import QUESTION, CandidateOps, DomainInfo, concept_name, unit
from metakg.config import MetaKGConfig
from metakg.graph import Adjustments, Candidate, Triple
from metakg.similarity import Similarity

if TYPE_CHECKING:
    from kgrag.embed import Embedder
    from kgrag.store import GraphStore


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


class MemoryGraph(CandidateOps):
    """A `QuestionGraph` over an `InMemoryGraph`; `nearest` covers every entity."""

    def __init__(self, graph: InMemoryGraph, sim: Similarity, names: Mapping[str, str]
                 ) -> None:
        self.sim, self._graph, self._names = sim, graph, names
        self.entities = sorted(names)

    @property
    def calls(self) -> int:
        return self._graph.calls

    def name(self, key: str) -> str:
        return self._names.get(key, key)

    def candidates(self, current: str, visited: frozenset[str], adjustments: Adjustments
                   ) -> Sequence[Candidate]:
        return self._graph.candidates(current, visited, adjustments)

    def nearest(self, concept: str, k: int) -> Sequence[tuple[str, float]]:
        scored = [(e, self.sim.sim(concept, e)) for e in self.entities]
        return sorted(scored, key=lambda es: (-es[1], es[0]))[:k]

    def prefetch(self, concepts: Sequence[str], k: int) -> None:
        return None


class MemoryBackend:
    """Entities (key → display name) and triples of keys, embedded by `embedder` per
    question. Any domain name opens the same graph; an empty one is "not built".
    """

    store: GraphStore | None = None

    def __init__(self, entities: Mapping[str, str], triples: Sequence[Triple],
                 embedder: Embedder, config: MetaKGConfig | None = None) -> None:
        self.entities, self.triples, self.embedder = dict(entities), list(triples), embedder
        self.config = config or MetaKGConfig()
        self.checks = 0
        self.last: MemoryGraph | None = None

    def check(self, domain: str) -> DomainInfo:
        self.checks += 1
        if not self.entities:
            raise DomainNotBuilt(domain, "has no entities")
        return DomainInfo(domain, len(self.entities), len(self.entities), len(self.triples))

    def open(self, domain: str, question: str, concepts: Sequence[str],
             exclude_documents: Sequence[str] = ()) -> MemoryGraph:  # no provenance here
        keys = list(self.entities)
        texts = [question, *concepts, *(self.entities[k] for k in keys)]
        names = [QUESTION, *(concept_name(c) for c in concepts), *keys]
        vectors = self.embedder.embed(texts)
        sim = Similarity({n: unit(v) for n, v in zip(names, vectors, strict=True)})
        self.last = MemoryGraph(InMemoryGraph(self.triples, sim, QUESTION, self.config), sim,
                                self.entities)
        return self.last
