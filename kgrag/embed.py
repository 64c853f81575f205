"""Sentence embeddings behind a small protocol, with an in-memory cache.

Vectors are L2-normalised float32, so cosine similarity is a dot product (here and in
Neo4j's `vector.similarity.cosine`). The default model is all-MiniLM-L6-v2 (384-d),
loaded from its offline PyPI package with no network access.

A query-sized call (at most `query_batch` texts) runs on `query_threads` torch threads
(default 1): a forward pass over a dozen tokens is too small to split, and on a busy
machine every parallel op waits for the descheduled second thread (one query: 15 ms on
one thread, 62-430 ms on two; MiniLM, 2 cores under load). Larger batches keep torch's
own setting. The thread count changes how the matrix products sum, so a query vector
can differ from the two-thread one in the last float32 bits (at most 1.3e-7 seen).

    e = SentenceTransformerEmbedder(path)
    e.embed(["fox", "forest"]).shape
    # -> (2, 384)
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from kgrag.errors import ModelError

# A search query and the text it should find can take different prefixes (bge's
# instruction, e5's `query: ` / `passage: `); symmetric models ignore the kind.
EmbedKind = Literal["document", "query"]


@runtime_checkable
class Embedder(Protocol):
    name: str
    dimensions: int

    def embed(self, texts: Sequence[str], kind: EmbedKind = "document") -> np.ndarray:
        """(len(texts), dimensions) float32, rows L2-normalised. `kind="query"` for
        search queries matched against documents; "document" for everything else."""
        ...


class VectorCache:
    """A bounded LRU map from text to vector; counts hits and misses. Not thread-safe.

        c = VectorCache(2)
        c.put("a", v); c.get("a") is v, c.hits
        # -> (True, 1)
    """

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError(f"cache size must be >= 0, got {size}")
        self.size = size
        self._items: OrderedDict[str, np.ndarray] = OrderedDict()
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    def get(self, text: str) -> np.ndarray | None:
        vector = self._items.get(text)
        if vector is None:
            self.misses += 1
        else:
            self._items.move_to_end(text)
            self.hits += 1
        return vector

    def put(self, text: str, vector: np.ndarray) -> None:
        if self.size == 0:
            return
        self._items[text] = vector
        self._items.move_to_end(text)
        if len(self._items) > self.size:
            self._items.popitem(last=False)


@contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Run the block on `n` intra-op torch threads (None: unchanged), then restore."""
    import torch

    before = torch.get_num_threads()
    if n is None or n == before:
        yield
        return
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class SentenceTransformerEmbedder:
    """sentence-transformers on the CPU, with an LRU cache keyed by text.

    Safe to call from several threads (one encode at a time). `hits` and `misses` count
    texts served from and missing in the cache.

        e = SentenceTransformerEmbedder(path)
        e.embed(["who directed jaws"]).shape   # one query: one torch thread
        # -> (1, 384)
    """

    def __init__(self, path: Path, *, name: str = "", batch_size: int = 64,
                 cache_size: int = 100_000, query_batch: int = 8,
                 query_threads: int | None = 1) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for a hub at run time
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as e:  # pragma: no cover - a dependency of kgrag
            raise ModelError("sentence-transformers is not installed",
                             hint="re-run `make install`") from e
        self.name = name or path.name
        self._model = SentenceTransformer(str(path), device="cpu")
        dims = self._model.get_embedding_dimension()
        if dims is None:
            raise ModelError(f"{path} does not declare its embedding size")
        self.dimensions = int(dims)
        self.batch_size = batch_size
        self.query_batch, self.query_threads = query_batch, query_threads
        self._cache = VectorCache(cache_size)
        self._lock = threading.Lock()  # the cache and torch's thread setting are shared

    @property
    def hits(self) -> int:
        return self._cache.hits

    @property
    def misses(self) -> int:
        return self._cache.misses

    def embed(self, texts: Sequence[str], kind: EmbedKind = "document") -> np.ndarray:
        """MiniLM is symmetric: `kind` changes nothing."""
        out = np.empty((len(texts), self.dimensions), dtype=np.float32)
        with self._lock:
            todo: dict[str, list[int]] = {}
            for i, t in enumerate(texts):
                if t in todo:  # a repeat within the call: encoded once, counted once
                    todo[t].append(i)
                elif (cached := self._cache.get(t)) is not None:
                    out[i] = cached
                else:
                    todo[t] = [i]
            if todo:
                uniq = list(todo)
                threads = self.query_threads if len(uniq) <= self.query_batch else None
                with torch_threads(threads):
                    vecs = self._model.encode(uniq, batch_size=self.batch_size,
                                              convert_to_numpy=True, normalize_embeddings=True,
                                              show_progress_bar=False)
                for t, v in zip(uniq, vecs, strict=True):
                    v = v.astype(np.float32)  # own the row, not a view of the batch
                    out[todo[t]] = v
                    self._cache.put(t, v)
        return out


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity matrix of row-normalised a (m×d) and b (n×d): m×n."""
    return a @ b.T
