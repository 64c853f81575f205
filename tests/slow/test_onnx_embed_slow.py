"""The real ONNX encoders (fetched from Maven Central once): the pinned reference vector of
a fixed sentence, computed by an independent numpy pooling over the graph's token outputs,
and batches that give each sentence the vector it gets alone (fp32; int8 within a cosine
of 0.98, as its activations are quantized per batch)."""

from __future__ import annotations

import numpy as np
import pytest

SENTENCE = "Jaws is a 1975 American thriller film directed by Steven Spielberg."
# first four components, from onnxruntime's last_hidden_state pooled by hand in numpy
# (bge: [CLS] row; e5: mean over the tokens of "passage: " + SENTENCE), L2-normalised
REFERENCE = {
    "bge-small-en-v1.5-q": [-0.00703, 0.04228, -0.02863, -0.01602],
    "bge-small-en-v1.5": [-0.00588, 0.04267, -0.03661, -0.01680],
    "e5-small-v2-q": [-0.07796, 0.02731, 0.02361, -0.00649],
    "e5-small-v2": [-0.07448, 0.03538, 0.02143, -0.01326],
}


@pytest.fixture(scope="module")
def platform():  # type: ignore[no-untyped-def]
    from kgrag.platform import Platform

    return Platform()


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_reference_vector_and_batches(platform, name: str) -> None:  # type: ignore[no-untyped-def]
    emb = platform.embedder_named(name)
    v = emb.embed([SENTENCE])
    assert v.shape == (1, 384)
    assert v[0, :4] == pytest.approx(REFERENCE[name], abs=2e-5)
    # independent pooling over the raw token vectors
    tokens, mask = emb.token_vectors([emb.source.prefix("document") + SENTENCE])
    raw = tokens[0, 0] if emb.source.pooling == "cls" else tokens[0].mean(axis=0)
    assert v[0] == pytest.approx((raw / np.linalg.norm(raw)).tolist(), abs=1e-5)
    alone = emb.embed(["fox"], kind="query")
    fresh = platform.embedder_named(name)  # no cache: the batch is really padded
    both = fresh.embed(["fox", SENTENCE + " It was a hit."], kind="query")
    if name.endswith("-q"):  # int8: activations are quantized with the batch's range
        assert float(both[0] @ alone[0]) > 0.98  # 0.989 seen for "fox"
    else:
        assert both[0] == pytest.approx(alone[0].tolist(), abs=1e-4)
    assert float(emb.embed(["fox"])[0] @ alone[0]) < 0.999  # the query prefix is applied
