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
    path = ROOT / f"{name}.cypher"
    if not path.is_file():
        raise FileNotFoundError(f"no Cypher statement named {name!r} (looked for {path})")
    return path.read_text(encoding="utf-8").strip().rstrip(";")


def names(folder: str = "") -> list[str]:
    """Names of all statements below `folder`, sorted (schema files apply in this order)."""
    base = ROOT / folder if folder else ROOT
    return sorted(str(p.relative_to(ROOT).with_suffix("")) for p in base.rglob("*.cypher"))


def digest(folder: str = "") -> str:
    """sha256 over the statements below `folder`: recorded with every run and build job."""
    h = hashlib.sha256()
    for name in names(folder):
        h.update(name.encode())
        h.update(load(name).encode())
    return h.hexdigest()[:16]
