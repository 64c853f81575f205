"""Sentence embeddings behind a small protocol, with an in-memory cache.

Vectors are L2-normalised float32, so cosine similarity is a dot product (here and in
Neo4j's `vector.similarity.cosine`). The default model is all-MiniLM-L6-v2 (384-d),
loaded from its offline PyPI package with no network access.

>>> e = SentenceTransformerEmbedder(path)
>>> e.embed(["fox", "forest"]).shape
(2, 384)
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from kgrag.errors import ModelError


@runtime_checkable
class Embedder(Protocol):
    name: str
    dimensions: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dimensions) float32, rows L2-normalised."""
        ...


class SentenceTransformerEmbedder:
    """sentence-transformers on the CPU, with an LRU cache keyed by text."""

    def __init__(self, path: Path, *, name: str = "", batch_size: int = 64,
                 cache_size: int = 100_000) -> None:
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
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self.hits = self.misses = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dimensions), dtype=np.float32)
        todo: dict[str, list[int]] = {}
        for i, t in enumerate(texts):
            cached = self._cache.get(t)
            if cached is not None:
                self._cache.move_to_end(t)
                out[i] = cached
                self.hits += 1
            else:
                todo.setdefault(t, []).append(i)
        if todo:
            uniq = list(todo)
            self.misses += len(uniq)
            vecs = self._model.encode(uniq, batch_size=self.batch_size, convert_to_numpy=True,
                                      normalize_embeddings=True, show_progress_bar=False)
            for t, v in zip(uniq, vecs, strict=True):
                v = v.astype(np.float32)
                for i in todo[t]:
                    out[i] = v
                self._cache[t] = v
                if len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return out


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity matrix of row-normalised a (m×d) and b (n×d): m×n."""
    return a @ b.T
