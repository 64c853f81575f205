"""Vectors know their model (`kgrag.vectors`): a query with another embedder is refused,
naming the re-embed command; a re-embedding is resumable and records its model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from kgrag.vectors import (
    LEGACY_MODEL,
    Statements,
    VectorModelMismatch,
    VectorRecord,
    check,
    check_recorded,
    record,
    recorded,
    reembed,
)

STATEMENTS = Statements("t/todo", "t/write")


class FakeStore:
    """The record statements and one corpus of passages {id: (text, model)}."""

    def __init__(self, n: int, fail_after: int | None = None) -> None:
        self.records: dict[str, dict[str, Any]] = {}
        self.passages = {f"p{i}": (f"text {i}", None) for i in range(n)}
        self.writes, self.fail_after = 0, fail_after

    def read(self, name: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        if name == "vectors/get_record":
            r = self.records.get(params["scope"])
            return [r] if r else []
        assert name == "t/todo"
        todo = [{"id": i, "text": t} for i, (t, m) in self.passages.items()
                if m != params["model"]]
        return todo[: params["limit"]]

    def run(self, name: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        if name == "vectors/set_record":
            self.records[params["scope"]] = dict(params)
            return []
        assert name == "t/write"
        if self.fail_after is not None and self.writes >= self.fail_after:
            raise RuntimeError("connection lost")
        self.writes += 1
        for row in params["rows"]:
            self.passages[row["id"]] = (self.passages[row["id"]][0], params["model"])
        return []


class Fake:
    def __init__(self, name: str) -> None:
        self.name, self.dimensions, self.texts = name, 2, 0

    def embed(self, texts: Sequence[str], kind: str = "document") -> np.ndarray:
        self.texts += len(texts)
        return np.ones((len(texts), 2), dtype=np.float32) / np.sqrt(2)


def test_unrecorded_vectors_are_minilm_and_another_model_is_refused() -> None:
    store = FakeStore(0)
    assert recorded(store, "corpus:x") == VectorRecord("corpus:x", LEGACY_MODEL)  # type: ignore[arg-type]
    check(store, "corpus:x", LEGACY_MODEL, "kgrag corpus embed")  # type: ignore[arg-type]
    with pytest.raises(VectorModelMismatch, match="made by all-minilm-l6-v2") as e:
        check(store, "corpus:x", "bge-small-en-v1.5-q", "kgrag corpus embed")  # type: ignore[arg-type]
    assert "kgrag corpus embed --model bge-small-en-v1.5-q" in e.value.hint


def test_reembed_is_resumable_and_records_the_model() -> None:
    store = FakeStore(10, fail_after=2)
    with pytest.raises(RuntimeError):
        reembed(store, "corpus:x", Fake("bge"), STATEMENTS, lambda r: r["text"],  # type: ignore[arg-type]
                batch_size=3, progress=False)
    rec = recorded(store, "corpus:x")  # type: ignore[arg-type]
    assert (rec.model, rec.complete, rec.previous) == ("bge", False, LEGACY_MODEL)
    with pytest.raises(VectorModelMismatch, match="stopped before the end") as e:
        check(store, "corpus:x", "bge", "kgrag corpus embed")  # type: ignore[arg-type]
    assert "kgrag corpus embed --model bge" in e.value.hint
    store.fail_after = None
    again = Fake("bge")
    report = reembed(store, "corpus:x", again, STATEMENTS, lambda r: r["text"],  # type: ignore[arg-type]
                     batch_size=3, progress=False)
    assert again.texts == report.embedded == 4  # only the 4 passages not yet done
    assert {m for _, m in store.passages.values()} == {"bge"}
    assert recorded(store, "corpus:x") == VectorRecord("corpus:x", "bge")  # type: ignore[arg-type]
    check(store, "corpus:x", "bge", "kgrag corpus embed")  # type: ignore[arg-type]


def test_record_round_trips() -> None:
    store = FakeStore(0)
    record(store, VectorRecord("graph:wikipedia", "e5-small-v2"))  # type: ignore[arg-type]
    assert recorded(store, "graph:wikipedia").model == "e5-small-v2"  # type: ignore[arg-type]


def test_a_scope_without_vectors_is_refused_when_legacy_does_not_apply() -> None:
    with pytest.raises(VectorModelMismatch, match="facts:w has no vectors") as e:
        check(FakeStore(0), "facts:w", "bge", "kgrag graph hippo --domain w",  # type: ignore[arg-type]
              legacy=False)
    assert e.value.hint == "make them with `kgrag graph hippo --domain w --model bge`"


def test_a_graph_without_a_record_is_accepted_and_a_recorded_one_checked() -> None:
    store = FakeStore(0)
    assert check_recorded(store, "graph:w", "fake", "kgrag graph embed --domain w") is None  # type: ignore[arg-type]
    record(store, VectorRecord("graph:w", "bge"))  # type: ignore[arg-type]
    with pytest.raises(VectorModelMismatch, match="graph:w were made by bge") as e:
        check_recorded(store, "graph:w", "fake", "kgrag graph embed --domain w")  # type: ignore[arg-type]
    assert "`kgrag graph embed --domain w --model fake`" in e.value.hint
