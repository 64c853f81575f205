"""Build jobs against the real Neo4j, with a scripted extractor model (control flow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kg_builder.extract import ExtractConfig
from kg_builder.jobs import BuildJob, export_meta
from kg_builder.sources import Chunk
from kgrag.config import Settings
from kgrag.errors import Neo4jUnavailable
from tests.doubles.scripted import ScriptedModel
from tests.integration.test_graph_io import HashEmbedder

HOSTILE = "x'}) MATCH (m) DETACH DELETE m //"


def _chunks(domain: str, n: int) -> list[Chunk]:
    return [Chunk(id=f"{domain}:src:{i}", domain=domain, document_id=f"{domain}:src:{i}",
                  text=f"Record {i} about foxes and forests.", source="src.jsonl", line=i + 1)
            for i in range(n)]


def _reply(*triples: tuple[int, str, str, str]) -> str:
    return json.dumps({"triples": [{"n": n, "h": h, "r": r, "t": t, "k": "spatial"}
                                   for n, h, r, t in triples]})


class ScriptedPlatform:
    """The real store, a scripted chat model, a deterministic embedder, a temp home."""

    def __init__(self, real, replies: list[str], home: Path) -> None:
        self.store = real.store
        self.chat_model = ScriptedModel(replies)
        self.embedder = self.passage_embedder = HashEmbedder()
        self.settings = Settings(home=home)


def _job(real, replies, tmp_path, domain, chunks, sources=("src.jsonl",),
         **kw) -> tuple[BuildJob, ScriptedPlatform]:
    p = ScriptedPlatform(real, replies, tmp_path)
    cfg = ExtractConfig(batch_size=2)
    return BuildJob(p, domain, chunks, list(sources), config=cfg,  # type: ignore[arg-type]
                    **kw), p


def test_build_writes_with_provenance_and_rerun_adds_nothing(platform, test_domain, tmp_path):
    chunks = _chunks(test_domain, 4)
    replies = [_reply((1, "Fox", "lives in", "forest"), (2, HOSTILE, "is a", "fox")),
               _reply((1, "forests", "contains", "trees"), (2, "fox", "eats", "mice"))]
    job, p = _job(platform, replies, tmp_path, test_domain, chunks)
    record = job.run(progress=False)
    assert record.status == "done" and record.triples == 4 and record.records_done == 4
    assert record.nodes_created > 0
    assert "4 chunks; embedded and wrote 4" in record.passages  # every chunk is a passage
    stats = platform.store.read("kg/stats", {"domain": test_domain})[0]
    assert stats["relations"] == 4 and stats["with_provenance"] == 4
    keys = {e["key"] for e in platform.store.read("kg/export_entities", {"domain": test_domain})}
    assert HOSTILE.lower() in keys and "forest" in keys  # "forests" resolved to "forest"
    # same command again: no LLM call (empty script), nothing new in Neo4j
    again, p2 = _job(platform, [], tmp_path, test_domain, chunks)
    rec2 = again.run(progress=False)
    assert p2.chat_model.prompts == []
    assert platform.store.read("kg/stats", {"domain": test_domain})[0] == stats
    assert rec2.triples == 4


def test_interrupted_job_resumes_where_it_stopped(platform, test_domain, tmp_path):
    chunks = _chunks(test_domain, 4)

    class Interrupting(ScriptedModel):
        def chat(self, messages, params):
            if len(self.prompts) == 1:
                raise KeyboardInterrupt
            return super().chat(messages, params)

    job, p = _job(platform, [], tmp_path, test_domain, chunks)
    job.extractor.model = Interrupting([_reply((1, "fox", "lives in", "forest"))])
    with pytest.raises(KeyboardInterrupt):
        job.run(progress=False)
    assert job.record.status == "interrupted" and job.record.records_done == 2
    meta = export_meta(p, test_domain)  # an export of the partial graph says how it was made
    assert (meta["job_id"], meta["job_status"], meta["records"]) == (job.record.id,
                                                                     "interrupted", 2)
    assert meta["model"] == p.settings.model.chat and len(meta["jobs"]) == 1
    resumed, p2 = _job(platform, [_reply((1, "owl", "lives in", "forest"))], tmp_path,
                       test_domain, chunks)
    record = resumed.run(progress=False)
    assert len(p2.chat_model.prompts) == 1  # only the second batch was asked for
    assert record.status == "done" and record.records_done == 4 and record.triples == 2


def test_neo4j_down_mid_job_loses_nothing(platform, test_domain, tmp_path, monkeypatch):
    chunks = _chunks(test_domain, 2)
    job, _ = _job(platform, [_reply((1, "fox", "lives in", "forest"))], tmp_path,
                  test_domain, chunks)

    def down(*a, **k):
        raise Neo4jUnavailable("Neo4j went away")

    monkeypatch.setattr(job.writer, "write", down)
    with pytest.raises(Neo4jUnavailable):
        job.run(progress=False)
    assert job.extractions.read_text().count("\n") == 1  # the extraction was saved first
    monkeypatch.undo()
    again, p2 = _job(platform, [], tmp_path, test_domain, chunks)
    again.run(progress=False)  # replays the saved batch; no LLM call
    assert p2.chat_model.prompts == []
    assert platform.store.read("kg/stats", {"domain": test_domain})[0]["relations"] == 1


def test_bad_replies_are_counted_not_written(platform, test_domain, tmp_path):
    chunks = _chunks(test_domain, 2)
    job, _ = _job(platform, ['{"triples": [', "not json at all"], tmp_path, test_domain,
                  chunks)
    record = job.run(progress=False)
    assert record.records_failed == 2 and record.triples == 0
    assert record.failures and "not json" in record.failures[0].raw_reply
    assert record.parse_failure_rate == 1.0


def test_entity_resolution_merges_variants_in_neo4j(platform, test_domain):
    from kg_builder.graph_io import GraphWriter, WriteReport
    from kg_builder.resolution import merged_key_map, resolve_domain

    entities = [{"key": k, "name": k, "aliases": []}
                for k in ("haemoglobin", "hemoglobin", "oxygen", "iron")]
    facts = [{"h": "haemoglobin", "r": "carries", "t": "oxygen", "k": "function",
              "chunks": ["c1"], "conf": 1.0},
             {"h": "hemoglobin", "r": "carries", "t": "oxygen", "k": "function",
              "chunks": ["c2"], "conf": 1.0},
             {"h": "hemoglobin", "r": "contains", "t": "iron", "k": "property",
              "chunks": ["c2"], "conf": 1.0}]
    chunks = [{"id": c, "doc": "d", "text": c, "source": "s", "title": "", "line": 1}
              for c in ("c1", "c2")]
    GraphWriter(platform.store, platform.embedder, test_domain).write(
        chunks, entities, facts, WriteReport(test_domain))
    # a dry run finds the merge and writes nothing
    preview = resolve_domain(platform.store, test_domain, dry_run=True, examples=5)
    assert (preview.dry_run, preview.merged_nodes, len(preview.examples)) == (True, 1, 1)
    assert "would merge 1 nodes" in str(preview)
    assert platform.store.read("kg/stats", {"domain": test_domain})[0]["entities"] == 4
    report = resolve_domain(platform.store, test_domain)
    assert report.merged_nodes == 1
    stats = platform.store.read("kg/stats", {"domain": test_domain})[0]
    assert stats["entities"] == 3 and stats["relations"] == 2  # "carries" collapsed
    facts_after = platform.store.read("kg/export_facts", {"domain": test_domain})
    carries = next(f for f in facts_after if f["r"] == "carries")
    assert sorted(carries["chunks"]) == ["c1", "c2"]
    mapping = merged_key_map(platform.store, test_domain)
    assert len(mapping) == 1 and set(mapping.items()) <= {("hemoglobin", "haemoglobin"),
                                                          ("haemoglobin", "hemoglobin")}
    assert resolve_domain(platform.store, test_domain).merged_nodes == 0  # idempotent


def test_resolve_once_resolves_once_per_graph_state(platform, test_domain, tmp_path):
    """A second call on the graph its resolution left does nothing; a changed graph is
    resolved again (the marker holds the fingerprint, kept under `home`)."""
    from kg_builder.fingerprint import graph_fingerprint
    from kg_builder.graph_io import GraphWriter, WriteReport
    from kg_builder.resolution import resolve_once, resolved_marker

    def write(keys: tuple[str, ...], chunk: str) -> None:
        GraphWriter(platform.store, platform.embedder, test_domain).write(
            [{"id": chunk, "doc": "d", "text": chunk, "source": "s", "title": "", "line": 1}],
            [{"key": k, "name": k, "aliases": []} for k in keys],
            [{"h": keys[0], "r": "carries", "t": keys[-1], "k": "function",
              "chunks": [chunk], "conf": 1.0}], WriteReport(test_domain))

    write(("haemoglobin", "oxygen"), "c1")
    write(("hemoglobin", "oxygen"), "c2")
    first = resolve_once(platform.store, test_domain, tmp_path)
    assert first is not None and first.merged_nodes == 1
    marker = resolved_marker(tmp_path, test_domain)
    assert marker.read_text() == str(graph_fingerprint(platform.store, test_domain))
    assert resolve_once(platform.store, test_domain, tmp_path) is None
    write(("iron", "oxygen"), "c3")  # the graph changed: resolved again
    again = resolve_once(platform.store, test_domain, tmp_path)
    assert again is not None and again.merged_nodes == 0
    assert marker.read_text() == str(graph_fingerprint(platform.store, test_domain))
    marker.write_bytes(b"\xff\xfe not a fingerprint")  # unreadable: resolved, rewritten
    assert resolve_once(platform.store, test_domain, tmp_path) is not None
    assert marker.read_text() == str(graph_fingerprint(platform.store, test_domain))


def test_entity_resolution_keeps_names_a_fact_relates_apart(platform, test_domain):
    """A subtype fact between two spelling-close names: they are two things, not one."""
    from kg_builder.graph_io import GraphWriter, WriteReport
    from kg_builder.resolution import resolve_domain
    from kg_builder.resolve import ResolveConfig

    names = ("military exercise", "military exercises drill", "army")
    entities = [{"key": k, "name": k, "aliases": []} for k in names]
    facts = [{"h": "military exercises drill", "r": "is a", "t": "military exercise",
              "k": "conceptual", "chunks": ["c1"], "conf": 1.0},
             {"h": "army", "r": "conducts", "t": "military exercise", "k": "function",
              "chunks": ["c1"], "conf": 1.0}]
    chunks = [{"id": "c1", "doc": "d", "text": "c1", "source": "s", "title": "", "line": 1}]
    GraphWriter(platform.store, platform.embedder, test_domain).write(
        chunks, entities, facts, WriteReport(test_domain))
    # these thresholds merge the two names when no fact relates them (MiniLM cosine 0.77)
    lenient = ResolveConfig(min_string_similarity=0.7, min_cosine=0.5, neighbours=2)
    report = resolve_domain(platform.store, test_domain, lenient)
    assert report.merged_nodes == 0
    assert platform.store.read("kg/stats", {"domain": test_domain})[0]["relations"] == 2


def test_chunks_already_in_the_graph_are_not_extracted_again(platform, test_domain, tmp_path):
    """A job whose local state is gone (a new machine, an imported export) skips the chunks
    the graph holds and extracts only the others."""
    chunks = _chunks(test_domain, 4)
    first, _ = _job(platform, [_reply((1, "fox", "lives in", "forest"), (2, "fox", "eats",
                                                                         "mice"))],
                    tmp_path / "machine-1", test_domain, chunks[:2])
    first.run(progress=False)
    later, p2 = _job(platform, [_reply((1, "owl", "hunts at", "night"))],
                     tmp_path / "machine-2", test_domain, chunks)
    record = later.run(progress=False)
    assert len(p2.chat_model.prompts) == 1  # one batch: records 3 and 4 only
    asked = p2.chat_model.prompts[0][-1].content
    assert "Record 3" in asked and "Record 0" not in asked and "Record 1" not in asked
    assert record.records_in_graph == 2 and record.records_done == 2
    assert platform.store.read("kg/stats", {"domain": test_domain})[0]["relations"] == 3


def test_disk_full_is_a_clear_error_and_the_rerun_loses_nothing(platform, test_domain, tmp_path,
                                                                 monkeypatch):
    import errno

    from kgrag.errors import KgragError

    chunks = _chunks(test_domain, 4)
    job, _ = _job(platform, [_reply((1, "fox", "lives in", "forest")),
                             _reply((1, "owl", "hunts at", "night"))],
                  tmp_path, test_domain, chunks)
    real_append, calls = job._append, []

    def append(batch, result):
        calls.append(batch)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_append(batch, result)

    monkeypatch.setattr(job, "_append", append)
    with pytest.raises(KgragError, match="No space left") as err:
        job.run(progress=False)
    assert "run the same command again" in (err.value.hint or "")
    monkeypatch.undo()
    again, p2 = _job(platform, [_reply((1, "owl", "hunts at", "night"))], tmp_path,
                     test_domain, chunks)
    record = again.run(progress=False)  # only the unsaved second batch is asked for again
    assert len(p2.chat_model.prompts) == 1 and record.status == "done"
    assert platform.store.read("kg/stats", {"domain": test_domain})[0]["relations"] == 2


def test_a_running_job_is_refused_and_one_whose_process_died_shows_stale(
        platform, test_domain, tmp_path):
    from kg_builder.jobs import LOCK, list_jobs
    from kgrag.errors import KgragError
    from kgrag.locks import exclusive

    chunks = _chunks(test_domain, 2)
    job, _ = _job(platform, [], tmp_path, test_domain, chunks)
    job.record.status = "running"
    job._save(mirror=False)
    with exclusive(job.dir / LOCK, lambda: AssertionError("lock taken")):  # a live build
        assert list_jobs(tmp_path, test_domain)[0].shown_status == "running"
        second, p2 = _job(platform, [], tmp_path, test_domain, chunks)
        with pytest.raises(KgragError, match="is already running"):
            second.run(progress=False)
        assert p2.chat_model.prompts == []
    # the process holding the lock is gone (killed hard): stale, and the command resumes
    assert list_jobs(tmp_path, test_domain)[0].shown_status == "stale"
    again, _ = _job(platform, [_reply((1, "fox", "lives in", "forest"))], tmp_path,
                    test_domain, chunks)
    assert again.run(progress=False).status == "done"
    assert list_jobs(tmp_path, test_domain)[0].shown_status == "done"


def _facts(platform, domain) -> dict[tuple[str, str, str], list[str]]:
    return {(f["h"], f["r"], f["t"]): sorted(f["chunks"])
            for f in platform.store.read("kg/export_facts", {"domain": domain})}


def test_an_edited_record_is_retracted_and_extracted_again(platform, test_domain, tmp_path):
    chunks = _chunks(test_domain, 2)
    c0, c1 = (c.id for c in chunks)
    first, _ = _job(platform, [_reply((1, "fox", "lives in", "forest"), (1, "fox", "eats",
                                                                           "mice"),
                                      (2, "fox", "lives in", "forest"))],
                    tmp_path, test_domain, chunks)
    first.run(progress=False)
    assert _facts(platform, test_domain) == {("fox", "lives in", "forest"): [c0, c1],
                                             ("fox", "eats", "mice"): [c0]}
    edited = [chunks[0].model_copy(update={"text": "Record 0, rewritten: foxes hunt rabbits."}),
              chunks[1]]
    again, p2 = _job(platform, [_reply((1, "fox", "hunts", "rabbit"))], tmp_path,
                     test_domain, edited)
    record = again.run(progress=False)
    assert len(p2.chat_model.prompts) == 1 and "rewritten" in p2.chat_model.prompts[0][-1].content
    assert record.records_changed == 1
    # the fact the other record also supports stays, with that record as its only source
    assert _facts(platform, test_domain) == {("fox", "lives in", "forest"): [c1],
                                             ("fox", "hunts", "rabbit"): [c0]}
    keys = {e["key"] for e in platform.store.read("kg/export_entities", {"domain": test_domain})}
    assert "mice" not in keys  # no fact names it any more
    texts = platform.store.read("kg/chunk_texts", {"domain": test_domain, "ids": [c0]})
    assert texts[0]["text"].endswith("foxes hunt rabbits.")
    # unchanged now: a third run asks nothing and changes nothing
    third, p3 = _job(platform, [], tmp_path, test_domain, edited)
    assert third.run(progress=False).records_changed == 0 and p3.chat_model.prompts == []
    assert len(_facts(platform, test_domain)) == 2


def test_saved_extractions_of_an_edited_record_are_not_replayed(platform, test_domain,
                                                                tmp_path):
    """The graph is gone (dropped), the job's saved batches remain: replaying them must
    not bring back what the record said before it was edited."""
    chunks = _chunks(test_domain, 2)
    first, _ = _job(platform, [_reply((1, "fox", "eats", "mice"), (2, "owl", "lives in",
                                                                     "forest"))],
                    tmp_path, test_domain, chunks)
    first.run(progress=False)
    platform.store.run_autocommit("graph/delete_domain", {"domain": test_domain})
    edited = [chunks[0].model_copy(update={"text": "Record 0, rewritten."}), chunks[1]]
    again, p2 = _job(platform, [_reply((1, "fox", "hunts", "rabbit"))], tmp_path,
                     test_domain, edited)
    record = again.run(progress=False)
    assert len(p2.chat_model.prompts) == 1 and record.records_changed == 1
    assert set(_facts(platform, test_domain)) == {("owl", "lives in", "forest"),
                                                  ("fox", "hunts", "rabbit")}


def test_a_source_no_longer_read_is_withdrawn(platform, test_domain, tmp_path):
    """A file of a source folder that an earlier build read is not a knowledge source
    (LegalBench's test splits): the next build, which reads only the folder's other files,
    takes back every fact only it supported and keeps what the files it reads support."""
    kept = _chunks(test_domain, 1)
    old = Chunk(id=f"{test_domain}:old:1", domain=test_domain,
                document_id=f"{test_domain}:old:1", text="Owls eat voles.",
                source="bench/task/test.jsonl", line=1)
    train = Chunk(id=f"{test_domain}:train:1", domain=test_domain,
                  document_id=f"{test_domain}:train:1", text="Hawks eat mice.",
                  source="bench/task/train.jsonl", line=1)
    sources = ["src.jsonl", "bench/task/train.jsonl"]
    first, _ = _job(platform, [_reply((1, "fox", "eats", "mice"), (2, "owl", "eats",
                                                                     "vole")),
                               _reply((1, "hawk", "eats", "mice"))],
                    tmp_path, test_domain, [kept[0], old, train],
                    sources=[*sources, "bench/task/test.jsonl"])
    first.run(progress=False)
    assert set(_facts(platform, test_domain)) == {("fox", "eats", "mice"),
                                                  ("owl", "eats", "vole"),
                                                  ("hawk", "eats", "mice")}
    again, p2 = _job(platform, [], tmp_path, test_domain, [kept[0], train], sources=sources,
                     source_folders=["bench/"])
    record = again.run(progress=False)
    assert p2.chat_model.prompts == [] and record.records_withdrawn == 1
    assert _facts(platform, test_domain) == {("fox", "eats", "mice"): [kept[0].id],
                                             ("hawk", "eats", "mice"): [train.id]}
    keys = {e["key"] for e in platform.store.read("kg/export_entities", {"domain": test_domain})}
    assert "vole" not in keys and "fox" in keys
    assert platform.store.read("kg/chunk_texts", {"domain": test_domain,
                                                  "ids": [old.id]}) == []


def test_records_now_left_out_are_withdrawn_and_not_replayed(platform, test_domain, tmp_path):
    """A source now leaves a record out (it repeats an evaluation question): the next
    build takes back what the graph holds of it, and its saved batch does not bring it
    back; a third build changes nothing."""
    chunks = _chunks(test_domain, 3)
    c0, c1, c2 = (c.id for c in chunks)
    first, _ = _job(platform, [_reply((1, "fox", "eats", "mice"), (2, "fox", "lives in",
                                                                     "forest")),
                               _reply((1, "owl", "lives in", "forest"))],
                    tmp_path, test_domain, chunks)
    first.run(progress=False)
    assert _facts(platform, test_domain) == {("fox", "eats", "mice"): [c0],
                                             ("fox", "lives in", "forest"): [c1],
                                             ("owl", "lives in", "forest"): [c2]}
    kept = [chunks[1], chunks[2]]
    again, p2 = _job(platform, [], tmp_path, test_domain, kept,
                     left_out=[chunks[0].document_id, f"{test_domain}:src:never-built"])
    record = again.run(progress=False)
    assert p2.chat_model.prompts == [] and record.records_withdrawn == 1
    assert record.records_left_out == 2
    assert record.records_done == 3 and record.progress == (2, 2)  # work done; the plan
    assert _facts(platform, test_domain) == {("fox", "lives in", "forest"): [c1],
                                             ("owl", "lives in", "forest"): [c2]}
    keys = {e["key"] for e in platform.store.read("kg/export_entities", {"domain": test_domain})}
    assert "mice" not in keys and "fox" in keys
    assert platform.store.read("kg/chunk_texts", {"domain": test_domain, "ids": [c0]}) == []
    third, _ = _job(platform, [], tmp_path, test_domain, kept, left_out=[chunks[0].document_id])
    assert third.run(progress=False).records_withdrawn == 0
    assert len(_facts(platform, test_domain)) == 2
    # the graph is gone, the saved batches remain: replaying them leaves the record out
    platform.store.run_autocommit("graph/delete_domain", {"domain": test_domain})
    fourth, p4 = _job(platform, [], tmp_path, test_domain, kept,
                      left_out=[chunks[0].document_id])
    fourth.run(progress=False)
    assert p4.chat_model.prompts == []
    assert _facts(platform, test_domain) == {("fox", "lives in", "forest"): [c1],
                                             ("owl", "lives in", "forest"): [c2]}
