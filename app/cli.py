"""`kgrag app`: start the explorer with `streamlit run` in a child process.

The root CLI (kgrag/cli.py) calls `register(app)` through the `kgrag.commands` entry point;
this module imports neither Streamlit nor a model, so `kgrag --help` stays fast.

    app_command(port=8502, runs=Path("runs"))   # blocks until Ctrl-C
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer

from kgrag.errors import KgragError

MAIN = Path(__file__).resolve().parent / "main.py"


def register(app: typer.Typer) -> None:
    """Add `kgrag app` to the root `kgrag` app."""
    app.command("app")(app_command)


def streamlit_argv(port: int, address: str, runs: Path, headless: bool = True) -> list[str]:
    """The `streamlit run` command line of the app.

        streamlit_argv(8501, "127.0.0.1", Path("runs"))[1:4]
        # -> ['-m', 'app.serve', 'run']
    """
    # This interpreter's Streamlit, whatever else is on PATH, with the pages' modules
    # imported before the server listens (app/serve.py).
    return [sys.executable, "-m", "app.serve", "run", str(MAIN),
            "--server.address", address, "--server.port", str(port),
            "--server.headless", str(headless).lower(), "--browser.gatherUsageStats", "false",
            "--client.toolbarMode", "minimal", "--", "--runs", str(runs)]


def app_command(
    port: Annotated[int, typer.Option(help="Port of the app.")] = 8501,
    address: Annotated[str, typer.Option(help="Interface to listen on (0.0.0.0 in a container)."
                                         )] = "127.0.0.1",
    runs: Annotated[Path, typer.Option(help="Folder of run directories (kgrag eval --out).")
                    ] = Path("runs"),
) -> None:
    """Start the Streamlit explorer (Ask, Reasoning, Graphs, Results, Compare) on
    http://ADDRESS:PORT."""
    if importlib.util.find_spec("streamlit") is None:
        raise KgragError("Streamlit is not installed in this environment",
                         hint="pip install -e '.[app]' (make install does this)")
    argv = streamlit_argv(port, address, runs)
    typer.echo(f"kgrag explorer: http://{address}:{port}  (Ctrl-C to stop)")
    try:
        code = subprocess.run(argv, check=False).returncode  # noqa: S603 - fixed argv
    except KeyboardInterrupt:
        code = 0
    if code not in (0, -2, 130):
        raise typer.Exit(code)
