import re

import cypher


def test_every_statement_loads_and_is_single() -> None:
    names = cypher.names()
    assert "schema/020_entity_domain_key" in names
    for name in names:
        text = cypher.load(name)
        code = "\n".join(line for line in text.splitlines() if not line.strip().startswith("//"))
        assert code.strip(), name
        assert ";" not in code, f"{name}: one statement per file"


def test_no_string_interpolation_in_cypher() -> None:
    # Values travel as $parameters; Python-format or f-string holes would be injection points.
    for name in cypher.names():
        assert not re.search(r"\{[a-z_]+\}|%s|%\(", cypher.load(name)), name


def test_schema_applies_in_a_stable_order() -> None:
    schema = cypher.names("schema")
    assert schema == sorted(schema)
    assert len(schema) >= 10


def test_digest_changes_with_content() -> None:
    assert cypher.digest("schema") != cypher.digest("admin")


def test_methods_digest_covers_only_what_methods_run() -> None:
    """A run records the digest of the statements methods execute: editing a build or
    schema statement must not make a finished run 'another configuration'."""
    assert cypher.methods_digest() == cypher.digest(*cypher.METHOD_FOLDERS)
    assert cypher.methods_digest() != cypher.digest()
    assert cypher.digest("metakg", "textrag") == cypher.digest("textrag", "metakg")
    assert all(cypher.names(folder) for folder in cypher.METHOD_FOLDERS)
