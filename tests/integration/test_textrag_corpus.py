"""The passage corpus against the real Neo4j: loading, idempotence, the three retrievers,
hostile queries. ~200 real Wikipedia passages are loaded under test ids and deleted after."""

from __future__ import annotations

import gzip
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from kgrag.types import Passage
from textrag.corpus import LoadReport, default_corpus_path, delete_passages, load_corpus
from textrag.corpus_vectors import corpus_embedder, ready_to_load
from textrag.retrievers import (
    BM25Retriever,
    DenseRetriever,
    HybridRetriever,
    reciprocal_rank_fusion,
)

N = 200
HOSTILE = [
    'AND OR (foo" [bar]',
    "}) DETACH DELETE n //",
    "x'}) MATCH (m) DETACH DELETE m //",
    "NOT", "title:* OR text:*", "a && b || !c", "fo~ba^2 {a TO z}", '"unclosed',
    "C:\\path\\file /regex/", "line one\nline two", "emoji 🧠🔥 and ünïcödé",
    "$rows {domain: 'evil'}", "", "   ", "?", "word " * 2000,
]


@dataclass
class Loaded:
    prefix: str
    passages: list[Passage]
    file: Path
    first: LoadReport


@pytest.fixture(scope="module")
def loaded(platform, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loaded]:
    src = default_corpus_path(platform.settings)
    lines = []
    with gzip.open(src, "rt", encoding="utf-8") as f:
        for _, line in zip(range(N), f, strict=False):
            lines.append(line.rstrip("\n"))
    # line N+1 is broken JSON, line N+2 repeats the first id: both skipped and counted
    file = tmp_path_factory.mktemp("corpus") / "sample.jsonl"
    file.write_text("\n".join([*lines, '{"id": "broken", "title": ', lines[0]]) + "\n",
                    encoding="utf-8")
    passages = [Passage.model_validate(json.loads(x)) for x in lines]
    prefix = f"test-textrag-{uuid.uuid4().hex[:8]}:"
    try:
        first = load_corpus(platform.store, ready_to_load(platform), file, id_prefix=prefix,
                            progress=False)
        yield Loaded(prefix, passages, file, first)
    finally:
        delete_passages(platform.store, prefix)


def _query(p: Passage) -> str:
    return f"{p.title} {' '.join(p.text.split()[:12])}"


SAMPLE = [0, 7, 42, 99, 150, 199]


def test_load_writes_every_valid_passage_and_reports_broken_lines(loaded: Loaded) -> None:
    r = loaded.first
    assert (r.read, r.written, r.nodes_created) == (N, N, N)
    assert r.broken == 2
    assert [p.line for p in r.problems] == [N + 1, N + 2]
    assert "invalid JSON" in r.problems[0].message and "repeated id" in r.problems[1].message


def test_reload_writes_nothing(platform, loaded: Loaded) -> None:
    again = load_corpus(platform.store, ready_to_load(platform), loaded.file,
                        id_prefix=loaded.prefix, progress=False)
    assert (again.written, again.nodes_created, again.skipped_existing) == (0, 0, N)


def test_changed_text_is_rewritten_in_place(platform, loaded: Loaded, tmp_path: Path) -> None:
    p = loaded.passages[3]
    changed = tmp_path / "changed.jsonl"
    changed.write_text(json.dumps({"id": p.id, "title": p.title,
                                   "text": p.text + " Zyxwvut marker sentence."}) + "\n")
    try:
        r = load_corpus(platform.store, ready_to_load(platform), changed, id_prefix=loaded.prefix,
                        progress=False)
        assert (r.written, r.nodes_created) == (1, 0)
        hits = BM25Retriever(platform.store).search("Zyxwvut", k=3)
        assert [h.passage.id for h in hits] == [loaded.prefix + p.id]
    finally:  # put the original back for the other tests
        load_corpus(platform.store, ready_to_load(platform), loaded.file, id_prefix=loaded.prefix,
                    progress=False, limit=N)


@pytest.mark.parametrize("kind", ["bm25", "dense", "hybrid"])
def test_retrievers_find_the_loaded_passages(platform, loaded: Loaded, kind: str) -> None:
    bm25 = BM25Retriever(platform.store)
    dense = DenseRetriever(platform.store, corpus_embedder(platform))
    retriever = {"bm25": bm25, "dense": dense, "hybrid": HybridRetriever([bm25, dense])}[kind]
    for i in SAMPLE:
        p = loaded.passages[i]
        hits = retriever.search(_query(p), k=10)
        # the full corpus may hold the same paragraph under its own id: either copy counts
        ids = [h.passage.id for h in hits]
        assert loaded.prefix + p.id in ids or p.id in ids, (kind, p.title, ids)
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
        mine = next(h for h in hits if h.passage.id in (loaded.prefix + p.id, p.id))
        assert mine.passage.text == p.text and mine.passage.title == p.title


@pytest.mark.parametrize("query", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_queries_neither_fail_nor_write(platform, loaded: Loaded, query: str) -> None:
    before = platform.store.read("textrag/count_passages")[0]
    bm25 = BM25Retriever(platform.store)
    dense = DenseRetriever(platform.store, corpus_embedder(platform))
    for r in (bm25, dense, HybridRetriever([bm25, dense])):
        hits = r.search(query, k=5)
        assert len(hits) <= 5
        if not query.strip() or query == "?":
            assert hits == []
    assert platform.store.read("textrag/count_passages")[0] == before


def test_open_method_factories_build_against_the_corpus(platform, loaded: Loaded) -> None:
    from textrag.setting import open_retriever

    for kind in ("bm25", "dense", "hybrid"):
        r = open_retriever(platform, kind)
        assert r.setting == "open"
        assert r.search(_query(loaded.passages[0]), k=3)


def test_hybrid_is_the_rrf_of_its_parts_on_the_bench_queries(platform) -> None:
    # the ranking hybrid returns is exactly RRF over BM25's and dense's own top-20 lists
    titles = [r["title"] for r in platform.store.read("textrag/sample_titles", {"n": 10})]
    bm25 = BM25Retriever(platform.store)
    dense = DenseRetriever(platform.store, corpus_embedder(platform))
    hybrid = HybridRetriever([bm25, dense], depth=20)
    for q in titles:
        parts = [[h.passage for h in r.search(q, 20)] for r in (bm25, dense)]
        expected = [(p.id, s) for p, s in reciprocal_rank_fusion(parts, 60)[:5]]
        assert [(h.passage.id, h.score) for h in hybrid.search(q, 5)] == expected, q


def test_a_single_query_vector_matches_the_batch_vector(platform) -> None:
    # a query-sized call runs on one torch thread, a batch on torch's own setting: the
    # vectors may differ in the last float32 bits only, and torch's setting is restored
    import torch

    titles = [r["title"] for r in platform.store.read("textrag/sample_titles", {"n": 20})]
    texts = [f"{t} {uuid.uuid4().hex}" for t in titles]  # never cached
    threads = torch.get_num_threads()
    batch = platform.embedder.embed(texts)
    one = np.stack([platform.embedder.embed([t])[0] for t in reversed(texts)])[::-1]
    assert torch.get_num_threads() == threads
    assert np.abs(batch - one).max() < 1e-5
