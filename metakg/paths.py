"""Typed-path features from a question's entities to each option's (ours; `kg-paths`).

For a multiple-choice question, the seeds are the entities the question's text names
(`metakg.seeds.EntityMatcher` with the wide rules, as `kgrag graph coverage` reads it) and
each option's entities are `match_option`'s. One round trip (`metakg/paths_neighbours`)
reads, for every seed and option entity, its degree and its neighbours over `:REL` with
the relation kind, direction, ConceptNet score and (for facts with at most three source
chunks) the chunk ids. From them, per option:

- hop 1 — edges seed → option and option → seed, per relation kind (`KINDS`), each
  weighted by the seed's specificity `1 / log2(2 + degree)`;
- hop 2 — paths seed – middle – option, per kind of the edge that reaches the option,
  weighted by the seed's and the middle's specificity;
- ConceptNet weight: the summed `log(1 + score)` of hop-1 ConceptNet edges;
- the option's own degree (`log(1 + degree)`, a popularity prior), whether it names an
  entity at all, and whether it is linked at 1 hop by anything.

Counts enter as `log(1 + x)`. A training question's own record is left out: a fact whose
every source chunk belongs to that record (`exclude` = the record's chunk-id prefix)
does not count, so the fit never reads the answer it is fitted on.

    feats = path_features(seeds, options, hood, exclude="commonsense:csqa_train:075e…")
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

from kg_builder.conceptnet import RELATIONS as CONCEPTNET_RELATIONS

if TYPE_CHECKING:
    from kgrag.store import GraphStore

WORDNET_KINDS = ("hypernymy", "meronymy", "antonymy", "synonymy", "entailment", "cause")
KINDS: tuple[str, ...] = (*CONCEPTNET_RELATIONS, *WORDNET_KINDS, "other")
GLOBALS = ("conceptnet_score", "option_degree", "has_entity", "linked_1hop")
FEATURES: tuple[str, ...] = (
    *(f"h1_fwd:{k}" for k in KINDS), *(f"h1_back:{k}" for k in KINDS),
    *(f"h2:{k}" for k in KINDS), *GLOBALS)
_INDEX = {k: i for i, k in enumerate(KINDS)}
NEIGHBOUR_CAP = 20_000


@dataclass(frozen=True)
class Edge:
    """One `:REL` edge seen from an entity: the other end, kind, whether the entity is
    its head, ConceptNet score (0 when none) and its source chunks (empty: more than 3)."""

    other: str
    kind: str
    forward: bool
    score: float = 0.0
    chunks: tuple[str, ...] = ()


@dataclass
class Hood:
    """Entity key → its degree and edges (`Neighbourhoods.read`)."""

    degree: dict[str, int] = field(default_factory=dict)
    edges: dict[str, list[Edge]] = field(default_factory=dict)


class Neighbourhoods(Protocol):
    """The one read of kg-paths (Neo4j: `CypherNeighbourhoods`)."""

    def read(self, keys: Sequence[str]) -> Hood: ...


class CypherNeighbourhoods:
    """`Neighbourhoods` over a domain in Neo4j: one round trip per question."""

    def __init__(self, store: GraphStore, domain: str, cap: int = NEIGHBOUR_CAP) -> None:
        self.store, self.domain, self.cap = store, domain, cap

    def read(self, keys: Sequence[str]) -> Hood:
        hood = Hood()
        if not keys:
            return hood
        rows = self.store.read("metakg/paths_neighbours", {
            "domain": self.domain, "keys": list(keys), "cap": self.cap})
        for r in rows:
            hood.degree[r["key"]] = int(r["degree"])
            hood.edges[r["key"]] = [
                Edge(e[0], e[1] or "other", bool(e[2]), float(e[3] or 0.0), tuple(e[4] or ()))
                for e in r["edges"]]
        return hood


def kind_index(kind: str) -> int:
    return _INDEX.get(kind, _INDEX["other"])


def specificity(degree: int) -> float:
    """How specific an entity is: 1 for a leaf, falling slowly with its degree."""
    return 1.0 / math.log2(2 + degree)


def _own(edge: Edge, exclude: str | None) -> bool:
    """True when every source chunk of the edge belongs to the excluded record."""
    if not exclude or not edge.chunks:
        return False
    return all(c == exclude or c.startswith(exclude + ":") for c in edge.chunks)


@dataclass(frozen=True)
class OptionPaths:
    """One option's features and the paths behind them (for the trace)."""

    features: np.ndarray
    paths: tuple[str, ...]


def path_features(seeds: Sequence[str], options: Sequence[Sequence[str]], hood: Hood,
                  exclude: str | None = None, max_paths: int = 5) -> list[OptionPaths]:
    """Per option, its feature vector (`FEATURES`) and up to `max_paths` paths as text.
    `exclude`: the chunk-id prefix of a training question's own record."""
    n_k = len(KINDS)
    seed_set = set(seeds)
    edges = {k: [e for e in hood.edges.get(k, []) if not _own(e, exclude)]
             for k in hood.edges}
    # middle entity → [(seed, weight, kind)] of the seeds' 1-hop neighbours
    via: dict[str, list[tuple[str, float]]] = {}
    for s in seed_set:
        w = specificity(hood.degree.get(s, 0))
        for e in edges.get(s, []):
            via.setdefault(e.other, []).append((s, w))
    out = []
    for keys in options:
        x = np.zeros(len(FEATURES))
        shown: list[str] = []
        linked = False
        cn = 0.0
        for o in keys:
            if o in seed_set:
                continue
            for e in edges.get(o, []):
                if e.other in seed_set:  # hop 1: e seen from the option
                    w = specificity(hood.degree.get(e.other, 0))
                    block = 1 if e.forward else 0  # option is head: seed ← option
                    x[block * n_k + kind_index(e.kind)] += w
                    linked = True
                    cn += math.log1p(e.score)
                    if len(shown) < max_paths:
                        arrow = f"-[{e.kind}]->"
                        shown.append(f"{e.other} {arrow} {o}" if not e.forward
                                     else f"{o} {arrow} {e.other}")
                elif e.other in via and e.other not in keys:  # hop 2 through e.other
                    wm = specificity(hood.degree.get(e.other, 0))
                    x[2 * n_k + kind_index(e.kind)] += wm * sum(w for _, w in via[e.other])
                    if len(shown) < max_paths:
                        shown.append(f"{via[e.other][0][0]} – {e.other} -[{e.kind}]- {o}")
        base = 3 * n_k
        x[:base] = np.log1p(x[:base])
        x[base] = math.log1p(cn)
        x[base + 1] = math.log1p(max((hood.degree.get(o, 0) for o in keys), default=0))
        x[base + 2] = float(any(o in hood.degree for o in keys))
        x[base + 3] = float(linked)
        out.append(OptionPaths(x, tuple(shown)))
    return out


# ---------------------------------------------------------------------------- model
@dataclass(frozen=True)
class PathModel:
    """A conditional-logit scorer: an option's score is `weights · features`."""

    weights: np.ndarray
    names: tuple[str, ...] = FEATURES
    meta: Mapping[str, object] = field(default_factory=dict)

    def scores(self, feats: Sequence[np.ndarray]) -> list[float]:
        return [float(self.weights @ f) for f in feats]


def softmax(xs: Sequence[float]) -> list[float]:
    m = max(xs)
    ex = [math.exp(x - m) for x in xs]
    z = sum(ex)
    return [e / z for e in ex]


def fit_logit(xs: Sequence[np.ndarray], ys: Sequence[int], l2: float = 1.0) -> np.ndarray:
    """Weights of a conditional logit (softmax over each question's options) by L-BFGS,
    with an L2 penalty `l2`. `xs[i]`: options × features; `ys[i]`: the correct row."""
    from scipy.optimize import minimize

    d = xs[0].shape[1]

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        total, grad = 0.5 * l2 * float(w @ w), l2 * w.copy()
        for x, y in zip(xs, ys, strict=True):
            s = x @ w
            s = s - s.max()
            p = np.exp(s)
            p /= p.sum()
            total -= float(s[y] - np.log(np.exp(s).sum()))
            grad -= x[y] - p @ x
        return total, grad

    res = minimize(loss, np.zeros(d), jac=True, method="L-BFGS-B")
    return np.asarray(res.x)
