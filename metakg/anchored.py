"""Option-anchored retrieval for multiple choice (ours, used by `metakgrag-oa`).

The paper's MetaKGRAG walks greedily from the question's entities towards whatever is
most similar to the question; nothing makes a path end at an option. Here every path
connects a question entity to an entity of one option, so the evidence says which
options the graph links to the question, and which it does not:

- Perceive: the question's concepts (ExtractConcepts) and each option's concepts (the
  option text, matched to its nearest entities) — `targets`.
- Search: breadth-first from the question entities, bounded at `max_hops` (1–3), one
  Cypher round trip per hop (`cypher/metakg/anchored_hop.cypher`) for the whole frontier.
- Evaluate: completeness = the share of options reached by a path (the option concepts
  are counted, not only the question's).
- Adjust: the next hop expands only towards the options still missing, from the frontier
  entities most similar to the question with its options; it stops when every option is
  reached or after `max_hops`.

>>> search = search_anchored(graph, ["fox"], {"A": ["forest"], "B": ["sea"]})   # doctest: +SKIP
>>> search.completeness, search.round_trips                                         # doctest: +SKIP
(0.5, 3)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from metakg.graph import Triple
from metakg.trace import Names, render_triple


@dataclass(frozen=True)
class HopRow:
    """One edge of a hop: from `source` (a frontier entity) to `key`."""

    source: str
    triple: Triple  # stored orientation
    key: str
    name: str
    hit: bool  # `key` is one of the targets asked for
    score: float  # cosine of `key` to the question with its options


class HopSource(Protocol):
    """One round trip per call: the frontier's neighbours, targets always kept."""

    def anchored_hop(self, frontier: Sequence[str], targets: Sequence[str],
                     visited: Sequence[str], cap: int) -> list[HopRow]: ...


@dataclass(frozen=True)
class AnchoredPath:
    """A path from a question entity to an entity of option `label`."""

    label: str
    entities: tuple[str, ...]
    triples: tuple[Triple, ...]

    @property
    def hops(self) -> int:
        return len(self.triples)


@dataclass(frozen=True)
class HopRecord:
    hop: int
    frontier: int
    rows: int
    reached: tuple[str, ...]  # option labels reached by a new path at this hop


@dataclass(frozen=True)
class AnchoredSearch:
    paths: Mapping[str, tuple[AnchoredPath, ...]]  # per option label, shortest first
    hops: tuple[HopRecord, ...] = field(default=())

    @property
    def round_trips(self) -> int:
        return len(self.hops)

    @property
    def supported(self) -> frozenset[str]:
        return frozenset(lb for lb, ps in self.paths.items() if ps)

    @property
    def completeness(self) -> float:
        """Evaluate: the share of options reached by at least one path."""
        return len(self.supported) / len(self.paths) if self.paths else 0.0

    @property
    def triples(self) -> list[Triple]:
        return list(dict.fromkeys(t for ps in self.paths.values() for p in ps
                                  for t in p.triples))


def search_anchored(source: HopSource, starts: Sequence[str],
                    targets: Mapping[str, Sequence[str]], *, max_hops: int = 3,
                    cap: int = 25, frontier_size: int = 12, paths_per_option: int = 3
                    ) -> AnchoredSearch:
    """Paths of 1..`max_hops` hops from `starts` to each option's `targets` (entity keys),
    one `source.anchored_hop` round trip per hop (see the module docstring)."""
    if not 1 <= max_hops <= 3:
        raise ValueError("option-anchored paths are bounded at 1–3 hops")
    start_set = set(starts)
    owners: dict[str, set[str]] = {}
    for label, keys in targets.items():
        for k in keys:
            if k not in start_set:  # an option entity the question already names: no path
                owners.setdefault(k, set()).add(label)
    found: dict[str, list[AnchoredPath]] = {label: [] for label in targets}
    parent: dict[str, tuple[str, Triple]] = {}
    frontier, visited = list(dict.fromkeys(starts)), set(start_set)
    records = []
    for hop in range(1, max_hops + 1):
        missing = [lb for lb in targets if not found[lb]]
        want = sorted(k for k, labels in owners.items() if labels & set(missing))
        if not missing or not frontier or not want:
            break
        rows = source.anchored_hop(frontier, want, sorted(visited), cap)
        reached: set[str] = set()
        scored: dict[str, float] = {}
        for r in rows:
            if r.hit:
                for label in owners.get(r.key, ()):
                    if label in missing and len(found[label]) < paths_per_option:
                        found[label].append(_path(label, r, parent))
                        reached.add(label)
                continue
            if r.key not in parent and r.key not in start_set:
                parent[r.key] = (r.source, r.triple)
                scored[r.key] = max(scored.get(r.key, -2.0), r.score)
        records.append(HopRecord(hop, len(frontier), len(rows), tuple(sorted(reached))))
        visited |= set(scored)
        frontier = sorted(scored, key=lambda k: (-scored[k], k))[:frontier_size]
    return AnchoredSearch({lb: tuple(ps) for lb, ps in found.items()}, tuple(records))


def _path(label: str, hit: HopRow, parent: Mapping[str, tuple[str, Triple]]
          ) -> AnchoredPath:
    """The path ending with `hit`'s edge, traced back through `parent` to a start."""
    triples, entities = [hit.triple], [hit.key, hit.source]
    node = hit.source
    while node in parent:
        node, triple = parent[node]
        triples.append(triple)
        entities.append(node)
    return AnchoredPath(label, tuple(reversed(entities)), tuple(reversed(triples)))


def render_by_option(search: AnchoredSearch, options: Mapping[str, str], name: Names
                     ) -> list[str]:
    """The evidence lines, grouped by option: each option's paths as "h r t; h r t", or
    a line saying the graph links no path to it."""
    lines = []
    for label, text in options.items():
        paths = search.paths.get(label, ())
        if not paths:
            lines.append(f"Option {label} ({text}): no path from the question's entities.")
            continue
        lines.append(f"Option {label} ({text}):")
        for p in paths:
            lines.append("  " + "; ".join(render_triple(t, name) for t in p.triples))
    return lines
