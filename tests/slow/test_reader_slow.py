"""The multiple-choice reader on a real GGUF model (KGRAG_TEST_MODEL, default the 0.5B):
letter log-probabilities from one forward pass, against the model's own greedy token."""

from __future__ import annotations

import pytest

from kgrag.baselines import closed_book_render
from kgrag.llm.base import GenerationParams
from kgrag.llm.letters import renormalise
from kgrag.models import REGISTRY
from kgrag.reader import ReaderConfig, read_choice, rotated_block
from kgrag.types import Choice, Question

pytestmark = pytest.mark.slow

QUESTIONS = [
    Question(id="milk", text="Where do people keep milk cold at home?", kind="multiple_choice",
             choices=[Choice(label=x, text=t) for x, t in
                      zip("ABCDE", ["oven", "refrigerator", "garage", "mailbox", "attic"],
                          strict=True)]),
    Question(id="sum", text="What is 2 + 3?", kind="multiple_choice",
             choices=[Choice(label=x, text=t) for x, t in zip("ABCD", ["4", "6", "5", "7"],
                                                              strict=True)]),
]


@pytest.fixture(scope="module")
def model(test_model_name: str):
    from kgrag.llm.llama import LlamaCppModel
    from kgrag.platform import Platform

    spec = REGISTRY[test_model_name]
    return LlamaCppModel(Platform().models.resolve(test_model_name), name=test_model_name,
                         n_ctx=2048, n_layers=spec.n_layers)


@pytest.mark.parametrize("question", QUESTIONS, ids=lambda q: q.id)
def test_letter_distribution_sums_to_one_and_matches_the_greedy_first_token(model, question
                                                                          ) -> None:
    labels = [c.label for c in question.choices]
    messages = closed_book_render(question)(question.choices_block())
    scores = model.next_token_logprobs(messages, labels)
    assert all(lp < 0 for lp in scores.logprobs.values())  # under the full vocabulary
    probs = renormalise(scores.logprobs)
    assert sum(probs.values()) == pytest.approx(1.0)
    greedy = model.chat(messages, GenerationParams(max_tokens=1)).text.strip()
    if greedy in labels:  # unconstrained, the model starts with a letter: the same one
        assert max(probs, key=probs.get) == greedy
    else:
        pytest.fail(f"the greedy first token {greedy!r} is not an option letter")


def test_rotations_reuse_the_prompt_prefix_and_give_the_same_scores_cold_or_warm(model
                                                                              ) -> None:
    q = QUESTIONS[0]
    render = closed_book_render(q)
    labels = [c.label for c in q.choices]
    long_q = q.model_copy(update={"text": "At home, in a kitchen with the usual appliances "
                                  "and cupboards, on a warm summer day in a family house, "
                                  "after shopping at the grocery store. " + q.text})
    render = closed_book_render(long_q)
    a, b = (model.tokenize_chat(render(rotated_block(long_q, s))) for s in (0, 1))
    shared = next(i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y)
    assert shared >= model.kv.block  # the options come last: a whole block before them
    model.kv.clear()
    before = model.kv.reused
    c = read_choice(model, long_q, render, ReaderConfig(bias="rotate"))
    assert len(c.passes) == 5 and sum(c.probs.values()) == pytest.approx(1.0)
    # passes 2..5 reused the blocks before the options
    assert model.kv.reused - before >= 4 * (shared // model.kv.block * model.kv.block)
    # a warm pass (prefix in the cache) scores like a cold one
    warm = model.next_token_logprobs(render(rotated_block(q, 2)), labels).logprobs
    model.kv.clear()
    cold = model.next_token_logprobs(render(rotated_block(q, 2)), labels).logprobs
    assert warm == pytest.approx(cold, abs=1e-4)
