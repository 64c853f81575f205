"""A passage corpus's embedder (`textrag.corpus_vectors`): a fresh corpus takes the
configured passage model or the default, a stored one is loaded and queried with its own,
and a configured passage model that is not the corpus's is refused naming `kgrag corpus
embed`."""

from __future__ import annotations

from typing import Any

import pytest

from kgrag.config import load_settings
from kgrag.vectors import VectorModelMismatch
from textrag.corpora import MEDICAL, WIKIPEDIA
from textrag.corpus_vectors import DEFAULT_CORPUS_MODEL, corpus_embedder, ready_to_load


class Store:
    def __init__(self, passages: int) -> None:
        self.passages, self.records = passages, {}

    def read(self, name: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        if name.endswith("count_passages"):
            return [{"passages": self.passages, "embedded": self.passages}]
        assert name == "vectors/get_record"
        r = self.records.get((params or {})["scope"])
        return [r] if r else []

    def run(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        assert name == "vectors/set_record"
        self.records[params["scope"]] = dict(params)
        return []


class Named:
    def __init__(self, name: str) -> None:
        self.name, self.dimensions = name, 2


class FakePlatform:
    def __init__(self, store: Store, passage_model: str | None = None) -> None:
        self.store = store
        self.settings = load_settings(embedding={"passage_model": passage_model})
        self.embedder = self.passage_embedder = Named("all-minilm-l6-v2")

    def embedder_named(self, name: str) -> Named:
        return Named(name)


def test_a_fresh_corpus_takes_the_default_and_is_queried_with_it() -> None:
    store = Store(0)
    p = FakePlatform(store)
    assert ready_to_load(p, WIKIPEDIA).name == DEFAULT_CORPUS_MODEL  # type: ignore[arg-type]
    assert store.records["corpus:wikipedia"]["model"] == DEFAULT_CORPUS_MODEL
    store.passages = 10
    assert corpus_embedder(p, WIKIPEDIA).name == DEFAULT_CORPUS_MODEL  # type: ignore[arg-type]
    fresh = FakePlatform(Store(0), "e5-small-v2")
    assert ready_to_load(fresh, WIKIPEDIA).name == "e5-small-v2"  # type: ignore[arg-type]
    # MedQuAD (its recall unmeasured) keeps the entity embedder
    assert ready_to_load(FakePlatform(Store(0)), MEDICAL).name == "all-minilm-l6-v2"  # type: ignore[arg-type]


def test_a_stored_corpus_keeps_its_model_and_refuses_another_configured_one() -> None:
    store = Store(10)  # stored before models were recorded: MiniLM
    assert ready_to_load(FakePlatform(store), MEDICAL).name == "all-minilm-l6-v2"  # type: ignore[arg-type]
    with pytest.raises(VectorModelMismatch, match="corpus:medical were made by") as e:
        corpus_embedder(FakePlatform(store, "e5-small-v2"), MEDICAL)  # type: ignore[arg-type]
    assert "kgrag corpus embed --domain medical --model e5-small-v2" in e.value.hint


def test_a_domain_s_passages_are_queried_only_with_the_model_that_embedded_them() -> None:
    from textrag.corpora import chunk_corpus

    store = Store(3)
    p = FakePlatform(store)
    mine = chunk_corpus("mydocs")
    assert corpus_embedder(p, mine).name == "all-minilm-l6-v2"  # type: ignore[arg-type]
    store.records["corpus:mydocs"] = {"scope": "corpus:mydocs", "model": "bge-small-en-v1.5-q",
                                      "complete": True, "previous": None}
    with pytest.raises(VectorModelMismatch, match="mydocs were embedded by bge") as e:
        corpus_embedder(p, mine)  # type: ignore[arg-type]
    assert "KGRAG_EMBEDDING__PASSAGE_MODEL=bge-small-en-v1.5-q" in e.value.hint
