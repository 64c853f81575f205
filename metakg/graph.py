"""Paths over the graph: values, the two graph seams, greedy search, evidence merging.

The greedy walk asks a `NeighbourSource` for the scored edges leaving the current entity,
one call per hop. The same walk drives the in-memory test double (`tests.doubles.memory`)
and a Cypher-backed source (one round trip per hop, the adjustment map as a parameter).

>>> from metakg.config import MetaKGConfig
>>> class Line:  # a -> b -> c, every edge weight 0.5
...     def candidates(self, current, visited, adjustments):
...         nxt = {"a": "b", "b": "c"}.get(current)
...         return [] if nxt is None else [Candidate(Triple(current, "to", nxt), nxt, 0.5)]
>>> greedy_path_search("a", Line(), MetaKGConfig()).entities
('a', 'b', 'c')
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from metakg.config import MetaKGConfig

Adjustments = Mapping[str, float]
"""adjustment(e_j) of §3.3, keyed by entity: w_adjusted(e_i, e_j) = w_original + it."""


@dataclass(frozen=True)
class Triple:
    """A fact (h, r, t) in its stored orientation.

    >>> Triple("Donepezil", "is_a", "Cholinesterase Inhibitor").render()
    'Donepezil is_a Cholinesterase Inhibitor'
    """

    head: str
    relation: str
    tail: str

    def render(self) -> str:
        return f"{self.head} {self.relation} {self.tail}"


@dataclass(frozen=True)
class Candidate:
    """One edge a source offers from the current entity: walking it reaches `target`.

    `target` is the triple's tail, or its head when the edge is walked backwards.
    `weight` is w_original(current, target) (see `MetaKGConfig.edge_weight`).
    """

    triple: Triple
    target: str
    weight: float


@dataclass(frozen=True)
class Hop:
    """A step taken: the candidate plus the adjusted weight that won it."""

    triple: Triple
    target: str
    weight: float
    adjusted: float


@dataclass(frozen=True)
class Path:
    """A walk from `start`: entities are never repeated.

    >>> p = Path("a", (Hop(Triple("a", "r", "b"), "b", 0.5, 0.5),))
    >>> p.entities, p.prefix("a").hops, p.end
    (('a', 'b'), (), 'b')
    """

    start: str
    hops: tuple[Hop, ...] = ()

    @property
    def entities(self) -> tuple[str, ...]:
        """E_P in path order: the start, then every hop's target."""
        return (self.start, *(h.target for h in self.hops))

    @property
    def entity_set(self) -> frozenset[str]:
        return frozenset(self.entities)

    @property
    def triples(self) -> tuple[Triple, ...]:
        return tuple(h.triple for h in self.hops)

    @property
    def end(self) -> str:
        return self.hops[-1].target if self.hops else self.start

    def prefix(self, entity: str) -> Path:
        """The path up to and including `entity` (the part kept at a restart)."""
        for i, e in enumerate(self.entities):
            if e == entity:
                return Path(self.start, self.hops[:i])
        raise ValueError(f"{entity!r} is not on the path")


class NeighbourSource(Protocol):
    """Scored edges out of `current`, for one question (the one hop of a greedy walk).

    Contract: return candidates whose target is not in `visited`; if the source trims the
    list (a Cypher `LIMIT`), it must keep the best by weight + adjustments.get(target, 0).
    The vectors of every returned target must be in the `Similarity` the cycle uses
    (a Cypher source returns `n.embedding` and adds it). Implementations:
    `tests.doubles.memory.InMemoryGraph` (a test double); the Cypher source.
    """

    def candidates(self, current: str, visited: frozenset[str], adjustments: Adjustments
                   ) -> Sequence[Candidate]: ...


class EntityIndex(Protocol):
    """The `k` entities nearest to a concept, best first (a vector-index query).

    Used by MatchEntities (k = 1) and to find the entities relevant to missing concepts.
    """

    def nearest(self, concept: str, k: int) -> Sequence[tuple[str, float]]: ...


def greedy_path_search(start: str, source: NeighbourSource, cfg: MetaKGConfig,
                       adjustments: Adjustments | None = None,
                       prefix: Path | None = None) -> Path:
    """Walk up to `cfg.max_path_length` hops from `start`, each time taking the unvisited
    neighbour with the highest adjusted weight (InitialPathSearch and the re-search of
    Adjust, §3.2–3.3). With `prefix` (a path ending at `start`), its hops are kept and its
    entities count as visited. Ties go to the smaller (target, relation) so runs repeat.
    """
    adjustments = adjustments or {}
    path = prefix if prefix is not None else Path(start)
    if path.end != start:
        raise ValueError(f"prefix ends at {path.end!r}, not at the restart entity {start!r}")
    hops = list(path.hops)
    visited = set(path.entities)
    current = start
    for _ in range(cfg.max_path_length):
        found = source.candidates(current, frozenset(visited), adjustments)
        hop = _best_hop(found, visited, adjustments, cfg.min_edge_weight)
        if hop is None:
            break
        hops.append(hop)
        visited.add(hop.target)
        current = hop.target
    return Path(path.start, tuple(hops))


def _best_hop(found: Iterable[Candidate], visited: set[str], adjustments: Adjustments,
              floor: float | None) -> Hop | None:
    # The core re-applies the adjustment and the no-revisit rule itself, so a source that
    # ranks or filters differently cannot change which hop wins.
    hops = [Hop(c.triple, c.target, c.weight, c.weight + adjustments.get(c.target, 0.0))
            for c in found if c.target not in visited]
    if floor is not None:
        hops = [h for h in hops if h.adjusted >= floor]
    if not hops:
        return None
    return min(hops, key=lambda h: (-h.adjusted, h.target, h.triple.relation))


def path_similarity(p1: Path, p2: Path) -> float:
    """PathSimilarity (§3.3): Jaccard of the two paths' entity sets.

    >>> a = Path("s", (Hop(Triple("s", "r", "x"), "x", 0, 0),))
    >>> b = Path("s", (Hop(Triple("s", "r", "y"), "y", 0, 0),))
    >>> path_similarity(a, b)  # {s} / {s, x, y}
    0.3333333333333333
    """
    e1, e2 = p1.entity_set, p2.entity_set
    return len(e1 & e2) / len(e1 | e2)


@dataclass(frozen=True)
class Evidence:
    """The evidence subgraph S (§3.4): distinct triples in first-seen order.

    >>> Evidence((Triple("a", "r", "b"),)).render()
    'Evidence 1: a r b'
    """

    triples: tuple[Triple, ...]

    def render(self) -> str:
        """One line per triple, "Evidence i: h r t" (§3.4)."""
        return "\n".join(f"Evidence {i}: {t.render()}" for i, t in enumerate(self.triples, 1))

    def lines(self) -> list[str]:
        return self.render().splitlines()


def integrate_evidence_paths(paths: Iterable[Path]) -> Evidence:
    """IntegrateEvidencePaths (Alg. 1 line 22): merge the refined paths, dropping repeated
    triples and empty paths (Alg. 1 line 18 adds only non-empty paths).
    """
    seen: dict[Triple, None] = {}
    for path in paths:
        for triple in path.triples:
            seen.setdefault(triple, None)
    return Evidence(tuple(seen))
