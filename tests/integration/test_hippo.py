"""kg-ppr after HippoRAG 2 against the real Neo4j and the real MiniLM: fact vectors and
synonym edges built at index time, recognition seeds, passage nodes in the walk, and the
round trips of one search."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from kg_builder.graph_io import GraphWriter, WriteReport
from metakg.hippo import HippoConfig, HippoGraph
from metakg.hippo_index import build_index, check_facts, facts_scope
from metakg.ppr import PassageIds
from textrag.corpora import WIKIPEDIA
from textrag.corpus import delete_passages, load_corpus
from textrag.corpus_vectors import corpus_embedder, ready_to_load
from textrag.hippo import HippoRetriever
from textrag.retrievers import DenseRetriever

# passage id → (title, text, facts its chunk yields)
PASSAGES = {
    "p1": ("Big Stone Gap (film)", "Big Stone Gap is a 2014 film directed by Adriana Trigiani.",
           [("big stone gap", "directed by", "adriana trigiani")]),
    "p2": ("Adriana Trigiani", "Adriana Trigiani is an author who lives in Greenwich Village.",
           [("adriana trigiani", "lives in", "greenwich village")]),
    "p3": ("Greenwich Village", "Greenwich Village is a neighborhood of New York City.",
           [("greenwich village", "part of", "new york city")]),
    "p4": ("Jaws (film)", "Jaws is a 1975 film directed by Steven Spielberg.",
           [("jaw", "directed by", "steven spielberg")]),
    "p5": ("Manhattan", "Manhattan is a borough of NYC.", [("manhattan", "borough of", "nyc")]),
}
QUESTION = "Where does the director of Big Stone Gap live?"
NAMES = sorted({x for _, _, fs in PASSAGES.values() for h, _, t in fs for x in (h, t)})


def one_hot(i: int, j: int | None = None) -> list[float]:
    """A unit vector on axis 300 + i, or (j given) at cosine 0.9 to axis 300 + j."""
    v = [0.0] * 384
    if j is None:
        v[300 + i] = 1.0
    else:
        v[300 + j], v[300 + i] = 0.9, 0.19 ** 0.5
    return v


@pytest.fixture()
def graph(platform, test_domain, tmp_path) -> Iterator[tuple[str, str]]:  # type: ignore[no-untyped-def]
    prefix = f"test-hippo-{uuid.uuid4().hex[:8]}:"
    file = tmp_path / "passages.jsonl"
    file.write_text("\n".join(json.dumps({"id": pid, "title": t, "text": x})
                              for pid, (t, x, _) in PASSAGES.items()) + "\n")
    load_corpus(platform.store, ready_to_load(platform), file, id_prefix=prefix, progress=False)
    docs = {pid: f"{test_domain}:wiki_passages:{pid}" for pid in PASSAGES}
    chunks = [{"id": docs[pid], "doc": docs[pid], "text": x, "source": "wiki_passages.jsonl",
               "title": t, "line": i} for i, (pid, (t, x, _)) in enumerate(PASSAGES.items(), 1)]
    facts = [{"h": h, "r": r, "t": t, "k": "fast", "chunks": [docs[pid]], "conf": 1.0}
             for pid, (_, _, fs) in PASSAGES.items() for h, r, t in fs]
    # every entity on its own axis, but "nyc" at cosine 0.9 to "new york city"
    vectors = {n: one_hot(i) for i, n in enumerate(NAMES)}
    vectors["nyc"] = one_hot(NAMES.index("nyc"), NAMES.index("new york city"))
    GraphWriter(platform.store, None, test_domain).write(
        chunks, [{"key": n, "name": n.title(), "aliases": [], "emb": vectors[n]}
                 for n in NAMES], facts, WriteReport(test_domain))
    try:
        yield test_domain, prefix
    finally:
        delete_passages(platform.store, prefix)
        platform.store.run("vectors/delete_record", {"scope": facts_scope(test_domain)})


def test_index_search_and_round_trips(platform, graph) -> None:  # type: ignore[no-untyped-def]
    domain, prefix = graph
    config = HippoConfig(fact_top_k=2, dense_depth=1, fact_candidates=5000)
    emb = corpus_embedder(platform)  # facts are embedded by the corpus's query model
    with pytest.raises(Exception, match="has no vectors yet"):
        check_facts(platform.store, domain, emb.name)
    report = build_index(platform.store, domain, emb, config, progress=False)
    assert report.facts is not None and report.facts.embedded == 5
    assert report.synonyms == 1  # nyc ~ new york city (0.9 >= 0.8); the rest are at 0
    check_facts(platform.store, domain, emb.name)
    again = build_index(platform.store, domain, emb, config, progress=False)
    assert again.facts is not None and again.facts.embedded == 0  # resumable: nothing left

    r = HippoRetriever(HippoGraph(platform.store, domain, PassageIds(
        f"{domain}:wiki_passages:", prefix), config.model_copy(update={"fact_top_k": 1})),
        DenseRetriever(platform.store, emb), platform.store, WIKIPEDIA)
    before = platform.store.stats.queries
    hits = r.search(QUESTION, 10)
    # dense (1), then facts, subgraph, passage edges and the texts of the graph's passages
    assert platform.store.stats.queries - before == 5
    seen = r.history[-1]
    assert [(h, t) for h, _, t, _ in seen["facts"]] == [  # type: ignore[attr-defined]
        ("big stone gap", "adriana trigiani")]
    assert set(seen["seeds"]) == {"big stone gap", "adriana trigiani"}  # type: ignore[arg-type]
    ours = [h.passage.id for h in hits if h.passage.id.startswith(prefix)]
    # the seeds' passages first, then the next hop's; Jaws (p4) is not connected
    assert set(ours[:2]) == {prefix + "p1", prefix + "p2"} and ours[2] == prefix + "p3"
    assert prefix + "p4" not in ours
    assert {h.passage.title for h in hits if h.passage.id == prefix + "p1"} == {
        "Big Stone Gap (film)"}
    # New York City's passages: the synonym edge joins "new york city" (p3) and "nyc" (p5)
    hits = r.search("Which neighbourhood is part of New York City?", 10)
    seen = r.history[-1]
    assert seen["synonym_edges"] == 1
    ours = [h.passage.id for h in hits if h.passage.id.startswith(prefix)]
    assert {prefix + "p3", prefix + "p5"} <= set(ours)


def test_the_hippo_cypher_files_plan(platform) -> None:  # type: ignore[no-untyped-def]
    for name in ("hippo/nearest_facts", "hippo/subgraph", "hippo/passage_edges",
                 "hippo/facts_to_embed", "hippo/set_fact_embeddings", "hippo/merge_synonyms",
                 "hippo/entity_keys", "hippo/count_synonyms", "graph/count_facts",
                 "textrag/passages_by_id", "textrag/medical/passages_by_id",
                 "textrag/passages_to_embed", "textrag/set_passage_embeddings",
                 "vectors/get_record", "vectors/set_record"):
        platform.store.explain(name)
