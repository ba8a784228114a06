"""The ``workbench`` command line: a click group; each command parses, calls one function, prints."""
from __future__ import annotations

import click


class _Commands(click.Group):
    """The command group, loading command modules on first need: ``score`` and ``demo`` load
    only their own module (so a scoring run does not import the label store, stats or app
    modules); anything else (another command, ``--help``, ``.commands``) loads them all."""

    _loaded = False

    @property
    def commands(self) -> dict:
        if not self._loaded:
            self._loaded = True
            _register(self)
        return self._commands

    @commands.setter
    def commands(self, value: dict) -> None:
        self._commands = value

    def get_command(self, ctx, cmd_name):
        if not self._loaded and cmd_name in _FAST:
            from workbench.cli import score as cli_score

            found = {c.name: c for c in cli_score.COMMANDS}.get(cmd_name)
            if found is not None:
                return found
        return super().get_command(ctx, cmd_name)


_FAST = ("score", "demo")


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="workbench")
def main() -> None:
    """Judge-calibration workbench for RAG evaluation.

    Score eval sets on retrieval, faithfulness, answer relevance, abstention and citations, and
    calibrate the judges that score them against human labels.
    """


def _register(group: click.Group) -> None:
    from workbench.cli import app as cli_app
    from workbench.cli import calibration as cli_stats
    from workbench.cli import labels as cli_labels
    from workbench.cli import report as cli_report
    from workbench.cli import score as cli_score

    for module in (cli_score, cli_labels, cli_stats, cli_app, cli_report):
        for command in module.COMMANDS:
            group.add_command(command)
