"""The medical passage corpus beside Wikipedia in the real Neo4j: a medical question's
`rag` reads MedicalPassage nodes only, a Wikipedia question's `rag` never reads them.

A few passages of each corpus are loaded under test ids, with a made-up word both share,
so each corpus's indexes would rank the other corpus's passages first if they could see
them; everything is deleted after."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kgrag.types import Question
from tests.doubles.scripted import ScriptedModel
from textrag.baselines import RAG
from textrag.corpora import MEDICAL, WIKIPEDIA
from textrag.corpus import delete_passages, load_corpus
from textrag.corpus_vectors import ready_to_load
from textrag.setting import open_retriever, retriever_for

pytestmark = pytest.mark.integration

WORD = "zorbliquasia"  # in no real passage of either corpus
MEDQUAD = [{"qid": f"m{i}", "question": f"What is {WORD} type {i} ?",
            "answer": f"{WORD} type {i} is a rare disorder of the skin and nerves."}
           for i in range(4)]
WIKI = [{"id": f"w{i}", "title": f"{WORD.capitalize()} (band {i})",
         "text": f"{WORD.capitalize()} type {i} is a rock band formed in 1999."}
        for i in range(4)]


@pytest.fixture(scope="module")
def prefix(platform, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("corpora")
    med, wiki = Path(tmp / "medquad.jsonl"), Path(tmp / "wiki.jsonl")
    med.write_text("".join(json.dumps(r) + "\n" for r in MEDQUAD), encoding="utf-8")
    wiki.write_text("".join(json.dumps(r) + "\n" for r in WIKI), encoding="utf-8")
    tag = f"test-corpora-{uuid.uuid4().hex[:8]}:"
    platform.store.apply_schema()
    try:
        # each corpus with the model its stored vectors were made by (a load refuses another)
        m = load_corpus(platform.store, ready_to_load(platform, MEDICAL), med, id_prefix=tag,
                        corpus=MEDICAL, progress=False)
        w = load_corpus(platform.store, ready_to_load(platform, WIKIPEDIA), wiki,
                        id_prefix=tag, progress=False)
        assert (m.written, w.written) == (4, 4)
        _await_indexed(platform, tag)
        yield tag
    finally:
        delete_passages(platform.store, tag, MEDICAL)
        delete_passages(platform.store, tag, WIKIPEDIA)


def _await_indexed(platform, tag: str, seconds: float = 30.0) -> None:
    """Full-text and vector indexes take new nodes in asynchronously: wait until both
    corpora's BM25 see the test passages."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = [open_retriever(platform, "bm25", d).search(WORD, 8)  # type: ignore[arg-type]
                 for d in ("medical", "wikipedia")]
        if all(any(h.passage.id.startswith(tag) for h in hits) for hits in found):
            return
        time.sleep(0.5)
    raise AssertionError("the test passages never reached the full-text indexes")


def _labels(platform, ids: list[str]) -> set[str]:
    rows = platform.store.read("test/passage_labels", {"ids": ids})
    return {label for r in rows for label in r["labels"]}


@pytest.mark.parametrize("kind", ["bm25", "dense", "hybrid"])
def test_medical_retrieval_never_returns_wikipedia_passages(platform, prefix: str,
                                                            kind: str) -> None:
    r = open_retriever(platform, kind, "medical")  # type: ignore[arg-type]
    hits = r.search(f"{WORD} type 2", 8)
    ids = [h.passage.id for h in hits]
    assert f"{prefix}medquad:L3" in ids[:3]  # type 2 is the file's third line
    assert not any(i.startswith(f"{prefix}w") for i in ids)
    assert _labels(platform, ids) == {"MedicalPassage"}


@pytest.mark.parametrize("kind", ["bm25", "dense"])
def test_wikipedia_retrieval_never_returns_medical_passages(platform, prefix: str,
                                                            kind: str) -> None:
    r = open_retriever(platform, kind, "wikipedia")  # type: ignore[arg-type]
    hits = r.search(f"{WORD} type 2", 8)
    ids = [h.passage.id for h in hits]
    assert f"{prefix}w2" in ids
    assert not any(i.startswith(f"{prefix}medquad:") for i in ids)
    assert "MedicalPassage" not in _labels(platform, ids)


def test_rag_on_a_medical_question_reads_only_medical_passages(platform, prefix: str) -> None:
    q = Question(id="q", text=f"What is {WORD} type 1 ?", domain="medical", kind="open_ended",
                 answers=["A rare disorder."])
    model = ScriptedModel(["It is a rare disorder of the skin and nerves."])
    pred = RAG(model, retriever_for(platform, "open", domain="medical"),  # type: ignore[arg-type]
               store=platform.store).answer(q)
    assert pred.error is None and pred.answer.startswith("It is a rare disorder")
    titles = {f"What is {WORD} type {i} ?" for i in range(4)}
    assert pred.evidence and pred.evidence[0] in titles
    prompt = model.prompts[0][-1].content
    assert "rock band" not in prompt and "rare disorder" in prompt
