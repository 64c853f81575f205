"""The saved Neo4j Browser queries (cypher/browser/) against the real Neo4j: what the app
reads with parameters, and the self-contained statement its "Open in Neo4j Browser" links
carry returns exactly the same rows, hostile names included."""

from __future__ import annotations

import neo4j
import pytest

from app import browser_links as bl
from kg_builder.graph_io import GraphWriter, WriteReport
from tests.integration.test_graph_io import HashEmbedder

HOSTILE = 'AT&T "#1"; }) DETACH DELETE n //\nx\\y'


@pytest.fixture()
def small_graph(platform, test_domain):
    chunks = [{"id": f"{test_domain}:c1", "doc": f"{test_domain}:d1", "title": "milk",
               "text": "Milk is kept in the refrigerator.", "source": "t.jsonl", "line": 1},
              {"id": f"{test_domain}:c2", "doc": f"{test_domain}:d1", "title": "milk",
               "text": "Cows give milk.", "source": "t.jsonl", "line": 2}]
    entities = [{"key": k, "name": n, "aliases": a} for k, n, a in [
        ("milk", "milk", ["dairy milk"]), ("refrigerator", "Refrigerator", ["fridge"]),
        ("cow", "cow", []), ("cold", "cold", []), (HOSTILE, HOSTILE, [])]]
    facts = [{"h": h, "r": r, "t": t, "k": "spatial", "chunks": [c], "conf": 1.0}
             for h, r, t, c in [("milk", "kept in", "refrigerator", f"{test_domain}:c1"),
                                ("cow", "gives", "milk", f"{test_domain}:c2"),
                                ("refrigerator", "keeps", "cold", f"{test_domain}:c1"),
                                (HOSTILE, "is & #; a", "milk", f"{test_domain}:c2")]]
    GraphWriter(platform.store, HashEmbedder(), test_domain).write(
        chunks, entities, facts, WriteReport(test_domain))
    return test_domain


def run_literal(platform, text: str) -> list[dict]:
    uri, user, password = platform.neo4j_credentials()
    with neo4j.GraphDatabase.driver(uri, auth=(user, password)) as driver:
        records, _, _ = driver.execute_query(text, database_=platform.settings.neo4j.database)
    return [r.data() for r in records]


def scalars(rows: list[dict], *keys: str) -> list[tuple]:
    return sorted(tuple(r[k] for k in keys) for r in rows)


def same_in_app_and_browser(platform, name: str, params: dict, *keys: str) -> list[tuple]:
    app_rows = scalars(platform.store.read(name, params), *keys)
    link_rows = scalars(run_literal(platform, bl.statement(name, params)), *keys)
    assert app_rows == link_rows, name
    return app_rows


def test_evidence_paths_show_exactly_the_asked_triples(platform, small_graph) -> None:
    triples = [["milk", "kept in", "refrigerator"], [HOSTILE, "is & #; a", "milk"],
               ["milk", "no such predicate", "cow"]]
    rows = same_in_app_and_browser(platform, "browser/evidence_paths",
                                   {"domain": small_graph, "triples": triples},
                                   "head", "predicate", "tail")
    assert rows == sorted([("milk", "kept in", "refrigerator"), (HOSTILE, "is & #; a", "milk")])


def test_entity_search_ranks_exact_then_prefix_then_degree(platform, small_graph) -> None:
    params = {"domain": small_graph, "text": " MIL", "limit": 10}
    rows = platform.store.read("browser/entity_search", params)
    assert [r["key"] for r in rows] == ["milk"]
    fridge = platform.store.read("browser/entity_search",
                                 {"domain": small_graph, "text": "fridge", "limit": 10})
    assert [r["key"] for r in fridge] == ["refrigerator"]  # found by its alias
    same_in_app_and_browser(platform, "browser/entity_search", params, "key", "degree")


def test_neighbourhood_has_both_directions_and_respects_the_limit(platform, small_graph) -> None:
    params = {"domain": small_graph, "key": "milk", "limit": 10}
    rows = same_in_app_and_browser(platform, "browser/entity_neighbourhood", params,
                                   "head", "predicate", "tail")
    assert rows == sorted([("milk", "kept in", "refrigerator"), ("cow", "gives", "milk"),
                           (HOSTILE, "is & #; a", "milk")])
    two = platform.store.read("browser/entity_neighbourhood", {**params, "limit": 2})
    assert len(two) == 2


def test_provenance_returns_the_source_chunk(platform, small_graph) -> None:
    params = {"domain": small_graph, "head": "milk", "predicate": "kept in",
              "tail": "refrigerator"}
    rows = same_in_app_and_browser(platform, "browser/triple_provenance", params,
                                   "chunk_id", "text", "line")
    assert rows == [(f"{small_graph}:c1", "Milk is kept in the refrigerator.", 1)]
    (row,) = platform.store.read("browser/triple_provenance", params)
    assert len(row["mentions"]) == 2  # the chunk mentions both entities of the fact


def test_domain_overview_keeps_the_most_connected(platform, small_graph) -> None:
    rows = same_in_app_and_browser(platform, "browser/domain_overview",
                                   {"domain": small_graph, "limit": 2}, "key", "degree")
    assert {k for k, _ in rows} == {"milk", "refrigerator"}  # degrees 3 and 2
