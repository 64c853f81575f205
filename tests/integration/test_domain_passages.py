"""A domain's chunks as its passages, on the real Neo4j: BM25 and dense search stay within
the domain asked for, indexing is idempotent, and a domain without passages is
DomainNotBuilt naming the command that builds it. (A hashing embedder stands in for
MiniLM: these tests check the filters, not retrieval quality.)"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from kg_builder.passages import index_passages
from kg_builder.sources import load, user_source
from kgrag.errors import DomainNotBuilt
from textrag.corpora import corpus_for_domain
from textrag.retrievers import BM25Retriever, DenseRetriever

NOTE = """# Comets

Paul Okafor discovered the comet that returns every 71 years.

# Instruments

The lens of the large refractor was ground by Anton Rusk.
"""


class HashEmbedder:
    """Bag of hashed words, L2-normalised: texts sharing words are close."""

    name, dimensions = "hash", 384

    def embed(self, texts: Sequence[str], kind: str = "passage") -> np.ndarray:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().replace(".", " ").replace(":", " ").split():
                out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % self.dimensions] += 1
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


@pytest.fixture()
def two_domains(platform, tmp_path: Path):  # type: ignore[no-untyped-def]
    names = [f"test-pass-{i}-{tmp_path.name[-6:]}" for i in (1, 2)]
    path = tmp_path / "note.md"
    path.write_text(NOTE)
    for name in names:
        chunks, _ = load(user_source(path, name))
        index_passages(platform.store, HashEmbedder(), name, chunks, progress=False)
    yield names
    for name in names:
        platform.store.run_autocommit("graph/delete_domain", {"domain": name})


def test_search_returns_only_the_passages_of_the_domain_asked_for(platform, two_domains
                                                                  ) -> None:  # type: ignore[no-untyped-def]
    a, b = two_domains
    for retriever in (BM25Retriever(platform.store, corpus_for_domain(a)),
                      DenseRetriever(platform.store, HashEmbedder(), corpus_for_domain(a))):
        hits = retriever.search("Who discovered the comet?", 5)
        assert [h.passage.id for h in hits][:1] == [f"{a}:note:L3"], retriever.kind
        assert all(h.passage.id.startswith(f"{a}:") for h in hits)
        assert hits[0].passage.title == "Comets"


def test_indexing_again_writes_nothing_and_a_changed_file_prunes_its_old_passages(
        platform, two_domains, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    a, _ = two_domains
    path = tmp_path / "note.md"
    chunks, _ = load(user_source(path, a))
    again = index_passages(platform.store, HashEmbedder(), a, chunks, progress=False)
    assert (again.written, again.unchanged, again.removed) == (0, 2, 0)
    path.write_text("# Comets\n\nOnly one paragraph is left.\n")
    chunks, _ = load(user_source(path, a))
    edited = index_passages(platform.store, HashEmbedder(), a, chunks, progress=False)
    assert (edited.written, edited.removed) == (1, 1)
    count = platform.store.read("textrag/chunks/count_passages", {"domain": a})[0]
    assert (count["passages"], count["embedded"]) == (1, 1)


def test_a_domain_without_passages_is_domain_not_built_with_the_build_command(platform
                                                                              ) -> None:  # type: ignore[no-untyped-def]
    from textrag.setting import open_retriever

    with pytest.raises(DomainNotBuilt) as e:
        open_retriever(platform, "bm25", "test-never-built")
    assert "kgrag build --domain test-never-built --source" in str(e.value)
