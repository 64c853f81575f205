"""`kgrag corpus recall --domain D` over a domain of one's own, on the real Neo4j and the
configured passage embedder: supporting titles name a heading path (or a leading part of
it) or a file, case folded; a domain without passages and questions without supporting
titles are clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kg_builder.passages import index_passages
from kg_builder.sources import load, user_source
from kgrag.errors import DomainNotBuilt, KgragError

ROOT = Path(__file__).resolve().parents[2]
FERRY = """The ferry to Lindholm leaves the quay at seven every morning.

Its captain, Maren Tull, has sailed the crossing for thirty years.
"""
QUESTIONS = [
    {"id": "r1", "question": "Who discovered the comet that returns every 71 years?",
     "answer": ["Paul Okafor"], "supporting_titles": ["Harwick Hill Observatory > Discoveries"]},
    {"id": "r2", "question": "Who ground the lens of the large refractor?",
     "answer": ["Anton Rusk"], "supporting_titles": ["harwick hill  observatory > INSTRUMENTS"]},
    {"id": "r3", "question": "Who is the captain of the ferry to Lindholm?",
     "answer": ["Maren Tull"], "supporting_titles": ["ferry"]},
    {"id": "r4", "question": "On which day does the observatory open to visitors?",
     "answer": ["Thursday"], "supporting_titles": ["Harwick Hill Observatory"]},
]


@pytest.fixture()
def built(platform, test_domain, tmp_path: Path):  # type: ignore[no-untyped-def]
    """`test_domain` with the passages of the observatory note and a ferry note."""
    ferry = tmp_path / "ferry.txt"
    ferry.write_text(FERRY)
    for path in (ROOT / "tests" / "data" / "mydocs" / "observatory.md", ferry):
        chunks, _ = load(user_source(path, test_domain))
        index_passages(platform.store, platform.passage_embedder, test_domain, chunks,
                       progress=False)
    return test_domain


def _recall(platform, monkeypatch, dataset: Path, domain: str, *args: str):  # type: ignore[no-untyped-def]
    from kgrag.cli import app

    monkeypatch.setattr("kgrag.platform.Platform", lambda *a, **k: platform)
    return CliRunner().invoke(app, ["corpus", "recall", "--dataset", str(dataset),
                                    "--domain", domain, *args])


def _json(output: str) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    """The JSON object of `--json` (the progress bars share the captured output)."""
    return json.loads(output[output.rindex('{"questions"'):])  # type: ignore[no-any-return]


def _questions(tmp_path: Path, rows: list[dict[str, object]]) -> Path:
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_recall_over_a_domain_matches_heading_paths_and_file_names(
        platform, built, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    dataset = _questions(tmp_path, QUESTIONS)
    got = _recall(platform, monkeypatch, dataset, built, "--k", "1,5", "--retrievers",
                  "bm25,dense", "--json")
    assert got.exit_code == 0, got.output
    out = _json(got.output)
    assert out["questions"] == 4
    for retriever in ("bm25", "dense"):
        assert out["recall"][retriever]["all"]["5"] == 1.0, out
    # BM25 ranks each question's own section or file first
    assert out["recall"]["bm25"]["all"]["1"] == 1.0, out


def test_a_title_no_passage_carries_is_never_found(platform, built, tmp_path, monkeypatch
                                                  ) -> None:  # type: ignore[no-untyped-def]
    rows = [{**QUESTIONS[0], "supporting_titles": ["Discoveries"]},  # not a leading part
            {**QUESTIONS[2], "supporting_titles": ["ferry", "Harbour log"]}]
    got = _recall(platform, monkeypatch, _questions(tmp_path, rows), built, "--k", "5",
                  "--retrievers", "bm25", "--json")
    assert got.exit_code == 0, got.output
    bm25 = _json(got.output)["recall"]["bm25"]
    assert (bm25["all"]["5"], bm25["mean"]["5"]) == (0.0, 0.25)


def test_a_domain_without_passages_names_the_build_command(platform, tmp_path, monkeypatch
                                                          ) -> None:  # type: ignore[no-untyped-def]
    got = _recall(platform, monkeypatch, _questions(tmp_path, QUESTIONS), "test-never-built",
                  "--retrievers", "bm25")
    assert isinstance(got.exception, DomainNotBuilt), got.output
    assert "kgrag build --domain test-never-built --source" in str(got.exception)


def test_questions_without_supporting_titles_say_so(platform, built, tmp_path, monkeypatch
                                                   ) -> None:  # type: ignore[no-untyped-def]
    rows = [{k: v for k, v in q.items() if k != "supporting_titles"} for q in QUESTIONS]
    got = _recall(platform, monkeypatch, _questions(tmp_path, rows), built,
                  "--retrievers", "bm25")
    assert isinstance(got.exception, KgragError), got.output
    assert "none of the 4 questions" in str(got.exception)
    assert "supporting_titles" in str(got.exception)


def test_bench_chunks_measures_each_size_and_deletes_its_passages(platform, test_domain
                                                                  ) -> None:  # type: ignore[no-untyped-def]
    from kgrag.types import Question
    from textrag.chunk_bench import bench_chunk_sizes, bench_domain

    questions = [Question(id=str(q["id"]), text=str(q["question"]), answers=["-"],
                          supporting=list(q["supporting_titles"]))  # type: ignore[call-overload]
                 for q in QUESTIONS[:2]]
    rows = bench_chunk_sizes(platform, ROOT / "tests" / "data" / "mydocs" / "observatory.md",
                             questions, sizes=(20, 400), ks=(1, 10), progress=False,
                             prefix=test_domain)
    small, large = rows
    # 400 words: one passage per heading (4); 20 words: the longer paragraphs alone
    assert (small.size, large.size, large.passages) == (20, 400, 4)
    assert small.passages > large.passages and small.mean_words <= 20
    assert large.recall["bm25"][10] == small.recall["bm25"][10] == 1.0
    for size in (20, 400):
        count = platform.store.read("textrag/chunks/count_passages",
                                    {"domain": bench_domain(size, test_domain)})[0]
        assert count["passages"] == 0
