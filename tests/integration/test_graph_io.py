"""Idempotent writes, export and import of a domain graph against the real Neo4j."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import numpy as np

from kg_builder.graph_io import GraphWriter, WriteReport, export_graph, import_graph

HOSTILE = "}) DETACH DELETE n //"


class HashEmbedder:
    """Deterministic stand-in vectors: these tests check writes, not similarity."""

    name, dimensions = "hash", 384

    def embed(self, texts):
        out = []
        for t in texts:
            seed = int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little")
            v = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
            out.append(v / np.linalg.norm(v))
        return np.array(out)


def _rows():
    chunks = [{"id": "c1", "doc": "d1", "text": "Foxes live in forests.", "source": "t.jsonl",
               "title": "fox", "line": 1},
              {"id": "c2", "doc": "d1", "text": f"Name {HOSTILE}", "source": "t.jsonl",
               "title": "fox", "line": 2}]
    entities = [{"key": "fox", "name": "Fox", "aliases": ["foxes"]},
                {"key": "forest", "name": "forest", "aliases": []},
                {"key": HOSTILE, "name": HOSTILE, "aliases": ["`x`"]}]
    facts = [{"h": "fox", "r": "lives in", "t": "forest", "k": "spatial", "chunks": ["c1"],
              "conf": 1.0},
             {"h": HOSTILE, "r": "is a", "t": "fox", "k": "conceptual", "chunks": ["c2"],
              "conf": 0.5}]
    return chunks, entities, facts


def test_write_twice_creates_nothing_the_second_time(platform, test_domain) -> None:
    writer = GraphWriter(platform.store, HashEmbedder(), test_domain)
    first, second = WriteReport(test_domain), WriteReport(test_domain)
    writer.write(*_rows(), first)
    assert first.nodes_created == 2 + 1 + 3  # chunks, document, entities
    assert first.relationships_created == 2 + 2 + 4  # HAS_CHUNK, REL, MENTIONS
    assert first.embedded == 3
    writer.write(*_rows(), second)
    assert (second.nodes_created, second.relationships_created, second.embedded) == (0, 0, 0)
    stats = platform.store.read("kg/stats", {"domain": test_domain})[0]
    assert stats == {"entities": 3, "relations": 2, "with_provenance": 2, "orphans": 0,
                     "chunks": 2, "without_embedding": 0}


def test_export_then_import_round_trips(platform, test_domain, tmp_path: Path) -> None:
    GraphWriter(platform.store, HashEmbedder(), test_domain).write(*_rows(),
                                                                   WriteReport(test_domain))
    out = tmp_path / "g.jsonl.gz"
    counts = export_graph(platform.store, test_domain, out, {"model": "test"})
    assert counts == {"entities": 3, "facts": 2, "chunks": 2}
    platform.store.run_autocommit("graph/delete_domain", {"domain": test_domain})
    report = import_graph(platform.store, None, out)  # vectors come from the file
    assert (report.entities, report.facts, report.chunks) == (3, 2, 2)
    assert report.embedded == 3
    again = import_graph(platform.store, None, out)
    assert (again.nodes_created, again.relationships_created) == (0, 0)
    facts = platform.store.read("kg/export_facts", {"domain": test_domain})
    assert {(f["h"], f["r"], f["t"]) for f in facts} == {
        ("fox", "lives in", "forest"), (HOSTILE, "is a", "fox")}


def test_a_broken_line_is_skipped_and_reported(platform, test_domain, tmp_path: Path) -> None:
    GraphWriter(platform.store, HashEmbedder(), test_domain).write(*_rows(),
                                                                   WriteReport(test_domain))
    good = tmp_path / "g.jsonl.gz"
    export_graph(platform.store, test_domain, good, {})
    with gzip.open(good, "rt") as f:
        lines = f.read().splitlines()
    lines.insert(3, '{"type": "entity", "key": ')  # truncated JSON at line 4
    bad = tmp_path / "bad.jsonl.gz"
    with gzip.open(bad, "wt") as f:
        f.write("\n".join(lines) + "\n")
    report = import_graph(platform.store, None, bad)
    assert report.skipped_lines == [4]
    assert report.facts == 2
