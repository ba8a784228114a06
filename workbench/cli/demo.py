"""CLI: ``workbench demo``, the whole calibration + scoring loop on the bundled data, offline.
"""
from __future__ import annotations

from pathlib import Path

import click

from workbench.cli.common import echo_err


@click.command()
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="runs/demo", show_default=True,
              help="Output folder.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Use only the first N items of each set (quick look).")
def demo(out_dir, limit):
    """Run the whole calibration + scoring loop on the bundled data, offline, no API key.

    Scores the hand-made RAG set, calibrates the offline judge against four public human-labelled
    sets (agreement + thresholds.json), then scores BEGIN with the tuned thresholds.

    Example: workbench demo --out runs/demo
    """
    import time

    from workbench.demo.public_sets import DATA_DIR
    from workbench.demo.run import run_demo

    if not (DATA_DIR / "NOTICE").is_file():
        echo_err(f"error: {DATA_DIR}: the bundled demo data is missing from this installation "
                 "(reinstall workbench from a complete wheel)")
        raise SystemExit(2)
    echo_err(f"data: {DATA_DIR} (bundled with the package; sources and licences in its NOTICE and licenses/)")
    started = time.perf_counter()
    run_demo(Path(out_dir), limit=limit, echo=click.echo)
    echo_err(f"demo finished in {time.perf_counter() - started:.1f} s")


COMMANDS = [demo]
