"""The quality report's cache against the real Neo4j: computed once per graph fingerprint,
recomputed when a write changes the fingerprint (`kg_builder.quality.refresh_cached`)."""

from __future__ import annotations

from pathlib import Path

from kg_builder.graph_io import GraphWriter, WriteReport
from kg_builder.quality import quality_report, read_cached, refresh_cached
from kgrag.config import Settings
from kgrag.platform import Platform
from tests.integration.test_graph_io import HashEmbedder, _rows


def test_the_cache_follows_the_fingerprint(platform, test_domain, tmp_path: Path) -> None:
    chunks, entities, facts = _rows()
    writer = GraphWriter(platform.store, HashEmbedder(), test_domain)
    writer.write(chunks, entities, facts, WriteReport(test_domain))
    p = Platform(Settings(home=tmp_path / "home"))  # a throw-away cache folder
    p.__dict__["store"] = platform.store
    first = refresh_cached(p, test_domain)
    assert first.fingerprint.facts == 2 and first.structure.largest_component == 3
    assert refresh_cached(p, test_domain).fingerprint == first.fingerprint
    writer.write([], [{"key": "owl", "name": "owl", "aliases": []}],
                 [{"h": "owl", "r": "hunts", "t": "fox", "k": "function", "chunks": ["c1"],
                   "conf": 1.0}], WriteReport(test_domain))
    second = refresh_cached(p, test_domain)
    assert second.fingerprint != first.fingerprint and second.fingerprint.facts == 3
    assert second.structure.largest_component == 4
    assert second.structure.relation_kinds["function"] == 1
    assert read_cached(p.settings.home, test_domain) == second
    fresh = quality_report(p, test_domain, duplicates=False)
    assert (fresh.entities, fresh.relations, fresh.components) == (4, 3, 1)
