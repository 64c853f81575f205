"""ConceptNet rows without Neo4j: relation kinds, negations, resolution, bad tarballs."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

import pytest

from kg_builder.conceptnet import (
    MEMBER,
    Assertion,
    check_relations,
    conceptnet_rows,
    parse_lines,
    predicate,
    read_tarball,
    resolver,
)
from kg_builder.pypi_files import Distribution, fetch_distribution, sha256_of
from kgrag.errors import KgragError

LINES = [
    "fox\tbush\t{'freq': 5, 'score': 1, 'rel': u'AtLocation'}",
    "fox\tbrain\t{'freq': -5, 'score': 1, 'rel': u'AtLocation'}",
    "dna\tspace\t{'freq': 5, 'score': 1, 'rel': u'AtLocation'}",
    "dna\tspace\t{'freq': -5, 'score': 1, 'rel': u'AtLocation'}",
    "revolve door\tdepartment store\t{'freq': 5, 'score': 2, 'rel': u'AtLocation'}",
]


def test_relation_words_and_unknown_kinds_refused_by_name() -> None:
    assert predicate("AtLocation") == "at location"
    assert predicate("IsA") == "is a"
    with pytest.raises(KgragError, match="LivesIn"):
        check_relations(["AtLocation", "LivesIn"])
    with pytest.raises(KgragError, match="'Flies'"):
        parse_lines(["a\tb\t{'freq': 1, 'score': 1, 'rel': u'Flies'}"])
    with pytest.raises(KgragError, match="line 1 is malformed"):
        parse_lines(["a\tb"])


def test_negations_never_become_positive_facts() -> None:
    rows = conceptnet_rows(parse_lines(LINES), "d")
    triples = {(f["h"], f["r"], f["t"]) for f in rows.facts}
    assert ("fox", "at location", "bush") in triples
    assert ("fox", "at location", "brain") not in triples
    assert ("dna", "at location", "space") not in triples  # +5 and -5: not asserted
    assert rows.negated == 2
    assert all(f["freq"] > 0 and f["k"] == "AtLocation" and f["x"] == "conceptnet"
               for f in rows.facts)
    assert {e["key"] for e in rows.entities} == {"fox", "bush", "revolve door",
                                                 "department store"}
    fox = next(c for c in rows.chunks if c["id"] == "d:conceptnet:fox")
    assert "brain" not in fox["text"] and fox["doc"] == "d:conceptnet:f"


def test_concepts_resolve_to_entities_by_their_normal_form() -> None:
    existing = {"revolving door": "Revolving doors", "fox": "fox", "door": "door"}
    resolve = resolver(existing, lambda names: [
        "revolve door" if n == "Revolving doors" else n for n in names])
    assert resolve("revolve door") == "revolving door"
    assert resolve("fox") == "fox" and resolve("bush") == "bush"
    rows = conceptnet_rows([Assertion(1, "revolve door", "AtLocation", "mall", 5, 1)], "d",
                           resolve)
    assert rows.facts[0]["h"] == "revolving door"
    assert rows.alias_keys == {"revolving door": ["revolve door"]}


def _tarball(tmp: Path, payload: bytes) -> Path:
    path = tmp / "Divisi2-2.2.5.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo(MEMBER)
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    return path


def test_wrong_sha256_and_damaged_tarballs_are_clear_errors(tmp_path: Path) -> None:
    good = _tarball(tmp_path, gzip.compress("\n".join(LINES).encode()))
    dist = Distribution("divisi2", good.name, sha256_of(good), "conceptnet")
    assert len(read_tarball(good, dist)) == len(LINES)
    with pytest.raises(KgragError, match="is not the pinned"):
        read_tarball(good, Distribution("divisi2", good.name, "0" * 64, "conceptnet"))
    broken = tmp_path / "broken.tar.gz"
    broken.write_bytes(good.read_bytes()[:60])
    with pytest.raises(KgragError, match="damaged"):
        read_tarball(broken, Distribution("divisi2", broken.name, sha256_of(broken), "c"))


def test_a_download_with_the_wrong_digest_is_discarded(tmp_path: Path) -> None:
    dist = Distribution("divisi2", "x.tar.gz", "0" * 64, "conceptnet")
    with pytest.raises(KgragError, match="discarded"):
        fetch_distribution(tmp_path, dist, lambda d, dest: dest.write_bytes(b"junk"))
    assert not list((tmp_path / "conceptnet").glob("*.tar.gz"))
