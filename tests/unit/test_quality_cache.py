"""The quality report's cache (`kg_builder.quality`) and the Graphs page's service around it
(`app.quality`): the facts are read once per graph fingerprint, again when the fingerprint
changes; counts are refreshed at each check; a broken cache file is recomputed; the page
is served from the cache while a re-check runs behind. A fake store that counts the
statements it is asked."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.quality import QualityService
from kg_builder.quality import (
    cache_path,
    cached_quality_report,
    quality_report,
    read_cached,
    refresh_cached,
)
from kgrag.config import Settings
from kgrag.errors import DomainNotBuilt
from kgrag.platform import Platform

STATS = {"entities": 4, "relations": 2, "with_provenance": 1, "orphans": 1, "chunks": 1,
         "without_embedding": 4, "co_occurrences": 0}


class CountingStore:
    def __init__(self) -> None:
        self.asked: list[str] = []
        self.gate: threading.Event | None = None  # set: the fingerprint read waits for it
        self.gated: str | None = None  # only that domain's, when set
        self.rows: dict[str, list[dict[str, Any]]] = {
            "kg/stats": [dict(STATS)],
            "kg/edges": [{"h": "milk", "t": "fridge", "k": "spatial"},
                         {"h": "cow", "t": "milk", "k": "function", "x": "spacy"}],
            "graph/fingerprint": [{"entities": ["milk", "fridge", "cow", "oven"],
                                   "facts": ["4:milk7:kept infridge", "3:cow5:givesmilk"],
                                   "chunks": 1}]}

    def read(self, name: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        if (name == "graph/fingerprint" and self.gate is not None
                and self.gated in (None, (params or {}).get("domain"))):
            assert self.gate.wait(10)
        self.asked.append(name)
        return [dict(r) for r in self.rows.get(name, [])]

    def stream(self, name: str, params: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        yield from self.read(name, params)


@pytest.fixture()
def platform(tmp_path: Path) -> Platform:
    p = Platform(Settings(home=tmp_path / "home", data_dir=tmp_path / "data"))
    p.__dict__["store"] = CountingStore()
    return p


def test_the_facts_are_read_once_per_fingerprint(platform: Platform) -> None:
    store = platform.store
    first = cached_quality_report(platform, "toy")
    assert store.asked.count("kg/edges") == 1
    assert cache_path(platform.settings.home, "toy").is_file()
    asked = len(store.asked)
    assert cached_quality_report(platform, "toy") == first
    assert len(store.asked) == asked  # served from the file: Neo4j not asked at all
    assert first == quality_report(platform, "toy", duplicates=False)
    assert first.components == 2 and first.largest_component_share == 3 / 4  # + the orphan
    assert first.relations_by_extractor == {"llm": 1, "spacy": 1}
    # a check with the same fingerprint keeps the structure and takes the new counts
    store.rows["kg/stats"] = [{**STATS, "without_embedding": 0}]
    edges = store.asked.count("kg/edges")
    entry = refresh_cached(platform, "toy")
    assert store.asked.count("kg/edges") == edges and entry.stats["without_embedding"] == 0
    assert cached_quality_report(platform, "toy").entities_without_embedding == 0


def test_a_changed_fingerprint_recomputes_and_a_broken_file_is_ignored(
        platform: Platform) -> None:
    store = platform.store
    cached_quality_report(platform, "toy")
    store.rows["kg/edges"] = store.rows["kg/edges"][:1]  # a fact dropped
    store.rows["graph/fingerprint"][0]["facts"] = ["4:milk7:kept infridge"]
    entry = refresh_cached(platform, "toy")
    assert store.asked.count("kg/edges") == 2
    assert entry.structure.relation_kinds == {"spatial": 1} and entry.fingerprint.facts == 1
    assert read_cached(platform.settings.home, "toy") == entry
    cache_path(platform.settings.home, "toy").write_text("{not json")
    assert read_cached(platform.settings.home, "toy") is None
    assert cached_quality_report(platform, "toy").relation_kinds == {"spatial": 1}
    assert store.asked.count("kg/edges") == 3


def test_domain_names_make_safe_file_names_and_an_empty_graph_is_not_built(
        platform: Platform, tmp_path: Path) -> None:
    assert cache_path(tmp_path, "medical").name == "medical.json"
    odd = cache_path(tmp_path, "../etc/passwd")
    assert odd.parent == tmp_path / "quality" and odd.name.startswith("d-")
    platform.store.rows["kg/stats"] = [{**STATS, "entities": 0}]
    with pytest.raises(DomainNotBuilt):
        cached_quality_report(platform, "toy")


def test_the_service_serves_the_cache_while_a_recheck_runs_behind(platform: Platform) -> None:
    store = platform.store
    service = QualityService(platform, recheck_s=0.0)
    report, entry, checking = service.report("toy")  # no cache yet: computed here
    assert report.entities == 4 and not checking
    store.rows["kg/stats"] = [{**STATS, "entities": 5}]
    store.rows["graph/fingerprint"][0]["entities"].append("cheese")  # the graph changed
    store.gate = threading.Event()  # hold the background check at its fingerprint read
    report, _, checking = service.report("toy")
    assert report.entities == 4 and checking  # the old report at once, a check under way
    assert service.recheck("toy") is service.recheck("toy")  # one check at a time
    store.gate.set()
    service.recheck("toy").result(timeout=10)
    report, entry, checking = service.report("toy")
    assert report.entities == 5 and entry.fingerprint.entities == 5
    service.recheck("toy").result(timeout=10)


def test_warm_starts_the_domains_without_a_report(platform: Platform) -> None:
    service = QualityService(platform)
    service.warm(["toy"])
    service.recheck("toy").result(timeout=10)
    assert service.cached("toy") is not None
    edges = platform.store.asked.count("kg/edges")
    service.warm(["toy"])  # cached: nothing started
    assert not service.checking("toy") and platform.store.asked.count("kg/edges") == edges


def test_a_first_view_waits_for_the_computation_warm_started(platform: Platform) -> None:
    store = platform.store
    store.gate = threading.Event()
    service = QualityService(platform)
    service.warm(["toy"])
    assert service.checking("toy")
    store.gate.set()
    report, _, _ = service.report("toy")  # waits for the running computation
    assert report.entities == 4
    assert store.asked.count("kg/edges") == 1  # computed once, not twice


def test_a_first_view_does_not_wait_behind_other_domains_reports(platform: Platform) -> None:
    store = platform.store
    store.gate, store.gated = threading.Event(), "big"
    service = QualityService(platform)
    service.warm(["big", "toy"])  # one worker: toy's report is queued behind big's
    report, _, _ = service.report("toy")  # computed here, not after big's
    assert report.entities == 4 and service.checking("big")
    store.gate.set()
    service.recheck("big").result(timeout=10)


def test_time_quality_times_each_part_and_leaves_the_cache_current(platform: Platform) -> None:
    from kg_builder.quality import time_quality

    t = time_quality(platform, "toy")
    assert min(t.counts_s, t.fingerprint_s, t.structure_s, t.cache_read_s) >= 0
    assert t.uncached_view_s == t.counts_s + t.structure_s
    entry = read_cached(platform.settings.home, "toy")
    assert entry is not None and str(entry.fingerprint) == t.fingerprint
    assert entry.structure.components == 1
