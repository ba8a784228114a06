"""The self-contained HTML report (workbench.reports.html, `workbench report`)."""
from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from workbench import store
from workbench.calibration.corrections import corrected_rates
from workbench.cli.report import report
from workbench.reports.html import build_report, svg_bar_chart, svg_line_chart
from workbench.scoring.pipeline import summarize, write_outputs
from workbench.types import ClaimVerdict, EvalItem, ItemScore, JudgeUsage, Judgment, Label, Passage, Thresholds, Unit

PAYLOAD_ID = "<script>alert('id')</script>"
PAYLOAD_CLAIM = "<img src=x onerror=alert(2)>"
FP = "judge-x"


def _records():
    # 12 items: faithfulness alternates around 0.85, relevance 0.9 for even ids
    records = []
    for i in range(12):
        item_id = PAYLOAD_ID if i == 0 else f"q{i}"
        faith = 0.9 if i % 3 else 0.4
        records.append(ItemScore(item_id, faithfulness=faith, answer_relevance=0.9 if i % 2 == 0 else 0.3,
                                 quadrant=("pass" if i % 2 == 0 else "faithful_irrelevant") if faith >= 0.85 else
                                 ("relevant_unfaithful" if i % 2 == 0 else "fail"),
                                 claims=(ClaimVerdict(PAYLOAD_CLAIM if i == 0 else f"claim {i}", faith >= 0.85,
                                                      float(faith >= 0.85)),),
                                 abstained=False, answerable=True))
    return records


def _run(tmp_path):
    records = _records()
    summary = summarize(records, thresholds=Thresholds(), usage=JudgeUsage(), fingerprint=FP)
    # 8 labelled items of another set: human positive l0..l3, judge passes l0..l2 and l4
    human = {"answer_faithfulness": {f"l{i}": i < 4 for i in range(8)}}
    stored = {"answer_faithfulness": {f"l{i}": ("", 0.9 if i in (0, 1, 2, 4) else 0.3) for i in range(8)}}
    summary["corrected"] = corrected_rates(records, human, stored, thresholds=Thresholds(), rng=np.random.default_rng(0))
    run = tmp_path / "run"
    write_outputs(run, records, summary)
    return run, summary, [r.to_record() for r in records]


def _store(path):
    db = store.open_db(path)
    items = [EvalItem(f"s{i}", f"question {i}", f"answer {i} {PAYLOAD_CLAIM}", (Passage("p", "text"),)) for i in range(20)]
    store.add_items(db, items)
    store.add_units(db, [Unit(Unit.make_id("answer_faithfulness", i.id), "answer_faithfulness", i.id, None, i.answer)
                         for i in items])
    # humans: s0..s9 faithful, s10..s19 unfaithful; judge score rises with human positivity, 3 errors each side
    labels, judgments = [], []
    for k, item in enumerate(items):
        unit = Unit.make_id("answer_faithfulness", item.id)
        positive = k < 10
        labels.append(Label(unit, "answer_faithfulness", "<b>ann</b>", "faithful" if positive else "unfaithful"))
        score = (0.95 - 0.02 * k) if positive else (0.2 + 0.02 * k)
        if k in (0, 1, 2, 10, 11, 12):
            score = 1.0 - score
        judgments.append(Judgment(unit, "answer_faithfulness", FP, "faithful" if score >= 0.85 else "unfaithful",
                                  min(1.0, max(0.0, score))))
    store.append_labels(db, labels)
    store.add_judgments(db, judgments)
    db.conn.close()


def test_svg_charts_escape_and_draw_marks():
    bars = svg_bar_chart(["<a>", "b"], [0.5, None], intervals=[[0.4, 0.6], None], title="t<")
    assert bars.count('class="bar"') == 1 and bars.count('class="whisker"') == 1 and "n/a" in bars
    assert "&lt;a&gt;" in bars and "<a>" not in bars and "t&lt;" in bars
    lines = svg_line_chart({"k": [(0.0, 0.1), (0.5, None), (0.6, 0.3), (1.0, 0.4)]}, vline=0.6, diagonal=True)
    assert lines.count('class="series"') == 1  # the None breaks the line; only the 2-point segment is drawn
    assert 'class="chosen"' in lines and "chosen 0.60" in lines


def test_report_command_is_self_contained_escaped_and_has_the_numbers(tmp_path):
    run, summary, _ = _run(tmp_path)
    db = tmp_path / "s.db"
    _store(db)
    out = tmp_path / "report.html"
    result = CliRunner().invoke(report, [str(run), "--db", str(db), "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    # offline: no external URL anywhere, no script at all
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", text, re.I)
    assert "http://" not in text and "https://" not in text and "<script" not in text.lower()
    # planted payloads are escaped
    assert "&lt;script&gt;alert(&#x27;id&#x27;)&lt;/script&gt;" in text
    assert "&lt;img src=x onerror=alert(2)&gt;" in text and "<img" not in text
    assert "&lt;b&gt;ann&lt;/b&gt;" in text and "<b>ann</b>" not in text
    # the numbers of the summary
    quad = summary["quadrant"]
    assert quad == {"pass": 4, "faithful_irrelevant": 4, "relevant_unfaithful": 2, "fail": 2, "abstained": 0,
                    "unscored": 0}
    low, high = summary["quadrant_ci"]["pass"]
    assert f"[{100 * low:.1f}%, {100 * high:.1f}%]" in text and "33.3%" in text  # pass share 4/12
    faith = summary["corrected"]["faithfulness_pass"]
    # raw 8/12; sens 3/4, spec 3/4 -> RG (2/3 + 0.75 - 1) / 0.5 = 5/6
    assert faith["rogan_gladen"] == pytest.approx(5 / 6)
    assert "66.7%" in text and "83.3%" in text
    lo, hi = faith["rogan_gladen_ci"]
    assert f"[{100 * lo:.1f}%, {100 * hi:.1f}%]" in text
    # agreement from the store: 20 units; stored values (score >= 0.85) give confusion [[3, 7], [0, 10]]:
    # accuracy 13/20 = 0.65, chance 0.5 * 0.15 + 0.5 * 0.85 = 0.5 -> kappa (0.65 - 0.5) / 0.5 = 0.3
    assert "Judges against the human majority" in text
    assert '<td class="num">0.300</td>' in text and '<td class="num">0.650</td>' in text
    assert "<tr><th>human: faithful</th><td class=\"num\">3</td><td class=\"num\">7</td></tr>" in text
    assert "<td>faithfulness.mean</td><td>0.733</td>" in text  # (4 * 0.4 + 8 * 0.9) / 12
    # charts: quadrant, corrected, and per calibrated score a threshold curve + a reliability plot
    assert text.count("<svg") == 4
    assert "answer_faithfulness" in text and "chosen " in text


def test_report_without_db_and_errors(tmp_path):
    run, summary, records = _run(tmp_path)
    out = tmp_path / "r.html"
    assert CliRunner().invoke(report, [str(run), "--out", str(out)]).exit_code == 0
    text = out.read_text(encoding="utf-8")
    assert "Agreement with people" not in text and text.count("<svg") == 2
    summary["corrected"] = None
    assert "No corrected rates" in build_report(summary, records)
    missing = CliRunner().invoke(report, [str(run), "--db", str(tmp_path / "no.db"), "--out", str(out)])
    assert missing.exit_code == 2 and "no such label store" in missing.output
    (tmp_path / "empty").mkdir()
    bad = CliRunner().invoke(report, [str(tmp_path / "empty"), "--out", str(out)])
    assert bad.exit_code == 2 and "summary.json: file not found" in bad.output


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def test_report_renders_every_chart_in_headless_chromium(tmp_path):
    """Screenshot test: every chart has a drawn size and the page is not blank."""
    if CHROMIUM is None:  # pragma: no cover - the dev image has /usr/bin/chromium
        pytest.fail("no chromium on PATH: install it (apt-get install chromium) for the screenshot test")
    from playwright.sync_api import sync_playwright

    run, _, _ = _run(tmp_path)
    db = tmp_path / "s.db"
    _store(db)
    out = tmp_path / "report.html"
    assert CliRunner().invoke(report, [str(run), "--db", str(db), "--out", str(out)]).exit_code == 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        requests = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto(out.as_uri())
        boxes = [svg.bounding_box() for svg in page.query_selector_all("svg.chart")]
        marks = page.evaluate("document.querySelectorAll('svg.chart rect.bar, svg.chart polyline.series').length")
        png = page.screenshot(full_page=True)
        browser.close()
    assert len(boxes) == 4 and all(b and b["width"] > 300 and b["height"] > 200 for b in boxes)
    assert marks >= 4 + 3 + 2  # 4 quadrant bars, >= 3 corrected bars, curve lines
    assert requests == [out.as_uri()]  # nothing but the file itself is loaded
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
    (tmp_path / "report.png").write_bytes(png)


def test_corrected_section_shows_clipped_formula_value_and_instability():
    from workbench.calibration.corrections import corrected_block
    from workbench.reports.html import corrected_section

    pairs = [(True, True)] * 4 + [(True, False)] + [(False, False)] * 4 + [(False, True)]
    block = corrected_block([True] * 9 + [False], pairs, rng=np.random.default_rng(0))
    text = corrected_section({"faithfulness_pass": block})
    # RG formula (0.9 + 0.8 - 1) / 0.6 = 116.7 % is reported as 100 %, with the formula value beside it
    assert "100.0% <span class=\"muted\">(formula 116.7%, clipped)</span>" in text
    assert "116.7%, outside [0, 100%]" in text  # the note
    unstable = corrected_block([True] * 5 + [False] * 5, [(True, True)] * 6 + [(True, False)] * 4
                               + [(False, False)] * 5 + [(False, True)] * 5, rng=np.random.default_rng(0))
    assert "(unstable)" in corrected_section({"faithfulness_pass": unstable})


def test_report_names_chosen_annotators_and_marks_small_samples(tmp_path):
    run, _, _ = _run(tmp_path)
    db = tmp_path / "s.db"
    _store(db)
    conn = store.open_db(db)  # a test account that calls everything faithful
    store.append_labels(conn, [Label(Unit.make_id("answer_faithfulness", f"s{i}"), "answer_faithfulness", "annie1",
                                     "faithful") for i in range(20)])
    conn.conn.close()
    out = tmp_path / "chosen.html"
    result = CliRunner().invoke(report, [str(run), "--db", str(db), "--out", str(out), "--exclude-annotators", "annie1"])
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    assert "Annotators counted: &lt;b&gt;ann&lt;/b&gt;; left out: annie1." in text
    # without annie1 the judge is read against ann alone: kappa 0.300 as in the test above
    assert '<td class="num">0.300</td>' in text
    # 20 units < 30: the judge row is marked and the reason given
    assert "<td>too small to read</td>" in text and "only 20 unit(s); at least 30" in text
    assert "<th>auc</th>" in text
    # claim support threshold shown beside the other two
    assert "claim support the judge&#x27;s own verdict" in text
    bad = CliRunner().invoke(report, [str(run), "--db", str(db), "--out", str(out), "--annotators", "nobody"])
    assert bad.exit_code == 2 and "unknown annotator(s) 'nobody'" in bad.output
