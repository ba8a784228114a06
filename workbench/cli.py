"""The ``workbench`` command line: a click group; each command parses, calls one function, prints."""
from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="workbench")
def main() -> None:
    """Judge-calibration workbench for RAG evaluation.

    Score eval sets on retrieval, faithfulness, answer relevance, abstention and citations, and
    calibrate the judges that score them against human labels.
    """


def _register() -> None:
    from workbench import cli_app, cli_labels, cli_report, cli_score, cli_stats

    for module in (cli_score, cli_labels, cli_stats, cli_app, cli_report):
        for command in module.COMMANDS:
            main.add_command(command)


_register()
