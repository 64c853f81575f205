"""Row shaping for GraphWriter's CREATE fast path, and what the CLI imports at start-up."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from kg_builder.graph_io import as_vector, batched, encode_vector
from kg_builder.rows import documents, mentions, unique_entities, unique_facts


def test_entities_collapse_like_merge_first_name_and_vector_win_aliases_accumulate() -> None:
    rows = unique_entities([
        {"key": "fox", "name": "Fox", "aliases": ["foxes"]},
        {"key": "fox", "name": "FOX", "aliases": ["foxes", "vulpes"], "emb": "AAA="},
        {"key": "den", "name": "den"},
    ])
    assert rows == [{"key": "fox", "name": "Fox", "aliases": ["foxes", "vulpes"], "emb": "AAA="},
                    {"key": "den", "name": "den", "aliases": []}]


def test_facts_collapse_by_head_relation_tail_and_union_their_chunks_in_order() -> None:
    rows = unique_facts([
        {"h": "a", "r": "is", "t": "b", "k": "x", "chunks": ["c1", "c1"], "conf": 0.5},
        {"h": "a", "r": "is", "t": "b", "k": "y", "chunks": ["c2", "c1"], "conf": 1.0},
        {"h": "b", "r": "is", "t": "a", "k": "x", "chunks": ["c3"], "conf": 1.0},
    ])
    assert [(f["h"], f["t"], f["k"], f["chunks"], f["conf"]) for f in rows] == [
        ("a", "b", "x", ["c1", "c2"], 0.5), ("b", "a", "x", ["c3"], 1.0)]


def test_documents_group_chunks_and_drop_repeated_chunk_ids() -> None:
    chunks = [{"id": "c1", "doc": "d1", "text": "one", "source": "s", "title": "T", "line": 1},
              {"id": "c2", "doc": "d1", "text": "two", "source": "s", "title": "T", "line": 2},
              {"id": "c1", "doc": "d1", "text": "again", "source": "s", "title": "T", "line": 9},
              {"id": "c3", "doc": "d2", "text": "three", "source": "s", "title": "U", "line": 3}]
    docs = documents(chunks)
    assert [(d["doc"], d["title"], [c["id"] for c in d["chunks"]]) for d in docs] == [
        ("d1", "T", ["c1", "c2"]), ("d2", "U", ["c3"])]
    assert docs[0]["chunks"][0]["text"] == "one"


def test_mentions_are_one_row_per_chunk_with_each_entity_once() -> None:
    facts = [{"h": "a", "r": "is", "t": "b", "chunks": ["c1", "c2"]},
             {"h": "b", "r": "has", "t": "c", "chunks": ["c1"]}]
    assert sorted((m["chunk"], m["keys"]) for m in mentions(facts)) == [
        ("c1", ["a", "b", "c"]), ("c2", ["a", "b"])]


def test_vectors_from_an_export_list_or_array_and_batches() -> None:
    v = np.linspace(-1, 1, 384).astype(np.float32)
    from_file = as_vector(encode_vector(v))
    assert len(from_file) == 384 and abs(from_file[0] + 1) < 1e-3
    assert as_vector(v) == as_vector(v.tolist())
    assert [len(b) for b in batched(({"i": i} for i in range(7)), 3)] == [3, 3, 1]


def test_cli_start_up_does_not_import_torch() -> None:
    code = ("import sys, kgrag.cli, kg_builder.graph_io; "
            "print(sorted(m for m in ('torch', 'sentence_transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "[]"


def test_int8_vectors_are_half_the_size_and_keep_the_cosine() -> None:
    from kg_builder.graph_io import encode_vector_int8

    rng = np.random.default_rng(3)
    for _ in range(20):
        v = rng.standard_normal(384).astype(np.float32)
        v /= np.linalg.norm(v)
        text = encode_vector_int8(v)
        back = np.asarray(as_vector(text))
        assert abs(float(np.linalg.norm(back)) - 1.0) < 1e-5  # normalised again
        assert float(back @ v) > 0.9999
        assert len(text) < 0.55 * len(encode_vector(v))
