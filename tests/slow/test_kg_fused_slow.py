"""kg-fused on three real questions: a real GGUF model (KGRAG_TEST_MODEL) reads the letters,
the real commonsense graph in Neo4j scores the options with the committed kg-paths weights.
Control flow on real parts: both distributions in the trace, and weight 0 reads as `llm`."""

from __future__ import annotations

import pytest

from kgrag.baselines import LLMOnly
from kgrag.models import REGISTRY
from kgrag.types import Choice, Question
from metakg.kg_paths import KGFused, scorer_for

pytestmark = [pytest.mark.slow, pytest.mark.integration]


def _q(id_: str, text: str, options: list[str]) -> Question:
    return Question(id=id_, text=text, kind="multiple_choice", domain="commonsense",
                    choices=[Choice(label=x, text=t) for x, t in zip("ABCDE", options,
                                                                    strict=True)])


QUESTIONS = [
    _q("milk", "Where do people keep milk cold at home?",
       ["oven", "refrigerator", "garage", "mailbox", "attic"]),
    _q("fox", "Where would you find a fox?", ["forest", "bathtub", "library", "oven", "bank"]),
    _q("tired", "What happens to people who run for hours?",
       ["get tired", "fly", "turn blue", "grow taller", "sing"]),
]


@pytest.fixture(scope="module")
def parts(test_model_name: str):  # type: ignore[no-untyped-def]
    from kgrag.llm.llama import LlamaCppModel
    from kgrag.platform import Platform

    p = Platform()
    if not p.store.read("metakg/domain_status", {"domain": "commonsense"})[0]["facts"]:
        pytest.skip("the commonsense graph is not loaded")
    spec = REGISTRY[test_model_name]
    model = LlamaCppModel(p.models.resolve(test_model_name), name=test_model_name,
                          n_ctx=2048, n_layers=spec.n_layers)
    return model, scorer_for(p, "commonsense")


@pytest.mark.parametrize("question", QUESTIONS, ids=lambda q: q.id)
def test_kg_fused_traces_both_distributions_and_weight_zero_is_llm(parts, question) -> None:  # type: ignore[no-untyped-def]
    model, scorer = parts
    fused = KGFused(model, scorer, "commonsense", weight=1.0).answer(question)
    assert fused.error is None
    last = fused.trace[-1]
    assert last.stage == "choose" and set(last.data["reader"]) == set("ABCDE")
    assert sum(last.data["letters"].values()) == pytest.approx(1.0, abs=1e-3)
    assert set(last.data["graph"]) == set("ABCDE")
    paths = next(s for s in fused.trace if s.stage == "paths").data["options"]
    assert any(o["paths"] for o in paths.values())  # the graph links some option
    zero = KGFused(model, scorer, "commonsense", weight=0.0).answer(question)
    assert zero.answer == LLMOnly(model).answer(question).answer
