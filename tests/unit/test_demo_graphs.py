"""`kgrag demo`'s graph step: which domains the committed exports hold in full, and which
`--full` (`make demo FULL=1`) builds with the fast extractor."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from kg_builder import demo
from kg_builder.graph_io import WriteReport

ROOT = Path(__file__).resolve().parents[2]


def _export(folder: Path, domain: str, jobs: list[dict[str, Any]]) -> None:
    meta = {"type": "meta", "format": 1, "domain": domain, "jobs": jobs}
    with gzip.open(folder / f"{domain}.jsonl.gz", "wt") as f:
        f.write(json.dumps(meta) + "\n")


def test_a_finished_unlimited_fast_build_is_full_and_anything_else_is_not() -> None:
    done = {"status": "done"}
    assert demo.is_full_build({"jobs": [{**done, "command": "build --domain legal "
                                                             "--extractor fast"}]})
    for command in ("build --domain medical --limit 300",
                    "build --domain medical --extractor fast --only medquad",
                    "build --domain d --extractor fast --source notes.md",
                    "build --domain medical --extractor llm"):
        assert not demo.is_full_build({"jobs": [{**done, "command": command}]}), command
    assert not demo.is_full_build({"jobs": [{"status": "interrupted",
                                             "command": "build --domain x --extractor fast"}]})
    assert not demo.is_full_build({})


class _Store:
    """Records the statements the graph step runs; `entities`: whether any exists."""

    def __init__(self, entities: bool) -> None:
        self.entities, self.calls = entities, []  # type: list[str]

    def read(self, name: str, _params: Any = None) -> list[dict[str, Any]]:
        self.calls.append(name)
        return [{"any": self.entities}]

    def run(self, name: str, _params: Any = None) -> list[dict[str, Any]]:
        self.calls.append(name)
        return []

    def apply_schema(self, await_seconds: int = 300) -> list[str]:
        self.calls.append(f"apply_schema {await_seconds}")
        return []


def _graph_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: _Store,
                fail: str = "") -> tuple[set[str], list[str], list[str]]:
    monkeypatch.setattr(demo, "GRAPH_EXPORTS", tmp_path)

    def fake_import(_store: Any, _emb: Any, path: Path, **_: Any) -> WriteReport:
        store.calls.append(f"import {path.relative_to(tmp_path)}")
        if path.name.startswith(fail or "-"):
            raise RuntimeError("import failed")
        return WriteReport(path.name.split(".")[0])

    monkeypatch.setattr(demo, "import_graph", fake_import)
    platform: Any = type("P", (), {"store": store, "embedder": None})()
    loaded, partial = demo._load_graphs(platform, Console(file=io.StringIO()))
    return loaded, partial, store.calls


def test_the_graph_step_names_the_builtin_domains_without_a_full_export(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _export(tmp_path, "legal", [{"command": "build --domain legal --extractor fast",
                                 "status": "done"}])
    _export(tmp_path, "medical", [{"command": "build --domain medical --limit 300",
                                   "status": "done"}])
    loaded, partial, calls = _graph_step(tmp_path, monkeypatch, _Store(entities=True))
    assert loaded == {"legal", "medical"}
    assert calls == ["kg/any_entity", "import legal.jsonl.gz", "import medical.jsonl.gz"]
    assert partial == ["commonsense", "medical", "wikipedia"]  # built-in order; no export: too


def test_a_full_export_replaces_the_small_one_of_its_domain(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "full").mkdir()
    _export(tmp_path, "legal", [])
    _export(tmp_path, "medical", [{"command": "build --domain medical --limit 300",
                                   "status": "done"}])
    _export(tmp_path / "full", "medical", [{"command": "build --domain medical "
                                                       "--extractor fast", "status": "done"}])
    assert demo.demo_exports(tmp_path) == [tmp_path / "legal.jsonl.gz",
                                           tmp_path / "full" / "medical.jsonl.gz"]
    loaded, partial, _ = _graph_step(tmp_path, monkeypatch, _Store(entities=True))
    assert loaded == {"legal", "medical"}
    assert partial == ["commonsense", "legal", "wikipedia"]


def test_a_fresh_database_populates_the_entity_indexes_once_after_every_import(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _export(tmp_path, "legal", [])
    _export(tmp_path, "medical", [])
    *_, calls = _graph_step(tmp_path, monkeypatch, _Store(entities=False))
    assert calls == ["kg/any_entity", *demo.DEFERRED_INDEXES, "import legal.jsonl.gz",
                     "import medical.jsonl.gz", f"apply_schema {demo.INDEX_WAIT_SECONDS}"]


def test_the_entity_indexes_come_back_when_an_import_fails(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _export(tmp_path, "legal", [])
    _export(tmp_path, "medical", [])
    store = _Store(entities=False)
    with pytest.raises(RuntimeError, match="import failed"):
        _graph_step(tmp_path, monkeypatch, store, fail="legal")
    assert store.calls[-1] == f"apply_schema {demo.INDEX_WAIT_SECONDS}"
    assert "import medical.jsonl.gz" not in store.calls


def test_the_committed_legal_export_is_a_full_fast_build() -> None:
    from kg_builder.graph_io import read_export

    meta, _ = read_export(ROOT / "data" / "graphs" / "legal.jsonl.gz")
    assert demo.is_full_build(meta)


def test_the_frozen_medical_graph_is_a_full_build_in_two_parts_that_the_demo_loads() -> None:
    """data/graphs/full/medical.jsonl.gz: the graph the MedQuAD run's KG rows read
    (data/graphs/README.md); `make demo` and `scripts/dev300.sh prepare` import it."""
    from kg_builder.graph_io import read_export

    full = ROOT / "data" / "graphs" / "full" / "medical.jsonl.gz"
    meta, _ = read_export(full)
    assert meta["domain"] == "medical" and demo.is_full_build(meta)
    assert meta["counts"] == {"entities": 108983, "facts": 252985, "chunks": 28599,
                              "cooccurs": 610629}
    assert full.with_name(full.name + ".part2").is_file()
    assert full in demo.demo_exports()


def test_the_demo_loads_the_full_graphs_of_every_domain_each_part_under_50_mb() -> None:
    """`make demo` imports medical and wikipedia with over 100,000 entities each, and
    legal's whole fast build; no committed file is over 50 MB (git hosts refuse them)."""
    from kg_builder.graph_io import part_paths, read_export

    exports = {p.name.split(".")[0]: p for p in demo.demo_exports()}
    assert set(exports) == {"commonsense", "legal", "medical", "wikipedia"}
    for domain in ("medical", "wikipedia"):
        meta, _ = read_export(exports[domain])
        assert meta["counts"]["entities"] >= 100_000 and demo.is_full_build(meta), domain
    for path in exports.values():
        for part in part_paths(path):
            assert part.stat().st_size < 50_000_000, part


def test_the_committed_legal_export_holds_no_legalbench_test_split() -> None:
    """LegalBench's test splits are its evaluation data, not knowledge sources: withdrawn
    from the committed export (research/withdraw_sources.py), the counts kept consistent."""
    import gzip
    import json

    with gzip.open(ROOT / "data" / "graphs" / "legal.jsonl.gz", "rt") as f:
        rows = [json.loads(line) for line in f]
    meta = rows[0]
    assert not any(s.endswith("/test.jsonl") for s in meta["sources"])
    assert meta["withdrawn"][0]["sources"] == "legalbench/*/test.jsonl"
    chunks = {r["id"] for r in rows if r["type"] == "chunk"}
    assert not any(".test:" in c for c in chunks)
    provenance = {c for r in rows if r["type"] in ("fact", "cooccur") for c in r["chunks"]}
    assert provenance <= chunks
    assert meta["counts"]["chunks"] == len(chunks)
