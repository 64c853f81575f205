"""kg-ppr against the real Neo4j: a small entity graph whose chunks are corpus passages
(real MiniLM vectors for the passages), the PPR passage ranking, the fusion with BM25
and dense retrieval, the method's answer with a scripted model, and its round trips."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from kg_builder.graph_io import GraphWriter, WriteReport
from kgrag.types import Passage, Question
from metakg.ppr import GraphPPR, PassageIds
from metakg.seeds import store_matcher
from tests.doubles.scripted import ScriptedModel
from textrag.corpus import delete_passages, load_corpus
from textrag.corpus_vectors import corpus_embedder, ready_to_load
from textrag.ppr import KGPPR, PPRRetriever
from textrag.retrievers import BM25Retriever, DenseRetriever, shared

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
}
VECTOR = [1.0] + [0.0] * 383
QUESTION = "Where does the director of Big Stone Gap live?"


@pytest.fixture(scope="module")
def corpus(platform, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:  # type: ignore[no-untyped-def]
    prefix = f"test-ppr-{uuid.uuid4().hex[:8]}:"
    file = tmp_path_factory.mktemp("ppr") / "passages.jsonl"
    file.write_text("\n".join(json.dumps({"id": pid, "title": t, "text": x})
                              for pid, (t, x, _) in PASSAGES.items()) + "\n")
    load_corpus(platform.store, ready_to_load(platform), file, id_prefix=prefix, progress=False)
    try:
        yield prefix
    finally:
        delete_passages(platform.store, prefix)


@pytest.fixture()
def graph(platform, test_domain) -> str:  # type: ignore[no-untyped-def]
    docs = {pid: f"{test_domain}:wiki_passages:{pid}" for pid in PASSAGES}
    chunks = [{"id": docs[pid], "doc": docs[pid], "text": x, "source": "wiki_passages.jsonl",
               "title": t, "line": i} for i, (pid, (t, x, _)) in enumerate(PASSAGES.items(), 1)]
    facts = [{"h": h, "r": r, "t": t, "k": "fast", "chunks": [docs[pid]], "conf": 1.0}
             for pid, (_, _, fs) in PASSAGES.items() for h, r, t in fs]
    names = sorted({x for f in facts for x in (f["h"], f["t"])})
    GraphWriter(platform.store, None, test_domain).write(
        chunks, [{"key": n, "name": n.title(), "aliases": [], "emb": VECTOR} for n in names],
        facts, WriteReport(test_domain))
    return test_domain


def ppr(platform, graph: str, prefix: str, others=()) -> PPRRetriever:  # type: ignore[no-untyped-def]
    ids = PassageIds(f"{graph}:wiki_passages:", prefix)
    return PPRRetriever(GraphPPR(platform.store, graph, ids), store_matcher(platform.store, graph),
                        list(others))


def test_the_graph_ranking_follows_the_walk_from_the_seed(platform, graph, corpus) -> None:  # type: ignore[no-untyped-def]
    r = ppr(platform, graph, corpus)
    before = platform.store.stats.queries
    hits = r.search(QUESTION, 10)
    # seed big stone gap; PPR: bsg > adriana > greenwich > nyc; p4 (Jaws) is unreachable
    assert [h.passage.id for h in hits] == [corpus + p for p in ("p1", "p2", "p3")]
    assert hits[0].passage.title == "Big Stone Gap (film)"
    assert r.history[-1]["seeds"] == ["big stone gap"]
    assert r.history[-1]["entities"][:2] == ["big stone gap", "adriana trigiani"]
    assert platform.store.stats.queries - before == 3  # keys, subgraph, passages


def test_fused_with_bm25_and_dense_and_read_like_rag(platform, graph, corpus) -> None:  # type: ignore[no-untyped-def]
    text = [BM25Retriever(platform.store),
            DenseRetriever(platform.store, corpus_embedder(platform))]
    r = ppr(platform, graph, corpus, text)
    hits = r.search(QUESTION, 10)
    ids = [h.passage.id for h in hits]
    # p1 leads the graph ranking and both text rankings of the test passages (the shared
    # corpus holds Wikipedia's own Big Stone Gap paragraph beside it, maybe in copies
    # left by benchmarks, which p2, found by the graph alone, ranks after)
    assert ids[0] == corpus + "p1" and corpus + "p2" in ids
    model = ScriptedModel(["She lives in Greenwich Village. So the answer is: Greenwich "
                           "Village."])
    q = Question(id="q", text=QUESTION, answers=["Greenwich Village"],
                 contexts=[Passage(id="gold", title="Gold", text="never read")])
    fresh = ppr(platform, graph, corpus, text)  # r remembers the question's keys
    pred = KGPPR(model, shared(fresh), store=platform.store).answer(q)
    assert pred.error is None and pred.answer == "Greenwich Village"
    assert pred.method == "kg-ppr"
    graph_step = next(s for s in pred.trace if s.stage == "graph")
    assert graph_step.data["searches"][0]["seeds"] == ["big stone gap"]
    assert pred.setting == "open"
    # 3 graph round trips + BM25 + dense, nothing else
    assert pred.usage.cypher_queries == 5
    assert "Big Stone Gap is a 2014 film" in model.prompts[0][-1].content
    assert "never read" not in repr(model.prompts)


def test_a_question_without_entities_is_plain_hybrid(platform, graph, corpus) -> None:  # type: ignore[no-untyped-def]
    bm25 = BM25Retriever(platform.store)
    r = ppr(platform, graph, corpus, [bm25])
    before = platform.store.stats.queries
    hits = r.search("What is the airspeed of an unladen swallow?", 3)
    assert platform.store.stats.queries - before == 2  # the key lookup, then BM25 only
    assert [h.passage.id for h in hits] == [h.passage.id for h in bm25.search(
        "What is the airspeed of an unladen swallow?", 3)]


def test_the_cypher_files_plan(platform) -> None:  # type: ignore[no-untyped-def]
    for name in ("metakg/match_keys", "metakg/ppr_subgraph", "textrag/ppr_passages",
                 "textrag/medical/ppr_passages",
                 "metakg/coverage_balls", "metakg/coverage_meet"):
        platform.store.explain(name)



# --- the medical corpus: MedQuAD answers as MedicalPassage nodes ---------------------------
MEDQUAD = [  # line → (question, answer, facts its chunk yields)
    ("What is (are) Glaucoma ?", "Glaucoma damages the optic nerve.",
     [("glaucoma", "damages", "optic nerve")]),
    ("What are the treatments for Glaucoma ?", "Eye drops lower the pressure in the eye.",
     [("eye drop", "treats", "glaucoma")]),
    ("What is (are) Gout ?", "Gout is a form of arthritis.", [("gout", "is a", "arthritis")]),
]


@pytest.fixture()
def medical(platform, test_domain, tmp_path) -> Iterator[tuple[str, PassageIds]]:  # type: ignore[no-untyped-def]
    """A MedQuAD-shaped corpus under a test id prefix, and a graph whose documents name
    its records the way the medical graph does (`<domain>:medquad_corpus:L<line>`)."""
    from textrag.corpora import MEDICAL

    prefix = f"test-ppr-{uuid.uuid4().hex[:8]}:"
    file = tmp_path / "medquad.jsonl"
    file.write_text("\n".join(json.dumps({"source": "T", "qid": f"q{i}", "question": q,
                                          "answer": a})
                              for i, (q, a, _) in enumerate(MEDQUAD, 1)) + "\n")
    load_corpus(platform.store, ready_to_load(platform, MEDICAL), file, id_prefix=prefix,
                progress=False, corpus=MEDICAL)
    docs = {i: f"{test_domain}:medquad_corpus:L{i}" for i in range(1, len(MEDQUAD) + 1)}
    chunks = [{"id": docs[i], "doc": docs[i], "text": a, "source": "medquad_corpus.jsonl",
               "title": q, "line": i} for i, (q, a, _) in enumerate(MEDQUAD, 1)]
    facts = [{"h": h, "r": r, "t": t, "k": "fast", "chunks": [docs[i]], "conf": 1.0}
             for i, (_, _, fs) in enumerate(MEDQUAD, 1) for h, r, t in fs]
    names = sorted({x for f in facts for x in (f["h"], f["t"])})
    GraphWriter(platform.store, None, test_domain).write(
        chunks, [{"key": n, "name": n.title(), "aliases": [], "emb": VECTOR} for n in names],
        facts, WriteReport(test_domain))
    ids = PassageIds(MEDICAL.graph_document_prefix(test_domain),
                     prefix + MEDICAL.passage_prefix, MEDICAL.statement("ppr_passages"))
    try:
        yield test_domain, ids
    finally:
        delete_passages(platform.store, prefix, MEDICAL)


def test_the_medical_graph_ranks_medquad_answers(platform, medical) -> None:  # type: ignore[no-untyped-def]
    domain, ids = medical
    r = PPRRetriever(GraphPPR(platform.store, domain, ids), store_matcher(platform.store, domain))
    before = platform.store.stats.queries
    hits = r.search("How is glaucoma treated?", 10)
    # seed glaucoma: its two answers (L1, L2); gout's (L3) is not connected
    assert sorted(h.passage.id for h in hits) == [ids.passage_prefix + "L1",
                                                  ids.passage_prefix + "L2"]
    assert {h.passage.title for h in hits} == {q for q, _, _ in MEDQUAD[:2]}
    assert platform.store.stats.queries - before == 3  # keys, subgraph, passages
    # the Wikipedia statement over the same graph finds no passage: the labels stay apart
    wiki = GraphPPR(platform.store, domain, PassageIds(ids.doc_prefix, ids.passage_prefix))
    assert wiki.passages(["glaucoma"], 10)[0] == []
