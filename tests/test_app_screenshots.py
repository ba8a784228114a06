"""Layout facts of the app's pages in real headless Chromium at 1400x900, on the demo store.

The store comes from ``workbench demo`` (run once for the module in a temp folder); the server and
the page-settling logic are those of ``scripts/screenshots.py``, which refreshes
``docs/screenshots/``. The Label page's layout belongs to its own tests; here: Agreement,
Calibration, Scores and Data.
"""
from __future__ import annotations

import re
import struct
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import screenshots as shots  # noqa: E402

MY_PAGES = ("agreement", "calibration", "scores", "data")
EDGE = 4
LONG_FLOAT = re.compile(r"\d\.\d{5,}")  # a raw float printed with more than 4 decimals

# Every text element of every Vega chart: its box (page coordinates), its chart's box, its text.
CHART_TEXTS = """() => [...document.querySelectorAll('.vega-embed')].filter(e => e.checkVisibility()).map((embed, chart) => {
    const svg = embed.querySelector('svg');
    if (!svg) return {chart, svg: null, texts: []};
    const s = svg.getBoundingClientRect();
    const texts = [...svg.querySelectorAll('text')].filter(t => t.textContent.trim() !== '')
        .map(t => { const r = t.getBoundingClientRect();
                    return {text: t.textContent, x: r.left, y: r.top, w: r.width, h: r.height}; })
        .filter(t => t.w > 0 && t.h > 0);
    const p = embed.parentElement.getBoundingClientRect();
    return {chart, svg: {x: s.left, y: s.top, w: s.width, h: s.height}, parent: {x: p.left, w: p.width}, texts};
})"""


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    if not Path(shots.CHROMIUM).is_file():
        pytest.fail(f"{shots.CHROMIUM} is missing: install Debian's chromium (make browser) to run the browser "
                    "tests; they are never skipped")
    home = tmp_path_factory.mktemp("shots")
    db = shots.build_demo(home)
    with shots.app_server(home, db, shots.free_port()) as url:
        yield url


@pytest.fixture(scope="module")
def browser(app_url):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=shots.CHROMIUM, args=shots.CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


class _Pages:
    """One 1400x900 tab that moves to the page asked for (and stays there while tests ask for it again).

    One tab only: a background tab of headless Chromium may drop a Streamlit page's elements.
    """

    def __init__(self, browser, url: str):
        self.tab, self.url, self.current = browser.new_page(viewport=shots.VIEWPORT), url, None

    def __getitem__(self, name: str):
        if name != self.current:
            self.tab.goto(self.url + shots.PAGES[name])
            shots.settle(self.tab)
            self.current = name
        return self.tab


@pytest.fixture(scope="module")
def pages(app_url, browser):
    """``pages[name]``: the tab, settled on page ``name``."""
    opened = _Pages(browser, app_url)
    yield opened
    opened.tab.close()


def _overlap(a: dict, b: dict, slack: float = 1.0) -> bool:
    return (min(a["x"] + a["w"], b["x"] + b["w"]) - max(a["x"], b["x"]) > slack
            and min(a["y"] + a["h"], b["y"] + b["h"]) - max(a["y"], b["y"]) > slack)


@pytest.mark.parametrize("name", ["agreement", "calibration", "scores"])
def test_chart_text_neither_overlaps_nor_is_clipped(pages, name):
    charts = pages[name].evaluate(CHART_TEXTS)
    assert charts and all(c["svg"] for c in charts), f"{name}: a chart did not draw"
    problems = []
    for chart in charts:
        svg, texts = chart["svg"], chart["texts"]
        assert texts, f"{name}: chart {chart['chart']} has no text"
        for t in texts:  # inside its own chart: nothing cut at an edge (e.g. the "chosen" label)
            # (a text box includes its line height, a few px beyond the glyphs: allow EDGE px)
            if t["x"] < svg["x"] - EDGE or t["y"] < svg["y"] - EDGE or t["x"] + t["w"] > svg["x"] + svg["w"] + EDGE \
                    or t["y"] + t["h"] > svg["y"] + svg["h"] + EDGE:
                problems.append(f"chart {chart['chart']}: {t['text']!r} is clipped ({t} outside {svg})")
        for i, a in enumerate(texts):
            for b in texts[i + 1:]:
                same = a["text"] == b["text"] and abs(a["x"] - b["x"]) < 1 and abs(a["y"] - b["y"]) < 1
                if not same and _overlap(a, b):  # (a label drawn twice in place is its white halo)
                    problems.append(f"chart {chart['chart']}: {a['text']!r} overlaps {b['text']!r}")
        # the chart fits its column and the window
        assert svg["w"] <= chart["parent"]["w"] + 1, f"{name}: chart {chart['chart']} wider than its column"
        assert svg["x"] + svg["w"] <= shots.VIEWPORT["width"]
    assert not problems, f"{name}: " + "; ".join(problems[:10])


def test_confusion_matrices_are_square_with_counts_and_shares(pages):
    charts = pages["agreement"].evaluate(CHART_TEXTS)
    matrices = [c for c in charts if any(t["text"].startswith("row ") for t in c["texts"])]
    assert len(matrices) == 4  # one per task of the demo, one judge
    for chart in matrices:
        cells = [t for t in chart["texts"] if re.fullmatch(r"row (\d+%|n/a) · col (\d+%|n/a)", t["text"])]
        assert len(cells) == 4
        rects = pages["agreement"].evaluate(
            """(i) => [...[...document.querySelectorAll('.vega-embed')].filter(e => e.checkVisibility())[i].querySelectorAll('.mark-rect path')]
                     .map(p => { const r = p.getBoundingClientRect(); return [r.width, r.height]; })""",
            chart["chart"])
        assert len(rects) == 4 and all(abs(w - h) <= 2 and w >= 80 for w, h in rects), rects
        titles = [t["text"] for t in chart["texts"]]
        assert any(re.fullmatch(r"judge \S+@[0-9a-f]{12}", t) for t in titles), titles  # the full fingerprint


@pytest.mark.parametrize("name", MY_PAGES)
def test_no_raw_float_with_more_than_four_decimals(pages, name):
    page = pages[name]
    text = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').innerText")
    svg_text = " ".join(t["text"] for c in page.evaluate(CHART_TEXTS) for t in c["texts"])
    assert not LONG_FLOAT.findall(text + " " + svg_text), LONG_FLOAT.findall(text + " " + svg_text)[:5]
    assert not re.search(r"\bNone\b", text)  # a missing value reads n/a, never None


def test_each_calibration_warning_sits_beside_its_own_chart(pages):
    page = pages["calibration"]
    facts = page.evaluate(
        """() => {
            const box = e => { const r = e.getBoundingClientRect(); return {x: r.left, y: r.top, w: r.width, h: r.height}; };
            const warnings = [...document.querySelectorAll('[data-testid="stAlertContentWarning"]')]
                .filter(w => w.innerText.includes('Untrustworthy')).map(w => ({text: w.innerText, ...box(w)}));
            const charts = [...document.querySelectorAll('.vega-embed')].filter(e => e.checkVisibility())
                .map(e => ({title: (e.querySelector('.role-title-text') || {}).textContent || '', ...box(e)}));
            return {warnings, charts};
        }"""
    )
    assert facts["warnings"], "the demo has at least one untrustworthy threshold (answer_relevance)"
    for warning in facts["warnings"]:
        key = re.search(r"Untrustworthy threshold\.\s*(\w+):", warning["text"]).group(1)
        beside = [c for c in facts["charts"] if c["y"] <= warning["y"] <= c["y"] + c["h"]
                  and warning["x"] >= c["x"] + c["w"] - 1]
        assert len(beside) == 1, (warning["text"][:80], facts["charts"])
        assert beside[0]["title"].startswith(key), (key, beside[0]["title"])  # its own score's chart


def test_a_flagged_threshold_cannot_be_written_without_acknowledging_it(pages):
    page = pages["calibration"]
    table = page.get_by_text("Thresholds to write")
    table.scroll_into_view_if_needed()
    ack = page.get_by_text("Write it anyway (I read the warning)")
    assert ack.count() >= 1  # one checkbox per flagged score, beside its warning


def test_selecting_an_items_row_opens_the_item(pages):
    page = pages["scores"]
    grid = page.locator('[data-testid="stDataFrame"]').last
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    header = 35  # glide-data-grid's header row; data rows are 35 px as well
    page.mouse.click(box["x"] + 14, box["y"] + header + 17)  # the row marker of the first data row
    heading = page.get_by_role("heading", name=re.compile(r"^Item begin-"))
    heading.wait_for(timeout=30_000)
    shots.settle(page)
    assert page.get_by_text("Claims", exact=True).count() == 1


def test_screenshot_script_writes_a_1400x900_png(app_url, browser, tmp_path):
    written = shots.capture(browser, app_url, tmp_path, ["data"])
    assert [p.name for p in written] == ["data.png", "data_full.png"]
    with open(written[0], "rb") as handle:
        head = handle.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", head[16:24]) == (1400, 900)


def test_an_upload_error_names_the_uploaded_file_not_a_temp_path(pages, tmp_path):
    page = pages["data"]
    bad = tmp_path / "my evals.jsonl"
    bad.write_text('{"id": "y", "question": "Q?"}\n', encoding="utf-8")
    page.get_by_text("Load an eval set (upload or path)").click()  # folded when the store has units
    page.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(str(bad))
    page.get_by_text("my evals.jsonl").first.wait_for(timeout=30_000)
    page.get_by_role("button", name="Load the uploaded file").click()
    page.get_by_text("my evals.jsonl: the eval set has problems; nothing was stored.").wait_for(timeout=30_000)
    shots.settle(page)
    text = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').innerText")
    assert "my evals.jsonl:1: field 'answer'" in text  # the file's own name, then line and field
    assert "upload.jsonl" not in text and str(tmp_path) not in text  # no temporary or local path
    pages.current = None  # the page now shows an error: the next test reloads it
