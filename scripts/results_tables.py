"""Print result tables from scored run directories, or refill the marked tables of the
README and docs/results.md (the markers are described in `eval/tables.py`).

    python scripts/results_tables.py docs/results/csqa-dev docs/results/hotpotqa-dev
    python scripts/results_tables.py --write [FILE ...]   # refill every marked table
    python scripts/results_tables.py --check [FILE ...]   # exit 1 if one differs

FILE defaults to README.md and docs/results.md (run from the repository).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from eval.tables import DOCS, refill_files, render
from kgrag.errors import KgragError

app = typer.Typer(add_completion=False, help=__doc__, rich_markup_mode=None)


@app.command()
def main(
    files: Annotated[list[Path] | None, typer.Argument(
        help="Run directories to print, or with --write/--check the Markdown files "
             "(default: README.md docs/results.md).")] = None,
    write: Annotated[bool, typer.Option("--write", help="Refill the marked tables.")] = False,
    check: Annotated[bool, typer.Option("--check", help="Exit 1 if a marked table differs "
                                                        "from its run.")] = False,
) -> None:
    """Refill or check the marked result tables, or print a run's tables."""
    try:
        if write or check:
            docs = list(files or [Path(d) for d in DOCS])
            changed = refill_files(docs, write=write)
            for line in changed:
                typer.echo(("refilled " if write else "differs from its run: ") + line)
            raise typer.Exit(1 if changed and not write else 0)
        if not files:
            raise KgragError("no run directory given", hint="e.g. docs/results/csqa-dev")
        for run in files:
            typer.echo(render(run))
    except KgragError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from err


if __name__ == "__main__":
    app()
