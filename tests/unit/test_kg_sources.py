"""Knowledge-source loaders: formats, stable ids, splitting, broken lines; builds read
every record of the knowledge sources and never a dev file."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from kg_builder.build import plan_build
from kg_builder.chunking import paragraphs, split_sentences
from kg_builder.corpora import (
    builtin_sources,
    legalbench_sources,
    parse_csqa,
    parse_medmcqa,
    parse_medquad,
    parse_mmlu_law,
    source_folders,
)
from kg_builder.sources import (
    JsonlSource,
    LoadReport,
    load,
    parse_passage,
    source_stem,
    user_source,
)
from kgrag.errors import KgragError
from tests.conftest import DATA_DIR, ROOT, needs_data
from textrag.corpora import leave_out_listing


def write_jsonl(path: Path, rows: list[object | str]) -> Path:
    """Rows as JSON lines; a str row is written verbatim (to make broken lines)."""
    lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    data = ("\n".join(lines) + "\n").encode()
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(data))
    else:
        path.write_bytes(data)
    return path


def csqa_row(qid: str, stem: str, concept: str, answer: str, key: str = "B") -> dict:
    choices = [{"label": "A", "text": "sea"}, {"label": key, "text": answer}]
    return {"answerKey": key, "id": qid,
            "question": {"question_concept": concept, "choices": choices, "stem": stem}}


# ------------------------------------------------------------------ built-in formats
def test_csqa_statement_text_ids_and_broken_lines(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "csqa_train.jsonl", [
        csqa_row("q1", "Where  do foxes\nlive?", "fox", "forest"),
        '{"answerKey": "A", "id": "broken"',  # line 2: cut-off JSON
        "",  # line 3: blank, ignored silently
        csqa_row("q2", "What is hot?", "heat", "fire") | {"answerKey": "C"},  # line 4
        csqa_row("q3", "What do dogs chase?", "dogs", "cats"),  # line 5
    ])
    chunks, report = load(JsonlSource("commonsense", path, parse_csqa))
    assert [c.id for c in chunks] == ["commonsense:csqa_train:q1", "commonsense:csqa_train:q3"]
    assert chunks[0].text == "Question: Where do foxes live?\nAnswer: forest"
    assert chunks[0].focus == "fox"
    assert chunks[0].meta == {"question_concept": "fox", "answer": "forest"}
    assert (chunks[0].line, chunks[1].line, chunks[0].source) == (1, 5, "csqa_train.jsonl")
    assert (report.records, report.chunks, report.skipped) == (2, 2, 2)
    assert [i.line for i in report.issues] == [2, 4]
    assert "invalid JSON" in report.issues[0].error
    assert "answerKey" in report.issues[1].error


def test_ids_are_stable_across_runs(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "kb.jsonl", [{"text": "A fox lives in a forest."},
                                               {"id": 7, "text": "Cats chase mice."}])
    first, _ = load(user_source(path, "notes"))
    second, _ = load(user_source(path, "notes"))
    assert [c.id for c in first] == [c.id for c in second] == ["notes:kb:L1", "notes:kb:7"]
    assert first == second


def test_medmcqa_correct_option_and_optional_explanation(tmp_path: Path) -> None:
    base = {"question": "Drug of choice for X?", "opa": "alpha", "opb": "beta", "opc": "gamma",
            "opd": "delta", "subject_name": "Pharmacology", "topic_name": None}
    path = write_jsonl(tmp_path / "medmcqa_dev.jsonl", [
        base | {"id": "m1", "cop": 3, "exp": None},
        base | {"id": "m2", "cop": 1, "exp": "Alpha is preferred because it works."},
        base | {"id": "m3", "cop": 5, "exp": None},  # no fifth option
    ])
    chunks, report = load(JsonlSource("medical", path, parse_medmcqa))
    assert chunks[0].text == "Question: Drug of choice for X?\nAnswer: gamma"
    assert chunks[1].text.endswith("Answer: alpha\nExplanation: Alpha is preferred because "
                                   "it works.")
    assert chunks[0].meta == {"subject": "Pharmacology"}
    assert report.skipped == 1 and report.issues[0].line == 3


def test_medquad_long_answers_split_at_sentences_with_question_repeated(tmp_path: Path) -> None:
    sentence = "Angina is chest pain caused by reduced blood flow to the heart muscle. "
    long_answer = sentence * 40  # ~2,800 characters
    row = {"qid": "0000004-1", "question": "What is angina ?", "answer": long_answer,
           "focus": "Angina", "qtype": "information", "url": "u"}
    path = write_jsonl(tmp_path / "medquad_corpus.jsonl.gz",
                       [row, row | {"answer": "Short answer."}])  # same qid twice
    chunks, report = load(JsonlSource("medical", path, parse_medquad, max_chars=1000))
    pieces = [c for c in chunks if c.line == 1]
    assert len(pieces) == 3
    assert [c.id for c in pieces] == [f"medical:medquad_corpus:L1:{i}" for i in range(3)]
    assert {c.document_id for c in pieces} == {"medical:medquad_corpus:L1"}
    for c in pieces:
        assert c.text.startswith("Question: What is angina ?\n")
        body = c.text.split("\n", 1)[1]
        assert len(body) <= 1000 and body.rstrip().endswith(".")  # whole sentences
    assert chunks[-1].id == "medical:medquad_corpus:L2"  # qid repeats; line ids do not
    assert chunks[-1].text == "Question: What is angina ?\nAnswer: Short answer."
    assert report.records == 2 and report.chunks == 4


def test_medquad_hpo_boilerplate_is_removed_and_the_symptom_list_kept(tmp_path: Path) -> None:
    answer = ("What are the signs and symptoms of X? The Human Phenotype Ontology provides the "
              "following list of signs and symptoms for X. If the information is available, "
              "the table below includes how often the symptom is seen in people with this "
              "condition. You can use the MedlinePlus Medical Dictionary to look up the "
              "definitions for these medical terms. Signs and Symptoms Approximate number of "
              "patients (when available) Albinism - Hearing impairment - The Human Phenotype "
              "Ontology (HPO) has collected information on how often a sign or symptom occurs "
              "in a condition. Much of this ... In these cases, the sign or symptom may be rare "
              "or common.")
    path = write_jsonl(tmp_path / "medquad.jsonl", [{"question": "Symptoms of X?",
                                                     "answer": answer}])
    chunks, _ = load(JsonlSource("medical", path, parse_medquad))
    assert chunks[0].text == ("Question: Symptoms of X?\nAnswer: What are the signs and "
                              "symptoms of X? Albinism - Hearing impairment -")


def test_mmlu_law_uses_the_correct_answer_text(tmp_path: Path) -> None:
    options = {"A": "admissible", "B": "inadmissible, because it is hearsay"}
    path = write_jsonl(tmp_path / "law.jsonl", [
        {"id": "professional_law_test-2", "question": "Is it admissible?", "options": options,
         "answer": "B"},
        {"id": "professional_law_test-3", "question": "?", "options": options, "answer": "E"},
    ])
    chunks, report = load(JsonlSource("legal", path, parse_mmlu_law))
    assert len(chunks) == 1 and chunks[0].id == "legal:law:professional_law_test-2"
    assert chunks[0].text.endswith("Answer: inadmissible, because it is hearsay")
    assert report.issues[0].line == 2 and "not one of the options" in report.issues[0].error


def test_wikipedia_passages_keep_titles(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "wiki_passages.jsonl.gz", [
        {"id": "p0", "title": "Shirley Temple", "text": "Shirley Temple was an actress.",
         "sources": ["x"]}])
    chunks, _ = load(JsonlSource("wikipedia", path, parse_passage))
    assert chunks[0].id == "wikipedia:wiki_passages:p0"
    assert (chunks[0].title, chunks[0].text) == ("Shirley Temple",
                                                  "Shirley Temple was an actress.")


def test_truncated_gzip_is_reported_not_fatal(tmp_path: Path) -> None:
    rows = [{"id": f"p{i}", "text": f"Passage number {i} " * 20} for i in range(200)]
    data = gzip.compress(("\n".join(json.dumps(r) for r in rows) + "\n").encode())
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(data[: len(data) // 2])
    chunks, report = load(JsonlSource("wikipedia", path, parse_passage))
    assert 0 < len(chunks) < 200
    assert report.skipped >= 1 and "unreadable" in report.issues[-1].error


# ------------------------------------------------------------------ user sources
def test_user_jsonl_ids_duplicates_and_empty_text(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "mine.jsonl", [
        {"id": "a", "title": "Foxes", "text": "Foxes live in forests."},
        {"id": "a", "text": "Duplicate id."},
        {"text": "   "},
        {"title": "no text"},
        {"text": "Line-numbered record."},
    ])
    chunks, report = load(user_source(path, "notes"))
    assert [c.id for c in chunks] == ["notes:mine:a", "notes:mine:L5"]
    assert chunks[0].title == "Foxes"
    assert [i.line for i in report.issues] == [2, 3, 4]
    assert "duplicate" in report.issues[0].error


def test_markdown_passages_pack_paragraphs_split_long_ones_and_keep_heading_paths(
        tmp_path: Path) -> None:
    long_para = " ".join(f"Sentence number {i} is here." for i in range(100))  # 500 words
    path = tmp_path / "guide.md"
    path.write_text(f"# Foxes\n\nFoxes live\nin forests.\n\nThey hunt at night.\n\n"
                    f"## Diet\n{long_para}\n\n\nEnd.\n")
    chunks, report = load(user_source(path, "notes"))
    assert chunks[0].id == "notes:guide:L3"
    # two short paragraphs under one heading are one passage
    assert (chunks[0].text, chunks[0].title) == ("Foxes live in forests.\n\nThey hunt at night.",
                                                 "Foxes")
    diet = [c for c in chunks if c.line == 9]
    assert [c.id for c in diet] == [f"notes:guide:L9:{i}" for i in range(4)]  # 150 words each
    assert all(len(c.text.split()) <= 150 and c.title == "Foxes > Diet" for c in diet)
    assert diet[0].text.endswith("Sentence number 29 is here.")  # split between sentences
    assert {c.document_id for c in chunks} == {"notes:guide"}
    assert chunks[-1].text == "End." and chunks[-1].line == 12
    assert (report.records, report.chunks, report.split) == (3, 6, 1)
    bigger, _ = load(user_source(path, "notes", chunk_words=600))
    assert [c.id for c in bigger] == ["notes:guide:L3", "notes:guide:L9"]  # End. joins Diet


def test_plain_text_has_no_headings_and_bad_bytes_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"# not a heading\nstill para one\n\xff\xfe broken\nend of one\n\nTwo.\n")
    chunks, report = load(user_source(path, "notes"))
    assert [c.text for c in chunks] == ["# not a heading still para one end of one\n\nTwo."]
    assert report.skipped == 1 and report.issues[0].line == 3


@pytest.mark.parametrize("name", ["empty.md", "empty.jsonl"])
def test_an_empty_file_is_counted_as_skipped(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text("\n  \n")
    chunks, report = load(user_source(path, "notes"))
    assert chunks == [] and report.skipped == 1 and "empty file" in str(report)


def test_a_binary_file_is_skipped_whole(tmp_path: Path) -> None:
    path = tmp_path / "photo.md"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 10)
    chunks, report = load(user_source(path, "notes"))
    assert chunks == [] and (report.records, report.skipped) == (0, 1)
    assert "binary file" in str(report)


def test_a_5_mb_single_line_file_is_split_into_bounded_passages(tmp_path: Path) -> None:
    path = tmp_path / "dump.txt"
    unit = "The probe measured dust near the comet tail. " + "x" * 500 + " "
    path.write_text(unit * (5_000_000 // len(unit)))  # one line, no newline
    chunks, report = load(user_source(path, "notes"))
    assert len({c.id for c in chunks}) == len(chunks) > 1_000
    assert max(len(c.text) for c in chunks) <= 150 * 41  # words are cut at 40 characters
    assert (report.records, report.split, report.skipped) == (1, 1, 0)
    assert f"{len(chunks):,} chunks (1 long ones split)" in str(report)


def test_long_jsonl_records_are_split_short_ones_kept_whole(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "mine.jsonl", [
        {"id": "a", "text": "Short record."},
        {"id": "b", "text": " ".join(f"Word{i} here." for i in range(200))},  # 400 words
    ])
    chunks, report = load(user_source(path, "notes"))
    assert [c.id for c in chunks] == ["notes:mine:a", "notes:mine:b:0", "notes:mine:b:1",
                                      "notes:mine:b:2"]
    assert report.split == 1 and all(len(c.text.split()) <= 150 for c in chunks)


def test_bad_names_and_types_are_user_errors(tmp_path: Path) -> None:
    (tmp_path / "x.csv").write_text("a,b\n")
    with pytest.raises(KgragError, match="unknown file type"):
        user_source(tmp_path / "x.csv", "notes")
    with pytest.raises(KgragError, match="no such file"):
        user_source(tmp_path / "missing.md", "notes")
    (tmp_path / "x.md").write_text("Hi.\n")
    with pytest.raises(KgragError, match="invalid domain"):
        user_source(tmp_path / "x.md", "bad:domain")
    with pytest.raises(KgragError, match="not a built-in domain"):
        builtin_sources("astrology", tmp_path)
    with pytest.raises(KgragError, match="not found"):
        builtin_sources("legal", tmp_path)


def test_source_stem() -> None:
    assert source_stem(Path("a/wiki_passages.jsonl.gz")) == "wiki_passages"
    assert source_stem(Path("csqa_train.jsonl")) == "csqa_train"
    assert source_stem(Path("v1.2.notes.md")) == "v1.2.notes"


# ------------------------------------------------------------------ selection, chunking
def test_plan_reads_every_record_and_no_dev_file(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "commonsense").mkdir(parents=True)
    write_jsonl(data / "commonsense" / "csqa_train.jsonl", [
        csqa_row("a1", "Where?", "fox", "forest"), csqa_row("b1", "What?", "ice", "cold"),
        csqa_row("c1", "How?", "dog", "bark")])
    # a dev file that a selection would read: a build must not open it
    (data / "commonsense" / "csqa_dev300.jsonl").write_text("{not json, never read")

    class P:
        class settings:  # noqa: N801 - a stand-in for Settings
            data_dir = data

    plan = plan_build(P(), "commonsense", None, None)  # type: ignore[arg-type]
    assert [c.id.rsplit(":", 1)[1] for c in plan.chunks] == ["a1", "b1", "c1"]
    assert plan.selection == "all records, in file order"
    assert [c.id.rsplit(":", 1)[1] for c in plan_build(
        P(), "commonsense", None, 2).chunks] == ["a1", "b1"]  # type: ignore[arg-type]


def test_medquad_records_that_repeat_an_evaluation_question_are_left_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """MedQuAD's corpus repeats some dev300 questions, most often with the very answer
    text under another question: the graph must hold none of them, as the passage corpus
    does not. The build reads the committed list (made here as `research/leave_out.py`
    makes it), never the evaluation file: it builds with that file gone."""
    med = tmp_path / "medical"
    med.mkdir()
    write_jsonl(med / "medmcqa_dev.jsonl", [{"id": "m1", "question": "Q?", "opa": "a",
                                             "opb": "b", "opc": "c", "opd": "d", "cop": 1}])
    reference = "Wet AMD is treated with laser surgery and injected drugs."
    write_jsonl(med / "medquad_corpus.jsonl.gz", [
        {"qid": "1", "source": "NEI", "question": "What is glaucoma ?",
         "answer": "Glaucoma damages the optic nerve."},
        {"qid": "2", "source": "NIHSeniorHealth", "question": "How to treat AMD ?",
         "answer": f"  {reference.upper()} "},  # the reference answer, folded differently
        {"qid": "3", "source": "NEI", "question": "what are the treatments for amd ?",
         "answer": "Something else."},  # the evaluation question itself
        {"qid": "4", "source": "NEI", "question": "What causes AMD ?",
         "answer": "Age and genes."}])
    write_jsonl(med / "medquad_dev300.jsonl", [
        {"qid": "9", "source": "NEI", "question": "What are the treatments for AMD ?",
         "answer": reference}])

    listing = tmp_path / "leave_out.json"
    listing.write_text(json.dumps(leave_out_listing(tmp_path)), encoding="utf-8")
    monkeypatch.setattr("kgrag.leave_out.LIST", listing)
    (med / "medquad_dev300.jsonl").unlink()

    class P:
        class settings:  # noqa: N801 - a stand-in for Settings
            data_dir = tmp_path

    sources = builtin_sources("medical", tmp_path)
    assert [s.leave_out for s in sources] == [frozenset(), frozenset({2, 3})]  # type: ignore[union-attr]
    plan = plan_build(P(), "medical", None, None)  # type: ignore[arg-type]
    docs = {c.document_id for c in plan.chunks}
    assert docs == {"medical:medmcqa_dev:m1", "medical:medquad_corpus:L1",
                    "medical:medquad_corpus:L4"}
    assert not any(reference.lower() in c.text.lower() for c in plan.chunks)
    assert plan.left_out == ["medical:medquad_corpus:L2", "medical:medquad_corpus:L3"]
    assert plan.skipped_lines == 0  # left out on purpose, not broken input

    # a corpus file other than the one the list was made for: its repeats are unknown
    write_jsonl(med / "medquad_corpus.jsonl.gz", [
        {"qid": "5", "source": "NEI", "question": "What is AMD ?", "answer": reference}])
    with pytest.raises(KgragError, match="not the file the leave-out list was made for"
                       ) as e:
        builtin_sources("medical", tmp_path)
    assert "research/leave_out.py --write" in (e.value.hint or "")


def test_legalbench_records_readmes_and_distinct_ids(tmp_path: Path) -> None:
    root = tmp_path / "legal" / "legalbench"
    for task in ("hearsay", "rule_qa"):
        (root / task).mkdir(parents=True)
        (root / task / "README.md").write_text(f"# {task}\n\nHearsay is an out-of-court "
                                                "statement.\n")
    write_jsonl(root / "hearsay" / "train.jsonl", [{"text": "A said B.", "label": "Yes"}])
    write_jsonl(root / "hearsay" / "test.jsonl", [{"text": "C said D.", "label": "No"},
                                                  {"text": "  ", "label": "No"}])
    write_jsonl(root / "rule_qa" / "test.jsonl", [{"text": "Where is X codified?",
                                                   "label": "28 USC 1332"}])
    write_jsonl(root / "rule_qa" / "train.jsonl", [{"text": "Where is Y codified?",
                                                    "label": "28 USC 1331"},
                                                   {"text": "  ", "label": "No"}])
    sources = legalbench_sources(tmp_path)
    # the test splits are LegalBench's evaluation data and the READMEs no knowledge
    # source: never read; a build takes back what it made of them, naming no file
    assert [s.name for s in sources] == [
        "legalbench/hearsay/train.jsonl", "legalbench/rule_qa/train.jsonl"]
    assert source_folders("legal") == ["legalbench/"]
    assert source_folders("medical") == []
    chunks, reports = [], []
    for s in sources:
        got, report = load(s)
        chunks += got
        reports.append(report)
    ids = [c.id for c in chunks]
    assert len(ids) == len(set(ids)) == 2
    assert ids[0] == "legal:legalbench.hearsay.train:L1"
    assert chunks[0].text == "A said B." and chunks[0].meta == {"label": "Yes"}
    assert chunks[0].source == "legalbench/hearsay/train.jsonl"
    assert not any(".test" in c.id or "C said D" in c.text for c in chunks)
    assert reports[1].skipped == 1  # the empty record: counted, not lost silently
    qa = next(c for c in chunks if "rule_qa.train" in c.id)
    assert qa.text == "Question: Where is Y codified?\nAnswer: 28 USC 1331"
    assert not any("out-of-court" in c.text for c in chunks)  # no README is read


def test_split_sentences_packs_whole_sentences_within_limit() -> None:
    text = "One is first. Two is second! Three is third? Four e.g. four."
    assert split_sentences(text, 30) == ["One is first. Two is second!", "Three is third?",
                                         "Four e.g. four."]
    assert split_sentences("short", 30) == ["short"]
    assert split_sentences("   ", 30) == []
    pieces = split_sentences("x" * 25 + " " + "y" * 50, 30)
    assert all(len(p) <= 30 for p in pieces) and "".join(pieces) == "x" * 25 + "y" * 50


def test_paragraph_numbering_survives_skipped_lines() -> None:
    paras = paragraphs([(1, "a"), (3, "b"), (4, ""), (5, "c")], markdown=False)
    assert [(p.first_line, p.text) for p in paras] == [(1, "a b"), (5, "c")]


# ------------------------------------------------------------------ the real files
@needs_data
@pytest.mark.parametrize(("domain", "first_ids"), [
    ("commonsense", ["commonsense:csqa_train:075e483d21c29a511267ef62bedc0461"]),
    ("medical", ["medical:medmcqa_dev:45258d3d-b974-44dd-a161-c3fccbdadd88",
                 "medical:medquad_corpus:L1"]),
    ("legal", ["legal:mmlu_professional_law_kg_source:professional_law_test-2"]),
    ("wikipedia", ["wikipedia:wiki_passages:p0"]),
])
def test_real_knowledge_sources_first_records(domain: str, first_ids: list[str]) -> None:
    sources = builtin_sources(domain, DATA_DIR)
    assert not any("dev300" in s.path.name or "_val" in s.path.name for s in sources)
    if domain == "legal":
        assert {s.name.split("/")[1] for s in sources[1:]} >= {"hearsay", "proa"}
        assert all(s.name.endswith("/train.jsonl") for s in sources[1:])
    for source, expected in zip(sources, first_ids, strict=False):
        report_chunks = []
        report = LoadReport(source.name)
        for chunk in source.read(report):
            report_chunks.append(chunk)
            if len(report_chunks) == 3:
                break
        assert report_chunks[0].id == expected
        assert report_chunks[0].domain == domain and report_chunks[0].text
        assert report.skipped == 0


@needs_data
def test_the_committed_leave_out_list_matches_the_real_files() -> None:
    """`kgrag/leave_out.json` is what `research/leave_out.py --write` makes from the shared
    data folder: the records of MedQuAD's corpus that repeat a medquad_dev300 question
    (the passage corpus's own list), for that very corpus file."""
    committed = json.loads((ROOT / "kgrag" / "leave_out.json").read_text(encoding="utf-8"))
    assert committed == leave_out_listing(DATA_DIR)
    lines = builtin_sources("medical", DATA_DIR)[1].leave_out  # type: ignore[attr-defined]
    assert len(lines) == 480
