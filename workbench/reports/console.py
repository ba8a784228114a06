"""Plain-text tables for the terminal: a run's ``summary.json``, the corrected rates, the agreement
report, the calibration and the judge run summary. Used by the CLI and the demo; pure (text in, text out).
"""
from __future__ import annotations

from workbench.formatting import bracketed, fixed, percent
from workbench.types import QUADRANT_CELLS


def format_summary(summary: dict) -> str:
    """A readable table of a ``summary.json``."""
    def pct(x):
        return percent(x, width=5)

    num = fixed
    th = summary["thresholds"]
    fails = summary.get("failures") or {}
    by_metric = fails.get("by_metric") or {}

    def unknown(metric: str, text: str, *, n_scored: int | None = None) -> str:
        """``text`` with how many items a failed judge call left this metric unknown."""
        k = by_metric.get(metric, 0)
        if not k:
            return text
        if not n_scored:
            return f"unknown (judge failed on {k} items)"
        return f"{text}; unknown for {k} items (judge failed)"

    lines = []
    if fails.get("items_failed"):
        over = " -- above --max-failed {:.1f}%, exit code 4".format(100 * fails["max_failed"]) if fails["too_many"] else ""
        lines.append(f"UNSCORED             {fails['items_failed']} of {summary['n_items']} items carry a judge failure "
                     f"({pct(fails['rate']).strip()}){over}; see 'errors' in items.jsonl")
    lines += [f"items scored         {summary['n_items'] - fails.get('items_failed', 0)} of {summary['n_items']} fully",
             f"judge                {summary['judge']['fingerprint']}",
             f"thresholds           faithfulness {th['faithfulness']:.2f}, relevance {th['answer_relevance']:.2f}, "
             f"claim support {_claim_threshold(th)} ({th['source']})",
             ""]
    skipped = set(summary.get("metrics_skipped") or ())
    for key, label in (("faithfulness", "faithfulness"), ("answer_relevance", "answer relevance")):
        block = summary.get(key)
        lines.append(f"{label:<20} " + ("skipped (--metrics)" if key in skipped else
                                          unknown(key, "not scored" if not block else
                                                  f"mean {num(block['mean'])}  pass {pct(block['pass_rate'])}  (n={block['n']})",
                                                  n_scored=block["n"] if block else 0)))
    ret = summary.get("retrieval")
    lines.append("retrieval            " + ("skipped (--metrics)" if "retrieval" in skipped else
                                          "not scored (no gold_context_ids)" if not ret else
                                          f"recall@{ret['k']} {num(ret['recall_at_k'])}  precision@{ret['k']} "
                                          f"{num(ret['precision_at_k'])}  MRR {num(ret['mrr'])}  (n={ret['n']})"))
    cp = summary.get("context_precision")
    if cp:
        idb = cp.get("id_based") or {}
        lines.append(f"context precision    judged {num(cp['mean'])} (n={cp['n']})"
                     + (f"  id-based {num(idb.get('mean'))} (n={idb.get('n')}), judge vs gold kappa "
                        f"{num(cp.get('judge_vs_gold_kappa'))}" if idb else ""))
    cr = summary.get("context_recall")
    if cr:
        lines.append(f"context recall       {num(cr['mean'])}  (n={cr['n']}, reference statements found in passages)")
    co = summary.get("correctness")
    if co:
        lines.append(f"correctness (e2e)    P {num(co['precision'])}  R {num(co['recall'])}  F1 {num(co['f1'])}  (n={co['n']})")
    ab = summary["abstention"]
    if ab is None:
        lines.append("abstention           skipped (--metrics)")
    else:
        lines.append("abstention           " + unknown("abstention",
                     f"{pct(ab['abstention_rate'])} of {ab['unanswerable']} unanswerable  |  "
                     f"false refusals {pct(ab['false_refusal_rate'])} of {ab['answerable']} answerable",
                     n_scored=(ab.get("unanswerable") or 0) + (ab.get("answerable") or 0)))
    cit = summary.get("citations")
    cites_unknown = fails.get("citation_checks_unknown", 0)
    if "citations" in skipped:
        cit_text = "skipped (--metrics)"
    elif cit and cites_unknown and cites_unknown == cit["n"]:
        cit_text = f"{cit['n']} cited: support unknown for all (judge failed)"
    elif cit:
        cit_text = (f"{cit['n']} cited: {cit['missing_from_corpus']} not in corpus, {cit['not_retrieved']} not "
                    f"retrieved, {cit['unsupported']} unsupported"
                    + (f", {cites_unknown} unknown (judge failed)" if cites_unknown else ""))
    else:
        cit_text = unknown("citations", "none in answers")
    lines.append("citations            " + cit_text)
    q = summary["quotes"]
    lines.append(f"judge quotes         {q['n']} given, {q['hallucinated']} not found in passages ({pct(q['rate'])})")
    lines.append("")
    lines.extend(format_quadrant(summary))
    if skipped:
        lines.append(f"skipped metrics      {', '.join(summary['metrics_skipped'])} (not computed, null in the outputs)")
    if summary.get("corrected"):
        lines.append("")
        lines.extend(format_corrected(summary["corrected"]))
    if summary.get("diagnosis"):
        lines.append("")
        lines.append("diagnosis            " + ", ".join(f"{k.replace('_', ' ')} {v}"
                                                      for k, v in summary["diagnosis"].items() if v))
    j = summary["judge"]
    lines.append("")
    lines.append(f"judge calls {j['calls']}, cache hits {j['cache_hits']}, failures {j['failures']}, "
                 f"tokens {j['prompt_tokens']} prompt / {j['completion_tokens']} completion; "
                 f"items with errors {summary.get('errors', {}).get('items_with_errors', 0)}")
    extra = [f"{name} {j[key]}" for key, name in (("timeouts", "timeouts"), ("truncated", "cut off at max_tokens"),
                                                  ("response_format", "JSON requested as"))
             if j.get(key) not in (None, 0)]
    if j.get("cost") is not None:
        extra.append(f"cost {j['cost']:.4f}")
    if extra:
        lines.append(", ".join(extra))
    return "\n".join(lines)


def _claim_threshold(th: dict) -> str:
    """The claim-support threshold of a summary's ``thresholds`` block, readable."""
    value = th.get("claim_support")
    return "the judge's own verdict" if value is None else f"{value:.2f}"


#: cell -> (meaning, where the work goes), from ``types.QUADRANT_CELLS``.
QUADRANT_ROUTES = {cell.name: (cell.meaning, cell.route) for cell in QUADRANT_CELLS}


def format_quadrant(summary: dict) -> list[str]:
    """The quadrant as a table: count, share with its bootstrap interval, and where the work goes."""
    quad, n = summary["quadrant"], summary["n_items"]
    ci = summary.get("quadrant_ci") or {}
    th = summary["thresholds"]
    lines = [f"quadrant (faithfulness >= {th['faithfulness']:.2f} x relevance >= {th['answer_relevance']:.2f})",
             f"  {'cell':<21}{'items':>6}  {'share [95% CI]':<22}{'meaning':<31}routes to"]
    for cell, (meaning, route) in QUADRANT_ROUTES.items():
        share = f"{100 * quad[cell] / n:.1f}%" if n else "n/a"
        if cell in ci and ci[cell][0] is not None:
            share += " " + bracketed(ci[cell], lambda bound: f"{100 * bound:.1f}")
        lines.append(f"  {cell:<21}{quad[cell]:>6}  {share:<22}{meaning:<31}{route}")
    return lines


def format_corrected(corrected: dict) -> list[str]:
    """Table lines for the ``corrected`` block: raw judge rate, Rogan-Gladen and PPI with CIs."""
    from workbench.calibration.corrections import RATE_LABELS

    pct = percent

    def ci(pair):
        text = bracketed(pair, pct, missing="")
        return f" {text}" if text else ""

    lines = ["corrected rates (judge errors measured against human labels; 95% CI)",
             f"  {'rate':<19} {'raw judge':<10} {'Rogan-Gladen':<26} {'PPI':<26} sens / spec (n labelled)"]
    notes = []
    for key, block in corrected.items():
        if not isinstance(block, dict):
            continue
        label = RATE_LABELS.get(key, key)
        rg = pct(block.get("rogan_gladen")) + ci(block.get("rogan_gladen_ci"))
        ppi = pct(block.get("ppi")) + ci(block.get("ppi_ci"))
        sens, spec = block.get("sensitivity"), block.get("specificity")
        ss = f"{fixed(sens, 2)} / {fixed(spec, 2)}"
        lines.append(f"  {label:<19} {pct(block.get('raw')):<10} {rg:<26} {ppi:<26} {ss} "
                     f"(n={block.get('n_labelled', 0)})")
        if block.get("note"):
            notes.append(f"  {label}: {block['note']}")
    return lines + notes


def _num(x, digits: int = 3) -> str:
    return fixed(x, digits)


def _ci(ci) -> str:
    return bracketed(ci, lambda bound: fixed(bound, 2), missing="[n/a]")


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
            same = percent(r["agreement"])
            lines.append(f"{task:<22}{r['n']:>6}{_num(r['kappa']):>8}{same:>8}")
        lines.append("  (kappa n/a = one value only among the answers; 'same' = units answered identically in every repeat)")
    return "\n".join(lines)


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
                         f"{_num(j['ac1'], 2):>7}{_num(j['accuracy'], 2):>7}"
                         f"{_num(j.get('auc'), 2):>7}"
                         f"{_num(j['alpha_with_humans'], 2):>9}{percent(q):>8}")
            if j.get("too_small"):
                lines.append(f"    too small to read: {j['too_small_reason']}")
            icc = (error_icc or {}).get(fp) if task == "claim_support" else None
            if icc and icc["items"]:
                lines.append(f"    errors within answers: ICC {_num(icc['icc'], 2)} over {icc['items']} answers "
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
