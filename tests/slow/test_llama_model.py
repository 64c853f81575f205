"""A real GGUF model through llama-cpp-python (KGRAG_TEST_MODEL, default the 0.5B)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kgrag.errors import ModelError
from kgrag.llm.base import Generation, GenerationParams, Message, chat_stream
from kgrag.models import REGISTRY

SCHEMA = {
    "type": "object",
    "properties": {"triples": {"type": "array", "maxItems": 4, "items": {
        "type": "array", "minItems": 3, "maxItems": 3, "items": {"type": "string"}}}},
    "required": ["triples"],
}
MSGS = [Message("user", "Give knowledge triples [head, relation, tail] about: "
                        "Aspirin reduces fever. Fever is a symptom of flu.")]


@pytest.fixture(scope="module")
def model(test_model_name: str):
    from kgrag.llm.llama import LlamaCppModel
    from kgrag.platform import Platform

    p = Platform()
    spec = REGISTRY[test_model_name]
    return LlamaCppModel(p.models.resolve(test_model_name), name=test_model_name,
                         n_ctx=2048, n_layers=spec.n_layers)


def test_constrained_json_parses(model) -> None:
    g = model.chat(MSGS, GenerationParams(max_tokens=160, json_schema=SCHEMA))
    data = json.loads(g.text)
    assert isinstance(data["triples"], list)
    assert all(len(t) == 3 and all(isinstance(x, str) for x in t) for t in data["triples"])
    assert g.completion_tokens > 0


def test_until_cuts_the_greedy_reply_it_would_have_given(model) -> None:
    whole = model.chat(MSGS, GenerationParams(max_tokens=40))
    cut = model.chat(MSGS, GenerationParams(max_tokens=40, until=lambda text: len(text) >= 12))
    assert cut.finish_reason == "until" and 12 <= len(cut.text) < len(whole.text)
    assert whole.text.startswith(cut.text)  # the same tokens, stopped early
    assert 0 < cut.completion_tokens < whole.completion_tokens
    again = model.chat(MSGS, GenerationParams(max_tokens=40))
    assert again.text == whole.text  # a stopped reply leaves the model usable


def test_until_is_refused_with_logprobs_or_json(model) -> None:
    for params in (GenerationParams(until=bool, logprobs=True),
                   GenerationParams(until=bool, json_schema=SCHEMA)):
        with pytest.raises(ModelError, match="until"):
            model.chat(MSGS, params)


def test_until_keeps_multi_byte_characters_whole(model) -> None:
    ask = [Message("user", 'Repeat exactly: "ꙮ 𝔄𝔅 ᚠᚢ – 🜁 ꙮ"')]  # rare non-ASCII characters
    whole = model.chat(ask, GenerationParams(max_tokens=40))
    assert sum(ord(c) > 127 for c in whole.text) >= 4  # the case this test is about
    for n in (3, 5, 8):
        cut = model.chat(ask, GenerationParams(max_tokens=40, until=lambda t, n=n: len(t) >= n))
        assert cut.finish_reason == "until" and whole.text.startswith(cut.text), (n, cut.text)


def test_logprobs_are_probabilities_of_the_text(model) -> None:
    g = model.chat(MSGS, GenerationParams(max_tokens=12, logprobs=True, top_logprobs=3))
    assert g.logprobs is not None and len(g.logprobs) == g.completion_tokens
    assert all(t.logprob <= 0.0 for t in g.logprobs)
    assert "".join(t.token for t in g.logprobs) == g.text
    # greedy: the chosen token is the most probable alternative
    assert all(t.top[0][1] == pytest.approx(t.logprob) for t in g.logprobs)


def test_middle_layer_hidden_state(model, test_model_name: str) -> None:
    layer = REGISTRY[test_model_name].middle_layer
    h = model.hidden_state(MSGS, "Aspirin reduces fever.", layer=layer, tensor="ffn_out")
    assert h.shape == (model.llm.n_embd(),)
    assert np.isfinite(h).all() and np.abs(h).sum() > 0
    again = model.hidden_state(MSGS, "Aspirin reduces fever.", layer=layer, tensor="ffn_out")
    assert np.array_equal(h, again)  # identical sequence → bit-identical vector
    other = model.hidden_state(MSGS, "Fever is a symptom.", layer=layer, tensor="ffn_out")
    assert not np.array_equal(h, other)


def test_parallel_samples_share_one_prompt(model) -> None:
    params = GenerationParams(max_tokens=16, temperature=1.0, top_k=50, top_p=0.9, seed=7)
    gens = model.sample(MSGS, 4, params)
    assert len(gens) == 4
    assert all(0 < g.completion_tokens <= 16 for g in gens)
    assert len({g.text for g in gens}) > 1  # sampled, not four copies of greedy
    assert [g.text for g in model.sample(MSGS, 4, params)] == [g.text for g in gens]  # seeded


def test_chat_after_sampling_is_unaffected(model) -> None:
    params = GenerationParams(max_tokens=20)
    before = model.chat(MSGS, params).text
    model.sample(MSGS, 3, GenerationParams(max_tokens=8, temperature=1.0, seed=1))
    assert model.chat(MSGS, params).text == before


# Two prompts sharing a long system prompt (several 64-token blocks) but not their question.
_SYSTEM = ("You extract knowledge triples. " + " ".join(
    f"Rule {i}: keep entity names short, use the source's words, no pronouns." for i in range(12)))
_A = [Message("system", _SYSTEM), Message("user", "Aspirin reduces fever.")]
_B = [Message("system", _SYSTEM), Message("user", "Fever is a symptom of flu.")]


def test_prefix_reuse_gives_the_cold_result(model, test_model_name: str) -> None:
    """A prompt after another with the same system prompt reuses its whole blocks, and
    every reply, log-probability and sample equals the one a fresh model gives."""
    from kgrag.llm.llama import LlamaCppModel

    fresh = LlamaCppModel(model.path, name=test_model_name, n_ctx=2048,
                          n_layers=REGISTRY[test_model_name].n_layers)
    greedy = GenerationParams(max_tokens=24, logprobs=True)
    json_p = GenerationParams(max_tokens=60, json_schema=SCHEMA)
    sampled = GenerationParams(max_tokens=10, temperature=1.0, seed=3, logprobs=True)
    try:
        cold = [fresh.chat(_B, json_p).text]
        fresh.kv.clear()
        cold_lp = fresh.chat(_B, greedy)
        fresh.kv.clear()
        cold_samples = fresh.sample(_B, 3, sampled)

        model.chat(_A, json_p)
        before = model.kv.reused
        warm = [model.chat(_B, json_p).text]
        assert model.kv.reused - before >= 128  # the shared system prompt was not re-read
        model.chat(_A, greedy)
        warm_lp = model.chat(_B, greedy)
        model.sample(_A, 2, sampled)
        warm_samples = model.sample(_B, 3, sampled)
    finally:
        fresh.close()
    assert warm == cold
    assert warm_lp.text == cold_lp.text
    assert [t.logprob for t in warm_lp.logprobs or ()] == \
        [t.logprob for t in cold_lp.logprobs or ()]  # bit-identical, not approximately
    assert [g.text for g in warm_samples] == [g.text for g in cold_samples]
    assert [[t.logprob for t in g.logprobs or ()] for g in warm_samples] == \
        [[t.logprob for t in g.logprobs or ()] for g in cold_samples]


_C = [Message("system", _SYSTEM), Message("user", "Influenza is caused by a virus.")]
_D = [Message("system", _SYSTEM), Message("user", "Paracetamol also lowers fever.")]


def _in_order(model, convs: list[list[Message]], params: GenerationParams,  # type: ignore[no-untyped-def]
              seen: list[int] | None = None) -> list[Generation]:
    replies = {}
    for i, g in chat_stream(model, [(c, params) for c in convs], parallel=2):
        replies[i] = g
        if seen is not None:
            seen.append(i)
    return [replies[i] for i in range(len(convs))]


def test_chat_stream_constrained_replies_are_valid_and_reproducible(model) -> None:
    """Four prompts, two decoded at a time with a grammar sampler each: every reply
    parses and arrives once, and a second run (warm cache, same schedule) gives the same
    replies; a context too small for all at once still answers all."""
    params = GenerationParams(max_tokens=60, json_schema=SCHEMA)
    before = model.chat(_A, params).text
    seen: list[int] = []
    first = _in_order(model, [_A, _B, _C, _D], params, seen)
    assert sorted(seen) == [0, 1, 2, 3]
    for g in first:
        data = json.loads(g.text)
        assert isinstance(data["triples"], list) and g.finish_reason == "stop"
    again = _in_order(model, [_A, _B, _C, _D], params)
    assert [g.text for g in again] == [g.text for g in first]
    assert _in_order(model, [], params) == []
    # a prompt's tail + max_tokens is reserved: with over half of the 2,048 cells per
    # prompt only one fits at a time, yet both are answered (one after the other)
    big = GenerationParams(max_tokens=2048 - 150 - len(model.tokenize_chat(_A)) // 2,
                           json_schema=SCHEMA)
    waves = _in_order(model, [_A, _B], big)
    assert all(json.loads(g.text)["triples"] is not None for g in waves)
    # ordinary chat after the stream: the same reply as before it
    assert model.chat(_A, params).text == before


def test_chat_stream_mixes_budgets_and_grammars(model) -> None:
    """Requests in one stream keep their own budget and constraint, and replies come as
    they finish: the 4-token one first."""
    order = [i for i, _ in model.chat_stream(
        [(_A, GenerationParams(max_tokens=60, json_schema=SCHEMA)),
         (_B, GenerationParams(max_tokens=4))], parallel=2)]
    assert order == [1, 0]
    replies = dict(model.chat_stream(
        [(_A, GenerationParams(max_tokens=60, json_schema=SCHEMA)),
         (_B, GenerationParams(max_tokens=4))], parallel=2))
    assert json.loads(replies[0].text)["triples"] is not None
    assert replies[1].completion_tokens <= 4 and replies[1].finish_reason == "length"
    with pytest.raises(ModelError, match="sampling settings"):
        list(model.chat_stream([(_A, GenerationParams()),
                                (_B, GenerationParams(temperature=0.7))]))
