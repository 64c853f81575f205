"""The KG methods over Neo4j: `CypherBackend` and its per-question `CypherGraph`.

`CypherGraph` is MetaKGRAG's `NeighbourSource` (one `cypher/metakg/neighbours` round trip
per hop, the adjustment map travelling as the `$adjust` parameter) and `EntityIndex`
(`nearest_entities` over the shared vector index, with a fallback when other domains crowd
it). The entities a walk can take and the start entities arrive with their embeddings,
which go straight into the question's `Similarity`, so Perceive and Evaluate never need
another query. See metakg/README.md, "Over Neo4j".

    backend = CypherBackend(platform.store, platform.embedder)
    backend.check("commonsense").entities
    g = backend.open("commonsense", "Where would you find a fox?", ["fox"])
    refine("fox", QUESTION, [concept_name("fox")], g, g, g.sim, MetaKGConfig())
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import cypher
from kgrag.errors import DomainNotBuilt, KgragError
from metakg.anchored import HopRow
from metakg.backend import (
    QUESTION,
    CandidateOps,
    DomainInfo,
    Fact,
    RelationOption,
    concept_name,
    unit,
)
from metakg.config import MetaKGConfig
from metakg.graph import Adjustments, Candidate, Triple
from metakg.similarity import Similarity

if TYPE_CHECKING:
    from kgrag.embed import Embedder
    from kgrag.store import GraphStore

log = logging.getLogger(__name__)
EVIDENCE_QUERY = "metakg/evidence_subgraph"
TIE = 1e-4  # hop rows this close to the best adjusted weight bring their vectors


class CypherBackend:
    """Neo4j behind the `GraphBackend` seam.

    `limit` caps the rows of one hop (the walk needs only the best; the others show what
    it passed over). Nearest entities: a domain of at most `exact_limit` entities is
    scanned exactly (`nearest_entities_exact`; cheaper than over-fetching from an index
    that other domains fill). A larger one asks the shared vector index for
    `max(k · overfetch, min_fetch)` nodes and keeps its own; `overfetch` defaults to
    1.5 × (indexed entities / the domain's), from the domain check, and when other domains
    still crowd the answer out the index is asked again with a 10× wider fetch.
    """

    def __init__(self, store: GraphStore, embedder: Embedder, config: MetaKGConfig | None = None,
                 *, limit: int = 8, overfetch: float | None = None, min_fetch: int = 20,
                 max_fetch: int = 20_000, exact_limit: int = 500) -> None:
        self.store, self.embedder = store, embedder
        self.config = config or MetaKGConfig()
        if self.config.edge_weight != "tail_question":
            raise KgragError(f"edge_weight={self.config.edge_weight!r} needs a triple embedding "
                             "per edge, which the graph schema does not store",
                             hint="use edge_weight = \"tail_question\" with Neo4j")
        self.limit, self.overfetch, self.min_fetch = limit, overfetch, min_fetch
        self.max_fetch, self.exact_limit = max_fetch, exact_limit
        self._info: dict[str, DomainInfo] = {}

    def check(self, domain: str) -> DomainInfo:
        row = self.store.read("metakg/domain_status", {"domain": domain})[0]
        info = DomainInfo(domain, row["entities"], row["embedded"], row["facts"], row["indexed"])
        problem = ("has no entities" if not info.entities
                   else "has no entity embeddings" if not info.embedded
                   else "has no facts" if not info.facts else None)
        if problem:
            known = [r["name"] for r in self.store.read("kg/domains")]
            raise DomainNotBuilt(domain, problem, [k for k in known if k != domain])
        from kgrag.vectors import check_recorded

        check_recorded(self.store, f"graph:{domain}", self.embedder.name,
                       f"kgrag graph embed --domain {domain}")
        if info.embedded < info.entities:
            log.warning("domain %s: %d of %d entities have no embedding and are skipped",
                        domain, info.entities - info.embedded, info.entities)
        self._info[domain] = info
        return info

    def open(self, domain: str, question: str, concepts: Sequence[str],
             exclude_documents: Sequence[str] = ()) -> CypherGraph:
        """`exclude_documents`: source documents whose facts option-anchored paths skip
        (a calibration question's own record; `CypherGraph.anchored_hop`)."""
        info = self._info.get(domain) or self.check(domain)
        vectors = self.embedder.embed([question, *concepts])
        sim = Similarity({QUESTION: unit(vectors[0])})
        for text, v in zip(concepts, vectors[1:], strict=True):
            sim.add(concept_name(text), unit(v))
        return CypherGraph(self, info, sim, exclude_documents)

    def fetch(self, info: DomainInfo, k: int) -> int:
        """How many nodes to ask the shared vector index for, to get `k` of the domain."""
        ratio = self.overfetch
        if ratio is None:
            ratio = 1.5 * max(info.indexed, info.embedded) / max(info.embedded, 1)
        return min(max(math.ceil(k * ratio), self.min_fetch, k), self.max_fetch)


@dataclass
class _Nearest:
    hits: list[tuple[str, float]]
    k: int
    complete: bool  # the domain has no more entities than `hits`


class CypherGraph(CandidateOps):
    """One domain for one question: a `QuestionGraph` whose reads are Cypher files.

    Hop results are cached by (entity, visited, adjustments), so a re-search that repeats
    an earlier hop costs no round trip; `calls` counts the hop queries actually sent.
    """

    def __init__(self, backend: CypherBackend, info: DomainInfo, sim: Similarity,
                 exclude_documents: Sequence[str] = ()) -> None:
        self._b, self.info, self.domain, self.sim = backend, info, info.domain, sim
        self.exclude = list(exclude_documents)
        self.concepts = [n for n in sim.names() if n != QUESTION]
        self._q = sim.vector(QUESTION).tolist()
        self._names: dict[str, str] = {}
        self._hops: dict[tuple[str, frozenset[str], frozenset[tuple[str, float]]],
                         list[Candidate]] = {}
        self._nearest: dict[str, _Nearest] = {}
        self.calls = 0

    def name(self, key: str) -> str:
        return self._names.get(key, key)

    def _see(self, key: str, name: str | None, embedding: Sequence[float] | None) -> None:
        self._names.setdefault(key, name if name is not None else key)
        if embedding is not None and key not in self.sim:
            self.sim.add(key, unit(embedding))

    # ------------------------------------------------------------------ NeighbourSource
    def candidates(self, current: str, visited: frozenset[str], adjustments: Adjustments
                   ) -> Sequence[Candidate]:
        cache_key = (current, visited, frozenset(adjustments.items()))
        if cache_key in self._hops:
            return self._hops[cache_key]
        self.calls += 1
        # A start given by key (not found through the index) has no vector yet: the same
        # round trip brings it. A start without neighbours needs none (its path is empty).
        with_current = current not in self.sim
        rows = self._b.store.read("metakg/neighbours", {
            "domain": self.domain, "key": current, "visited": sorted(visited), "q": self._q,
            "adjust": dict(adjustments), "incoming": self._b.config.traverse_incoming,
            "limit": self._b.limit, "with_current": with_current, "tie": TIE})
        if with_current and rows:
            self._see(current, rows[0]["current_name"], rows[0]["current_embedding"])
        found = []
        for r in rows:
            self._see(r["key"], r["name"], r["embedding"])
            # w_original as the server ranked it (its float32 cosine): the walk then picks
            # exactly the row the server put first, whose vector came along.
            found.append(Candidate(Triple(r["head"], r["predicate"], r["tail"]), r["key"],
                                   float(r["weight"])))
        self._hops[cache_key] = found
        return found

    # ------------------------------------------------------------------ option-anchored
    def anchored_hop(self, frontier: Sequence[str], targets: Sequence[str],
                     visited: Sequence[str], cap: int) -> list[HopRow]:
        """One hop of option-anchored retrieval (`metakg.anchored`): one round trip."""
        self.calls += 1
        rows = self._b.store.read("metakg/anchored_hop", {
            "domain": self.domain, "frontier": list(frontier), "targets": list(targets),
            "visited": list(visited), "cap": cap, "q": self._q, "exclude": self.exclude})
        out = []
        for r in rows:
            self._names.setdefault(r["source"], r["source_name"] or r["source"])
            self._names.setdefault(r["key"], r["name"] or r["key"])
            out.append(HopRow(r["source"], Triple(r["head"], r["predicate"], r["tail"]),
                              r["key"], r["name"] or r["key"], bool(r["hit"]), float(r["s"])))
        return out

    # ------------------------------------------------------------------ EntityIndex
    def nearest(self, concept: str, k: int) -> Sequence[tuple[str, float]]:
        """The `k` entities nearest to `concept`. A miss also fetches every other concept
        of the question at this `k` (the cycle will likely ask for them next)."""
        if not self._has(concept, k):
            self.prefetch([concept, *self.concepts], k)
        return self._nearest[concept].hits[:k]

    def _has(self, concept: str, k: int) -> bool:
        got = self._nearest.get(concept)
        return got is not None and (got.k >= k or got.complete)

    def prefetch(self, concepts: Sequence[str], k: int) -> None:
        """One `nearest_entities` round trip for all `concepts` not yet known at `k`; the
        top hit of each comes with its embedding (it may become a start entity)."""
        todo = [c for c in dict.fromkeys(concepts) if not self._has(c, k)]
        if not todo:
            return
        if self.info.embedded <= self._b.exact_limit:
            for c, (hits, _) in zip(todo, self._read_nearest(
                    "metakg/nearest_entities_exact", todo, k, None), strict=True):
                self._keep(c, hits, k)
            return
        fetch = self._b.fetch(self.info, k)
        rows = self._read_nearest("metakg/nearest_entities", todo, k, fetch)
        crowded = [c for c, (hits, fetched) in zip(todo, rows, strict=True)
                   if len(hits) < k and fetched >= fetch]
        for c, (hits, _) in zip(todo, rows, strict=True):
            if c not in crowded:
                self._keep(c, hits, k)
        if crowded:
            log.info("%s: other domains crowd the vector index; fetching %d nodes",
                     self.domain, min(fetch * 10, self._b.max_fetch))
            again = self._read_nearest("metakg/nearest_entities", crowded, k,
                                       min(fetch * 10, self._b.max_fetch))
            for c, (hits, _) in zip(crowded, again, strict=True):
                self._keep(c, hits, k)

    def _read_nearest(self, name: str, concepts: Sequence[str], k: int, fetch: int | None
                      ) -> list[tuple[list[dict[str, Any]], int]]:
        params: dict[str, Any] = {"domain": self.domain, "k": k, "embed": 1, "vectors": [
            self.sim.vector(c).tolist() for c in concepts]}
        if fetch is not None:
            params["fetch"] = fetch
        by_i = {r["i"]: (r["hits"], r.get("fetched", 0)) for r in self._b.store.read(name, params)}
        return [by_i.get(i, ([], 0)) for i in range(len(concepts))]

    def _keep(self, concept: str, hits: list[dict[str, Any]], k: int) -> None:
        for h in hits:
            self._see(h["key"], h["name"], h["embedding"])
        # fewer than k hits (after any widening) means the domain has no more to give
        self._nearest[concept] = _Nearest([(h["key"], float(h["score"])) for h in hits], k,
                                          complete=len(hits) < k)

    # ------------------------------------------------------------------ batched reads
    def facts(self, keys: Sequence[str], k: int) -> list[Fact]:
        if not keys:
            return []
        rows = self._b.store.read("metakg/vanilla_facts", {
            "domain": self.domain, "keys": list(keys), "q": self._q, "k": k})
        out = []
        for r in rows:
            self._see(r["source"], r["source_name"], None)
            self._see(r["target"], r["name"], None)
            out.append(Fact(r["source"], Triple(r["head"], r["predicate"], r["tail"]),
                            r["target"], float(r["score"])))
        return out

    def relations(self, keys: Sequence[str], visited: frozenset[str], limit: int
                  ) -> list[RelationOption]:
        if not keys:
            return []
        rows = self._b.store.read("metakg/tog_relations", {
            "domain": self.domain, "keys": list(keys), "visited": sorted(visited),
            "q": self._q, "limit": limit})
        by_key = {r["key"]: r for r in rows}
        out: list[RelationOption] = []
        for key in keys:  # keep the caller's order
            r = by_key.get(key)
            if r is None:
                continue
            self._see(key, r["name"], None)
            out.extend(RelationOption(key, o["predicate"], o["direction"], o["neighbours"],
                                      float(o["best"])) for o in r["relations"])
        return out

    def expand(self, picks: Sequence[RelationOption], visited: frozenset[str], limit: int
               ) -> list[Fact]:
        if not picks:
            return []
        rows = self._b.store.read("metakg/tog_expand", {
            "domain": self.domain, "visited": sorted(visited), "q": self._q, "limit": limit,
            "picks": [{"key": p.entity, "predicate": p.predicate, "direction": p.direction}
                      for p in picks]})
        out = []
        for r in rows:
            self._see(r["target"], r["name"], None)
            out.append(Fact(r["source"], Triple(r["head"], r["predicate"], r["tail"]),
                            r["target"], float(r["score"])))
        return out


# ---------------------------------------------------------------------- Neo4j Browser
@dataclass(frozen=True)
class BrowserQuery:
    """What to paste into Neo4j Browser to see an answer's evidence subgraph: first the
    `:params` line, then the query. Keys travel as parameter values, never spliced into
    the query; the `:params` literal is JSON, whose string escapes are valid Cypher."""

    params: str
    query: str

    @property
    def text(self) -> str:
        return f"{self.params}\n{self.query}"


def browser_query(domain: str, triples: Sequence[Triple]) -> BrowserQuery:
    """The `evidence_subgraph` statement with its parameters, for display and copying.

    >>> browser_query("d", [Triple("a", 'say "hi"', "b")]).params
    ':params {domain: "d", triples: [["a", "say \\\\"hi\\\\"", "b"]]}'
    """
    rows = [[t.head, t.relation, t.tail] for t in triples]
    # Map keys are fixed identifiers; values are JSON, whose escapes Cypher reads alike.
    literal = (f"{{domain: {json.dumps(domain, ensure_ascii=False)}, "
               f"triples: {json.dumps(rows, ensure_ascii=False)}}}")
    query = "\n".join(line for line in cypher.load(EVIDENCE_QUERY).splitlines()
                      if not line.lstrip().startswith("//"))
    return BrowserQuery(":params " + literal, query)
