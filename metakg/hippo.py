"""The graph half of `kg-ppr` after HippoRAG 2 (Gutiérrez et al. 2025, "From RAG to Memory:
Non-Parametric Continual Learning for Large Language Models").

Index time (`kgrag graph hippo`, `build_index`):
- fact vectors: each :REL embedded as the text "subject relation object" (sec. 3.2), its
  model recorded under the scope `facts:<domain>` (`kgrag.vectors`);
- synonym edges: each entity joined to the entities of its domain whose vectors have a
  cosine of at least 0.8 (sec. 3.1; `synonym_threshold`), kept as :SYNONYM edges with their
  cosine and counted apart from the facts.

Query time (`HippoGraph.rank`, four round trips besides the dense search):
1. recognition: the `fact_top_k` (5) facts nearest the query vector (sec. 3.2, "query to
   triple"; no LLM filter: the paper's "w/o filter" row);
2. seeds: each end of those facts weighs the fact's score divided by the number of chunks
   that mention it (node specificity), the best `link_top_k` (5) ends by mean fact score
   kept (the reference code's `graph_search_with_fact_entities` and `get_top_k_weights`);
3. passage nodes: every dense-ranked passage gets the reset weight `passage_weight` (0.05,
   sec. 3.3) times its min-max normalised dense score, and joins the graph by "context
   edges" to the entities its chunks mention (weight 1);
4. personalized PageRank with damping 0.5 (sec. 3.3) over the seeds' 2-hop neighbourhood
   (a fact edge weighs 1 per entity pair, a synonym edge its cosine, a context edge 1)
   plus the passage nodes; passages are ranked by their own PPR score.

Ours, not the paper's: the walk runs on the seeds' 2-hop neighbourhood and the `dense_depth`
best dense passages, not on the whole graph and corpus (Neo4j Community has no GDS; a
walk at damping 0.5 puts 12.5% of its steps 3 or more edges away), so dense scores are
normalised over those passages; with no fact found, the dense ranking is returned, as
HippoRAG 2 does.

    g = HippoGraph(store, "wikipedia", PassageIds("wikipedia:wiki_passages:"))
    ranked = g.rank(query_vector, dense_hits, k=5)
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from metakg.ppr import PassageIds, personalized_pagerank

if TYPE_CHECKING:
    from kgrag.store import GraphStore


class HippoConfig(BaseModel):
    """kg-ppr's constants (`[hippo]` in kgrag.toml, `KGRAG_HIPPO__…`), each from HippoRAG 2
    unless marked."""

    model_config = ConfigDict(extra="forbid")

    # which seeding the kg-ppr methods use: "facts" (this module) or "keys" (the earlier
    # entity-key seeding fused with BM25 and dense, textrag.ppr); "keys" until a domain's
    # facts are embedded (`kgrag graph hippo`), as the methods' committed runs read it
    seeding: Literal["facts", "keys"] = "keys"
    damping: float = Field(default=0.5, ge=0.0, lt=1.0)  # sec. 3.3 / reference code `damping`
    passage_weight: float = Field(default=0.05, ge=0.0)  # sec. 3.3 `passage_node_weight`
    fact_top_k: int = Field(default=5, ge=1)  # facts recognised per query (`linking_top_k`)
    link_top_k: int = Field(default=5, ge=1)  # seed entities kept (`link_top_k`)
    synonym_threshold: float = Field(default=0.8, ge=0.0, le=1.0)  # sec. 3.1 synonym edges
    synonym_top_k: int = Field(default=10, ge=1)  # ours: at most this many synonyms per entity
    # ours: the nearest facts/entities read from the shared vector index before the
    # domain filter (Neo4j Community's index cannot filter before ranking)
    fact_candidates: int = Field(default=100, ge=1)
    synonym_candidates: int = Field(default=50, ge=1)
    dense_depth: int = Field(default=100, ge=1)  # ours: dense passages given reset mass
    # ours: neighbours per seed and per hop-1 entity. On the Wikipedia graph, 5 seeds at
    # 100/30 gave 1,708 entities and 33k passage edges (3.8 s a query, loaded), at 50/10
    # 567 entities and 15k edges (0.6 s)
    fanout: int = Field(default=50, ge=1)
    fanout2: int = Field(default=10, ge=0)
    max_degree: int = Field(default=1000, ge=1)  # ours: hop-1 entities with more edges not expanded
    per_entity: int = Field(default=200, ge=1)  # ours: passages joined per graph entity


@dataclass(frozen=True)
class Fact:
    head: str
    predicate: str
    tail: str
    score: float
    head_chunks: int
    tail_chunks: int


def seed_weights(facts: Sequence[Fact], link_top_k: int) -> dict[str, float]:
    """Entity → reset weight from the recognised facts (module docstring, step 2): the
    fact's score over the entity's chunk count (the last fact naming it wins, as in the
    reference code), for the `link_top_k` entities of best mean fact score.

    >>> f = [Fact("a", "r", "b", 0.9, 3, 1), Fact("b", "r", "c", 0.5, 1, 0)]
    >>> seed_weights(f, 2)
    {'a': 0.3, 'b': 0.5}
    """
    weight: dict[str, float] = {}
    scores: dict[str, list[float]] = defaultdict(list)
    for f in facts:
        for key, chunks in ((f.head, f.head_chunks), (f.tail, f.tail_chunks)):
            weight[key] = f.score / chunks if chunks > 0 else f.score
            scores[key].append(f.score)
    best = sorted(scores, key=lambda k: (-float(np.mean(scores[k])), k))[:link_top_k]
    return {k: weight[k] for k in best}


def min_max(scores: Sequence[float]) -> list[float]:
    """Scores rescaled to [0, 1]; all equal → all 1.

    >>> min_max([0.2, 0.6, 0.4])
    [0.0, 1.0, 0.5]
    """
    lo, hi = min(scores, default=0.0), max(scores, default=0.0)
    if hi - lo <= 0:
        return [1.0] * len(scores)
    return [round((s - lo) / (hi - lo), 12) for s in scores]


@dataclass
class HippoGraph:
    """Recognition seeds, passage nodes, synonym edges and PPR over one domain."""

    store: GraphStore
    domain: str
    ids: PassageIds
    config: HippoConfig = field(default_factory=lambda: HippoConfig())

    def facts(self, vector: Sequence[float]) -> list[Fact]:
        c = self.config
        rows = self.store.read("hippo/nearest_facts", {
            "domain": self.domain, "embedding": list(vector), "k": c.fact_top_k,
            "candidates": c.fact_candidates})
        return [Fact(r["head"], r["predicate"], r["tail"], float(r["score"]),
                     int(r["head_chunks"]), int(r["tail_chunks"])) for r in rows]

    def rank(self, vector: Sequence[float], dense: Sequence[tuple[str, float]]
             ) -> tuple[list[tuple[str, float]], dict[str, Any]]:
        """Passage ids by PPR score, best first, and what was seen (facts, seeds, counts).
        `dense` is the dense ranking (passage id, cosine), best first."""
        c = self.config
        facts = self.facts(vector)
        seeds = seed_weights(facts, c.link_top_k)
        seen: dict[str, Any] = {"facts": [(f.head, f.predicate, f.tail, round(f.score, 4))
                                          for f in facts], "seeds": seeds}
        if not seeds:
            return list(dense), seen
        row = self.store.read("hippo/subgraph", {
            "domain": self.domain, "seeds": list(seeds), "fanout": c.fanout,
            "fanout2": c.fanout2, "max_degree": c.max_degree})[0]
        dense = list(dense)[: c.dense_depth]
        entities = sorted({k for e in row["edges"] for k in e[:2]} | set(row["seeds"]))
        pairs = self.store.read("hippo/passage_edges", {
            "domain": self.domain, "entities": entities, "passages": [p for p, _ in dense],
            "per_entity": c.per_entity, "doc_prefix": self.ids.doc_prefix,
            "passage_prefix": self.ids.passage_prefix})[0]["pairs"]
        reset = {("e", k): w for k, w in seeds.items() if k in set(row["seeds"])}
        for (pid, _), s in zip(dense, min_max([s for _, s in dense]), strict=True):
            reset[("p", pid)] = reset.get(("p", pid), 0.0) + c.passage_weight * s
        ranked, counts = walk(row["edges"], pairs, reset, c.damping)
        seen.update(counts)
        return ranked, seen


def walk(edges: Sequence[Sequence[Any]], pairs: Sequence[Sequence[str]],
         reset: Mapping[tuple[str, str], float], damping: float
         ) -> tuple[list[tuple[str, float]], dict[str, int]]:
    """PPR over entity edges [a, b, weight, kind] and passage–entity pairs [passage, key];
    passages by score, best first (ties by id), and the node and edge counts by kind."""
    index: dict[tuple[str, str], int] = {}
    for node in reset:
        index.setdefault(node, len(index))

    def at(node: tuple[str, str]) -> int:
        return index.setdefault(node, len(index))

    # One edge per pair and kind: the 2-hop read returns some edges from both ends, so
    # counting rows would double some facts and not others (as metakg.ppr.Subgraph).
    facts: set[tuple[int, int]] = set()
    synonyms: dict[tuple[int, int], float] = {}
    for a, b, w, kind in edges:
        if a == b:
            continue
        pair = (min(at(("e", a)), at(("e", b))), max(at(("e", a)), at(("e", b))))
        if kind == "SYNONYM":
            synonyms[pair] = max(synonyms.get(pair, 0.0), float(w))
        else:
            facts.add(pair)
    context = {(at(("p", pid)), at(("e", key))) for pid, key in pairs}
    weights: dict[tuple[int, int], float] = defaultdict(float)
    for pair in facts | set(context):
        weights[pair] += 1.0
    for pair, w in synonyms.items():
        weights[pair] += w
    scores = personalized_pagerank(len(index), [(i, j, w) for (i, j), w in weights.items()],
                                   {index[n]: w for n, w in reset.items() if w > 0},
                                   damping=damping)
    passages = sorted(((node[1], float(scores[i])) for node, i in index.items()
                       if node[0] == "p"), key=lambda x: (-x[1], x[0]))
    counts = {"entities": sum(1 for n in index if n[0] == "e"),
              "passages": len(passages), "fact_edges": len(facts),
              "synonym_edges": len(synonyms), "context_edges": len(context)}
    return passages, counts
