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
        """Run the command line; with ``args=None`` (the ``workbench`` program, a process of its own)
        the cycle collector is first tuned for one run (``tune_collector``). Callers that pass
        ``args`` (click's test runner, other programs) live on and are left alone."""
        if args is None:
            tune_collector()
        return super().main(args, *rest, **kwargs)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return self.commands.get(cmd_name) or load_command(cmd_name)


#: objects allocated (net) between two collections of the youngest generation in a ``workbench``
#: process (Python's default is 700: a scoring run collected several hundred times)
YOUNG_COLLECTION_THRESHOLD = 20_000


def tune_collector() -> None:
    """The cycle collector of a process that ends with this command: freeze every object alive after
    ``openai`` is imported (``workbench.judges.lazy_openai``) and all of them at exit, so neither
    later full collections nor the collection at exit walk them again (the memory is freed with
    the process; ``atexit`` handlers still run), and collect the youngest generation every
    ``YOUNG_COLLECTION_THRESHOLD`` allocations instead of 700 (garbage cycles wait a little
    longer: a few MB). Off a two-metric run of 200 items: about 0.25 s at exit and 0.3 s of
    collections; off a cached re-run: about 0.15 s."""
    import atexit
    import gc

    from workbench.judges import lazy_openai

    lazy_openai.FREEZE_AFTER_IMPORT = True
    atexit.register(gc.freeze)
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, older, oldest)


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
