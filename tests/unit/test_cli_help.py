"""`--help` is plain Click text that uses the terminal's width (`kgrag.commands.cli_group`)."""

from __future__ import annotations

from typer.testing import CliRunner

from kgrag.cli import app


def test_option_help_uses_the_terminal_width_not_a_narrow_panel_column() -> None:
    env = {"COLUMNS": "80"}
    result = CliRunner().invoke(app, ["eval", "--help"], env=env)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    # Rich panels gave this option's help an 18-column cell ("Built-in name" alone on a line)
    assert any("Built-in name (csqa, medqa, medquad" in line for line in lines), result.output
    assert all(len(line) <= 80 for line in lines)


def test_every_group_lists_its_commands_without_arguments() -> None:
    for args in ([], ["graph"], ["corpus"], ["reader"], ["neo4j"]):
        result = CliRunner().invoke(app, args, env={"COLUMNS": "100"})
        assert "Usage:" in result.output and "Commands:" in result.output, args
