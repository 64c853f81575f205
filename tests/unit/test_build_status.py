"""`kgrag build --status`: every job in one short row, a dead job shown as stale."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from kg_builder.domains import jobs_folder
from kg_builder.jobs import LOCK, JobRecord, list_jobs
from kgrag.cli import app
from kgrag.locks import exclusive


def _job(home: Path, jid: str, status: str, domain: str = "commonsense") -> Path:
    folder = jobs_folder(home, domain) / jid
    folder.mkdir(parents=True)
    record = JobRecord(id=jid, domain=domain, sources=["csqa_train.jsonl"], limit=400,
                       model="qwen2.5-coder-1.5b", prompt_hash="p", config={}, status=status,
                       records_done=216, records_total=400, records_in_graph=184, triples=494,
                       seconds_extract=1295.3, updated=f"2026-11-23T17:12:{jid[-2:]}+00:00")
    (folder / "job.json").write_text(record.model_dump_json())
    return folder


def test_status_lists_jobs_whole_in_80_columns_and_marks_dead_ones_stale(tmp_path: Path
                                                                        ) -> None:
    home = tmp_path / "home"
    env = {"KGRAG_HOME": str(home), "KGRAG_CONFIG": str(tmp_path / "none.toml"),
           "COLUMNS": "80"}
    empty = CliRunner().invoke(app, ["build", "--status"], env=env)
    assert empty.exit_code == 0 and "no build jobs yet" in empty.output
    live = _job(home, "1a431c717629", "running")
    _job(home, "bb076e7cdd78", "running")  # its process is gone: nobody holds the lock
    with exclusive(live / LOCK, RuntimeError):
        result = CliRunner().invoke(app, ["build", "--status"], env=env)
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line.split() for line in result.output.splitlines()
            if line[:1] in "1b"}
    assert rows["1a431c71"][1:5] == ["commonsense", "running", "216/400+184", "0"]
    assert rows["bb076e7c"][2] == "stale"
    assert "11-23 17:12" in result.output and "model: qwen2.5-coder-1.5b" in result.output
    assert "`kgrag graph stats`" in result.output  # the triples column is work, not the graph
    assert all(len(line) <= 80 and "…" not in line for line in result.output.splitlines())


def test_jobs_of_odd_domain_names_stay_in_their_own_folder(tmp_path: Path) -> None:
    """A domain name is a folder name, not a path or a glob pattern: `../x` stays inside
    home/jobs, and listing `a[b]` or `*` finds that domain's jobs and no other's."""
    home = tmp_path / "home"
    names = ["../x", "a[b]", "*", "commonsense"]
    for i, name in enumerate(names):
        folder = _job(home, f"00000000000{i}", "done", name)
        assert folder.resolve().is_relative_to((home / "jobs").resolve()), name
    for name in names:
        assert [j.domain for j in list_jobs(home, name)] == [name]
    assert len(list_jobs(home)) == len(names)
    assert not (tmp_path / "x").exists()


def test_progress_counts_the_plan_not_the_work() -> None:
    """An edited or withdrawn chunk makes `records_done` (work, all runs) exceed the
    plan; progress counts the plan's chunks (a job saved before `records_pending` existed
    is capped)."""
    base = {"id": "j", "domain": "medical", "sources": [], "limit": None, "model": "m",
            "prompt_hash": "p", "config": {}}
    assert JobRecord(**base, records_done=29191, records_total=28632,
                     records_pending=0).progress == (28632, 28632)
    assert JobRecord(**base, records_done=216, records_total=400, records_in_graph=184,
                     records_pending=0).progress == (216, 400)
    assert JobRecord(**base, records_done=100, records_total=400,
                     records_pending=300).progress == (100, 400)
    assert JobRecord(**base, records_done=500, records_total=400).progress == (400, 400)
