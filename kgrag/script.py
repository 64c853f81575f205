"""The scripts under `scripts/` and `research/` are typer command lines, like `kgrag`.

    if __name__ == "__main__":
        run_script(main, __doc__)

`main`'s parameters become the arguments and options (`typer.Argument`/`typer.Option` in
`Annotated`); a `KgragError` prints its message and hint and exits 2, without a traceback,
as the `kgrag` CLI does.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import typer

from kgrag.errors import KgragError


def run_script(main: Callable[..., object], doc: str | None) -> None:
    """Run `main` as a one-command typer app whose help is the script's docstring."""
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
    app.command(help=doc)(main)
    try:
        app()
    except KgragError as e:
        sys.exit(f"error: {e}")
