"""The ``workbench`` command line: a click group; each command parses, calls one function, prints.

One module per command group (``score``, ``demo``, ``labels``, ``calibration`` for judge /
agreement / calibrate, ``gate``, ``report``, ``app``). The group imports a command's module only
when that command runs or help lists it, and the command modules import only click and light
workbench modules at the top: pandas, streamlit, wordllama, openai and the label store are
imported inside the command that needs them, so ``workbench --help`` and ``--version`` stay fast.
"""
from __future__ import annotations

import importlib

import click

#: Command name -> the module defining it (as ``COMMANDS``), in the order ``--help`` lists them.
COMMAND_MODULES: dict[str, str] = {
    "score": "workbench.cli.score",
    "demo": "workbench.cli.demo",
    "labels": "workbench.cli.labels",
    "judge": "workbench.cli.calibration",
    "agreement": "workbench.cli.calibration",
    "calibrate": "workbench.cli.calibration",
    "gate": "workbench.cli.gate",
    "report": "workbench.cli.report",
    "app": "workbench.cli.app",
}


def load_command(name: str) -> click.Command | None:
    """The click command ``name`` from its module in :data:`COMMAND_MODULES` (``None``: no such command)."""
    module_name = COMMAND_MODULES.get(name)
    if module_name is None:
        return None
    module = importlib.import_module(module_name)
    return next((c for c in module.COMMANDS if c.name == name), None)


class _LazyGroup(click.Group):
    """A group whose commands live in :data:`COMMAND_MODULES` and are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*COMMAND_MODULES, *sorted(set(self.commands) - set(COMMAND_MODULES))]

    def main(self, args=None, *rest, **kwargs):
        """Run the command line; ``args=None`` (the ``workbench`` program, a process of its own) also
        freezes the objects alive after importing ``openai`` and at exit, so the cycle collector does
        not walk them again (see ``workbench.judges.lazy_openai``): about 0.25 s off a run's exit.
        Callers that pass ``args`` (click's test runner, other programs) live on and are left alone."""
        if args is None:
            freeze_long_lived()
        return super().main(args, *rest, **kwargs)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return self.commands.get(cmd_name) or load_command(cmd_name)


def freeze_long_lived() -> None:
    """For a process that ends with this command: freeze every object alive after ``openai`` is
    imported, and all of them at exit, so neither later full collections nor the collection at
    exit walk them (the memory is freed with the process; ``atexit`` handlers still run)."""
    import atexit
    import gc

    from workbench.judges import lazy_openai

    lazy_openai.FREEZE_AFTER_IMPORT = True
    atexit.register(gc.freeze)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="workbench")
def main() -> None:
    """Judge-calibration workbench for RAG evaluation.

    Score eval sets on retrieval, faithfulness, answer relevance, abstention and citations, and
    calibrate the judges that score them against human labels.
    """


def all_commands() -> dict[str, click.Command]:
    """Every command of the group, by name (imports every command module)."""
    ctx = click.Context(main)
    return {name: command for name in main.list_commands(ctx) if (command := main.get_command(ctx, name))}
