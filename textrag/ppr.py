"""`kg-ppr`: graph-guided passage retrieval (HippoRAG-style), read like `rag`.

`PPRRetriever` is a `Retriever` (so `rag`, `ircot` and `kgrag corpus recall` take it
unchanged): for a query it

1. matches the query's n-grams to entity keys of the domain (`metakg.seeds`, the same
   matching as `kgrag graph coverage`; one round trip);
2. runs personalized PageRank over the seeds' 2-hop subgraph and ranks the passages whose
   chunks mention the best entities (`metakg.ppr.GraphPPR`; two round trips);
3. fuses that ranking with BM25's and dense retrieval's by weighted reciprocal rank
   fusion, score(p) = Σ_r w_r / (60 + rank_r(p)) over each list's top `depth` (20),
   weights 1 for each list by default. With no seed in the graph the PPR list is empty
   and the result is exactly `hybrid`. (HippoRAG 2 instead puts passages into the
   graph and seeds them with dense scores; fusion keeps the graph half separable.)

It only ever sees the query string: a question's gold paragraphs or supporting facts
never reach it (tested).

| name | what |
|---|---|
| `kg-ppr` | `rag` (same prompt, top 3, "So the answer is") over `PPRRetriever` |
| `ircot-ppr` | `ircot` with `PPRRetriever` for the question and every thought |
| `metarag-ppr` | `metarag` with `PPRRetriever` for the question and every sub-query |

>>> ids = PassageIds("wikipedia:wiki_passages:")
>>> r = PPRRetriever(GraphPPR(store, "wikipedia", ids), store_matcher(store,  # doctest: +SKIP
...                  "wikipedia"), [BM25Retriever(store), DenseRetriever(store, embedder)])
>>> [h.passage.title for h in r.search("Who directed Big Stone Gap?", 5)]  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from kgrag.method import Answer, Trace
from kgrag.types import Passage, Question
from metakg.ppr import GraphPPR, PassageIds, PPRConfig, require_facts
from metakg.seeds import EntityMatcher, spacy_tagger, store_matcher
from textrag.baselines import RAG, IRCoT
from textrag.corpora import corpus_for_domain
from textrag.metarag.method import MetaRAG
from textrag.retrievers import BaseRetriever, shared

if TYPE_CHECKING:
    from kgrag.method import QAMethod
    from kgrag.platform import MethodFactory, Platform
    from textrag.retrieval import Retriever

RRF_K = 60


def weighted_rrf(rankings: Sequence[Sequence[Passage]], weights: Sequence[float],
                 k: int = RRF_K) -> list[tuple[Passage, float]]:
    """Weighted reciprocal rank fusion: score(d) = Σ_i w_i / (k + rank_i(d)); ties keep
    the order of first appearance.

    >>> a, b, c = (Passage(id=x, text=x) for x in "abc")
    >>> [(p.id, round(s, 4)) for p, s in weighted_rrf([[a, b], [b, c]], [2.0, 1.0])]
    [('b', 0.0487), ('a', 0.0328), ('c', 0.0161)]
    """
    if len(rankings) != len(weights):
        raise ValueError(f"{len(rankings)} rankings but {len(weights)} weights")
    scores: dict[str, float] = {}
    first: dict[str, Passage] = {}
    for ranking, w in zip(rankings, weights, strict=True):
        for rank, p in enumerate(ranking, 1):
            scores[p.id] = scores.get(p.id, 0.0) + w / (k + rank)
            first.setdefault(p.id, p)
    order = sorted(scores, key=lambda pid: -scores[pid])
    return [(first[pid], scores[pid]) for pid in order]


class PPRRetriever(BaseRetriever):
    """Passages by PPR over the entity graph, fused with text retrievers (module doc).

    `others` empty (and `weights` = (1,)) gives the graph ranking alone (`ppr` in
    `kgrag corpus recall`). `history` keeps each search's query, seeds and top entities
    (the methods put them in the trace and clear it per question).
    """

    kind: ClassVar[str] = "kg-ppr"

    def __init__(self, graph: GraphPPR, matcher: EntityMatcher,
                 others: Sequence[Retriever] = (), weights: Sequence[float] | None = None,
                 depth: int = 20) -> None:
        self.graph, self.matcher, self.others = graph, matcher, list(others)
        self.weights = list(weights) if weights is not None else [1.0] * (1 + len(others))
        if len(self.weights) != 1 + len(self.others):
            raise ValueError("one weight for the graph ranking and one per other retriever")
        self.depth = depth
        self.history: list[dict[str, object]] = []

    def _search(self, query: str, k: int) -> list[tuple[Passage, float]]:
        depth = max(k, self.depth)
        seeds = self.matcher.match(query).keys
        graph_hits, ranked = self.graph.passages(seeds, depth)
        self.history.append({"query": query, "seeds": list(seeds),
                             "entities": [e for e, _ in ranked[:10]],
                             "graph_passages": [p.id for p, _ in graph_hits[:10]]})
        if not self.others:
            return graph_hits[:k]
        rankings = [[p for p, _ in graph_hits],
                    *([h.passage for h in r.search(query, depth)] for r in self.others)]
        return weighted_rrf(rankings, self.weights)[:k]


def ppr_retriever(p: Platform, domain: str | None, *, fused: bool = True,
                  config: PPRConfig | None = None) -> PPRRetriever:
    """The platform's `PPRRetriever` over `domain` (default wikipedia) and the corpus."""
    from textrag.setting import open_retriever

    domain = domain or "wikipedia"
    require_facts(p.store, domain)
    # the domain's own corpus (medical → MedQuAD answers, wikipedia, commonsense and legal
    # → Wikipedia, any other → its chunks), for the graph's passages and the fused text
    # rankings alike
    corpus = corpus_for_domain(domain)
    others = ([open_retriever(p, "bm25", domain), open_retriever(p, "dense", domain)]
              if fused else [])
    ids = PassageIds(corpus.graph_document_prefix(domain), corpus.passage_prefix,
                     corpus.statement("ppr_passages"))  # a chunk's passage has its id
    matcher = store_matcher(p.store, domain, spacy_tagger())
    return PPRRetriever(GraphPPR(p.store, domain, ids, config), matcher, others)


class _GraphTrace:
    """Mixin for a text method over a `PPRRetriever`: one `graph` trace step per question
    with every search's seeds, top entities and graph-ranked passages."""

    def _answer(self, question: Question, trace: Trace) -> Answer:
        from textrag.retrieval import Retriever

        # a text method's retriever per question (`RetrieverFor`), or MetaRAG's retriever
        given: Any = getattr(self, "retriever_for")  # noqa: B009
        retriever = given if isinstance(given, Retriever) else given(question)
        # PPRRetriever or textrag.hippo.HippoRetriever: both keep a per-search history
        history: list[dict[str, Any]] | None = getattr(retriever, "history", None)
        if history is not None:
            history.clear()
        answer: Answer = super()._answer(question, trace)  # type: ignore[misc]
        if history is not None:
            seeds = sorted({s for h in history for s in h["seeds"]})
            trace.add("graph", f"seeds: {', '.join(seeds) or '(none: text retrieval only)'}",
                      searches=list(history))
        return answer


class KGPPR(_GraphTrace, RAG):
    """`rag` over `PPRRetriever`."""

    name: ClassVar[str] = "kg-ppr"


class IRCoTPPR(_GraphTrace, IRCoT):
    """`ircot` over `PPRRetriever`."""

    name: ClassVar[str] = "ircot-ppr"


class MetaRAGPPR(_GraphTrace, MetaRAG):
    """`metarag` over `PPRRetriever`: its first retrieval and every sub-query of the
    insufficient-knowledge plan go through the graph-guided fusion."""

    name: ClassVar[str] = "metarag-ppr"


def graph_retriever(p: Platform, domain: str | None) -> Retriever:
    """The retriever of the `*-ppr` methods: HippoRAG 2's (`textrag.hippo`) with
    KGRAG_HIPPO__SEEDING=facts, else the entity-key seeding fused with BM25 and dense."""
    if p.settings.hippo.seeding == "facts":
        from textrag.hippo import hippo_retriever

        return hippo_retriever(p, domain)
    return ppr_retriever(p, domain)


def _factory(cls: type[KGPPR | IRCoTPPR]) -> MethodFactory:
    def build(p: Platform, domain: str | None) -> QAMethod:
        return cls(p.chat_model, shared(graph_retriever(p, domain)), store=p.store)

    return build


def _metarag_factory(p: Platform, domain: str | None) -> QAMethod:
    return MetaRAGPPR(p.chat_model, shared(graph_retriever(p, domain)), p.embedder,
                      store=p.store)


PPR_FACTORIES: dict[str, MethodFactory] = {"kg-ppr": _factory(KGPPR),
                                           "ircot-ppr": _factory(IRCoTPPR),
                                           "metarag-ppr": _metarag_factory}
