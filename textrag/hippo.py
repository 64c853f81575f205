"""`kg-ppr` after HippoRAG 2: passages ranked by personalized PageRank over the domain
graph with the passages inside it, seeded by the facts nearest the query (`metakg.hippo`).

For a query: the dense ranking of the domain's corpus (its top `dense_depth`, one round
trip, embedding the query once), then recognition, the seeds' subgraph with synonym
edges, the passage–entity context edges (three round trips), the walk, and the texts of
the graph-ranked passages the dense list did not bring (one round trip): five in all.
With no fact in the graph it returns the dense ranking. The earlier seeding (entity keys
matched in the query, PPR, fusion with BM25 and dense: `textrag.ppr.PPRRetriever`) stays
as the ablation row `kg-ppr-keys` of `kgrag corpus recall`.

    r = hippo_retriever(platform, "wikipedia")
    [h.passage.title for h in r.search("Who directed Big Stone Gap?", 5)]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from kgrag.types import Passage
from metakg.hippo import HippoConfig, HippoGraph
from metakg.hippo_index import check_facts
from metakg.ppr import PassageIds, require_facts
from textrag.corpora import CorpusSpec, corpus_for_domain
from textrag.retrievers import BaseRetriever

if TYPE_CHECKING:
    from kgrag.platform import Platform
    from kgrag.store import GraphStore
    from textrag.retrieval import Retriever


class HippoRetriever(BaseRetriever):
    """Passages by HippoRAG 2's PPR (module docstring); `history` keeps each search's
    facts, seeds and graph size."""

    kind: ClassVar[str] = "kg-ppr"

    def __init__(self, graph: HippoGraph, dense: Retriever, store: GraphStore,
                 corpus: CorpusSpec) -> None:
        self.graph, self.dense, self.store, self.corpus = graph, dense, store, corpus
        self.history: list[dict[str, object]] = []

    def _search(self, query: str, k: int) -> list[tuple[Passage, float]]:
        c = self.graph.config
        hits = self.dense.search(query, c.dense_depth)
        embedder = getattr(self.dense, "embedder")  # noqa: B009 - a DenseRetriever
        vector = embedder.embed([query], kind="query")[0]  # cached by the dense search
        ranked, seen = self.graph.rank(vector.tolist(), [(h.passage.id, h.score)
                                                         for h in hits])
        self.history.append({"query": query, **seen})
        top = ranked[:k]
        known = {h.passage.id: h.passage for h in hits}
        missing = [pid for pid, _ in top if pid not in known]
        if missing:
            for r in self.store.read(self.corpus.statement("passages_by_id"),
                                     {"ids": missing, **self.corpus.params}):
                known[r["id"]] = Passage(id=r["id"], title=r["title"] or "",
                                         text=r["text"] or "")
        return [(known[pid], s) for pid, s in top if pid in known]


def hippo_retriever(p: Platform, domain: str | None,
                    config: HippoConfig | None = None) -> HippoRetriever:
    """The platform's `HippoRetriever` over `domain` (default wikipedia) and its corpus;
    the fact vectors must be made by the corpus's query model (`kgrag graph hippo`)."""
    from textrag.corpus_vectors import corpus_embedder
    from textrag.setting import open_retriever

    domain = domain or "wikipedia"
    require_facts(p.store, domain)
    corpus = corpus_for_domain(domain)
    check_facts(p.store, domain, corpus_embedder(p, corpus).name)
    ids = PassageIds(corpus.graph_document_prefix(domain), corpus.passage_prefix)
    cfg = config or p.settings.hippo
    return HippoRetriever(HippoGraph(p.store, domain, ids, cfg),
                          open_retriever(p, "dense", domain), p.store, corpus)
