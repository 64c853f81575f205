"""The corpus reader and loader without Neo4j: broken lines, ids, limits, skipping."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kgrag.errors import KgragError
from textrag.corpus import LoadReport, delete_passages, load_corpus, read_passages

LINES = [
    json.dumps({"id": "a", "title": "A", "text": "alpha", "sources": ["x"]}),
    "{not json",
    json.dumps({"id": 7, "title": "Seven", "text": "seven"}),  # int ids become strings
    "",
    json.dumps({"id": "b", "title": "B"}),  # no text
    json.dumps(["a", "list"]),
    json.dumps({"id": "a", "title": "A again", "text": "repeated id"}),
    json.dumps({"id": "c", "text": "no title is fine"}),
    json.dumps({"id": "  ", "title": "", "text": "blank id"}),
]


def _write(tmp_path: Path, gz: bool) -> Path:
    text = "\n".join(LINES) + "\n"
    if gz:
        path = tmp_path / "c.jsonl.gz"
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
        return path
    path = tmp_path / "c.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("gz", [False, True])
def test_broken_lines_are_reported_by_number_and_skipped(tmp_path: Path, gz: bool) -> None:
    path = _write(tmp_path, gz)
    report = LoadReport(path)
    got = [(n, p.id, p.title) for n, p in read_passages(path, report)]
    assert got == [(1, "a", "A"), (3, "7", "Seven"), (8, "c", "")]
    assert report.broken == 5
    assert [(p.line, p.message.split(" ")[0]) for p in report.problems] == [
        (2, "invalid"), (5, "invalid"), (6, "not"), (7, "repeated"), (9, "empty")]


class FakeStore:
    """Remembers written passages; `passages_embedded` answers from them."""

    def __init__(self, model: str | None = None) -> None:
        self.stored: dict[str, dict[str, Any]] = {}
        self.writes = 0
        self.model = model  # the model the corpus records for its vectors (None: none)

    def read(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        if name == "vectors/get_record":
            return [] if self.model is None else [
                {"model": self.model, "complete": True, "previous": None}]
        assert name == "textrag/passages_embedded"
        return [{"id": r["id"]} for r in params["rows"]
                if (s := self.stored.get(r["id"])) and (s["title"], s["text"]) ==
                (r["title"], r["text"])]

    def write_batches(self, name: str, rows: list[dict[str, Any]], *, batch_size: int,
                      extra: Any = None) -> Any:
        assert name == "textrag/merge_passages"
        self.writes += 1

        class Counters:
            nodes_created = sum(r["id"] not in self.stored for r in rows)

        for r in rows:
            assert len(r["embedding"]) == 2
            self.stored[r["id"]] = r
        yield len(rows), Counters()


class CountingEmbedder:
    name, dimensions = "fake", 2

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.texts += texts
        return np.ones((len(texts), 2), dtype=np.float32)


def test_load_embeds_only_what_is_missing_and_honours_limit(tmp_path: Path) -> None:
    path = _write(tmp_path, gz=False)
    store, emb = FakeStore(), CountingEmbedder()
    first = load_corpus(store, emb, path, limit=2, batch_size=1, progress=False,  # type: ignore[arg-type]
                        id_prefix="t:")
    assert (first.read, first.written, first.nodes_created) == (2, 2, 2)
    assert sorted(store.stored) == ["t:7", "t:a"]
    assert emb.texts == ["A: alpha", "Seven: seven"]
    again = load_corpus(store, emb, path, progress=False, id_prefix="t:")  # type: ignore[arg-type]
    assert (again.read, again.written, again.skipped_existing) == (3, 1, 2)
    assert emb.texts[-1] == "no title is fine"


def test_a_corpus_recorded_for_another_model_refuses_the_load(tmp_path: Path) -> None:
    store, emb = FakeStore(model="bge-small-en-v1.5-q"), CountingEmbedder()
    with pytest.raises(KgragError, match="made by bge-small-en-v1.5-q") as err:
        load_corpus(store, emb, _write(tmp_path, gz=False), progress=False)  # type: ignore[arg-type]
    assert "kgrag corpus embed" in str(err.value.hint)
    assert (store.stored, emb.texts) == ({}, [])  # nothing embedded, nothing written
    same = FakeStore(model=emb.name)
    load_corpus(same, emb, _write(tmp_path, gz=False), progress=False)  # type: ignore[arg-type]
    assert len(same.stored) == 3


def test_missing_file_and_empty_prefix_are_errors(tmp_path: Path) -> None:
    with pytest.raises(KgragError, match="does not exist"):
        load_corpus(FakeStore(), CountingEmbedder(), tmp_path / "nope.jsonl")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="empty id prefix"):
        delete_passages(FakeStore(), "")  # type: ignore[arg-type]
