"""Personalized PageRank over a domain's entity graph, and passages ranked by it: the
graph half of `kg-ppr` (HippoRAG, Gutiérrez et al. 2024; HippoRAG 2, 2025).

    query ─ seeds (metakg.seeds: exact entity keys of its n-grams)
          ─ the seeds' 2-hop subgraph over :REL (one round trip, capped)
          ─ PPR by power iteration (scipy.sparse), reset mass on the seeds
          ─ passages: Σ PPR of the entities each passage's chunks MENTION (one round trip)

Choices and where they differ from HippoRAG:

- Damping 0.5 (HippoRAG's), i.e. each step follows an edge with probability 0.5 and
  jumps back to the seeds otherwise. Edges are undirected and unweighted: two entities
  with several facts between them share one edge (HippoRAG's relation edges are binary
  too; it adds weighted synonym edges, which entity resolution replaces here).
- Reset weights: a seed's weight is its node specificity 1 / (number of chunks that
  mention it), as HippoRAG 1 does; HippoRAG 2 instead also seeds passage nodes with
  dense scores. Here the dense and BM25 scores enter by fusion (`textrag.ppr`).
- The graph is the seeds' 2-hop neighbourhood, not the whole graph (Neo4j Community has
  no GDS): at most `fanout` neighbours per seed, and each of those expanded by at most
  `fanout2` more, hubs (degree > `max_degree`) kept as nodes but not expanded. A walk
  of the full graph would put little mass beyond 2 hops at damping 0.5 (0.5³ = 12.5%
  of the walk's steps are 3 or more edges away), and hubs spread it thinly anyway.
- Passage score = Σ over the entities its chunks mention of their PPR value (HippoRAG
  1), over the `top_entities` best entities, at most `per_entity` documents each.

>>> scores = personalized_pagerank(3, [(0, 1, 1.0), (1, 2, 1.0)], {0: 1.0})
>>> [round(float(x), 3) for x in scores]
[0.583, 0.333, 0.083]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from scipy import sparse

from kgrag.errors import DomainNotBuilt
from kgrag.types import Passage

if TYPE_CHECKING:
    from kgrag.store import GraphStore


def require_facts(store: GraphStore, domain: str) -> None:
    """`DomainNotBuilt` (naming the other domains) unless `domain`'s graph has facts."""
    if not store.read("metakg/domain_status", {"domain": domain})[0]["facts"]:
        known = [r["name"] for r in store.read("kg/domains")]
        raise DomainNotBuilt(domain, "has no facts (kg-ppr needs its graph)",
                             [k for k in known if k != domain])


def personalized_pagerank(n: int, edges: Sequence[tuple[int, int, float]],
                          reset: Mapping[int, float], *, damping: float = 0.5,
                          tol: float = 1e-10, max_iter: int = 200) -> np.ndarray:
    """The stationary distribution of a walk on `n` nodes that follows an undirected,
    weighted edge with probability `damping` and otherwise restarts at a node drawn
    from `reset` (normalised). A node without edges sends its mass back to `reset`.
    Power iteration until the L1 change is below `tol`."""
    if n == 0:
        return np.zeros(0)
    if not 0.0 <= damping < 1.0:
        raise ValueError(f"damping must be in [0, 1), got {damping}")
    s = np.zeros(n)
    for i, w in reset.items():
        s[i] += w
    if s.sum() <= 0:
        raise ValueError("the reset distribution needs a positive weight")
    s /= s.sum()
    if edges:
        rows, cols, ws = (np.array(x) for x in zip(*edges, strict=True))
        w = sparse.coo_matrix((np.concatenate([ws, ws]), (np.concatenate([rows, cols]),
                                                          np.concatenate([cols, rows]))),
                              shape=(n, n)).tocsr()
    else:
        w = sparse.csr_matrix((n, n))
    out = np.asarray(w.sum(axis=1)).ravel()
    inv = np.divide(1.0, out, out=np.zeros(n), where=out > 0)
    transition_t = (sparse.diags(inv) @ w).T.tocsr()  # column-stochastic where out > 0
    dangling = out == 0
    p = s.copy()
    for _ in range(max_iter):
        nxt = damping * (transition_t @ p + p[dangling].sum() * s) + (1 - damping) * s
        if np.abs(nxt - p).sum() < tol:
            return nxt
        p = nxt
    return p


@dataclass(frozen=True)
class PPRConfig:
    """The knobs of the graph half of `kg-ppr` (see the module docstring)."""

    damping: float = 0.5
    fanout: int = 100  # neighbours per seed
    fanout2: int = 30  # neighbours per hop-1 entity
    max_degree: int = 1000  # hop-1 entities with more facts are not expanded
    top_entities: int = 50  # entities whose passages are scored
    per_entity: int = 200  # documents per entity
    max_seeds: int = 16


@dataclass(frozen=True)
class Subgraph:
    """The seeds' neighbourhood as read from Neo4j: keys and weighted edges."""

    keys: list[str]
    edges: list[tuple[int, int, float]]
    mentions: dict[str, int] = field(default_factory=dict)  # seed → chunks mentioning it

    @classmethod
    def of(cls, pairs: Sequence[Sequence[str]], seeds: Sequence[str],
           mentions: Mapping[str, int]) -> Subgraph:
        index: dict[str, int] = {}
        for k in [*seeds, *(x for pair in pairs for x in pair)]:
            index.setdefault(k, len(index))
        # One edge per entity pair: the 2-hop read returns a seed's edges again from the
        # other end, so counting rows would double some edges and not others.
        pairs_ = {tuple(sorted((index[a], index[b]))) for a, b in pairs if a != b}
        return cls(list(index), [(i, j, 1.0) for i, j in sorted(pairs_)], dict(mentions))


def rank_entities(g: Subgraph, seeds: Sequence[str], damping: float = 0.5
                  ) -> list[tuple[str, float]]:
    """PPR scores of the subgraph's entities, best first (ties by key)."""
    index = {k: i for i, k in enumerate(g.keys)}
    reset = {index[s]: 1.0 / max(1, g.mentions.get(s, 1)) for s in seeds if s in index}
    if not reset:
        return []
    p = personalized_pagerank(len(g.keys), g.edges, reset, damping=damping)
    return sorted(((k, float(p[i])) for k, i in index.items()), key=lambda x: (-x[1], x[0]))


@dataclass(frozen=True)
class PassageIds:
    """How a domain's documents name corpus passages: a document id `doc_prefix + x`
    is the passage `passage_prefix + x` (Wikipedia: `wikipedia:wiki_passages:p7` → `p7`;
    MedQuAD: `medical:medquad_corpus:L12` → `medquad:L12`), read by `statement` (one per
    corpus label: `textrag/ppr_passages` for `Passage`, `textrag/medical/…` for
    `MedicalPassage`)."""

    doc_prefix: str
    passage_prefix: str = ""
    statement: str = "textrag/ppr_passages"


class GraphPPR:
    """Seeds → subgraph → PPR → passages, over one domain in Neo4j (two round trips).

    >>> ppr = GraphPPR(store, "wikipedia", PassageIds("wikipedia:wiki_passages:"))  # doctest: +SKIP
    >>> ppr.passages(["big stone gap"], k=10)  # doctest: +SKIP
    """

    def __init__(self, store: GraphStore, domain: str, ids: PassageIds,
                 config: PPRConfig | None = None) -> None:
        self.store, self.domain, self.ids = store, domain, ids
        self.config = config or PPRConfig()

    def subgraph(self, seeds: Sequence[str]) -> Subgraph:
        c = self.config
        row = self.store.read("metakg/ppr_subgraph", {
            "domain": self.domain, "seeds": list(seeds), "fanout": c.fanout,
            "fanout2": c.fanout2, "max_degree": c.max_degree})[0]
        found = [s["key"] for s in row["seeds"]]
        return Subgraph.of(row["edges"], found, {s["key"]: s["mentions"] for s in row["seeds"]})

    def scored_passages(self, entities: Sequence[tuple[str, float]], k: int
                        ) -> list[tuple[Passage, float]]:
        c = self.config
        rows = self.store.read(self.ids.statement, {
            "domain": self.domain, "entities": [{"key": e, "score": s}
                                                for e, s in entities[:c.top_entities]],
            "per_entity": c.per_entity, "doc_prefix": self.ids.doc_prefix,
            "passage_prefix": self.ids.passage_prefix, "k": k})
        return [(Passage(id=r["id"], title=r["title"] or "", text=r["text"] or ""),
                 float(r["score"])) for r in rows]

    def passages(self, seeds: Sequence[str], k: int) -> tuple[list[tuple[Passage, float]],
                                                                list[tuple[str, float]]]:
        """The top `k` passages and the ranked entities (empty without seeds)."""
        seeds = list(seeds)[: self.config.max_seeds]
        if not seeds:
            return [], []
        g = self.subgraph(seeds)
        ranked = rank_entities(g, [s for s in seeds if s in g.mentions], self.config.damping)
        if not ranked:
            return [], []
        return self.scored_passages(ranked, k), ranked
