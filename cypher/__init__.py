"""Every Cypher statement of kgrag, one statement per `.cypher` file.

Values always travel as `$parameters`; labels and relationship types are fixed
in these files and never built from LLM or user text.

>>> from cypher import load
>>> load("schema/020_entity_domain_key").startswith("CREATE CONSTRAINT")
True
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent


@cache
def load(name: str) -> str:
    """The text of `cypher/<name>.cypher` (comments kept, trailing `;` removed)."""
    return load_file(ROOT / f"{name}.cypher", name)


def load_file(path: Path, name: str | None = None) -> str:
    """The statement of one `.cypher` file (a folder outside the package: the tests')."""
    if not path.is_file():
        raise FileNotFoundError(f"no Cypher statement named {name or path.stem!r} "
                                f"(looked for {path})")
    return path.read_text(encoding="utf-8").strip().rstrip(";")


def names(folder: str = "") -> list[str]:
    """Names of all statements below `folder`, sorted (schema files apply in this order)."""
    base = ROOT / folder if folder else ROOT
    return sorted(str(p.relative_to(ROOT).with_suffix("")) for p in base.rglob("*.cypher"))


def digest(*folders: str) -> str:
    """sha256 over the statements below `folders` (all of them when none is named)."""
    h = hashlib.sha256()
    for name in sorted({n for f in folders or ("",) for n in names(f)}):
        h.update(name.encode())
        h.update(load(name).encode())
    return h.hexdigest()[:16]


# The statements a question-answering method executes. An evaluation run records their
# digest, so editing a build or schema statement does not make finished runs "another
# configuration" (it cannot change an answer).
METHOD_FOLDERS = ("metakg", "textrag")


def methods_digest() -> str:
    """sha256 over the statements methods run (`METHOD_FOLDERS`): recorded with every run."""
    return digest(*METHOD_FOLDERS)
