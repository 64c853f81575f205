"""The HPO import of a slice (9 real terms of hp.obo 2025-01-16 and 10 annotation lines)
into the real Neo4j: is_a and disease → phenotype facts with their frequency, a NOT
annotation that never becomes a fact, synonyms the matcher follows, provenance, and a
re-import that writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from kg_builder.hpo import parse_obo, write_hpo
from tests.integration.test_graph_io import HashEmbedder

pytestmark = pytest.mark.integration
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hpo"


def test_hpo_slice_import(platform, test_domain) -> None:  # type: ignore[no-untyped-def]
    store = platform.store
    terms = parse_obo((FIXTURES / "slice.obo").read_text(encoding="utf-8").splitlines())
    hpoa = (FIXTURES / "slice.hpoa").read_text(encoding="utf-8").splitlines()
    assert "Kidney cyst" in terms["HP:0000107"].synonyms  # EXACT layperson
    assert "Renal cysts" not in terms["HP:0000107"].synonyms  # RELATED, not layperson
    first = write_hpo(store, HashEmbedder, test_domain, terms, hpoa)
    facts = {(f["h"], f["r"], f["t"]): f for f in store.read(
        "test/imported_facts", {"domain": test_domain, "extractor": "hpo"})}
    assert facts[("renal cyst", "is a", "abnormal renal morphology")]["k"] == "hpo_is_a"
    bbs6 = facts[("bardet-biedl syndrome 6", "has phenotype", "renal cyst")]
    assert bbs6["k"] == "hpo_P" and bbs6["freq"] == pytest.approx(2 / 7)
    assert bbs6["chunks"] == [f"{test_domain}:hpo:OMIM_605231"]
    assert not any(h == "six2-related frontonasal dysplasia" for h, _, _ in facts)  # NOT
    merged = {r["merged"]: r["key"] for r in store.read("kg/merged_keys",
                                                        {"domain": test_domain})}
    assert merged["kidney cyst"] == "renal cyst"
    stats = store.read("kg/stats", {"domain": test_domain})[0]
    assert stats["with_provenance"] == stats["relations"] == first.facts == len(facts)

    second = write_hpo(store, HashEmbedder, test_domain, terms, hpoa)
    assert (second.nodes_created, second.relationships_created, second.embedded) == (0, 0, 0)
