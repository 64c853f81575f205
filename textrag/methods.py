"""The text methods' factories: method name -> factory(platform, domain) -> QAMethod.

`kgrag.platform.available_methods()` imports `FACTORIES` from here. A name without a
suffix runs in the open setting (BM25 over the passage corpus of the question's domain in
Neo4j, `textrag.corpora`: MedQuAD answers for medical, Wikipedia otherwise; as SeaKR,
DRAGIN and FLARE use BM25); `-gold` runs over each question's own paragraphs.

    Platform().method("ircot-gold").answer(question).setting
    # -> 'gold'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from kgrag.errors import KgragError
from kgrag.method import named
from textrag.corpora import corpus_for_domain
from textrag.retrievers import (
    BM25Retriever,
    DenseRetriever,
    GoldContextRetriever,
    HybridRetriever,
    RetrieverFor,
    shared,
)

if TYPE_CHECKING:
    from kgrag.method import QAMethod
    from kgrag.platform import MethodFactory, Platform
    from textrag.retrieval import Retriever

RetrieverKind = Literal["bm25", "dense", "hybrid"]


def open_retriever(p: Platform, kind: RetrieverKind = "bm25", domain: str | None = None
                   ) -> Retriever:
    """A retriever over the passage corpus of `domain` (`corpus_for_domain`); an empty
    corpus is an error, not closed-book."""
    corpus = corpus_for_domain(domain)
    counts = p.store.read(corpus.statement("count_passages"))[0]
    usable = counts["passages"] if kind == "bm25" else counts["embedded"]
    if not usable:
        flag = "" if corpus.name == "wikipedia" else f" --domain {domain}"
        raise KgragError(f"the {corpus.name} passage corpus in Neo4j is empty"
                         if not counts["passages"] else
                         f"no passage of the {corpus.name} corpus has an embedding",
                         hint=f"load it with `kgrag corpus load{flag}` (a few minutes)")
    bm25 = BM25Retriever(p.store, corpus)
    if kind == "bm25":
        return bm25
    dense = DenseRetriever(p.store, p.embedder, corpus)
    return dense if kind == "dense" else HybridRetriever([bm25, dense])


def retriever_for(p: Platform, setting: Literal["open", "gold"],
                  kind: RetrieverKind = "bm25", domain: str | None = None) -> RetrieverFor:
    """Question -> retriever for a setting: the shared open retriever over the domain's
    corpus, or the gold one."""
    if setting == "gold":
        return GoldContextRetriever.for_question
    return shared(open_retriever(p, kind, domain))


def _baseline(kind: Literal["rag", "ircot", "flare"], setting: Literal["open", "gold"]
              ) -> MethodFactory:
    """Standard RAG, IRCoT or FLARE in a setting, registered as `kind` or `kind-gold`."""

    def build(p: Platform, domain: str | None) -> QAMethod:
        from textrag.baselines import FLARE, RAG, IRCoT

        classes: dict[str, type[RAG | IRCoT | FLARE]] = {"rag": RAG, "ircot": IRCoT,
                                                          "flare": FLARE}
        cls = classes[kind]
        return named(cls, kind if setting == "open" else f"{kind}-gold")(
            p.chat_model, retriever_for(p, setting, domain=domain),
            store=p.store if setting == "open" else None)

    return build


FACTORIES: dict[str, MethodFactory] = {
    "rag": _baseline("rag", "open"),
    "rag-gold": _baseline("rag", "gold"),
    "ircot": _baseline("ircot", "open"),
    "ircot-gold": _baseline("ircot", "gold"),
    "flare": _baseline("flare", "open"),
    "flare-gold": _baseline("flare", "gold"),
}

# ---------------------------------------------------------------------------------------
# SeaKR, MetaRAG and IM-RAG-style: registered here by their own modules' engineer, e.g.
#
#     from textrag.seakr.method import FACTORIES as _SEAKR        # "seakr", "seakr-gold"
#     from textrag.metarag.method import FACTORIES as _METARAG    # "metarag", "metarag-gold"
#     FACTORIES.update(_SEAKR)
#     FACTORIES.update(_METARAG)
#     FACTORIES["imrag"] = ...
#
# Build their retrievers with `retriever_for(p, "open" | "gold", domain=domain)` so every
# text method reads the same corpus the same way.
# ---------------------------------------------------------------------------------------


def _register_adaptive() -> None:
    """SeaKR (and its Table 3 ablations), MetaRAG and IM-RAG (and its Table 3
    ablations) register beside the baselines."""
    from textrag.imrag.method import IMRAG_FACTORIES
    from textrag.metarag.method import METARAG_FACTORIES
    from textrag.seakr.method import SEAKR_FACTORIES

    FACTORIES.update(SEAKR_FACTORIES)
    FACTORIES.update(METARAG_FACTORIES)
    FACTORIES.update(IMRAG_FACTORIES)


_register_adaptive()


def _register_ppr() -> frozenset[str]:
    """Graph-guided passage retrieval (`textrag.ppr`): `kg-ppr`, `ircot-ppr`,
    `metarag-ppr`; returns their names."""
    from textrag.ppr import PPR_FACTORIES

    FACTORIES.update(PPR_FACTORIES)
    return frozenset(PPR_FACTORIES)


# The baselines read no domain's knowledge graph (only Passage nodes or gold context), so
# the runner records no graph fingerprint for them (`kgrag.platform.graph_methods()`); the
# graph-guided methods of textrag.ppr do.
GRAPH_METHODS: frozenset[str] = _register_ppr()
