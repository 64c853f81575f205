"""The README stays short and every `kgrag` command in it runs as written.

Each fenced command that starts with `kgrag` is parsed by the real CLI (click's parser:
unknown options, missing arguments and bad values fail) and its `--help` is run.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from kgrag.cli import app

README = Path(__file__).resolve().parents[2] / "README.md"
FENCE = re.compile(r"^```(?:bash|sh|console)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def readme_commands(text: str) -> list[str]:
    """The `kgrag ...` commands of the fenced blocks, continuation lines joined, comments cut.

    >>> readme_commands("```bash\\nkgrag ask \\\\\\n  --json  # note\\nmake test\\n```\\n")
    ['kgrag ask --json']
    """
    commands = []
    for block in FENCE.findall(text):
        joined = re.sub(r"\s*\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = line.split(" #", 1)[0].strip()
            if line.startswith("kgrag "):
                commands.append(line)
    return commands


def split(command: str) -> tuple[list[str], Any, list[str]]:
    """(subcommand path, the click command, its own arguments) of `kgrag ...`."""
    cmd = typer.main.get_command(app)  # typer ships its own click: no isinstance checks
    args = shlex.split(command)[1:]
    path: list[str] = []
    while hasattr(cmd, "commands") and args and args[0] in cmd.commands:
        path.append(args[0])
        cmd = cmd.commands[args.pop(0)]
    return path, cmd, args


COMMANDS = readme_commands(README.read_text())


def test_the_readme_fits_in_250_lines_of_at_most_100_characters() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= 250
    long = [f"{i}: {len(line)}" for i, line in enumerate(lines, 1) if len(line) > 100]
    assert long == []


def test_the_readme_shows_the_usage_examples() -> None:
    tops = {split(c)[0][0] for c in COMMANDS}
    assert {"build", "ask", "eval", "score", "report", "app"} <= tops


@pytest.mark.parametrize("command", COMMANDS)
def test_each_readme_command_parses_and_has_help(command: str) -> None:
    path, cmd, args = split(command)
    assert path, f"{command}: no kgrag subcommand"
    assert not hasattr(cmd, "commands"), f"{command}: names a group, not a command"
    cmd.make_context(" ".join(["kgrag", *path]), list(args))  # raises on a bad option/value
    result = CliRunner().invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output


@pytest.mark.parametrize("bad", ["kgrag ask --method llm", "kgrag ask q --bogus 1",
                                 "kgrag eval --dataset csqa --n many"])
def test_a_command_that_would_not_run_fails_to_parse(bad: str) -> None:
    path, cmd, args = split(bad)
    with pytest.raises(Exception, match="Missing parameter|No such option|valid integer"):
        cmd.make_context(" ".join(["kgrag", *path]), list(args))
