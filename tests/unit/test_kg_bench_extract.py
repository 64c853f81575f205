"""`kgrag bench extract`: the accounting per batch size, the record selection, and that it
writes nothing.

The scripted model replays fixed replies (control flow only): these tests say nothing
about throughput or extraction quality; those numbers come from running the command.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kg_builder.bench_extract import parse_batch_sizes, run_extract_bench
from kg_builder.extract import ExtractConfig, TripleExtractor
from kgrag.cli import app
from kgrag.errors import KgragError
from kgrag.platform import Platform
from tests.doubles.scripted import ScriptedModel
from tests.unit.test_kg_extract import RecordingModel, chunk, item, reply

BAD = "Sure! fox -> forest"  # no JSON: a parse failure


def test_rows_count_prompts_empty_records_positions_and_failures() -> None:
    chunks = [chunk(n) for n in range(1, 6)]  # five short records
    model = RecordingModel([
        # batch size 1: five prompts; record 3 gets no triple, record 5 fails twice
        reply(item("fox", "is", "animal")), reply(item("owl", "is", "bird")), reply(),
        reply(item("oak", "is", "tree")), BAD, BAD,
        # batch size 4: [1-4] answered for its first record only, [5] after one retry
        reply(item("fox", "is", "animal", n=1), item("fox", "has", "tail", n=1)),
        BAD, reply(item("cod", "is", "fish")),
    ])
    one, four = run_extract_bench(model, "commonsense", chunks, [1, 4], progress=False)
    assert model.remaining == 0
    assert (one.batch_size, one.prompts, one.llm_calls, one.records) == (1, 5, 6, 5)
    assert (one.triples, one.records_with_triples) == (3, 3)
    assert one.with_triples_by_position == [0.6]
    assert (one.retries, one.failed_records) == (1, 1)
    assert one.retry_rate == pytest.approx(0.2) and one.failure_rate == pytest.approx(0.2)
    assert (four.batch_size, four.prompts, four.llm_calls) == (4, 2, 3)
    assert (four.triples, four.records_with_triples, four.share_with_triples) == (3, 2, 0.4)
    assert four.with_triples_by_position == [1.0, 0.0, 0.0, 0.0]
    assert (four.retries, four.failed_records, four.retry_rate) == (1, 0, 0.5)
    assert four.triples_per_record == pytest.approx(0.6)
    assert four.prompt_tokens > 0 and four.completion_tokens > 0 and four.seconds > 0
    assert four.records_per_minute == pytest.approx(60 * 5 / four.seconds)
    # the same records in every run: the first prompt of each size starts with record 1
    assert "[1] (core concept: concept1)" in model.prompts[0][-1].content
    assert "[4] (core concept: concept4)" in model.prompts[6][-1].content


def test_other_settings_are_kept_and_each_size_batches_its_way() -> None:
    chunks = [chunk(1), chunk(2, "x" * 700), chunk(3)]  # the long one goes alone
    model = RecordingModel([reply(), reply(), reply(), reply()])
    rows = run_extract_bench(model, "commonsense", chunks, [2, 3],
                             config=ExtractConfig(batch_size=9, seed=7), progress=False)
    assert [(r.batch_size, r.prompts) for r in rows] == [(2, 2), (3, 2)]
    assert {p.seed for p in model.params} == {7}
    assert rows[0].with_triples_by_position == [0.0, 0.0]


def test_default_is_one_record_per_prompt_and_an_explicit_config_wins() -> None:
    model = RecordingModel([reply(), reply(), reply()])
    (row,) = run_extract_bench(model, "wikipedia", [chunk(1), chunk(2)],
                               [ExtractConfig().batch_size], progress=False)
    assert (row.batch_size, row.prompts) == (1, 2)
    assert TripleExtractor(ScriptedModel([]), "commonsense").config.batch_size == 1
    (row,) = run_extract_bench(model, "commonsense", [chunk(1), chunk(2)], [4], progress=False)
    assert row.prompts == 1 and model.remaining == 0


@pytest.mark.parametrize(("text", "sizes"), [(None, [3]), ("1,4", [1, 4]), (" 4, 1 ,4", [4, 1])])
def test_batch_sizes_parse(text: str | None, sizes: list[int]) -> None:
    assert parse_batch_sizes(text, default=3) == sizes


@pytest.mark.parametrize("text", ["0", "17", "1,x", ""])
def test_bad_batch_sizes_are_refused(text: str) -> None:
    with pytest.raises(KgragError, match="--batch-size"):
        parse_batch_sizes(text, default=4)


def test_command_reports_json_and_touches_neither_neo4j_nor_jobs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "notes.jsonl"
    source.write_text("".join(json.dumps({"id": f"r{i}", "text": f"Record {i} is short."}) + "\n"
                              for i in range(5)))
    fox = item("fox", "is", "animal")
    model = ScriptedModel([reply(fox)] * 3 + [reply({**fox, "n": 2})] * 2, name="fake-model")

    def no_store(self: Platform) -> None:
        raise AssertionError("the extraction benchmark opened Neo4j")

    monkeypatch.setattr(Platform, "chat_model", property(lambda self: model))
    monkeypatch.setattr(Platform, "store", property(no_store))
    home = tmp_path / "home"
    env = {"KGRAG_HOME": str(home), "KGRAG_DATA_DIR": str(tmp_path / "data"),
           "KGRAG_CONFIG": str(tmp_path / "none.toml"), "KGRAG_MODEL__CHAT": "fake-model"}
    result = CliRunner().invoke(app, ["bench", "extract", "--domain", "mydocs", "--source",
                                      str(source), "--records", "3", "--batch-size", "1,2",
                                      "--threads", "1", "--json"], env=env)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["record_ids"] == ["mydocs:notes:r0", "mydocs:notes:r1", "mydocs:notes:r2"]
    assert (report["model"], report["threads"]) == ("fake-model", 1)
    one, two = report["rows"]
    assert (one["prompts"], one["records_with_triples"], one["share_with_triples"]) == (3, 3, 1.0)
    assert (two["prompts"], two["records_with_triples"]) == (2, 1)
    assert two["with_triples_by_position"] == [0.0, 1.0]
    assert model.remaining == 0
    assert not (home / "jobs").exists()


def test_command_defaults_to_the_builds_batch_size(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "paragraphs.jsonl"
    source.write_text("".join(json.dumps({"text": f"Paragraph {i}."}) + "\n" for i in range(2)))
    model = ScriptedModel([reply(item("fox", "is", "animal"))] * 2, name="fake-model")
    monkeypatch.setattr(Platform, "chat_model", property(lambda self: model))
    env = {"KGRAG_HOME": str(tmp_path / "home"), "KGRAG_CONFIG": str(tmp_path / "none.toml"),
           "KGRAG_MODEL__CHAT": "fake-model"}
    result = CliRunner().invoke(app, ["bench", "extract", "--domain", "wikipedia", "--source",
                                      str(source), "--records", "2", "--json"], env=env)
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)["rows"]
    assert (row["batch_size"], row["prompts"], row["records_with_triples"]) == (1, 2, 2)
    assert model.remaining == 0
