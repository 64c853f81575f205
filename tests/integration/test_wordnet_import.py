"""The WordNet import of a slice (the fixture's 17 real synsets) into the real Neo4j:
entities keyed as the graph keys them, relation kinds, provenance to the synset chunk,
and a re-import that writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from kg_builder.resolution import resolution_rows
from kg_builder.wordnet import WordNetFiles
from kg_builder.wordnet_import import import_files
from tests.integration.test_graph_io import HashEmbedder

pytestmark = pytest.mark.integration
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "wordnet"


def test_wordnet_slice_import_has_kinds_provenance_and_is_idempotent(platform, test_domain
                                                                     ) -> None:  # type: ignore[no-untyped-def]
    files = WordNetFiles.from_folder(FIXTURE)
    first, _ = import_files(platform.store, HashEmbedder, test_domain, files)
    assert first.fast_path and first.facts > 0 and first.embedded == first.entities
    store = platform.store
    edges = {(e["h"], e["r"], e["t"]): (e["k"], e["x"])
             for e in store.read("kg/edges", {"domain": test_domain})}
    assert edges[("dog", "is a", "canine")] == ("hypernymy", "wordnet")
    assert edges[("wheel", "part of", "wheeled vehicle")] == ("meronymy", "wordnet")
    assert edges[("good", "opposite of", "bad")] == ("antonymy", "wordnet")
    assert edges[("snore", "entails", "sleep")] == ("entailment", "wordnet")
    assert edges[("kill", "causes", "die")] == ("cause", "wordnet")
    facts = {(f["h"], f["r"], f["t"]): f["chunks"]
             for f in store.read("kg/export_facts", {"domain": test_domain})}
    dog = f"{test_domain}:wordnet:dog.n.01"
    assert facts[("dog", "is a", "canine")] == [dog]
    mentions = {(m["chunk"], m["key"]) for m in store.read("test/mentions",
                                                           {"domain": test_domain})}
    assert {(dog, "dog"), (dog, "canine"), (dog, "domestic dog")} <= mentions
    chunks = {c["id"]: c for c in store.read("kg/export_chunks", {"domain": test_domain})}
    assert chunks[dog]["source"] == "wordnet"
    assert chunks[dog]["doc"] == f"{test_domain}:wordnet:noun.animal"
    stats = store.read("kg/stats", {"domain": test_domain})[0]
    assert stats["with_provenance"] == stats["relations"] == first.facts
    assert stats["without_embedding"] == 0
    # every lemma is a lexicon word: resolution merges none of them (rule 5)
    assert resolution_rows(store, test_domain)[0] == []

    second, _ = import_files(platform.store, HashEmbedder, test_domain, files)
    assert not second.fast_path
    assert (second.nodes_created, second.relationships_created, second.embedded) == (0, 0, 0)


def test_the_fast_extractor_reads_the_glosses_into_the_synset_chunks(platform, test_domain
                                                                     ) -> None:  # type: ignore[no-untyped-def]
    from kg_builder.wordnet_glosses import extract_glosses

    files = WordNetFiles.from_folder(FIXTURE)
    _, rows = import_files(platform.store, HashEmbedder, test_domain, files)
    first = extract_glosses(platform.store, HashEmbedder, test_domain, rows.chunks)
    assert first.facts > 0 and first.chunks == len(rows.chunks)
    synset_chunks = {c["id"] for c in rows.chunks}
    facts = platform.store.read("kg/export_facts", {"domain": test_domain})
    spacy = [f for f in facts if f["x"] == "spacy"]
    assert spacy and all(set(f["chunks"]) <= synset_chunks for f in spacy)
    assert platform.store.read("kg/stats", {"domain": test_domain})[0]["chunks"] == len(
        synset_chunks)  # no chunk of its own: the synset is the provenance
    again = extract_glosses(platform.store, HashEmbedder, test_domain, rows.chunks)
    assert (again.nodes_created, again.relationships_created) == (0, 0)
