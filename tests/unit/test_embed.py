"""The embedder's cache and thread handling, with a fake sentence-transformers model.

The fake records how many torch threads each encode ran on; no model is loaded.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from kgrag.embed import SentenceTransformerEmbedder, VectorCache, torch_threads

DIMS = 4


class FakeModel:
    """Deterministic unit vectors from the text; logs (texts, torch threads) per encode."""

    calls: list[tuple[list[str], int]]

    def __init__(self, path: str, device: str) -> None:
        self.calls = []

    def get_embedding_dimension(self) -> int:
        return DIMS

    def encode(self, texts: list[str], **kwargs: object) -> np.ndarray:
        self.calls.append((list(texts), torch.get_num_threads()))
        rows = [np.random.default_rng(sum(map(ord, t))).random(DIMS) + 0.1 for t in texts]
        m = np.array(rows, dtype=np.float64)  # float64 on purpose: embed() returns float32
        return m / np.linalg.norm(m, axis=1, keepdims=True)


@pytest.fixture()
def embedder(monkeypatch: pytest.MonkeyPatch) -> Iterator[SentenceTransformerEmbedder]:
    import sentence_transformers

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", FakeModel)
    before = torch.get_num_threads()
    torch.set_num_threads(2)  # what torch picks on the 2-core machines
    try:
        yield SentenceTransformerEmbedder(Path("fake-model"), cache_size=3, query_batch=2)
    finally:
        torch.set_num_threads(before)


def _model(e: SentenceTransformerEmbedder) -> FakeModel:
    model = e._model
    assert isinstance(model, FakeModel)
    return model


def test_the_cache_returns_identical_vectors_and_counts_hits(
        embedder: SentenceTransformerEmbedder) -> None:
    first = embedder.embed(["a query"])
    again = embedder.embed(["a query"])
    assert again.dtype == np.float32 and np.array_equal(first, again)
    assert len(_model(embedder).calls) == 1
    assert (embedder.hits, embedder.misses) == (1, 1)


def test_a_returned_array_does_not_alias_the_cache(embedder: SentenceTransformerEmbedder) -> None:
    first = embedder.embed(["x"])
    first[0] = 0.0
    assert np.linalg.norm(embedder.embed(["x"])[0]) == pytest.approx(1.0)


def test_the_cache_is_bounded_and_evicts_the_least_recently_used(
        embedder: SentenceTransformerEmbedder) -> None:
    embedder.embed(["a", "b"])
    embedder.embed(["c"])
    embedder.embed(["a"])  # a is now the most recent; b the least
    embedder.embed(["d"])  # a 4th text in a cache of 3 evicts b
    assert len(embedder._cache) == 3
    calls = len(_model(embedder).calls)
    embedder.embed(["a", "c", "d"])
    assert len(_model(embedder).calls) == calls
    embedder.embed(["b"])
    assert _model(embedder).calls[-1][0] == ["b"]


def test_repeats_within_a_call_are_encoded_once(embedder: SentenceTransformerEmbedder) -> None:
    v = embedder.embed(["p", "q", "p"])
    assert _model(embedder).calls[0][0] == ["p", "q"]
    assert np.array_equal(v[0], v[2]) and not np.array_equal(v[0], v[1])
    assert (embedder.hits, embedder.misses) == (0, 2)


def test_query_sized_calls_run_on_one_thread_and_batches_keep_torchs_setting(
        embedder: SentenceTransformerEmbedder) -> None:
    embedder.embed(["one query"])
    embedder.embed(["two", "texts"])
    embedder.embed(["a", "batch", "of three"])
    assert [threads for _, threads in _model(embedder).calls] == [1, 1, 2]
    assert torch.get_num_threads() == 2


def test_query_threads_none_leaves_torch_alone(embedder: SentenceTransformerEmbedder) -> None:
    embedder.query_threads = None
    embedder.embed(["one query"])
    assert _model(embedder).calls[-1][1] == 2


def test_the_thread_setting_is_restored_when_encoding_fails(
        embedder: SentenceTransformerEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(texts: list[str], **kwargs: object) -> np.ndarray:
        raise RuntimeError("boom")

    monkeypatch.setattr(_model(embedder), "encode", fail)
    with pytest.raises(RuntimeError, match="boom"):
        embedder.embed(["q"])
    assert torch.get_num_threads() == 2


def test_concurrent_callers_get_the_same_vectors(embedder: SentenceTransformerEmbedder) -> None:
    texts = [f"query {i}" for i in range(40)]
    expected = {t: embedder.embed([t])[0].copy() for t in texts}
    embedder._cache = VectorCache(3)  # mostly misses again, from 4 threads at once
    errors: list[str] = []

    def work(offset: int) -> None:
        for t in texts[offset:] + texts[:offset]:
            if not np.array_equal(embedder.embed([t])[0], expected[t]):
                errors.append(t)

    threads = [threading.Thread(target=work, args=(i * 10,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(embedder._cache) == 3


def test_vector_cache_counts_and_refuses_a_negative_size() -> None:
    c = VectorCache(1)
    v = np.ones(2, dtype=np.float32)
    assert c.get("a") is None
    c.put("a", v)
    assert c.get("a") is v and (c.hits, c.misses) == (1, 1)
    c.put("b", v)
    assert c.get("a") is None and len(c) == 1
    off = VectorCache(0)
    off.put("a", v)
    assert len(off) == 0
    with pytest.raises(ValueError):
        VectorCache(-1)


def test_torch_threads_sets_and_restores() -> None:
    before = torch.get_num_threads()
    target = 1 if before != 1 else 2
    with torch_threads(target):
        assert torch.get_num_threads() == target
    assert torch.get_num_threads() == before
    with torch_threads(None):
        assert torch.get_num_threads() == before

