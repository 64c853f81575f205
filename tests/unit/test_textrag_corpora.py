"""Passage corpora by domain: which corpus a question reads, the MedQuAD loader, the
records left out because they repeat an evaluation question, and `rag` on open-ended
questions. Fakes only: control flow, never retrieval quality."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import cypher
from kgrag.baselines import ChainOfThought, LLMOnly
from kgrag.config import load_settings
from kgrag.errors import KgragError
from kgrag.types import Passage, Question
from tests.doubles.scripted import ScriptedModel
from textrag.baselines import RAG
from textrag.corpora import (
    MEDICAL,
    WIKIPEDIA,
    corpus_for_domain,
    corpus_named,
    corpus_overlaps,
    leave_out_listing,
    overlapping_records,
    read_records,
)
from textrag.corpus import LoadReport, load_corpus, read_passages
from textrag.retrieval import Retrieved
from textrag.retrievers import BM25Retriever, DenseRetriever, HybridRetriever, shared
from textrag.setting import open_retriever


# ---------------------------------------------------------------------- selection
@pytest.mark.parametrize(("domain", "corpus"), [
    ("medical", "medical"), ("wikipedia", "wikipedia"), (None, "wikipedia"),
    ("commonsense", "wikipedia"), ("legal", "wikipedia")])
def test_a_domain_reads_its_own_corpus_or_wikipedia(domain: str | None, corpus: str) -> None:
    assert corpus_for_domain(domain).name == corpus


def test_corpora_never_share_a_label_or_an_index() -> None:
    for attr in ("label", "fulltext_index", "vector_index", "path", "statements"):
        assert getattr(WIKIPEDIA, attr) != getattr(MEDICAL, attr), attr
    assert WIKIPEDIA.label == "Passage"  # the Wikipedia runs read the nodes they always read
    assert WIKIPEDIA.statement("search_bm25") == "textrag/search_bm25"
    for spec in (WIKIPEDIA, MEDICAL):  # each corpus's statements name its label or indexes
        for name in ("count_passages", "merge_passages", "passages_embedded",
                     "delete_passages_by_prefix"):
            assert re.search(rf"\(p:{spec.label}\b", cypher.load(spec.statement(name))), (
                spec.name, name)
        assert f"'{spec.fulltext_index}'" in cypher.load(spec.statement("search_bm25"))
        assert f"'{spec.vector_index}'" in cypher.load(spec.statement("search_dense"))
    with pytest.raises(KgragError, match="unknown passage corpus"):
        corpus_named("klingon")


class CountingStore:
    """Answers `count_passages` per corpus (statement folder) and records every statement
    and its parameters."""

    def __init__(self, counts: dict[str, int]) -> None:
        self.counts, self.calls = counts, []

    def read(self, name: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        self.calls.append((name, dict(params or {})))
        if name == "vectors/get_record":  # the corpus's vectors are the fake embedder's
            return [{"model": "fake", "complete": True, "previous": None}]
        if name.endswith("/count_passages"):
            n = self.counts.get(name.removesuffix("/count_passages"), 0)
            return [{"passages": n, "embedded": n}]
        return [{"id": "m1", "title": "What is A ?", "text": "A is …", "score": 1.0}]


class FakePlatform:
    def __init__(self, store: CountingStore) -> None:
        self.store, self.embedder = store, FakeEmbedder()
        self.passage_embedder = self.embedder
        self.settings = load_settings(embedding={"model": "fake"})

    def embedder_named(self, name: str) -> FakeEmbedder:
        assert name == "fake"  # the model the corpus records
        return self.embedder


class FakeEmbedder:
    name, dimensions = "fake", 2

    def embed(self, texts: list[str], kind: str = "document") -> np.ndarray:
        return np.ones((len(texts), 2), dtype=np.float32)


def test_medical_retrievers_query_only_the_medical_indexes() -> None:
    store = CountingStore({"textrag": 10, "textrag/medical": 5})
    hybrid = open_retriever(FakePlatform(store), "hybrid", "medical")  # type: ignore[arg-type]
    assert isinstance(hybrid, HybridRetriever)
    hybrid.search("What causes acne?", 2)
    assert [n for n, _ in store.calls] == ["textrag/medical/count_passages",
                                          "vectors/get_record",
                                          "textrag/medical/search_bm25",
                                          "textrag/medical/search_dense"]


def test_wikipedia_retriever_is_unchanged_for_other_domains() -> None:
    store = CountingStore({"textrag": 10})
    r = open_retriever(FakePlatform(store), "bm25", "commonsense")  # type: ignore[arg-type]
    assert isinstance(r, BM25Retriever) and r.corpus is WIKIPEDIA
    r.search("Where is milk kept?", 1)
    assert [n for n, _ in store.calls] == ["textrag/count_passages", "textrag/search_bm25"]


def test_an_empty_medical_corpus_is_an_error_that_names_the_command() -> None:
    store = CountingStore({"textrag": 10})  # Wikipedia loaded, MedQuAD not
    with pytest.raises(KgragError, match="medical passage corpus in Neo4j is empty") as e:
        open_retriever(FakePlatform(store), "bm25", "medical")  # type: ignore[arg-type]
    assert "--domain medical" in (e.value.hint or "")
    dense = DenseRetriever(store, FakeEmbedder(), MEDICAL)  # type: ignore[arg-type]
    assert dense.corpus.vector_index == "medical_passage_embedding"


# ---------------------------------------------------------------------- overlap
CORPUS = [
    {"source": "GARD", "qid": "1-1", "question": "What is Acne ?",
     "answer": "Acne is a skin condition."},
    {"source": "GARD", "qid": "2-1", "question": "What causes Gout ?",
     "answer": "Uric acid crystals."},
    {"source": "GHR", "qid": "3-1", "question": "What is Gout?",
     "answer": "  Uric ACID crystals. "},
    {"source": "GHR", "qid": "4-1", "question": "How to prevent Flu ?",
     "answer": "Vaccination."},
    {"source": "GHR", "qid": "9-9", "question": "Other ?", "answer": "Other."},
    # the same qid from another source, then the same (source, qid) again: other records
    {"source": "NIDDK", "qid": "4-1", "question": "How is Flu spread ?", "answer": "Air."},
    {"source": "NIDDK", "qid": "4-1", "question": "Who gets Flu ?", "answer": "Anyone."},
]
DEV = [
    {"source": "GHR", "qid": "9-9", "question": "Something else ?",
     "answer": "Not in the corpus."},
    {"source": "GARD", "qid": "5-1", "question": "what is  acne ?",
     "answer": "A reference answer."},
    {"source": "GHR", "qid": "6-1", "question": "What are the symptoms of Gout ?",
     "answer": "uric acid crystals."},
    {"source": "NIDDK", "qid": "1-1", "question": "Unrelated ?", "answer": "Unrelated."},
]


def test_overlaps_are_found_by_qid_question_and_answer() -> None:
    found = {(o.corpus_id, o.question_id, o.reason)
             for o in overlapping_records(enumerate(CORPUS, 1), DEV)}
    assert found == {("medquad:L5", "9-9", "qid"), ("medquad:L1", "5-1", "question"),
                     ("medquad:L2", "6-1", "answer"), ("medquad:L3", "6-1", "answer")}
    # NIDDK:1-1 (dev) is not GARD:1-1 (corpus): a qid alone names no record


def test_records_without_text_never_match_each_other() -> None:
    assert overlapping_records([(1, {"qid": "a", "question": "", "answer": ""})],
                               [{"qid": "b", "question": "", "answer": ""}]) == []


def test_the_shared_file_is_left_out_by_the_committed_list_without_the_evaluation_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`kgrag corpus load` reads the shared MedQuAD file's overlaps from the list a graph
    build reads (`kgrag/leave_out.json`), so it opens no evaluation file; a file of the
    user's own is checked against the evaluation files, and a changed shared file stops."""
    med = tmp_path / "medical"
    med.mkdir()
    with gzip.open(med / "medquad_corpus.jsonl.gz", "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in CORPUS)
    (med / "medquad_dev300.jsonl").write_text("".join(json.dumps(q) + "\n" for q in DEV))
    expected = overlapping_records(enumerate(CORPUS, 1), DEV)
    listing = tmp_path / "leave_out.json"
    listing.write_text(json.dumps(leave_out_listing(tmp_path)), encoding="utf-8")
    monkeypatch.setattr("kgrag.leave_out.LIST", listing)
    own = tmp_path / "mine.jsonl.gz"
    own.write_bytes((med / "medquad_corpus.jsonl.gz").read_bytes())
    assert corpus_overlaps(MEDICAL, own, tmp_path) == expected  # read from the dev file
    (med / "medquad_dev300.jsonl").unlink()
    assert corpus_overlaps(MEDICAL, med / "medquad_corpus.jsonl.gz", tmp_path) == expected
    assert corpus_overlaps(WIKIPEDIA, own, tmp_path) == []  # nothing to protect
    with pytest.raises(KgragError, match="medquad_dev300.jsonl is missing"):
        corpus_overlaps(MEDICAL, own, tmp_path)
    with gzip.open(med / "medquad_corpus.jsonl.gz", "at", encoding="utf-8") as f:
        f.write(json.dumps(CORPUS[0]) + "\n")  # another file than the list's
    with pytest.raises(KgragError, match="not the file the leave-out list was made for"):
        corpus_overlaps(MEDICAL, med / "medquad_corpus.jsonl.gz", tmp_path)


# ---------------------------------------------------------------------- loading
def _medquad_file(tmp_path: Path) -> Path:
    path = tmp_path / "medquad.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for r in CORPUS:
            f.write(json.dumps({"focus": "x"} | r) + "\n")
        f.write("{broken\n")
    return path


def test_medquad_records_read_as_question_titled_passages(tmp_path: Path) -> None:
    path = _medquad_file(tmp_path)
    report = LoadReport(path)
    got = [p for _, p in read_passages(path, report, "medquad")]
    assert got[0] == Passage(id="medquad:L1", title="What is Acne ?",
                             text="Acne is a skin condition.")
    assert [p.id for p in got[-2:]] == ["medquad:L6", "medquad:L7"]  # repeated qids kept
    assert report.broken == 1 and len(got) == 7
    assert [n for n, _ in read_records(path)] == [1, 2, 3, 4, 5, 6, 7]  # line 8 broken


class RecordingStore:
    def __init__(self) -> None:
        self.written: list[tuple[str, dict[str, Any]]] = []
        self.reads: list[str] = []

    def read(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        self.reads.append(name)
        return []

    def write_batches(self, name: str, rows: list[dict[str, Any]], *, batch_size: int,
                      extra: dict[str, Any] | None = None) -> Any:
        class Counters:
            nodes_created = len(rows)

        self.written += [(name, r) for r in rows]
        yield len(rows), Counters()


def test_the_medical_load_writes_its_label_and_leaves_out_overlaps(tmp_path: Path) -> None:
    path = _medquad_file(tmp_path)
    store = RecordingStore()
    exclude = frozenset(o.corpus_id for o in overlapping_records(enumerate(CORPUS, 1), DEV))
    report = load_corpus(store, FakeEmbedder(), path, corpus=MEDICAL,  # type: ignore[arg-type]
                         exclude=exclude, progress=False)
    assert report.excluded == 4 and report.read == 3 and report.written == 3
    assert [(n, r["id"], r["title"]) for n, r in store.written] == [
        ("textrag/medical/merge_passages", "medquad:L4", "How to prevent Flu ?"),
        ("textrag/medical/merge_passages", "medquad:L6", "How is Flu spread ?"),
        ("textrag/medical/merge_passages", "medquad:L7", "Who gets Flu ?")]
    assert store.reads == ["vectors/get_record", "textrag/medical/passages_embedded"]
    assert "left out 4" in str(report)


# ---------------------------------------------------------------------- rag, open-ended
class OneRetriever:
    setting = "open"

    def search(self, query: str, k: int) -> list[Retrieved]:
        long = Passage(id="m1", title="What is Acne ?", text=" ".join(["word"] * 600))
        return [Retrieved(long, 1.0, 1)]


def test_rag_answers_open_questions_with_the_whole_reply() -> None:
    q = Question(id="q", text="What is acne?", kind="open_ended", answers=["A skin ..."])
    reply = "Acne is a skin condition.\n\nIt causes pimples. So the answer is: acne"
    model = ScriptedModel([reply])
    pred = RAG(model, shared(OneRetriever())).answer(q)  # type: ignore[arg-type]
    assert pred.answer == reply.strip() and pred.evidence == ["What is Acne ?"]
    prompt = model.prompts[0][-1].content
    assert prompt.count("word") == RAG(model, shared(OneRetriever())).config.open_passage_words
    assert pred.trace[-1].data["prompt"] == "rag_open"


@pytest.mark.parametrize(("cls", "kind", "budget"), [
    (LLMOnly, "open_ended", 256), (LLMOnly, "short_answer", 96),
    (ChainOfThought, "open_ended", 384), (ChainOfThought, "short_answer", 384)])
def test_open_ended_answers_get_a_paragraph_budget(cls: type, kind: str, budget: int) -> None:
    q = Question(id="q", text="What is acne?", kind=kind, answers=["A skin condition."])
    pred = cls(ScriptedModel(["Acne is a skin condition."])).answer(q)
    assert pred.trace[0].data["max_tokens"] == budget
