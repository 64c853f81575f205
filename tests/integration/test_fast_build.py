"""A fast (spaCy) build of a small source against the real Neo4j and the real spaCy model:
provenance on every fact, co-occurrence counted apart, an idempotent re-run, resume after
an interrupt, bad input counted and nothing lost."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from kg_builder.extract import ExtractionResult
from kg_builder.fast_extract import FastConfig, FastExtractor
from kg_builder.jobs import BuildJob
from kg_builder.sources import Chunk
from kgrag.config import Settings
from tests.integration.test_graph_io import HashEmbedder

TEXTS = [
    "Foxes live in forests.",
    "A knife is used for cutting bread.",
    "Paris, the capital of France, is a city on the Seine.",
    "Question: Where would you find a fox?\nAnswer: forest",
    "",  # empty: skipped, counted
    "Aspirin is a drug that reduces fever.",
    "x'}) MATCH (m) DETACH DELETE m // is a `name` of the graph.",  # hostile text: data
    "狐狸生活在森林里，猫头鹰也住在那里。",  # not English: skipped, counted
]


@pytest.fixture(scope="module")
def nlp():
    from kg_builder.fast_extract import load_pipeline

    return load_pipeline()


class FastPlatform:
    def __init__(self, real, home: Path) -> None:
        self.store = real.store
        self.embedder = self.passage_embedder = HashEmbedder()
        self.settings = Settings(home=home)


def _chunks(domain: str) -> list[Chunk]:
    return [Chunk(id=f"{domain}:src:{i}", domain=domain, document_id=f"{domain}:src:{i}",
                  text=t, source="src.jsonl", line=i + 1) for i, t in enumerate(TEXTS)]


def _job(real, nlp, tmp_path, domain, extractor=None) -> BuildJob:
    ex = extractor or FastExtractor(nlp, domain, FastConfig(batch_size=3))
    return BuildJob(FastPlatform(real, tmp_path), domain, _chunks(domain),  # type: ignore[arg-type]
                    ["src.jsonl"], extractor=ex)


def _facts(platform, domain) -> list[dict]:
    return platform.store.read("kg/export_facts", {"domain": domain})


def test_fast_build_provenance_idempotence_and_bad_input(platform, test_domain, tmp_path,
                                                         nlp) -> None:
    record = _job(platform, nlp, tmp_path, test_domain).run(progress=False)
    assert record.status == "done" and record.extractor == "spacy"
    assert record.records_done == len(TEXTS) and record.records_failed == 0
    assert record.records_skipped == {"empty": 1, "not_english": 1}
    assert sorted(record.skipped_ids) == [f"{test_domain}:src:4", f"{test_domain}:src:7"]
    stats = platform.store.read("kg/stats", {"domain": test_domain})[0]
    assert stats["relations"] == record.triples > 0
    assert stats["with_provenance"] == stats["relations"]  # every fact has its chunks
    assert stats["co_occurrences"] > 0  # counted apart from the relation facts
    facts = _facts(platform, test_domain)
    assert {f["x"] for f in facts} == {"spacy"}
    triples = {(f["h"], f["r"], f["t"]) for f in facts}
    assert ("fox", "live in", "forest") in triples
    assert ("knife", "used for", "cut bread") in triples
    assert ("fox", "find in", "forest") in triples  # the answer stands for "where"
    chunk_ids = {c["id"] for c in platform.store.read("kg/export_chunks",
                                                      {"domain": test_domain})}
    assert all(set(f["chunks"]) <= chunk_ids for f in facts)  # provenance resolves
    keys = {e["key"] for e in platform.store.read("kg/export_entities",
                                                  {"domain": test_domain})}
    assert "match" in keys and "fox" in keys  # Cypher-looking text is data, not a query
    texts = {c["id"]: c["text"] for c in platform.store.read("kg/export_chunks",
                                                           {"domain": test_domain})}
    assert texts[f"{test_domain}:src:6"] == TEXTS[6]  # stored verbatim, quotes and all
    # the same command again writes nothing and reads no chunk again; of the saved batches
    # (3 here) only the last is sent again (the only one an interrupt could have cut off)
    rerun = _job(platform, nlp, tmp_path, test_domain)
    sent: list[int] = []
    real_write = rerun.writer.write
    rerun.writer.write = lambda c, e, f, r: (sent.append(len(f)), real_write(c, e, f, r))
    again = rerun.run(progress=False)
    assert len(sent) == 1
    assert again.nodes_created == record.nodes_created
    assert again.relationships_created == record.relationships_created
    assert platform.store.read("kg/stats", {"domain": test_domain})[0] == stats


class Interrupting:
    """A fast extractor that stops (as Ctrl-C would) after its first batch."""

    def __init__(self, inner: FastExtractor) -> None:
        self.inner = inner
        self.config = inner.config
        self.name, self.model_name = inner.name, inner.model_name
        self.model_sha256 = inner.model_sha256

    def prompt_digest(self) -> str:
        return self.inner.prompt_digest()

    def stream(self, chunks: Sequence[Chunk], on_reply=None
               ) -> Iterator[tuple[list[Chunk], ExtractionResult]]:
        for n, pair in enumerate(self.inner.stream(chunks, on_reply)):
            if n == 1:
                raise KeyboardInterrupt
            yield pair


def test_fast_build_resumes_after_an_interrupt(platform, test_domain, tmp_path, nlp) -> None:
    ex = FastExtractor(nlp, test_domain, FastConfig(batch_size=3))
    job = _job(platform, nlp, tmp_path, test_domain, Interrupting(ex))
    with pytest.raises(KeyboardInterrupt):
        job.run(progress=False)
    assert job.record.status == "interrupted" and job.record.records_done == 3
    partial = platform.store.read("kg/stats", {"domain": test_domain})[0]["relations"]
    resumed = _job(platform, nlp, tmp_path, test_domain)
    assert resumed.dir == job.dir  # the same job: its id depends on the extractor
    record = resumed.run(progress=False)
    assert record.status == "done" and record.records_done == len(TEXTS)
    stats = platform.store.read("kg/stats", {"domain": test_domain})[0]
    assert stats["relations"] > partial and stats["with_provenance"] == stats["relations"]


def test_fast_and_llm_jobs_have_different_ids(platform, test_domain, tmp_path, nlp) -> None:
    from kg_builder.jobs import job_id

    fast = _job(platform, nlp, tmp_path, test_domain)
    llm = job_id(test_domain, ["src.jsonl"], "qwen2.5-coder-1.5b",
                 fast.record.prompt_hash, fast.extractor.config)
    assert fast.record.id != llm and fast.record.model.startswith("en_core_web_sm")


def test_deferred_embeddings_are_stored_later(platform, test_domain, tmp_path, nlp) -> None:
    """`kgrag build --defer-embeddings`: entities are written without vectors, and
    `GraphWriter.embed_missing` (what `kgrag graph embed` runs) stores them afterwards."""
    from kg_builder.graph_io import GraphWriter, WriteReport

    ex = FastExtractor(nlp, test_domain, FastConfig(batch_size=3))
    job = BuildJob(FastPlatform(platform, tmp_path), test_domain,  # type: ignore[arg-type]
                   _chunks(test_domain), ["src.jsonl"], extractor=ex, embed=False,
                   resolve=False)
    job.run(progress=False)
    stats = platform.store.read("kg/stats", {"domain": test_domain})[0]
    assert stats["entities"] > 0 and stats["without_embedding"] == stats["entities"]
    report = WriteReport(test_domain)
    GraphWriter(platform.store, HashEmbedder(), test_domain).embed_missing(report)
    assert report.embedded == stats["entities"]
    assert platform.store.read("kg/stats", {"domain": test_domain})[0]["without_embedding"] == 0
    again = WriteReport(test_domain)
    GraphWriter(platform.store, HashEmbedder(), test_domain).embed_missing(again)
    assert again.embedded == 0  # resumable: nothing left to do
