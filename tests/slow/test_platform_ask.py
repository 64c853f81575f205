"""The CLI's `ask` path end to end with a real model and the real embedder."""

from __future__ import annotations

import numpy as np
from typer.testing import CliRunner

from kgrag.cli import app


def test_ask_answers_with_the_local_model(test_model_name: str, monkeypatch) -> None:
    monkeypatch.setenv("KGRAG_MODEL__CHAT", test_model_name)
    result = CliRunner().invoke(app, ["ask", "--json", "What is the capital of France?"])
    assert result.exit_code == 0, result.output
    assert '"llm_calls": 1' in result.output
    assert "paris" in result.output.lower()


def test_real_embedder_is_normalised_and_cached() -> None:
    from kgrag.platform import Platform

    e = Platform().embedder
    v = e.embed(["heart attack", "myocardial infarction", "heart attack"])
    assert v.shape == (3, 384)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(v[0], v[2])
    hits = e.hits
    assert np.array_equal(e.embed(["heart attack"])[0], v[0])
    assert e.hits == hits + 1
