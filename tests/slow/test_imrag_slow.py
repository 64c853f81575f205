"""`imrag-gold` end to end on one HotpotQA dev question: the real small GGUF model
(KGRAG_TEST_MODEL, default the 0.5B), the real MiniLM embedder, the question's own
paragraphs as the corpus. No Neo4j: the gold-context retriever is in memory.

Asserts what must hold whatever the model says (a non-empty answer, at least one round
with a query, progress scored against the gold paragraphs), never answer quality.
"""

from __future__ import annotations

import pytest

from kgrag.datasets import load_dataset
from kgrag.models import REGISTRY
from textrag.imrag.method import IMRAG
from textrag.retrievers import GoldContextRetriever


@pytest.fixture(scope="module")
def platform():
    from kgrag.platform import Platform

    return Platform()  # models and embedder only: nothing here opens the store


@pytest.fixture(scope="module")
def model(platform, test_model_name: str):
    from kgrag.llm.llama import LlamaCppModel

    spec = REGISTRY.get(test_model_name)
    # One thread: the machine's 2 cores are shared (see test_seakr_slow.py).
    m = LlamaCppModel(platform.models.resolve(test_model_name), name=test_model_name,
                      n_ctx=4096, n_layers=spec.n_layers if spec else None, n_threads=1)
    yield m
    m.close()


def test_imrag_runs_a_monologue_on_a_hotpotqa_question(platform, model) -> None:
    question = load_dataset("hotpotqa", platform.settings.data_dir, limit=1).questions[0]
    pred = IMRAG(model, GoldContextRetriever.for_question, platform.embedder).answer(question)
    assert pred.error is None, pred.error
    assert pred.answer.strip()
    rounds = [s for s in pred.trace if s.stage == "round"]
    decided = [s for s in pred.trace if s.stage == "decide"]
    # The Questioner may answer at once; then the loop still hands over to the Answerer.
    assert rounds or decided
    for s in rounds:
        assert s.data["query"].strip() and s.data["progress"] is not None
        assert 0.0 <= s.data["progress"]["distance"] <= 2.0
    (progress,) = [s for s in pred.trace if s.stage == "progress"]
    assert set(progress.data["gold"]) == set(question.supporting)
    assert pred.usage.retrievals == len(rounds) <= 3
    assert pred.usage.llm_calls == len(rounds) + len(decided) + 1  # + the Answerer
    print(f"\n{pred.answer!r} after {len(rounds)} rounds: "
          + " | ".join(s.summary for s in pred.trace))
