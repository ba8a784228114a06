"""What the CLI's commands share: judge and annotator options, opening the store, stderr messages and
exits on an unusable endpoint.
"""
from __future__ import annotations

import sys

import click

from workbench.config import default_db_path


def judge_options(func):
    """The judge flags shared by every command that runs a judge."""
    func = click.option("--embedder", "embedder_backend", type=click.Choice(["auto", "offline", "openai"]),
                        default="auto", show_default=True,
                        help="Embeddings for answer relevance: the judge's backend (auto), the bundled offline "
                             "embeddings (for an endpoint without /v1/embeddings), or the endpoint's.")(func)
    func = click.option("--embedding-model", default=None, help="Embedding model (env WORKBENCH_EMBEDDING_MODEL).")(func)
    func = click.option("--model", default=None, help="Judge model (env WORKBENCH_MODEL).")(func)
    func = click.option("--judge", "backend", type=click.Choice(["offline", "openai"]), default=None,
                        help="Judge backend (env WORKBENCH_JUDGE, default offline).")(func)
    return func


def echo_err(message: str) -> None:
    click.echo(message, err=True)


def announce_judge(judge, embedder, thresholds, *, via: str = "") -> None:
    """Say on stderr which judge a run uses, and warn when the thresholds were tuned for another."""
    from workbench.judges.base import embedder_fingerprint

    echo_err(f"judge: {judge.fingerprint}  (embedder: {embedder_fingerprint(embedder, '?')}){via}")
    if thresholds.judge and thresholds.judge != judge.fingerprint:
        echo_err(f"warning: thresholds in {thresholds.source} were calibrated for judge {thresholds.judge}, "
                 f"but this run uses {judge.fingerprint}; the tuned thresholds may not transfer")


def load_items_or_exit(path: str):
    """Load an eval set, or print every problem and exit 2."""
    from workbench.scoring.dataset import DatasetError, load_eval_set

    try:
        return load_eval_set(path)
    except DatasetError as exc:
        echo_err(f"error: {exc}")
        sys.exit(2)


def exit_if_endpoint_failed(judge, *, outcome: str = "no item was judged; nothing written") -> None:
    """Exit 3 when the judge's first call found the endpoint unusable (``outcome`` says what's left)."""
    from workbench.failures import EXIT_ENDPOINT
    from workbench.judges.base import FailsFast

    fatal = judge.fatal if isinstance(judge, FailsFast) else None
    if fatal is not None:
        echo_err(f"error: {fatal}")
        echo_err(f"stopped: {outcome} (exit code {EXIT_ENDPOINT})")
        sys.exit(EXIT_ENDPOINT)


def judge_details(block: dict, judge, *, price_in=None, price_out=None) -> None:
    """Add what a remote judge knows about its endpoint to ``summary["judge"]`` (new fields)."""
    from workbench.failures import estimate_cost
    from workbench.judges.base import ReportsEndpoint

    if isinstance(judge, ReportsEndpoint):
        block.update(timeouts=judge.timeouts, truncated=judge.truncated, response_format=judge.response_format)
    cost = estimate_cost(block.get("prompt_tokens", 0), block.get("completion_tokens", 0),
                         price_in=price_in, price_out=price_out)
    if cost is not None:
        block["cost"] = cost


DB_HELP = "Label store (default: $WORKBENCH_DB or labels/workbench.db)."


def open_existing_store(db_path):
    """The label store at ``db_path`` (default the configured one), or an error and exit 2."""
    from workbench import store

    try:
        return store.open_db(db_path or default_db_path(), create=False)  # a mistyped --db is refused
    except Exception as exc:  # a corrupt or newer database: say which file
        echo_err(f"error: {db_path or default_db_path()}: cannot open the label store ({exc})")
        sys.exit(2)


ANNOTATOR_HELP = "Count only these annotators' labels (comma-separated or repeated; default everyone)."


EXCLUDE_HELP = "Leave out these annotators' labels (comma-separated or repeated), e.g. test accounts."


def annotator_options(func):
    """``--annotators`` / ``--exclude-annotators``: who counts as a rater."""
    func = click.option("--exclude-annotators", "exclude_annotators", multiple=True, help=EXCLUDE_HELP)(func)
    func = click.option("--annotators", "annotators", multiple=True, help=ANNOTATOR_HELP)(func)
    return func


def chosen_annotators(db, annotators, exclude_annotators) -> set[str] | None:
    """Resolve the annotator options against the store, or exit 2 naming an unknown annotator."""
    from workbench.calibration.agreement import AnnotatorChoiceError, choose_annotators, store_annotators

    try:
        chosen = choose_annotators(store_annotators(db), include=annotators, exclude=exclude_annotators)
    except AnnotatorChoiceError as exc:
        echo_err(f"error: --annotators/--exclude-annotators: {exc}")
        sys.exit(2)
    if chosen is not None:
        echo_err(f"annotators counted: {', '.join(sorted(chosen))}")
    return chosen


def annotators_for_store(db_path, annotators, exclude_annotators) -> set[str] | None:
    """:func:`chosen_annotators` for a store given by path (``score --db``, ``report --db``).

    Exits 2 when annotators are chosen without a store, or a name is unknown."""
    if not annotators and not exclude_annotators:
        return None
    if db_path is None:
        echo_err("error: --annotators/--exclude-annotators need a label store (--db)")
        sys.exit(2)
    db = open_existing_store(db_path)
    try:
        return chosen_annotators(db, annotators, exclude_annotators)
    finally:
        db.conn.close()
