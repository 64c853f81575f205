"""Which embedder made a passage corpus's vectors (`kgrag.vectors`, scope `corpus:<name>`).

A built-in corpus (Wikipedia, MedQuAD) is queried with the model its vectors were made by;
with `KGRAG_EMBEDDING__PASSAGE_MODEL` set, that model must be the corpus's, else the search
is refused, naming `kgrag corpus embed`, which re-embeds the corpus in place (resumable).
A fresh load embeds with the configured passage model, else `DEFAULT_CORPUS_MODEL` for
Wikipedia and the entity embedder for MedQuAD; a load into a stored corpus with the
corpus's own model.

    dense = DenseRetriever(p.store, corpus_embedder(p, WIKIPEDIA), WIKIPEDIA)
    embed_corpus(p, WIKIPEDIA, "e5-small-v2")   # kgrag corpus embed --model e5-small-v2
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kgrag.errors import KgragError
from kgrag.vectors import (
    ReembedReport,
    Statements,
    VectorModelMismatch,
    VectorRecord,
    check,
    find,
    record,
    reembed,
)
from textrag.corpora import DEFAULT, CorpusSpec

if TYPE_CHECKING:
    from kgrag.embed import Embedder
    from kgrag.platform import Platform

log = logging.getLogger(__name__)


def scope(corpus: CorpusSpec) -> str:
    return f"corpus:{corpus.name}"


def embed_command(corpus: CorpusSpec) -> str:
    flag = "" if corpus.name == "wikipedia" else f" --domain {corpus.domains[0]}"
    return f"kgrag corpus embed{flag}"


# The embedder of the Wikipedia corpus loaded afresh when KGRAG_EMBEDDING__PASSAGE_MODEL is
# unset: bge-small's dense recall@5 (all supporting paragraphs) on HotpotQA dev300 is 66.0
# against BM25's 48.7 (docs/benchmarks.md has its speed). MedQuAD, unmeasured, keeps the
# entity embedder; entity vectors stay MiniLM.
DEFAULT_CORPUS_MODEL = "bge-small-en-v1.5-q"


def fresh_model(p: Platform, corpus: CorpusSpec) -> str:
    """The model a fresh load of `corpus` (or `kgrag corpus embed` without --model) uses."""
    e = p.settings.embedding
    return e.passage_model or (DEFAULT_CORPUS_MODEL if corpus.name == "wikipedia" else e.model)


def passage_model(p: Platform) -> str:
    """The configured passage embedder (`KGRAG_EMBEDDING__PASSAGE_MODEL`, else the entity
    embedder): what a domain's chunk passages are embedded with."""
    e = p.settings.embedding
    return e.passage_model or e.model


def corpus_model(p: Platform, corpus: CorpusSpec) -> str:
    """The model a built-in corpus is queried with: KGRAG_EMBEDDING__PASSAGE_MODEL when set
    (it must be the corpus's: `check`), else the model its vectors were made by."""
    wanted = p.settings.embedding.passage_model or None
    return check(p.store, scope(corpus), wanted, embed_command(corpus)).model


def corpus_embedder(p: Platform, corpus: CorpusSpec = DEFAULT) -> Embedder:
    """The embedder of `corpus`'s queries (`corpus_model`). A domain's chunk corpus is
    embedded with the passage embedder when its graph is built, and is read with it; a
    passage embedder other than the one its vectors were recorded with is refused."""
    if corpus.is_chunks:
        embedder = p.passage_embedder
        found = find(p.store, scope(corpus))
        if found is not None and found.model != embedder.name:
            raise VectorModelMismatch(
                f"the passages of {corpus.domain} were embedded by {found.model}, but queries "
                f"would be embedded by {embedder.name}",
                hint=f"query with KGRAG_EMBEDDING__PASSAGE_MODEL={found.model}, or drop the "
                f"domain (`kgrag graph drop --domain {corpus.domain}`) and build it again")
        return embedder
    return p.embedder_named(corpus_model(p, corpus))


def ready_to_load(p: Platform, corpus: CorpusSpec = DEFAULT) -> Embedder:
    """The embedder a load writes with: an empty corpus takes `fresh_model`; a stored one
    keeps the model its vectors were made by (a configured passage model must be that
    one), so a load never mixes two models."""
    if corpus.is_chunks:
        return p.passage_embedder
    if not p.store.read(corpus.statement("count_passages"), corpus.params)[0]["passages"]:
        record(p.store, VectorRecord(scope(corpus), fresh_model(p, corpus)))
    return corpus_embedder(p, corpus)


def _text(row: Mapping[str, Any]) -> str:
    # as `textrag.corpus.embedding_text`: the title, then the text
    return f"{row['title']}: {row['text']}" if row["title"] else str(row["text"])


def embed_corpus(p: Platform, corpus: CorpusSpec, model: str, *, batch_size: int = 256,
                 progress: bool = True) -> ReembedReport:
    """Re-embed every passage of `corpus` with `model` in place (resumable)."""
    if corpus.is_chunks:
        raise KgragError(f"the {corpus.name} chunk passages are embedded with its graph",
                         hint="re-embed the built-in corpora only (wikipedia, medical)")
    embedder = p.embedder_named(model)
    total = p.store.read(corpus.statement("count_passages"))[0]["passages"]
    return reembed(p.store, scope(corpus), embedder,
                   Statements(corpus.statement("passages_to_embed"),
                              corpus.statement("set_passage_embeddings")),
                   _text, total=total, batch_size=batch_size, progress=progress)
