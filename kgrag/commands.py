"""What the packages' command lines share, and how the root `kgrag` app finds them.

`kgrag/` imports nothing from the packages above it. Each package (kg_builder, metakg,
textrag, eval, app) declares a `register(app)` function as an entry point in the group
`kgrag.commands` (pyproject.toml); `load_commands` calls every installed one. A package
adds commands to a shared group (`kgrag graph …`, `kgrag bench …`) with `group`:

    def register(app: typer.Typer) -> None:
        app.command("build")(build)
        group(app, "graph").command("export")(graph_export)
"""

from __future__ import annotations

import logging
from importlib.metadata import entry_points

import typer
from rich.console import Console

from kgrag.errors import KgragError
from kgrag.platform import Platform

log = logging.getLogger(__name__)

COMMANDS_GROUP = "kgrag.commands"

console = Console()
err = Console(stderr=True)


def platform_for(model: str | None = None, threads: int | None = None) -> Platform:
    """A `Platform` of the configured settings, with another chat model or thread count
    (a command's `--model`/`--threads`)."""
    from kgrag.config import load_settings

    s = load_settings()
    if model:
        s.model = s.model.model_copy(update={"chat": model})
    if threads:
        s.model = s.model.model_copy(update={"n_threads": threads})
    return Platform(s)


def cli_group(help: str, *, root: bool = False) -> typer.Typer:
    """A Typer app with plain Click help, up to 100 columns wide: docstrings are wrapped at
    100 columns, and plain help joins their lines into the terminal's width (Rich panels kept
    each line break, squeezed option help into a narrow column and read `[model]` or
    `[0, 1]` as a style tag). A `\\b` paragraph keeps its lines. Without arguments a group
    shows its help; the root app (`root`) has no shell completion and plain tracebacks."""
    return typer.Typer(help=help, no_args_is_help=True, rich_markup_mode=None,
                       context_settings={"max_content_width": 100},
                       add_completion=not root, pretty_exceptions_enable=not root)


def group(app: typer.Typer, name: str) -> typer.Typer:
    """The command group `name` (`graph`, `bench`, …) that the root app defines."""
    for info in app.registered_groups:
        if info.name == name and info.typer_instance is not None:
            return info.typer_instance
    raise KgragError(f"the kgrag CLI has no command group {name!r}",
                     hint="shared groups are created in kgrag/cli.py")


def load_commands(app: typer.Typer) -> list[str]:
    """Call `register(app)` of every installed package (entry points `kgrag.commands`,
    by name); return their names."""
    found = sorted(entry_points(group=COMMANDS_GROUP), key=lambda ep: ep.name)
    if not found:
        log.warning("no kgrag.commands entry points: run `pip install -e .` (make install)")
    for ep in found:
        ep.load()(app)
    return [ep.name for ep in found]
