"""The quality report's cache (`kg_builder.quality.cached_quality_report`): the facts are
read once per graph fingerprint, again when the fingerprint changes, and a broken cache
file is recomputed. A fake store that counts the statements it is asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kg_builder.quality import CachedStructure, cache_path, cached_quality_report, quality_report
from kgrag.config import Settings
from kgrag.errors import DomainNotBuilt
from kgrag.platform import Platform

STATS = {"entities": 4, "relations": 2, "with_provenance": 1, "orphans": 1, "chunks": 1,
         "without_embedding": 4}


class CountingStore:
    def __init__(self) -> None:
        self.asked: list[str] = []
        self.rows: dict[str, list[dict[str, Any]]] = {
            "kg/stats": [dict(STATS)],
            "kg/edges": [{"h": "milk", "t": "fridge", "k": "spatial"},
                         {"h": "cow", "t": "milk", "k": "function", "x": "spacy"}],
            "graph/fingerprint": [{"entities": ["milk", "fridge", "cow", "oven"],
                                   "facts": ["4:milk7:kept infridge", "3:cow5:givesmilk"],
                                   "chunks": 1}]}

    def read(self, name: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        self.asked.append(name)
        return self.rows.get(name, [])


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
    second = cached_quality_report(platform, "toy")
    assert store.asked.count("kg/edges") == 1  # from the cache
    assert second == first == quality_report(platform, "toy", duplicates=False)
    assert first.components == 2 and first.largest_component_share == 3 / 4  # + the orphan
    assert first.relations_by_extractor == {"llm": 1, "spacy": 1}
    # counts are read fresh: vectors added without a change of fingerprint show at once
    store.rows["kg/stats"] = [{**STATS, "without_embedding": 0}]
    assert cached_quality_report(platform, "toy").entities_without_embedding == 0
    assert store.asked.count("kg/edges") == 2  # only the uncached report above read them


def test_a_changed_fingerprint_recomputes_and_a_broken_file_is_ignored(
        platform: Platform) -> None:
    store = platform.store
    cached_quality_report(platform, "toy")
    store.rows["kg/edges"] = store.rows["kg/edges"][:1]  # a fact dropped
    store.rows["graph/fingerprint"][0]["facts"] = ["4:milk7:kept infridge"]
    report = cached_quality_report(platform, "toy")
    assert store.asked.count("kg/edges") == 2 and report.relation_kinds == {"spatial": 1}
    path = cache_path(platform.settings.home, "toy")
    assert CachedStructure.model_validate_json(path.read_text()).fingerprint.facts == 1
    path.write_text("{not json")
    assert cached_quality_report(platform, "toy") == report
    assert store.asked.count("kg/edges") == 3


def test_domain_names_make_safe_file_names_and_an_empty_graph_is_not_built(
        platform: Platform, tmp_path: Path) -> None:
    assert cache_path(tmp_path, "medical").name == "medical.json"
    odd = cache_path(tmp_path, "../etc/passwd")
    assert odd.parent == tmp_path / "quality" and odd.name.startswith("d-")
    platform.store.rows["kg/stats"] = [{**STATS, "entities": 0}]
    with pytest.raises(DomainNotBuilt):
        cached_quality_report(platform, "toy")
