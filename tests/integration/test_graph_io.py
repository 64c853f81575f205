"""Idempotent writes, export and import of a domain graph against the real Neo4j."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from kg_builder.graph_io import GraphWriter, WriteReport, export_graph, import_graph
from kg_builder.quality import components
from kgrag.errors import KgragError

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
                     "co_occurrences": 0, "chunks": 2, "without_embedding": 0}
    edges = platform.store.read("kg/edges", {"domain": test_domain})
    assert sorted((e["h"], e["t"], e["k"]) for e in edges) == [
        ("fox", "forest", "spatial"), (HOSTILE, "fox", "conceptual")]
    assert components([], ((e["h"], e["t"]) for e in edges)) == [3]


def test_export_then_import_round_trips(platform, test_domain, tmp_path: Path) -> None:
    GraphWriter(platform.store, HashEmbedder(), test_domain).write(*_rows(),
                                                                   WriteReport(test_domain))
    out = tmp_path / "g.jsonl.gz"
    platform.store.write_batch("kg/merge_cooccurs", [  # a fast build's co-occurrence edge
        {"h": "forest", "t": HOSTILE, "chunks": ["c1", "c2"], "ws": [1, 2]}],
        {"domain": test_domain})
    counts = export_graph(platform.store, test_domain, out, {"model": "test"})
    assert counts == {"entities": 3, "facts": 2, "chunks": 2, "cooccurs": 1}
    platform.store.run_autocommit("graph/delete_domain", {"domain": test_domain})
    report = import_graph(platform.store, None, out)  # vectors come from the file
    assert (report.entities, report.facts, report.chunks) == (3, 2, 2)
    assert report.embedded == 3
    stats = platform.store.read("kg/stats", {"domain": test_domain})[0]
    assert (stats["relations"], stats["co_occurrences"]) == (2, 1)  # counted apart
    edge = platform.store.read("kg/export_cooccurs", {"domain": test_domain})
    assert edge == [{"h": "forest", "t": HOSTILE, "w": 3, "chunks": ["c1", "c2"]}]
    again = import_graph(platform.store, None, out)
    assert (again.nodes_created, again.relationships_created) == (0, 0)
    facts = platform.store.read("kg/export_facts", {"domain": test_domain})
    assert {(f["h"], f["r"], f["t"]) for f in facts} == {
        ("fox", "lives in", "forest"), (HOSTILE, "is a", "fox")}


def test_an_export_pages_through_entities_and_keeps_a_knowledge_base_s_weights(
        platform, test_domain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Entities are read a page at a time (here 2 of 3 per page); a fact's score, freq and
    assertions (ConceptNet's) survive the round trip, and facts without them carry none."""
    import kg_builder.graph_io as graph_io

    chunks, entities, facts = _rows()
    facts[0] = {**facts[0], "score": 2, "freq": 5, "assertions": [7, 9]}
    GraphWriter(platform.store, HashEmbedder(), test_domain).write(
        chunks, entities, facts, WriteReport(test_domain))
    monkeypatch.setattr(graph_io, "EXPORT_PAGE", 2)
    out = tmp_path / "g.jsonl.gz"
    assert export_graph(platform.store, test_domain, out, {})["entities"] == 3
    with gzip.open(out, "rt") as f:
        lines = [json.loads(line) for line in f]
    assert sorted(r["key"] for r in lines if r["type"] == "entity") == sorted(
        e["key"] for e in entities)
    weighted = [r for r in lines if r["type"] == "fact" and "score" in r]
    assert [(r["h"], r["score"], r["freq"], r["assertions"]) for r in weighted] == [
        ("fox", 2, 5, [7, 9])]
    platform.store.run_autocommit("graph/delete_domain", {"domain": test_domain})
    import_graph(platform.store, None, out)
    back = {(f["h"], f["score"], f["freq"]) for f in
            platform.store.read("kg/export_facts", {"domain": test_domain})}
    assert back == {("fox", 2, 5), (HOSTILE, None, None)}


def test_importing_into_a_resolved_domain_never_brings_merged_nodes_back(
        platform, test_domain, tmp_path: Path) -> None:
    """Entity resolution merged a node away after the export was written: the export's
    records of it go to the node that absorbed it, as a build's would."""
    GraphWriter(platform.store, HashEmbedder(), test_domain).write(*_rows(),
                                                                   WriteReport(test_domain))
    out = tmp_path / "g.jsonl.gz"
    export_graph(platform.store, test_domain, out, {})
    platform.store.write_batch("kg/merge_resolved", [
        {"keep": "forest", "merge": [HOSTILE], "name": "forest", "aliases": [HOSTILE]}],
        {"domain": test_domain})
    before = platform.store.read("kg/stats", {"domain": test_domain})[0]
    again = import_graph(platform.store, None, out)
    assert (again.nodes_created, again.relationships_created) == (0, 0)
    assert again.redirected == 1 and "merged into others" in str(again)
    assert platform.store.read("kg/stats", {"domain": test_domain})[0] == before
    facts = platform.store.read("kg/export_facts", {"domain": test_domain})
    assert {(f["h"], f["r"], f["t"]) for f in facts} == {
        ("fox", "lives in", "forest"), ("forest", "is a", "fox")}


def test_a_broken_line_is_skipped_and_reported(platform, test_domain, tmp_path: Path) -> None:
    GraphWriter(platform.store, HashEmbedder(), test_domain).write(*_rows(),
                                                                   WriteReport(test_domain))
    good = tmp_path / "g.jsonl.gz"
    export_graph(platform.store, test_domain, good, {})
    with gzip.open(good, "rt") as f:
        lines = f.read().splitlines()
    lines.insert(3, '{"type": "entity", "key": ')  # truncated JSON at line 4
    lines.append('{"type": "fact", "h": "fox", "r": "eats", "t": "hen"}')  # no chunks
    lines.append('["not", "a", "record"]')
    bad = tmp_path / "bad.jsonl.gz"
    with gzip.open(bad, "wt") as f:
        f.write("\n".join(lines) + "\n")
    report = import_graph(platform.store, None, bad)
    assert report.skipped_lines == [4, len(lines) - 1, len(lines)]
    assert report.facts == 2


# ---------------------------------------------------------------- the CREATE fast path
WILD = ['he said "no"', "it's", "`MATCH (n) DETACH DELETE n`", "line\nbreak", "fox 🦊",
        "$domain", "\\u0000 back\\slash"]


def _wild_rows(prefix: str):
    """Hostile names everywhere, and repeated rows the fast path must collapse."""
    chunks = [{"id": f"{prefix}:c{i}", "doc": f"{prefix}:d", "text": name, "source": "w",
               "title": name, "line": i} for i, name in enumerate(WILD)]
    entities = [{"key": name, "name": name, "aliases": [name.upper()]} for name in WILD]
    entities.append({"key": WILD[0], "name": "other", "aliases": ["again"]})  # repeated key
    facts = [{"h": a, "r": b, "t": b, "k": "wild", "chunks": [f"{prefix}:c{i}"], "conf": 1.0}
             for i, (a, b) in enumerate(zip(WILD, WILD[1:], strict=False))]
    facts.append({**facts[0], "chunks": [f"{prefix}:c6", f"{prefix}:c0"]})  # repeated fact
    return chunks, entities, facts


def _snapshot(store, domain: str, prefix: str):
    ents = store.read("kg/export_entities", {"domain": domain})
    facts = store.read("kg/export_facts", {"domain": domain})
    chunks = store.read("kg/export_chunks", {"domain": domain})
    mentions = store.read("test/mentions", {"domain": domain})

    def strip(s: str) -> str:
        return s.removeprefix(prefix + ":")

    return ({(e["key"], e["name"], tuple(e["aliases"]), e["embedding"] is not None)
             for e in ents},
            {(f["h"], f["r"], f["t"], f["k"], tuple(map(strip, f["chunks"]))) for f in facts},
            {(strip(c["id"]), strip(c["doc"]), c["text"], c["title"]) for c in chunks},
            {(strip(m["chunk"]), m["key"]) for m in mentions})


def test_fast_path_and_merge_path_build_the_same_graph_with_hostile_names(
        platform, test_domain) -> None:
    store, other = platform.store, test_domain + "-merge"
    try:
        fast = WriteReport(test_domain)
        GraphWriter(store, HashEmbedder(), test_domain).write(*_wild_rows(test_domain), fast)
        assert fast.fast_path
        # The same rows into a domain that is not new take the MERGE statements.
        GraphWriter(store, HashEmbedder(), other).write([], [{"key": "seed", "name": "seed"}],
                                                        [], WriteReport(other))
        slow = WriteReport(other)
        GraphWriter(store, HashEmbedder(), other).write(*_wild_rows(other), slow)
        assert not slow.fast_path
        assert (fast.nodes_created, fast.relationships_created, fast.embedded) == (
            slow.nodes_created, slow.relationships_created, slow.embedded) == (15, 27, 7)
        got, want = _snapshot(store, test_domain, test_domain), _snapshot(store, other, other)
        want[0].discard(("seed", "seed", (), True))
        assert got == want
        names = {e[1] for e in got[0]}
        assert set(WILD) - {WILD[0]} <= names and "other" not in names  # stored verbatim
        assert ("he said \"no\"", "it's", "it's", "wild", ("c0", "c6")) in got[1]
    finally:
        store.run_autocommit("graph/delete_domain", {"domain": other})


def test_reimport_after_the_fast_path_creates_nothing(platform, test_domain,
                                                      tmp_path: Path) -> None:
    writer = GraphWriter(platform.store, HashEmbedder(), test_domain)
    first = WriteReport(test_domain)
    writer.write(*_wild_rows(test_domain), first)
    assert first.fast_path and first.embedded == len(WILD)
    out = tmp_path / "wild.jsonl.gz"
    export_graph(platform.store, test_domain, out, {})
    sent = platform.store.stats.by_name.get("kg/set_entity_embeddings", 0)
    again = import_graph(platform.store, None, out)  # vectors from the file
    assert not again.fast_path
    assert (again.nodes_created, again.relationships_created, again.embedded) == (0, 0, 0)
    assert platform.store.stats.by_name.get("kg/set_entity_embeddings", 0) == sent  # none


def test_a_new_domain_whose_chunk_ids_exist_elsewhere_takes_the_merge_path(
        platform, test_domain) -> None:
    other = test_domain + "-b"
    try:
        GraphWriter(platform.store, HashEmbedder(), test_domain).write(
            *_wild_rows(test_domain), WriteReport(test_domain))
        report = WriteReport(other)
        chunks, _, _ = _wild_rows(test_domain)  # the same chunk ids, held by test_domain
        GraphWriter(platform.store, HashEmbedder(), other).write(
            chunks, [{"key": "x", "name": "x"}], [], report)
        assert not report.fast_path and report.nodes_created == 1  # only the entity
    finally:
        platform.store.run_autocommit("graph/delete_domain", {"domain": other})


def _committed_export_under(domain: str, tmp_path: Path, drop_vectors: bool = False) -> Path:
    """data/graphs/medical.jsonl.gz as committed (format 1), its chunk and document ids
    prefixed so the copy cannot touch a loaded `medical` domain."""
    src = Path(__file__).resolve().parents[2] / "data" / "graphs" / "medical.jsonl.gz"
    out = tmp_path / "medical-copy.jsonl.gz"
    with gzip.open(src, "rt", encoding="utf-8") as f, gzip.open(out, "wt") as g:
        for line in f:
            rec = json.loads(line)
            if rec["type"] == "chunk":
                rec["id"], rec["doc"] = f"{domain}:{rec['id']}", f"{domain}:{rec['doc']}"
            elif rec["type"] == "fact":
                rec["chunks"] = [f"{domain}:{c}" for c in rec["chunks"]]
            elif rec["type"] == "entity" and drop_vectors:
                rec.pop("emb", None)
            g.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return out


def test_a_committed_export_imports_with_its_vectors_and_no_embedder(
        platform, test_domain, tmp_path: Path) -> None:
    path = _committed_export_under(test_domain, tmp_path)
    with gzip.open(path, "rt") as f:
        meta = json.loads(f.readline())

    def refuse():
        raise AssertionError("the embedder was loaded although the export has vectors")

    report = import_graph(platform.store, None, path, test_domain, embedder_factory=refuse)
    assert report.fast_path
    counts = meta["counts"]
    assert (report.entities, report.facts, report.chunks) == (
        counts["entities"], counts["facts"], counts["chunks"])
    assert report.embedded == counts["entities"]
    again = import_graph(platform.store, None, path, test_domain, embedder_factory=refuse)
    assert (again.nodes_created, again.relationships_created, again.embedded) == (0, 0, 0)


def test_an_export_without_vectors_loads_the_embedder_once(platform, test_domain,
                                                           tmp_path: Path) -> None:
    path = _committed_export_under(test_domain, tmp_path, drop_vectors=True)
    calls = []

    def factory():
        calls.append(1)
        return HashEmbedder()

    report = import_graph(platform.store, None, path, test_domain, embedder_factory=factory)
    assert calls == [1] and report.embedded == report.entities > 0


def test_an_export_loaded_under_another_domain_gets_its_own_sources(platform, test_domain,
                                                                     tmp_path: Path) -> None:
    GraphWriter(platform.store, HashEmbedder(), test_domain).write(*_rows(),
                                                                   WriteReport(test_domain))
    out = tmp_path / "g.jsonl.gz"
    export_graph(platform.store, test_domain, out, {"model": "test"})
    before = platform.store.read("kg/stats", {"domain": test_domain})[0]
    copy = f"{test_domain}-copy"
    try:
        report = import_graph(platform.store, None, out, domain=copy)
        assert (report.entities, report.facts, report.chunks) == (3, 2, 2)
        stats = platform.store.read("kg/stats", {"domain": copy})[0]
        assert stats["chunks"] == 2 and stats["with_provenance"] == 2
        facts = platform.store.read("kg/export_facts", {"domain": copy})
        assert sorted(c for f in facts for c in f["chunks"]) == [f"{copy}:c1", f"{copy}:c2"]
    finally:
        platform.store.run_autocommit("graph/delete_domain", {"domain": copy})
    assert platform.store.read("kg/stats", {"domain": test_domain})[0] == before


def test_a_large_export_is_split_into_parts_and_read_back_whole(platform, test_domain,
                                                                tmp_path: Path) -> None:
    chunks, entities, facts = _wild_rows(test_domain)
    GraphWriter(platform.store, HashEmbedder(), test_domain).write(
        chunks, entities, facts, WriteReport(test_domain))
    out = tmp_path / "g.jsonl.gz"
    (tmp_path / "g.jsonl.gz.part9").write_bytes(b"stale")  # not a continuation of this one
    counts = export_graph(platform.store, test_domain, out, {}, part_bytes=1)
    parts = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("g.jsonl.gz"))
    assert len(parts) > 2 and "g.jsonl.gz.part2" in parts
    before = _snapshot(platform.store, test_domain, test_domain)
    platform.store.run_autocommit("graph/delete_domain", {"domain": test_domain})
    report = import_graph(platform.store, None, out)
    assert (report.entities, report.facts, report.chunks) == (
        counts["entities"], counts["facts"], counts["chunks"])
    assert _snapshot(platform.store, test_domain, test_domain) == before
    (tmp_path / "g.jsonl.gz.part2").unlink()  # a part lost: a clear error, nothing written
    platform.store.run_autocommit("graph/delete_domain", {"domain": test_domain})
    with pytest.raises(KgragError, match="part of the export is missing"):
        import_graph(platform.store, None, out)
    assert platform.store.read("kg/stats", {"domain": test_domain})[0]["entities"] == 0
