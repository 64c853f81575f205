"""Against the real Neo4j started by the project's launcher (or NEO4J_URI)."""

from __future__ import annotations

import urllib.request

import pytest

import cypher
from kgrag.errors import KgragError
from kgrag.store import connect_checked

HOSTILE = [
    'O\'Brien "the" `tick`',
    "}) DETACH DELETE n //",
    "x'}) MATCH (m) DETACH DELETE m //",
    "line one\nline two",
    "emoji 🧠🔥 and ünïcödé",
    "$rows {domain: 'evil'}",
]


def test_server_is_neo4j_5_26(platform) -> None:
    info = platform.store.info()
    assert info.version.startswith("5.26"), info


def test_browser_answers_when_managed(platform) -> None:
    if not platform.settings.managed_neo4j:
        pytest.skip("NEO4J_URI set: the Browser is not ours to check")
    with urllib.request.urlopen(platform.neo4j.browser_url, timeout=10) as r:
        assert r.status == 200
        assert b"Neo4j Browser" in r.read()


# The writes below are the graph builder's own statements (`kg_builder.graph_io` sends
# them); only the read-back statement is the tests' (`tests/cypher/read_entity.cypher`).
def _entities(platform, domain: str, rows: list[dict]) -> list:  # type: ignore[no-untyped-def]
    return [c for _, c in platform.store.write_batches("kg/merge_entities", rows,
                                                       extra={"domain": domain})]


def _facts(platform, domain: str, rows: list[dict]) -> list:  # type: ignore[no-untyped-def]
    return [c for _, c in platform.store.write_batches("kg/merge_facts", rows,
                                                       extra={"domain": domain})]


def test_write_and_read_back(platform, test_domain) -> None:
    rows = [{"key": "fox", "name": "Fox", "aliases": ["fox"]},
            {"key": "forest", "name": "Forest", "aliases": ["forest"]}]
    assert sum(c.nodes_created for c in _entities(platform, test_domain, rows)) == 2
    assert platform.store.read("test/read_entity", {"domain": test_domain, "key": "fox"}) == [
        {"name": "Fox"}]


def test_hostile_names_are_stored_verbatim(platform, test_domain) -> None:
    before = platform.store.read("graph/count_nodes")[0]["n"]
    rows = [{"key": f"k{i}", "name": name, "aliases": [name]} for i, name in enumerate(HOSTILE)]
    _entities(platform, test_domain, rows)
    facts = [{"h": "k0", "r": name, "t": f"k{i}", "k": "other", "chunks": [name], "conf": 1.0}
             for i, name in enumerate(HOSTILE) if i]
    assert sum(c.relationships_created for c in _facts(platform, test_domain, facts)) == 5
    for i, name in enumerate(HOSTILE):
        got = platform.store.read("test/read_entity", {"domain": test_domain, "key": f"k{i}"})
        assert got == [{"name": name}]
    predicates = {e["r"] for e in platform.store.read("kg/edges", {"domain": test_domain})}
    assert predicates == set(HOSTILE[1:])  # relation text is a property, kept verbatim
    # nothing else was deleted or created by the "injections"
    assert platform.store.read("graph/count_nodes")[0]["n"] == before + len(HOSTILE)


def test_stream_yields_what_read_returns_and_translates_errors(platform, test_domain) -> None:
    rows = [{"key": f"e{i}", "name": f"E{i}", "aliases": [f"e{i}"]} for i in range(25)]
    _entities(platform, test_domain, rows)
    _facts(platform, test_domain, [{"h": f"e{i}", "r": "next", "t": f"e{i + 1}",
                                    "k": "other", "chunks": ["c"], "conf": 1.0}
                                   for i in range(24)])
    params = {"domain": test_domain}
    before = platform.store.stats.queries
    streamed = list(platform.store.stream("kg/edges", params, fetch_size=7))  # 4 fetches
    assert sorted(streamed, key=str) == sorted(platform.store.read("kg/edges", params), key=str)
    assert len(streamed) == 24 and platform.store.stats.queries == before + 2
    with pytest.raises(KgragError, match="kg/edges"):
        next(platform.store.stream("kg/edges", {}))  # $domain missing: a Cypher error


def test_merge_is_idempotent(platform, test_domain) -> None:
    rows = [{"key": "fox", "name": "Fox", "aliases": ["fox"]},
            {"key": "den", "name": "den", "aliases": ["den"]}]
    fact = [{"h": "fox", "r": "lives in", "t": "den", "k": "location", "chunks": ["c1"],
             "conf": 1.0}]
    _entities(platform, test_domain, rows)
    _facts(platform, test_domain, fact)
    again = _entities(platform, test_domain, rows) + _facts(platform, test_domain, fact)
    assert sum(c.nodes_created + c.relationships_created + c.properties_set
               for c in again) == 0


def test_every_cypher_file_explains(platform) -> None:
    explained = 0
    for name in cypher.names():
        if name.startswith(("schema/", "ddl/")) or name == "graph/delete_domain":
            continue  # schema DDL cannot be EXPLAINed; it is applied by the session fixture
        platform.store.explain(name)
        explained += 1
    assert explained >= 3


def test_schema_is_idempotent_and_online(platform) -> None:
    first = platform.store.apply_schema()
    second = platform.store.apply_schema()
    assert first == second
    indexes = {r["name"]: r["state"] for r in platform.store.read("admin/indexes")}
    for name in ("entity_embedding", "entity_names", "passage_text", "passage_embedding"):
        assert indexes.get(name) == "ONLINE", indexes


def test_wrong_password_gives_a_clear_error(platform) -> None:
    uri, user, _ = platform.neo4j_credentials()
    with pytest.raises(KgragError, match="refused the credentials"):
        connect_checked(uri, user, "definitely-wrong-password", "neo4j")


def test_unreachable_server_gives_a_clear_error() -> None:
    with pytest.raises(KgragError, match="not reachable") as e:
        connect_checked("bolt://127.0.0.1:1", "neo4j", "x", "neo4j")
    assert "kgrag neo4j start" in e.value.hint
