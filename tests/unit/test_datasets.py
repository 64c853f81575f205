"""Dataset loaders: every built-in file of the shared data folder, and broken files."""

from __future__ import annotations

import gzip
import json
import logging
from pathlib import Path

import pytest

from kgrag.datasets import DATASETS, load_dataset, read_questions
from kgrag.errors import DataError
from kgrag.records import detect_format
from tests.conftest import DATA_DIR, needs_data

# Real record counts of the files (README of the shared data folder).
EXPECTED = {"csqa": 300, "medqa": 300, "medquad": 300, "mmlu-law": 300, "mmlu-law-val": 170,
            "hotpotqa": 300, "2wiki": 300, "nq": 300}
DOMAINS = {"csqa": "commonsense", "medqa": "medical", "medquad": "medical", "mmlu-law": "legal",
           "mmlu-law-val": "legal", "hotpotqa": "wikipedia", "2wiki": "wikipedia",
           "nq": "wikipedia"}


def test_registry_covers_the_builtin_names() -> None:
    assert set(DATASETS) == set(EXPECTED)
    assert {name: spec.domain for name, spec in DATASETS.items()} == DOMAINS


@needs_data
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_builtin_dataset_loads_every_question(name: str) -> None:
    ds = load_dataset(name, DATA_DIR)
    assert len(ds) == EXPECTED[name]
    assert ds.skipped == 0
    assert ds.domain == DOMAINS[name]
    assert len({q.id for q in ds}) == len(ds)  # ids key predictions.jsonl
    for q in ds:
        assert q.text.strip() and q.answers and all(a.strip() for a in q.answers)
        assert q.dataset == name and q.domain == DOMAINS[name]
        if q.kind == "multiple_choice":
            assert len(q.answers) == 1 and q.answers[0] in {c.label for c in q.choices}
            assert all(c.text for c in q.choices)


@needs_data
@pytest.mark.parametrize(("name", "kind", "n_choices"), [
    ("csqa", "multiple_choice", 5), ("medqa", "multiple_choice", 4),
    ("mmlu-law", "multiple_choice", 4), ("mmlu-law-val", "multiple_choice", 4),
    ("medquad", "open_ended", 0), ("hotpotqa", "short_answer", 0), ("2wiki", "short_answer", 0),
    ("nq", "short_answer", 0),
])
def test_builtin_dataset_kinds(name: str, kind: str, n_choices: int) -> None:
    ds = load_dataset(name, DATA_DIR, limit=20)
    assert len(ds) == 20
    assert {q.kind for q in ds} == {kind}
    assert {len(q.choices) for q in ds} == {n_choices}


@needs_data
def test_first_records_match_the_files() -> None:
    csqa = load_dataset("csqa", DATA_DIR, limit=1).questions[0]
    assert (csqa.id, csqa.answers, csqa.choices[1].text) == \
        ("2435de612dd69f2012b9e40d6af4ce38", ["A"], "countryside")
    medqa = load_dataset("medqa", DATA_DIR, limit=1).questions[0]
    assert (medqa.id, medqa.answers, medqa.meta["answer_text"]) == \
        ("medqa:1", ["B"], "Cholesterol embolization")
    nq = load_dataset("nq", DATA_DIR, limit=1).questions[0]
    assert (nq.id, nq.answers) == ("nq:1", ["14 December 1972 UTC", "December 1972"])
    hotpot = load_dataset("hotpotqa", DATA_DIR, limit=1).questions[0]
    assert hotpot.supporting == ["Big Stone Gap (film)", "Adriana Trigiani"]
    assert hotpot.answers == ["Greenwich Village, New York City"]


@needs_data
@pytest.mark.parametrize("name", ["hotpotqa", "2wiki"])
def test_multihop_contexts_match_the_wiki_corpus(name: str) -> None:
    corpus_file = DATA_DIR / "wikipedia" / "wiki_passages.jsonl.gz"
    with gzip.open(corpus_file, "rt", encoding="utf-8") as fh:
        corpus = {(r["title"], r["text"]) for r in map(json.loads, fh)}
    ds = load_dataset(name, DATA_DIR)
    for q in ds:
        titles = {p.title for p in q.contexts}
        assert len(q.contexts) >= 2 and set(q.supporting) <= titles
        assert len({p.id for p in q.contexts}) == len(q.contexts)
        assert len({(p.title, p.text) for p in q.contexts}) == len(q.contexts)
        # Gold paragraphs are built exactly as the retrieval corpus stores them.
        assert all((p.title, p.text) in corpus for p in q.contexts)


@needs_data
def test_2wiki_keeps_the_gold_evidence_triples() -> None:
    q = load_dataset("2wiki", DATA_DIR, limit=1).questions[0]
    assert json.loads(q.meta["evidences"])[0] == ["Octavie Coudreau", "spouse", "Henri Coudreau"]


@needs_data
def test_duplicate_file_id_gets_a_stable_line_based_id() -> None:
    # MedQuAD reuses qid 0000812-1 in two subsets (lines 181 and 182 of the file).
    ds = load_dataset("medquad", DATA_DIR)
    dup = [p for p in ds.problems if "duplicate id" in p.message]
    assert [(p.line, p.skipped) for p in dup] == [(182, False)]
    assert {"0000812-1", "0000812-1@182"} <= {q.id for q in ds}


@needs_data
def test_path_to_a_builtin_file_loads_as_that_dataset() -> None:
    ds = load_dataset(DATA_DIR / "legal" / "mmlu_professional_law_val.jsonl", DATA_DIR, limit=3)
    assert (ds.name, ds.domain, len(ds)) == ("mmlu-law-val", "legal", 3)


# --- files written by the tests --------------------------------------------------------

NQ_LINES = [
    '{"question": "who wrote hamlet", "answer": ["Shakespeare"]}',
    '{"question": "capital of france", "answer": ["Paris"]',  # missing brace
    "",
    '{"question": "largest planet", "answer": ["Jupiter"]}',
    '["not", "an", "object"]',
    '{"question": "", "answer": ["empty question"]}',
    '{"question": "tallest mountain", "answer": ["Everest", "Mount Everest"]}',
]


def test_broken_lines_are_reported_and_skipped(tmp_path: Path,
                                                caplog: pytest.LogCaptureFixture) -> None:
    f = tmp_path / "my_nq.jsonl"
    f.write_text("\n".join(NQ_LINES) + "\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="kgrag.datasets"):
        ds = load_dataset(f)
    assert [q.text for q in ds] == ["who wrote hamlet", "largest planet", "tallest mountain"]
    assert [q.id for q in ds] == ["my_nq:1", "my_nq:4", "my_nq:7"]  # ids from line numbers
    assert [p.line for p in ds.problems] == [2, 5, 6]
    assert ds.skipped == 3
    assert "invalid JSON" in ds.problems[0].message
    assert "line 2" in caplog.text
    assert (ds.name, ds.format, ds.domain) == ("my_nq", "nq", "wikipedia")


def test_broken_first_line_does_not_stop_format_detection(tmp_path: Path) -> None:
    f = tmp_path / "law.jsonl.gz"
    good = {"id": "x1", "question": "Is it legal?", "options": {"A": "yes", "B": "no"},
            "answer": "B"}
    bad_label = {**good, "id": "x2", "answer": "E"}
    with gzip.open(f, "wt", encoding="utf-8") as fh:
        fh.write("{oops\n" + json.dumps(good) + "\n" + json.dumps(bad_label) + "\n")
    ds = load_dataset(f)
    assert [q.id for q in ds] == ["x1"]
    assert ds.format == "mmlu" and ds.domain == "legal"
    assert [p.line for p in ds.problems] == [1, 3]
    assert "not one of the option labels" in ds.problems[1].message


def test_limit_keeps_the_first_valid_questions(tmp_path: Path) -> None:
    f = tmp_path / "q.jsonl"
    f.write_text("\n".join(NQ_LINES), encoding="utf-8")
    assert [q.text for q in load_dataset(f, limit=2)] == ["who wrote hamlet", "largest planet"]
    assert len(load_dataset(f, limit=0)) == 0
    with pytest.raises(ValueError):
        load_dataset(f, limit=-1)


def test_invalid_utf8_line_is_one_problem(tmp_path: Path) -> None:
    f = tmp_path / "q.jsonl"
    f.write_bytes(b'{"question": "q1", "answer": ["a"]}\n{"question": "\xff"}\n')
    ds = read_questions(f)
    assert len(ds) == 1 and [p.line for p in ds.problems] == [2]


def test_unknown_names_and_formats_fail_clearly(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="built-in dataset"):
        load_dataset("no-such-dataset", tmp_path)
    with pytest.raises(ValueError, match="data_dir"):
        load_dataset("csqa")
    f = tmp_path / "odd.jsonl"
    f.write_text('{"prompt": "x", "completion": "y"}\n', encoding="utf-8")
    with pytest.raises(DataError, match="unrecognised question format") as e:
        load_dataset(f)
    assert "csqa" in e.value.hint  # the known formats
    with pytest.raises(DataError, match="csqa questions are not at") as e:
        load_dataset("csqa", tmp_path)  # a data folder without the shared files
    assert "KGRAG_DATA_DIR" in e.value.hint
    junk = tmp_path / "junk.txt"
    junk.write_text("root:x:0:0:root:/root:/bin/bash\n", encoding="utf-8")
    with pytest.raises(DataError, match="no decodable JSON record"):
        load_dataset(junk)


@pytest.mark.parametrize(("record", "fmt"), [
    ({"answerKey": "A", "question": {"stem": "s", "choices": []}}, "csqa"),
    ({"question": "q", "options": {"A": "x"}, "answer_idx": "A", "answer": "x"}, "medqa"),
    ({"question": "q", "options": {"A": "x"}, "answer": "A"}, "mmlu"),
    ({"qid": "1", "question": "q", "answer": "long text"}, "medquad"),
    ({"_id": "1", "question": "q", "answer": "a", "context": [], "supporting_facts": []},
     "multihop"),
    ({"question": "q", "answer": ["a"]}, "nq"),
])
def test_format_detection_from_first_record_keys(record: dict[str, object], fmt: str) -> None:
    assert detect_format(record).name == fmt


def test_multihop_file_with_aliases(tmp_path: Path) -> None:
    record = {"_id": "w1", "question": "Who?", "answer": "Bob", "answer_aliases": ["Robert"],
              "context": [["Bob", ["Bob is a man.", "He lives here."]], ["Ann", ["Ann too."]],
                          ["Bob", ["Bob is a man.", "He lives here."]]],  # repeated: dropped
              "supporting_facts": [["Bob", 0], ["Bob", 1]]}
    f = tmp_path / "w.jsonl"
    f.write_text(json.dumps(record) + "\n", encoding="utf-8")
    q = load_dataset(f).questions[0]
    assert q.answers == ["Bob", "Robert"]
    assert q.supporting == ["Bob"]
    assert [(p.id, p.title, p.text) for p in q.contexts] == \
        [("w1/0", "Bob", "Bob is a man. He lives here."), ("w1/1", "Ann", "Ann too.")]
