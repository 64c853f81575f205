"""SeaKR's uncertainty on the real GGUF model (KGRAG_TEST_MODEL, default the 0.5B).

Asserts properties that a bug would break: U is finite, above the ln(alpha) floor and
made of real samples; it is reproducible bit for bit; the cached exemplar prefix changes
nothing; each EOS row belongs to its own sample; and the k samples are batched (one
decode per generation step for all sequences, not one per sequence). How much batching
saves in seconds is a benchmark figure (`kgrag bench seakr`), not asserted here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from kgrag.llm.base import GenerationParams
from kgrag.llm.eos_states import EosStateCache, sample_with_eos_states, tokenize_prompt
from kgrag.models import REGISTRY
from textrag.seakr.method import exemplar_prefix, render_prompt
from textrag.seakr.uncertainty import LlamaSeakrEngine, UncertaintyConfig

QUESTION = "Who directed the film that won the Academy Award for Best Picture in 1998?"
STEP_STOPS = ("\n\n", "\nQuestion:", "\nContext", ". ")


@pytest.fixture(scope="module")
def model(test_model_name: str):
    from kgrag.llm.llama import LlamaCppModel
    from kgrag.platform import Platform

    p = Platform()
    spec = REGISTRY[test_model_name]
    # One thread: on a shared 2-core machine two llama.cpp threads spin at every op's
    # barrier while the other is descheduled (measured here: 10-18x slower decodes).
    return LlamaCppModel(p.models.resolve(test_model_name), name=test_model_name,
                         n_ctx=4096, n_layers=spec.n_layers, n_threads=1)


def test_uncertainty_is_finite_bounded_and_reproducible(model) -> None:
    cfg = UncertaintyConfig(k=20)
    prompt = render_prompt(QUESTION, [], [])
    first = LlamaSeakrEngine(model, cfg).generate(prompt, STEP_STOPS, uncertainty=True)
    again = LlamaSeakrEngine(model, cfg).generate(prompt, STEP_STOPS, uncertainty=True)
    assert first.text.strip() and len(first.samples) == 20
    # at least two real sample vectors, so U is a log-det and not the 0.0 substitute
    assert first.vectors_used >= 2 and sum(bool(s.strip()) for s in first.samples) == \
        first.vectors_used
    assert first.uncertainty is not None and math.isfinite(first.uncertainty)
    # every eigenvalue of Gram + alpha*I is >= alpha, so U >= ln(alpha); U = ln(alpha)
    # exactly would mean all vectors were zero after centring (a dead tap)
    assert first.uncertainty > math.log(cfg.alpha) + 1e-6
    # a fresh engine (empty caches) recomputes everything: bit-identical results
    assert (again.text, again.uncertainty, again.samples) == \
        (first.text, first.uncertainty, first.samples)


def test_cached_exemplar_prefix_gives_bit_identical_results(model) -> None:
    cfg = UncertaintyConfig(k=8, max_tokens=24)
    prompt = render_prompt(QUESTION, [], [])
    engine = LlamaSeakrEngine(model, cfg, prefix=exemplar_prefix(10))
    cold = engine.generate(prompt, STEP_STOPS, uncertainty=True)  # decodes and saves
    engine.cache = EosStateCache()  # so that no vector comes from the cache
    warm = engine.generate(prompt, STEP_STOPS, uncertainty=True)  # restores the prefix
    assert engine._prefix_state.hits == 1 and engine.cache.misses > 0
    assert (warm.text, warm.samples, warm.uncertainty) == \
        (cold.text, cold.samples, cold.uncertainty)


def test_eos_rows_belong_to_their_samples(model, test_model_name: str) -> None:
    layer = REGISTRY[test_model_name].middle_layer
    assert layer is not None
    prompt = tokenize_prompt(model, "Question: Name a large city in Japan.\nAnswer:")
    params = GenerationParams(max_tokens=12, temperature=1.0, top_k=50, top_p=0.9,
                              stop=("\n",))
    out = sample_with_eos_states(model, prompt, 6, params, seed=5, tensor=f"ffn_out-{layer}")
    samples = out[1:]
    bodies, refs = [], {}
    for s in samples:
        assert s.state is not None and np.isfinite(s.state).all()
        # The state is read at an EOS that replaces the last token, unless the sample
        # ended with a natural EOS (not among its tokens): then right after its tokens.
        natural = s.finish == "stop" and "\n" not in model.detokenize(s.tokens)
        body = tuple(s.tokens) if natural else tuple(s.tokens[:-1])
        bodies.append(body)
        if body not in refs:
            refs[body] = model.hidden_state_tokens([*prompt, *body, model.eos_token], layer,
                                                   "ffn_out")[-1]
    assert len(refs) >= 2, "the samples should not all end alike at temperature 1"
    for s, body in zip(samples, bodies, strict=True):
        dist = {b: np.linalg.norm(s.state - r) / np.linalg.norm(r) for b, r in refs.items()}
        # Batched and from-scratch decodes differ by a few % (kernels, batch shapes); the
        # row must match its own sequence's reference best, and closely
        assert min(dist, key=dist.__getitem__) == body and dist[body] < 0.1
        twin = samples[bodies.index(body)]  # the same EOS position: one bit-identical row
        assert np.array_equal(s.state, twin.state)


def test_k_samples_are_decoded_together_not_one_by_one(model, monkeypatch) -> None:
    """The batched path: after the prompt, one llama_decode per generation step carries
    every live sequence, so greedy + 20 samples take about as many decodes as the longest
    sequence has tokens, while decoding them one by one would take their total length."""
    import kgrag.llm.eos_states as eos

    calls: list[int] = []
    real = eos._decode

    def counting(ctx: object, batch: object) -> None:
        calls.append(batch.n_tokens)  # type: ignore[attr-defined]
        real(ctx, batch)

    monkeypatch.setattr(eos, "_decode", counting)
    cfg = UncertaintyConfig(k=20)
    tokens = tokenize_prompt(model, render_prompt(QUESTION, [], []))
    prompt_chunks = math.ceil(len(tokens) / model.llm.n_batch)
    out = sample_with_eos_states(model, tokens, cfg.k, cfg.sampling(STEP_STOPS, cfg.max_tokens),
                                 seed=cfg.seed, tensor=f"ffn_out-{model.n_layers // 2}",
                                 greedy=True)
    steps = len(calls) - prompt_chunks
    longest = max(len(s.tokens) for s in out)
    total = sum(len(s.tokens) for s in out)
    assert len(out) == 21 and all(s.state is not None for s in out[1:])
    assert steps <= longest + 1  # one decode per position (+1 for the last EOS rows)
    assert total > 2 * (longest + 1)  # so one decode per sequence would cost far more
    assert max(calls[prompt_chunks:]) > 1  # a step's batch held several sequences' rows
