"""CLI: ``judge``, ``agreement``, ``calibrate`` and ``gate`` (judges against people, and the CI gate).

Each command parses its options, calls one function of ``workbench.calibration.judging`` or
``workbench.calibration.agreement``, and prints. Exit codes: 0 success, 1 a gate bound failed or
nothing could be calibrated, 2 bad input (a missing or malformed file, an impossible option).
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import click

from workbench.config import JudgeConfig, ThresholdsError, default_db_path, load_thresholds, save_thresholds

DB_HELP = "Label store (default: $WORKBENCH_DB or labels/workbench.db)."


def _err(message: str) -> None:
    click.echo(message, err=True)


def _open(db_path):
    from workbench import store

    try:
        return store.open_db(db_path or default_db_path(), create=False)  # a mistyped --db is refused
    except Exception as exc:  # a corrupt or newer database: say which file
        _err(f"error: {db_path or default_db_path()}: cannot open the label store ({exc})")
        sys.exit(2)


def _num(x, fmt: str = "{:.3f}") -> str:
    return "n/a" if x is None else fmt.format(x)


def _ci(ci) -> str:
    if not ci or ci[0] is None or ci[1] is None:
        return "[n/a]"
    return f"[{ci[0]:.2f}, {ci[1]:.2f}]"


# ------------------------------------------------------------------------------------------
# judge


def format_judge_summary(summary: dict) -> str:
    """A readable table of ``run_judges``'s result."""
    failures = summary.get("failures") or {}
    lines = []
    if failures.get("units_failed"):
        lines.append(f"FAILED       {failures['units_failed']} of {failures['units']} units got an error "
                     f"({100 * failures['rate']:.1f}%{', above --max-failed: exit code 4' if failures['too_many'] else ''})")
    lines += [f"judge        {summary['judge']}  (embedder: {summary.get('embedder')})",
             f"verify mode  {summary['verify_mode']}, repeats {summary['repeats']}",
             f"units        {summary['units']}: asked {summary['asked']}, already judged {summary['skipped']}",
             "",
             f"{'task':<22}{'judged':>8}{'errors':>8}"]
    tasks = sorted(set(summary["judged"]) | set(summary["errors"]))
    for task in tasks:
        lines.append(f"{task:<22}{summary['judged'].get(task, 0):>8}{summary['errors'].get(task, 0):>8}")
    if summary["asked"] == 0:
        lines.append("nothing to ask: every unit already has a verdict from this judge (delete nothing; "
                     "a new judge, model or prompt gets a new fingerprint)")
    for task, n in summary.get("not_judged", {}).items():
        lines.append(f"{task:<22}  not judged: no judge mapping for this task ({n} units)")
    if summary.get("first_errors"):
        lines += ["", "first errors:"] + [f"  {e}" for e in summary["first_errors"]]
    if summary.get("test_retest"):
        lines += ["", "test-retest (same judge, repeats compared)",
                  f"{'task':<22}{'n':>6}{'kappa':>8}{'same':>8}"]
        for task, r in summary["test_retest"].items():
            same = "n/a" if r["agreement"] is None else f"{100 * r['agreement']:.1f}%"
            lines.append(f"{task:<22}{r['n']:>6}{_num(r['kappa'], '{:.3f}'):>8}{same:>8}")
        lines.append("  (kappa n/a = one value only among the answers; 'same' = units answered identically in every repeat)")
    return "\n".join(lines)


@click.command()
@click.option("--db", "db_path", type=click.Path(dir_okay=False), default=None, help=DB_HELP)
@click.option("--judge", "backend", type=click.Choice(["offline", "openai"]), default=None,
              help="Judge backend (env WORKBENCH_JUDGE, default offline).")
@click.option("--model", default=None, help="Judge model (env WORKBENCH_MODEL).")
@click.option("--embedding-model", default=None, help="Embedding model (env WORKBENCH_EMBEDDING_MODEL).")
@click.option("--repeats", type=click.IntRange(min=1), default=1, show_default=True,
              help="Ask each unit K times (repeat 0..K-1) and report test-retest kappa.")
@click.option("--verify-mode", type=click.Choice(["per-claim", "batched"]), default="per-claim", show_default=True,
              help="One call per claim, or all claims of an answer in one call (experiment).")
@click.option("--task", "tasks", multiple=True,
              type=click.Choice(["claim_support", "answer_faithfulness", "answer_relevance", "abstention"]),
              help="Only these tasks (repeatable; default all).")
@click.option("--concurrency", type=click.IntRange(min=1), default=None, help="Fixed cap on judge calls in flight.")
@click.option("--no-cache", is_flag=True, help="Bypass the judge call cache.")
@click.option("--embedder", "embedder_backend", type=click.Choice(["auto", "offline", "openai"]), default="auto",
              show_default=True, help="Embeddings for answer relevance (offline: the bundled ones).")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True,
              help="Seconds one judge call may take before it is retried.")
@click.option("--max-failed", type=click.FloatRange(0.0, 1.0), default=0.05, show_default=True,
              help="Largest share of units that may end with an error; above it the command exits 4 (after storing).")
@click.option("--json", "as_json", is_flag=True, help="Print the run summary as JSON.")
def judge(db_path, backend, model, embedding_model, repeats, verify_mode, tasks, concurrency, no_cache, as_json,
          embedder_backend="auto", timeout=60.0, max_failed=0.05):
    """Run a judge over every unit in the label store and keep its verdicts.

    Stores one judgment per unit and repeat with the judge fingerprint and its continuous score;
    units this judge already answered are skipped, so an interrupted run resumes. Exit codes:
    3 the endpoint refused the first call (nothing stored), 4 more than --max-failed of the
    units got an error (after storing every judgment).

    Example: workbench judge --db labels/workbench.db --judge offline --repeats 2
    """
    from workbench.judges import factory
    from workbench.calibration.judging import BatchedModeUnsupported, run_judges

    db = _open(db_path)
    config = JudgeConfig.from_env(backend=backend, model=model, embedding_model=embedding_model,
                                  concurrency=concurrency, use_cache=not no_cache, verify_mode=verify_mode,
                                  timeout=timeout)
    try:
        judge_, embedder = (factory.build_judge(config) if embedder_backend == "auto"
                            else factory.build_judge(config, embedder=embedder_backend))
    except (ValueError, RuntimeError, ImportError) as exc:
        _err(f"error: cannot build the {config.backend} judge: {exc}")
        sys.exit(2)
    _err(f"judge: {judge_.fingerprint}  (embedder: {getattr(embedder, 'fingerprint', '?')})")
    try:
        summary = run_judges(db, config, repeats=repeats, verify_mode=verify_mode, tasks=list(tasks) or None,
                             judge=judge_, embedder=embedder, max_failed=max_failed)
    except BatchedModeUnsupported as exc:
        _err(f"error: {exc}")
        sys.exit(2)
    from workbench.cli.score import exit_if_endpoint_failed
    from workbench.failures import EXIT_TOO_MANY_FAILED

    exit_if_endpoint_failed(judge_, outcome="no unit was judged; their failed judgments are asked again next run")
    click.echo(json.dumps(summary, indent=2) if as_json else format_judge_summary(summary))
    failures = summary.get("failures") or {}
    if failures.get("too_many"):
        _err(f"error: {failures['units_failed']} of {failures['units']} units got an error "
             f"({100 * failures['rate']:.1f}% > --max-failed {100 * max_failed:.1f}%); exit code {EXIT_TOO_MANY_FAILED}")
        sys.exit(EXIT_TOO_MANY_FAILED)


# ------------------------------------------------------------------------------------------
# agreement


def _names(names: list[str], limit: int = 8) -> str:
    if not names:
        return "none"
    if len(names) <= limit:
        return ", ".join(names)
    return f"{len(names)} ({', '.join(names[:limit])}, ...)"


def _pairwise_lines(human: dict, *, all_pairs: bool) -> list[str]:
    """The annotator pairs: one summary line, or with ``all_pairs`` one line per pair."""
    pairs = human.get("pairwise_kappa") or {}
    if not pairs:
        return []
    overlap = human.get("pairwise_n") or {}
    if all_pairs:
        return [f"  {'humans: kappa ' + pair:<40}{overlap.get(pair, ''):>6}  {_num(k):<24}"
                + ("" if overlap.get(pair, 0) >= (human.get("pairwise_summary") or {}).get("min_overlap", 0)
                   else "  (too few units in common)")
                for pair, k in pairs.items()]
    summ = human.get("pairwise_summary") or {}
    if len(pairs) == 1:
        (pair, k), = pairs.items()
        return [f"  {'humans: kappa ' + pair:<40}{overlap.get(pair, ''):>6}  {_num(k):<24}"]
    if not summ.get("pairs_read"):
        return [f"  {'humans: pairwise kappa':<40}{'':>6}  no pair of annotators shares {summ.get('min_overlap')} "
                f"labelled units ({summ.get('pairs')} pair(s); --all-pairs lists them)"]
    return [f"  {'humans: pairwise kappa':<40}{'':>6}  mean {_num(summ['mean'])}, min {_num(summ['min'])} "
            f"({summ['min_pair']}), max {_num(summ['max'])} ({summ['max_pair']}) over {summ['pairs_read']} of "
            f"{summ['pairs']} pairs sharing >= {summ['min_overlap']} units; --all-pairs lists every pair"]


def format_agreement(report: dict, *, error_icc: dict | None = None, all_pairs: bool = False) -> str:
    """A readable table of ``agreement_report``: per task, the human ceiling beside each judge.

    ``error_icc`` (fingerprint -> ``intra_answer_error_correlation``) adds, for claim support,
    how strongly a judge's errors cluster within answers. Annotator pairs are summarised (mean,
    min, max over the pairs with enough units in common); ``all_pairs`` lists every pair. A row
    whose sample is too small to read (``too_small``) is followed by a line saying why.
    """
    lines: list[str] = []
    for task, block in report.items():
        if not block:
            lines += [f"{task}: no units or labels", ""]
            continue
        lines.append(f"{task}: {block['units']} units, {block['labelled_units']} labelled, "
                     f"annotators: {_names(block['annotators'])}, tied majorities left out: {block['ties']}"
                     + ("; intervals resample answers (claims of one answer together)"
                        if block.get("clustered_by") else ""))
        header = (f"  {'who':<40}{'n':>6}  {'kappa [95% CI]':<24}{'AC1':>7}{'acc':>7}{'AUC':>7}"
                  f"{'alpha+h':>9}{'quote!':>8}")
        lines.append(header)
        human = block["human"]
        if len(block["annotators"]) < 2:
            lines.append(f"  {'humans: alpha (ceiling)':<40}{'':>6}  n/a (fewer than 2 annotators)")
        else:
            lines.append(f"  {'humans: alpha (ceiling)':<40}{human.get('n', ''):>6}  "
                         f"{_num(human['alpha']) + ' ' + _ci(human['alpha_ci']):<24}")
        if human.get("too_small") and len(block["annotators"]) >= 2:
            lines.append(f"    too small to read: {human['too_small_reason']}")
        lines.extend(_pairwise_lines(human, all_pairs=all_pairs))
        if block["labelled_units"] == 0:
            lines += ["  no human labels yet: label units in the app or `workbench labels import`", ""]
            continue
        for fp, j in block["judges"].items():
            q = j["quote_hallucination_rate"]
            lines.append(f"  {fp[:40]:<40}{j['n']:>6}  {_num(j['kappa']) + ' ' + _ci(j['kappa_ci']):<24}"
                         f"{_num(j['ac1'], '{:.2f}'):>7}{_num(j['accuracy'], '{:.2f}'):>7}"
                         f"{_num(j.get('auc'), '{:.2f}'):>7}"
                         f"{_num(j['alpha_with_humans'], '{:.2f}'):>9}{_num(q, '{:.1%}') if q is not None else 'n/a':>8}")
            if j.get("too_small"):
                lines.append(f"    too small to read: {j['too_small_reason']}")
            icc = (error_icc or {}).get(fp) if task == "claim_support" else None
            if icc and icc["items"]:
                lines.append(f"    errors within answers: ICC {_num(icc['icc'], '{:.2f}')} over {icc['items']} answers "
                             f"with 2+ claims (0 = independent, 1 = all-or-nothing per answer)")
            if not j["n"]:
                continue
            labels = j["confusion"]["labels"]
            width = max(len(x) for x in labels) + 2
            lines.append("    confusion (rows human majority, columns judge):")
            lines.append("    " + " " * width + "".join(f"{x:>{width}}" for x in labels))
            for lab, row in zip(labels, j["confusion"]["matrix"]):
                lines.append("    " + f"{lab:<{width}}" + "".join(f"{v:>{width}}" for v in row))
        if not block["judges"]:
            lines.append("  no judge verdicts yet: run `workbench judge`")
        lines.append("")
    from workbench.stats.agreement import MIN_MINORITY, MIN_UNITS

    lines.append("kappa = judge vs human majority; AUC = the judge's score separating the human classes (0.5 = chance); "
                 "alpha+h = Krippendorff's alpha with the judge as one more rater; "
                 "quote! = judge quotes not found in the passages; "
                 f"too small to read = fewer than {MIN_UNITS} units or {MIN_MINORITY} of the rarer class")
    return "\n".join(lines)


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
        _err(f"error: --annotators/--exclude-annotators: {exc}")
        sys.exit(2)
    if chosen is not None:
        _err(f"annotators counted: {', '.join(sorted(chosen))}")
    return chosen


def annotators_for_store(db_path, annotators, exclude_annotators) -> set[str] | None:
    """:func:`chosen_annotators` for a store given by path (``score --db``, ``report --db``).

    Exits 2 when annotators are chosen without a store, or a name is unknown."""
    if not annotators and not exclude_annotators:
        return None
    if db_path is None:
        _err("error: --annotators/--exclude-annotators need a label store (--db)")
        sys.exit(2)
    db = _open(db_path)
    try:
        return chosen_annotators(db, annotators, exclude_annotators)
    finally:
        db.conn.close()


@click.command()
@click.option("--db", "db_path", type=click.Path(dir_okay=False), default=None, help=DB_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the agreement JSON (DESIGN.md contract).")
@click.option("--n-boot", type=click.IntRange(min=1), default=1000, show_default=True, help="Bootstrap resamples.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap generator.")
@annotator_options
@click.option("--all-pairs", is_flag=True, help="List the kappa of every annotator pair (default: a summary).")
def agreement(db_path, as_json, n_boot, seed, annotators, exclude_annotators, all_pairs):
    """Agreement per task: human-vs-human ceiling and each judge against the human majority.

    Kappa with a bootstrap CI (claim-level tasks resample answers, keeping each answer's claims
    together), Gwet's AC1, accuracy, the AUC of the judge's score, confusion matrix and the
    judge's quote-hallucination rate; units whose majority label is tied are left out and
    counted. Rows over fewer than 30 units, or 5 of the rarer class, are marked too small to read.

    Example: workbench agreement --db labels/workbench.db --exclude-annotators annie1 --json
    """
    import numpy as np

    from workbench.calibration.agreement import agreement_report, intra_answer_error_correlation

    db = _open(db_path)
    chosen = chosen_annotators(db, annotators, exclude_annotators)
    report = agreement_report(db, rng=np.random.default_rng(seed), n_boot=n_boot, annotators=chosen)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    icc = {fp: intra_answer_error_correlation(db, judge=fp, annotators=chosen)
           for fp in (report.get("claim_support") or {}).get("judges", {})}
    click.echo(format_agreement(report, error_icc=icc, all_pairs=all_pairs))


# ------------------------------------------------------------------------------------------
# calibrate


def format_calibration(payload: dict) -> str:
    """A readable table of a ``thresholds.json`` payload."""
    lines = [f"judge      {payload.get('judge')}", f"criterion  {payload.get('criterion')}"]
    if "annotators" in payload:
        lines.append(f"annotators {_names(payload['annotators'])}"
                     + (f" (left out: {_names(payload['excluded_annotators'])})" if payload.get("excluded_annotators") else ""))
    lines += ["",
             f"{'score':<20}{'threshold':>10}{'n':>7}  {'kappa [95% CI]':<24}{'threshold CI':<16}"]
    from workbench.calibration.agreement import CALIBRATED

    for key in CALIBRATED:
        entry = payload.get(key)
        if entry is None:
            lines.append(f"{key:<20}  not calibrated: {payload.get('notes', {}).get(key, 'no data')}")
            continue
        lines.append(f"{key:<20}{entry['threshold']:>10.3f}{entry['n']:>7}  "
                     f"{_num(entry['kappa']) + ' ' + _ci(entry['kappa_ci']):<24}{_ci(entry.get('threshold_ci')):<16}")
        if entry.get("too_small"):
            lines.append(f"{'':<20}  too small to read: {entry['too_small_reason']}")
        if payload.get("notes", {}).get(key):
            lines.append(f"{'':<20}  warning: {payload['notes'][key]}")
    if payload.get("notes", {}).get("judge"):
        lines += ["", f"note: {payload['notes']['judge']}"]
    return "\n".join(lines)


@click.command()
@click.option("--db", "db_path", type=click.Path(dir_okay=False), default=None, help=DB_HELP)
@click.option("--judge", "fingerprint", default=None,
              help="Judge fingerprint to calibrate (default: the one with the most judgments).")
@click.option("--criterion", type=click.Choice(["kappa", "youden", "f1"]), default="kappa", show_default=True)
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default="thresholds.json", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the thresholds JSON instead of the table.")
@click.option("--n-boot", type=click.IntRange(min=1), default=1000, show_default=True, help="Bootstrap resamples.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap generator.")
@annotator_options
def calibrate(db_path, fingerprint, criterion, out_path, as_json, n_boot, seed, annotators, exclude_annotators):
    """Tune thresholds on human labels and write thresholds.json for `workbench score --thresholds`.

    For faithfulness, answer relevance and claim support, sweeps the judge's score against the
    human majority label and keeps the threshold that maximises the criterion, with kappa and its
    bootstrap CI (claim support resamples answers). Only the chosen annotators' labels count;
    thresholds.json records who they were. A score without enough labelled data is left out,
    with the reason. Exits 1 (writing nothing) when no score could be calibrated.

    Example: workbench calibrate --db labels/workbench.db --criterion kappa --out thresholds.json
    """
    import numpy as np

    from workbench import store
    from workbench.calibration.agreement import CALIBRATED, calibration_report

    db = _open(db_path)
    if fingerprint is not None and fingerprint not in store.judge_fingerprints(db):
        known = ", ".join(store.judge_fingerprints(db)) or "none"
        _err(f"error: --judge {fingerprint!r}: no judgments with this fingerprint in the store (known: {known})")
        sys.exit(2)
    chosen = chosen_annotators(db, annotators, exclude_annotators)
    payload = calibration_report(db, judge=fingerprint, criterion=criterion, rng=np.random.default_rng(seed),
                                 n_boot=n_boot, annotators=chosen)
    if payload.get("judge") is None:
        _err(f"error: {payload['notes'].get('judge', 'no judgments in the store')}")
        sys.exit(2)
    click.echo(json.dumps(payload, indent=2) if as_json else format_calibration(payload))
    if not any(key in payload for key in CALIBRATED):
        _err("nothing calibrated (see the notes above); no thresholds file written")
        sys.exit(1)
    path = save_thresholds(payload, out_path)
    _err(f"wrote {path}")


# ------------------------------------------------------------------------------------------
# gate

#: option name -> (summary block, field, "min" | "max", readable name)
GATE_BOUNDS = {
    "min_faithfulness": ("faithfulness", "mean", "min", "faithfulness mean"),
    "min_relevance": ("answer_relevance", "mean", "min", "answer relevance mean"),
    "min_faithfulness_pass": ("faithfulness", "pass_rate", "min", "faithfulness pass rate"),
    "min_relevance_pass": ("answer_relevance", "pass_rate", "min", "answer relevance pass rate"),
    "max_false_refusal": ("abstention", "false_refusal_rate", "max", "false refusal rate"),
    "min_abstention": ("abstention", "abstention_rate", "min", "abstention rate on unanswerable items"),
}


class GateFileError(ValueError):
    """A summary.json the gate cannot read."""


def _read_summary(path: str) -> dict:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise GateFileError(f"{path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise GateFileError(f"{path}: cannot read ({exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GateFileError(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict) or "n_items" not in data:
        raise GateFileError(f"{path}: expected a summary.json object (from `workbench score`) with an n_items field")
    return data


def _field(summary: dict, path: str, block: str, field: str) -> float | None:
    """The value of ``block.field``; ``None`` when the metric was not scored (block or value null)."""
    if block not in summary:
        raise GateFileError(f"{path}: field {block}: missing (expected an object or null)")
    entry = summary[block]
    if entry is None:
        return None
    if not isinstance(entry, dict):
        raise GateFileError(f"{path}: field {block}: expected an object or null, got {type(entry).__name__}")
    if field not in entry:
        raise GateFileError(f"{path}: field {block}.{field}: missing")
    value = entry[field]
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise GateFileError(f"{path}: field {block}.{field}: expected a number or null, got {value!r}")
    return float(value)


def check_gate(summary: dict, bounds: dict[str, float], *, path: str = "summary.json",
               thresholds=None) -> tuple[list[str], list[str]]:
    """Compare a ``summary.json`` with bounds; returns ``(failed, passed)`` readable lines.

    ``bounds`` maps ``GATE_BOUNDS`` keys to numbers. A ``min`` bound fails when the value is
    below it, a ``max`` bound when above it. A bounded metric that is ``null`` (nothing scored)
    fails: a gate never passes on missing evidence. With ``thresholds`` (a ``Thresholds``), pass
    rates are only comparable when the run used the same pass thresholds: if the summary's
    thresholds differ and a pass-rate bound is set, that is a failure too.

    Raises:
        GateFileError: a bounded field is missing or not a number.
    """
    failed: list[str] = []
    passed: list[str] = []
    for key, bound in bounds.items():
        block, field, kind, name = GATE_BOUNDS[key]
        value = _field(summary, path, block, field)
        if value is None:
            failed.append(f"{name}: not scored (null in {path}), bound {kind} {bound:g}")
            continue
        ok = value >= bound if kind == "min" else value <= bound
        line = f"{name}: {value:.4f} {'>=' if kind == 'min' else '<='} {bound:g}"
        if ok:
            passed.append(line)
        else:
            failed.append(f"{name}: {value:.4f} is {'below' if kind == 'min' else 'above'} the bound {bound:g}")
    if thresholds is not None:
        used = summary.get("thresholds") or {}
        pass_bounds = [k for k in bounds if k.endswith("_pass")]
        for key, want in (("faithfulness", thresholds.faithfulness), ("answer_relevance", thresholds.answer_relevance)):
            got = used.get(key)
            if isinstance(got, (int, float)) and abs(float(got) - want) > 1e-9 and pass_bounds:
                failed.append(f"{key} pass threshold: the run used {got:g} but {thresholds.source} says {want:g}; "
                              f"re-score with --thresholds {thresholds.source} before gating on pass rates")
    return failed, passed


@click.command()
@click.argument("summary_json", type=click.Path(dir_okay=False))
@click.option("--thresholds", "thresholds_path", type=click.Path(dir_okay=False), default=None,
              help="thresholds.json: its faithfulness/relevance thresholds become the minimum means "
                   "(unless --min-faithfulness/--min-relevance are given).")
@click.option("--min-faithfulness", type=click.FloatRange(0, 1), default=None, help="Minimum mean faithfulness.")
@click.option("--min-relevance", type=click.FloatRange(0, 1), default=None, help="Minimum mean answer relevance.")
@click.option("--min-faithfulness-pass", type=click.FloatRange(0, 1), default=None, help="Minimum faithfulness pass rate.")
@click.option("--min-relevance-pass", type=click.FloatRange(0, 1), default=None, help="Minimum relevance pass rate.")
@click.option("--max-false-refusal", type=click.FloatRange(0, 1), default=None, help="Maximum false-refusal rate.")
@click.option("--min-abstention", type=click.FloatRange(0, 1), default=None,
              help="Minimum abstention rate on unanswerable items.")
def gate(summary_json, thresholds_path, **bounds):
    """Fail a CI pipeline when a scored run is below its bounds (exit 1), else exit 0.

    Reads the summary.json of `workbench score`. Every bounded metric must be scored: a null
    metric fails. With --thresholds F the tuned faithfulness and relevance thresholds are used
    as minimum mean scores (explicit --min-faithfulness/--min-relevance win), and pass-rate
    bounds fail if the run was scored with other thresholds than F's. No pass-rate bound is
    implied by --thresholds. Exit 2 on an unreadable file or when no bound is given.

    Example: workbench gate runs/demo/rag/summary.json --min-faithfulness 0.6 --max-false-refusal 0.2
    """
    chosen = {k: v for k, v in bounds.items() if v is not None}
    thresholds = None
    if thresholds_path is not None:
        try:
            thresholds = load_thresholds(thresholds_path)
        except ThresholdsError as exc:
            _err(f"error: {exc}")
            sys.exit(2)
        chosen.setdefault("min_faithfulness", thresholds.faithfulness)
        chosen.setdefault("min_relevance", thresholds.answer_relevance)
    if not chosen:
        _err("error: no bounds given: pass at least one --min-*/--max-* option or --thresholds F")
        sys.exit(2)
    try:
        summary = _read_summary(summary_json)
        failed, passed = check_gate(summary, chosen, path=summary_json, thresholds=thresholds)
    except GateFileError as exc:
        _err(f"error: {exc}")
        sys.exit(2)
    for line in passed:
        click.echo(f"ok    {line}")
    for line in failed:
        click.echo(f"FAIL  {line}")
    if failed:
        click.echo(f"gate failed: {len(failed)} of {len(failed) + len(passed)} bound(s) not met")
        sys.exit(1)
    click.echo(f"gate passed: {len(passed)} bound(s) met")


COMMANDS: list = [judge, agreement, calibrate, gate]
