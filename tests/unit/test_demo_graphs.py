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


def test_the_graph_step_names_the_builtin_domains_without_a_full_export(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _export(tmp_path, "legal", [{"command": "build --domain legal --extractor fast",
                                 "status": "done"}])
    _export(tmp_path, "medical", [{"command": "build --domain medical --limit 300",
                                   "status": "done"}])
    monkeypatch.setattr(demo, "GRAPH_EXPORTS", tmp_path)
    imported: list[Path] = []

    def fake_import(_store: Any, _emb: Any, path: Path, **_: Any) -> WriteReport:
        imported.append(path)
        return WriteReport(path.name.split(".")[0])

    monkeypatch.setattr(demo, "import_graph", fake_import)
    platform: Any = type("P", (), {"store": None, "embedder": None})()
    loaded, partial = demo._load_graphs(platform, Console(file=io.StringIO()))
    assert loaded == {"legal", "medical"} and len(imported) == 2
    assert partial == ["commonsense", "medical", "wikipedia"]  # built-in order; no export: too


def test_the_committed_legal_export_is_a_full_fast_build() -> None:
    from kg_builder.graph_io import read_export

    meta, _ = read_export(ROOT / "data" / "graphs" / "legal.jsonl.gz")
    assert demo.is_full_build(meta)


def test_the_frozen_medical_graph_is_a_full_build_in_two_parts_and_not_a_demo_export() -> None:
    """data/graphs/full/medical.jsonl.gz: the graph the MedQuAD run's KG rows read
    (data/graphs/README.md); `scripts/dev300.sh prepare` imports it, `make demo` does not."""
    from kg_builder.graph_io import read_export

    full = ROOT / "data" / "graphs" / "full" / "medical.jsonl.gz"
    meta, _ = read_export(full)
    assert meta["domain"] == "medical" and demo.is_full_build(meta)
    assert meta["counts"] == {"entities": 108983, "facts": 252985, "chunks": 28599,
                              "cooccurs": 610629}
    assert full.with_name(full.name + ".part2").is_file()
    assert full not in demo.GRAPH_EXPORTS.glob("*.jsonl.gz")


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
