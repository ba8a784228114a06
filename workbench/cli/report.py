"""CLI: ``report`` (one self-contained HTML calibration report of a scored run)."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from workbench.cli.common import annotator_options, annotators_for_store


@click.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--db", "db_path", type=click.Path(dir_okay=False), default=None,
              help="Label store: adds agreement tables, threshold curves and reliability plots.")
@click.option("--out", "out_path", type=click.Path(dir_okay=False), required=True, help="HTML file to write.")
@annotator_options
def report(run_dir, db_path, out_path, annotators, exclude_annotators):
    """Write one self-contained HTML report of a scored run, readable offline.

    Run summary, quadrant with bootstrap intervals, corrected rates and, with --db, the agreement
    tables, threshold curves and reliability plots (--annotators/--exclude-annotators choose whose
    labels count; the report names them). No JavaScript and no external resources.

    Example: workbench report runs/demo/begin --db runs/demo/labels.db --out report.html
    """
    import numpy as np

    from workbench.reports.charts import RunError
    from workbench.reports.html import write_report

    if db_path is not None and not Path(db_path).is_file():
        click.echo(f"error: --db {db_path}: no such label store", err=True)
        sys.exit(2)
    chosen = annotators_for_store(db_path, annotators, exclude_annotators)
    try:
        out = write_report(run_dir, out_path, db_path=db_path, rng=np.random.default_rng(0), annotators=chosen)
    except RunError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    click.echo(f"wrote {out}")


COMMANDS = [report]
