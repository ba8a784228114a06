"""Every CLI command has help ending in a runnable example, and appears in the README."""
from __future__ import annotations

from pathlib import Path

import click
from click.testing import CliRunner

from workbench.cli import main

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def all_commands(group: click.Group, prefix: str = "workbench"):
    ctx = click.Context(group)
    for name in sorted(group.list_commands(ctx)):
        command = group.get_command(ctx, name)
        path = f"{prefix} {name}"
        if isinstance(command, click.Group):
            yield from all_commands(command, path)
        else:
            yield path, command


def test_every_command_has_help_with_an_example_and_is_in_the_readme():
    commands = list(all_commands(main))
    contract = {"workbench demo", "workbench score", "workbench labels add", "workbench labels import",
                "workbench labels export", "workbench judge", "workbench agreement", "workbench calibrate",
                "workbench gate", "workbench app", "workbench report"}
    assert contract <= {path for path, _ in commands}
    runner = CliRunner()
    for path, command in commands:
        result = runner.invoke(main, path.split()[1:] + ["--help"])
        assert result.exit_code == 0, (path, result.output)
        assert "Example:" in (command.help or ""), f"{path}: docstring must end with a runnable example"
        assert path in README, f"{path} is not documented in README.md"
