"""The retrievers of the two settings, built the same way for every text method.

The open setting is BM25 (or dense, or both fused) over the passage corpus of the
question's domain in Neo4j (`textrag.corpora`: MedQuAD answers for medical, Wikipedia
otherwise); the gold setting reads each question's own paragraphs. The method modules
build their retrievers here and `textrag.methods` registers them, so the registry imports
the methods and no method imports the registry.

    retriever_for(platform, "open", domain="medical")(question).search("kidney", 5)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from kgrag.errors import DomainNotBuilt, KgragError
from textrag.corpora import PASSAGES_HINT, corpus_for_domain
from textrag.retrievers import (
    BM25Retriever,
    DenseRetriever,
    GoldContextRetriever,
    HybridRetriever,
    RetrieverFor,
    shared,
)

if TYPE_CHECKING:
    from kgrag.platform import Platform
    from textrag.retrieval import Retriever

RetrieverKind = Literal["bm25", "dense", "hybrid"]


def open_retriever(p: Platform, kind: RetrieverKind = "bm25", domain: str | None = None
                   ) -> Retriever:
    """A retriever over the passage corpus of `domain` (`corpus_for_domain`); an empty
    corpus is an error, not closed-book."""
    corpus = corpus_for_domain(domain)
    counts = p.store.read(corpus.statement("count_passages"), corpus.params)[0]
    usable = counts["passages"] if kind == "bm25" else counts["embedded"]
    if not usable and corpus.is_chunks:  # a domain of one's own: its chunks
        raise DomainNotBuilt(corpus.domain, "has no passages" if not counts["passages"]
                             else "has passages without vectors",
                             hint=PASSAGES_HINT.format(domain=corpus.domain))
    if not usable:
        flag = "" if corpus.name == "wikipedia" else f" --domain {domain}"
        raise KgragError(f"the {corpus.name} passage corpus in Neo4j is empty"
                         if not counts["passages"] else
                         f"no passage of the {corpus.name} corpus has an embedding",
                         hint=f"load it with `kgrag corpus load{flag}` (a few minutes)")
    bm25 = BM25Retriever(p.store, corpus)
    if kind == "bm25":
        return bm25
    from textrag.corpus_vectors import corpus_embedder

    dense = DenseRetriever(p.store, corpus_embedder(p, corpus), corpus)
    return dense if kind == "dense" else HybridRetriever([bm25, dense])


def retriever_for(p: Platform, setting: Literal["open", "gold"],
                  kind: RetrieverKind = "bm25", domain: str | None = None) -> RetrieverFor:
    """Question -> retriever for a setting: the shared open retriever over the domain's
    corpus, or the gold one."""
    if setting == "gold":
        return GoldContextRetriever.for_question
    return shared(open_retriever(p, kind, domain))
