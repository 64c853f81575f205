"""Every `>>>` example in the packages runs in the unit tier (no Neo4j, no model, no
network), so no example goes stale. Examples that need a server or a model are written as
plain usage blocks (`# -> result` comments), which doctest does not collect.
"""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("kgrag", "eval", "metakg", "textrag", "kg_builder", "app", "tests/doubles")


def _modules_with_examples() -> list[str]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if ">>> " in path.read_text(encoding="utf-8"):
                rel = path.relative_to(ROOT).with_suffix("")
                found.append(".".join(p for p in rel.parts if p != "__init__"))
    return found


MODULES = _modules_with_examples()


def test_the_examples_are_found() -> None:
    assert len(MODULES) > 60 and "kgrag.answers" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_every_example_of_a_module_runs(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS,
                             verbose=False, report=True)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} fail"
