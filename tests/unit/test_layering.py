"""kgrag/ is the base: it imports nothing from the packages above it (issue 44), at module
level or inside a function. The packages reach it through entry points instead."""

from __future__ import annotations

import ast
from pathlib import Path

from kgrag.cli import app
from kgrag.config import load_settings, registered_sections
from kgrag.platform import available_methods

ROOT = Path(__file__).resolve().parents[2]
UPPER = {"metakg", "textrag", "kg_builder", "eval", "app"}


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            roots.add(node.module.split(".")[0])
    return roots


def test_kgrag_imports_nothing_above_it() -> None:
    upward = {str(p.relative_to(ROOT)): sorted(imported_roots(p) & UPPER)
              for p in sorted((ROOT / "kgrag").rglob("*.py"))}
    assert {p: r for p, r in upward.items() if r} == {}


def test_the_packages_register_commands_methods_and_settings() -> None:
    names = {c.name or (c.callback.__name__ if c.callback else "") for c in
             app.registered_commands} | {g.name for g in app.registered_groups}
    assert {"build", "demo", "eval", "score", "report", "sweep", "app", "corpus",
            "graph", "bench"} <= names
    graph = next(g.typer_instance for g in app.registered_groups if g.name == "graph")
    assert graph is not None
    assert {"export", "coverage"} <= {c.name for c in graph.registered_commands}
    assert {"metakgrag", "seakr", "rag"} <= set(available_methods())
    assert "metakg" in registered_sections()
    assert load_settings(metakg={"n_max": 1}).metakg.n_max == 1


# The method packages sit below the evaluation: question loading and answer normalisation
# live in kgrag/ (`kgrag.datasets`, `kgrag.normalize`, `kgrag.parsing`), so nothing in them
# imports `eval` (or `app`), at module level or inside a function.
METHOD_PACKAGES = ("textrag", "metakg", "kg_builder", "kgrag")


def test_the_method_packages_import_no_eval_or_app() -> None:
    upward = {str(p.relative_to(ROOT)): sorted(imported_roots(p) & {"eval", "app"})
              for package in METHOD_PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}
    assert {p: r for p, r in upward.items() if r} == {}


def imported_modules(path: Path) -> set[str]:
    """The full dotted names `path` imports, at module level or inside a function."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_no_method_module_imports_its_packages_registry() -> None:
    """The registries (`metakg.methods`, `textrag.methods`) import the method modules,
    never the other way round: no import circle. Only the package's CLI, above the
    registry, reads it."""
    above = {"methods.py", "cli.py"}
    circular = {str(p.relative_to(ROOT)): f"{package}.methods"
                for package in ("metakg", "textrag")
                for p in sorted((ROOT / package).rglob("*.py"))
                if p.name not in above or p.parent != ROOT / package
                if f"{package}.methods" in imported_modules(p)}
    assert circular == {}


def test_the_import_check_sees_imports_inside_functions(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    from eval.datasets import load_dataset\n"
                      "    import textrag.methods\n", encoding="utf-8")
    assert imported_roots(sample) == {"eval", "textrag"}
    assert "textrag.methods" in imported_modules(sample)
