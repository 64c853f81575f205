"""The ConceptNet import of a slice (16 real lines of conceptnet_en.graph) into the real
Neo4j: typed facts with their weights, a negation that never becomes a fact, a concept
resolved to an existing entity by its normal form, provenance, and a re-import that
writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from kg_builder.conceptnet import import_assertions, parse_lines
from kg_builder.graph_io import GraphWriter, WriteReport
from kg_builder.normalize import concept_form
from tests.integration.test_graph_io import HashEmbedder

pytestmark = pytest.mark.integration
SLICE = Path(__file__).resolve().parents[1] / "fixtures" / "conceptnet" / "slice.graph"
LEMMAS = {"revolving": "revolve"}


def forms(names: list[str]) -> list[str]:
    return [concept_form([LEMMAS.get(w, w) for w in n.lower().split()]) for n in names]


def test_conceptnet_slice_import(platform, test_domain) -> None:  # type: ignore[no-untyped-def]
    store = platform.store
    GraphWriter(store, None, test_domain, embedder_factory=HashEmbedder).write(
        [{"id": f"{test_domain}:x:1", "doc": f"{test_domain}:x", "text": "t", "source": "x"}],
        [{"key": "revolving door", "name": "revolving door", "aliases": []},
         {"key": "door", "name": "door", "aliases": []}],
        [{"h": "revolving door", "r": "is a", "t": "door", "k": "x",
          "chunks": [f"{test_domain}:x:1"], "conf": 1.0, "x": "llm"}], WriteReport(test_domain))
    assertions = parse_lines(SLICE.read_text(encoding="utf-8").splitlines())
    first = import_assertions(store, HashEmbedder, test_domain, assertions, forms=forms)
    assert first.facts == 15  # 16 lines, one of them a negation
    facts = {(f["h"], f["r"], f["t"]): f for f in store.read(
        "test/imported_facts", {"domain": test_domain, "extractor": "conceptnet"})}
    assert facts[("fox", "at location", "bush")]["k"] == "AtLocation"
    assert (facts[("cat", "capable of", "scratch")]["score"],
            facts[("cat", "capable of", "scratch")]["freq"]) == (5, 5)
    assert facts[("fox", "is a", "vermin")]["assertions"] == [11]
    assert ("fox", "at location", "brain") not in facts  # freq -5: false
    assert not any(k[2] == "brain" for k in facts)
    # "revolve door" is ConceptNet's form of the existing "revolving door"
    assert ("revolving door", "at location", "department store") in facts
    merged = {r["merged"]: r["key"] for r in store.read("kg/merged_keys",
                                                        {"domain": test_domain})}
    assert merged["revolve door"] == "revolving door"
    assert facts[("fox", "at location", "bush")]["chunks"] == [f"{test_domain}:conceptnet:fox"]
    stats = store.read("kg/stats", {"domain": test_domain})[0]
    assert stats["with_provenance"] == stats["relations"] == 16

    second = import_assertions(store, HashEmbedder, test_domain, assertions, forms=forms)
    assert (second.nodes_created, second.relationships_created, second.embedded) == (0, 0, 0)
