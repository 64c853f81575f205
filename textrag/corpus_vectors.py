"""Which embedder made a passage corpus's vectors (`kgrag.vectors`, scope `corpus:<name>`).

Passages and their queries use `KGRAG_EMBEDDING__PASSAGE_MODEL` (default: the entity
embedder, `KGRAG_EMBEDDING__MODEL`). A dense search with another model than the corpus's
is refused, naming `kgrag corpus embed`, which re-embeds the corpus in place (resumable).
A load into a stored corpus embeds new passages with the corpus's own model.

    dense = DenseRetriever(p.store, corpus_embedder(p, WIKIPEDIA), WIKIPEDIA)
    embed_corpus(p, WIKIPEDIA, "bge-small-en-v1.5-q")   # kgrag corpus embed
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kgrag.errors import KgragError
from kgrag.vectors import (
    ReembedReport,
    Statements,
    VectorRecord,
    check,
    record,
    recorded,
    reembed,
)
from textrag.corpora import CorpusSpec

if TYPE_CHECKING:
    from kgrag.embed import Embedder
    from kgrag.platform import Platform

log = logging.getLogger(__name__)


def scope(corpus: CorpusSpec) -> str:
    return f"corpus:{corpus.name}"


def embed_command(corpus: CorpusSpec) -> str:
    flag = "" if corpus.name == "wikipedia" else f" --domain {corpus.domains[0]}"
    return f"kgrag corpus embed{flag}"


def passage_model(p: Platform) -> str:
    e = p.settings.embedding
    return e.passage_model or e.model


def corpus_embedder(p: Platform, corpus: CorpusSpec) -> Embedder:
    """The passage embedder, once the corpus's vectors are known to be its own. A domain's
    chunk corpus is embedded with the entity embedder when its graph is built, and is
    read with it."""
    if corpus.is_chunks:
        return p.embedder
    check(p.store, scope(corpus), passage_model(p), embed_command(corpus))
    return p.passage_embedder


def ready_to_load(p: Platform, corpus: CorpusSpec) -> Embedder:
    """The embedder a load writes with: an empty corpus takes the passage model; a stored
    one keeps the model its vectors were made by (logged when that is not the passage
    model), so a load resumed with other settings never mixes two models. A stopped
    re-embedding is refused (`check`)."""
    if corpus.is_chunks:
        return p.embedder
    if not p.store.read(corpus.statement("count_passages"), corpus.params)[0]["passages"]:
        record(p.store, VectorRecord(scope(corpus), passage_model(p)))
        return corpus_embedder(p, corpus)
    rec = recorded(p.store, scope(corpus))
    if rec.model == passage_model(p):
        return corpus_embedder(p, corpus)
    check(p.store, scope(corpus), rec.model, embed_command(corpus))
    log.warning("the %s corpus's vectors were made by %s, not the passage embedder %s: "
                "new passages are embedded by %s too", corpus.name, rec.model,
                passage_model(p), rec.model)
    return p.embedder_named(rec.model)


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
