"""`rag` and `flare` end to end: the real small GGUF model over real passages in Neo4j.

About 200 Wikipedia passages are loaded under test ids (and deleted afterwards); BM25
searches the whole Passage index, so a loaded full corpus may answer too.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from kgrag.types import Question
from textrag.baselines import FLARE, RAG
from textrag.corpus import default_corpus_path, delete_passages, load_corpus
from textrag.corpus_vectors import ready_to_load
from textrag.retrievers import BM25Retriever, shared

# Passage p2 of the corpus: "Janet Marie Waldo (…) was an American radio and voice
# actress. She is best known in animation for voicing Judy Jetson, …"
QUESTION = Question(id="slow-1", text="Which American voice actress voiced Judy Jetson?",
                    answers=["Janet Waldo"])


@pytest.fixture(scope="module")
def passages(platform) -> Iterator[str]:
    prefix = f"test-textrag-slow-{uuid.uuid4().hex[:8]}:"
    try:
        load_corpus(platform.store, ready_to_load(platform), default_corpus_path(platform.settings),
                    limit=200, id_prefix=prefix, progress=False)
        yield prefix
    finally:
        delete_passages(platform.store, prefix)


@pytest.fixture(scope="module")
def model(platform, test_model_name: str):
    from kgrag.llm.llama import LlamaCppModel
    from kgrag.models import REGISTRY

    spec = REGISTRY.get(test_model_name)
    m = LlamaCppModel(platform.models.resolve(test_model_name), name=test_model_name,
                      n_ctx=4096, n_layers=spec.n_layers if spec else None)
    yield m
    m.close()


def test_rag_answers_from_the_retrieved_passage(platform, passages: str, model) -> None:
    pred = RAG(model, shared(BM25Retriever(platform.store)), store=platform.store).answer(QUESTION)
    assert pred.error is None, pred.error
    retrieve = next(s for s in pred.trace if s.stage == "retrieve")
    assert "Janet Waldo" in retrieve.data["titles"]
    assert pred.usage.retrievals == 1 and pred.usage.cypher_queries == 1
    assert 1 <= pred.usage.llm_calls <= 2  # a forced answer line at most
    assert pred.setting == "open" and "Janet Waldo" in pred.evidence
    assert "answer is" not in pred.answer.lower()  # the short answer, not the reasoning
    assert "waldo" in pred.answer.lower()


def test_flare_runs_with_real_token_probabilities(platform, passages: str, model) -> None:
    pred = FLARE(model, shared(BM25Retriever(platform.store)), store=platform.store
                 ).answer(QUESTION)
    assert pred.error is None, pred.error
    looks = [s for s in pred.trace if s.stage == "lookahead" and "min_prob" in s.data]
    assert looks, [s.summary for s in pred.trace]
    for s in looks:
        assert 0.0 < s.data["min_prob"] <= 1.0
        assert s.data["retrieve"] == (s.data["min_prob"] <= 0.8)
    triggered = sum(s.data["retrieve"] for s in looks)
    assert pred.usage.retrievals == triggered
    assert pred.usage.cypher_queries == triggered
    assert pred.answer.strip()
    assert "answer is" not in pred.answer.lower()
