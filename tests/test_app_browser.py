"""The real app in a real browser: Debian's chromium driven by Playwright against ``workbench app``.

Needs ``/usr/bin/chromium`` (``apt-get install -y chromium``); never ``playwright install``.
The server is started once for the module on a free loopback port with its own temp store.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from workbench.store import add_items, add_units, open_db
from workbench.types import EvalItem, Passage, Unit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import screenshots as shots  # noqa: E402  (the app server and chromium flags of scripts/screenshots.py)

CHROMIUM = shots.CHROMIUM
CHROMIUM_ARGS = shots.CHROMIUM_ARGS
N_UNITS = 60
SCRIPT = "<script>alert(1)</script>"
NAME = re.compile("Your name")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium) to run the "
                    "browser tests; they are never skipped")
    folder = tmp_path_factory.mktemp("browser")
    db_file = folder / "labels.db"
    db = open_db(db_file)
    try:
        add_items(db, [EvalItem(f"q{i:02d}", f"Question {i}?", f"Answer {i}.",
                                (Passage(f"p{i}", f"Passage {i} {SCRIPT} says claim {i} holds."),))
                       for i in range(N_UNITS)])
        add_units(db, [Unit(Unit.make_id("claim_support", f"q{i:02d}", 0), "claim_support", f"q{i:02d}", 0,
                            f"claim number {i}") for i in range(N_UNITS)])
    finally:
        db.close()
    with shots.app_server(folder, db_file, shots.free_port(), timeout=30.0) as url:
        yield {"url": url, "db": db_file}


@pytest.fixture(scope="module")
def browser(server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def _labels(db_file: Path) -> list[dict]:
    db = open_db(db_file)
    try:
        return list(db.query("SELECT unit_id, annotator, value FROM labels WHERE retracted_at IS NULL ORDER BY id"))
    finally:
        db.close()


def _idle(page) -> None:
    """Wait until the script run is over and the unit's value buttons are on the page.

    The caption (``... · view N``) comes before the buttons, and the run-state attribute can read
    "notRunning" before a run's last elements arrive; a key pressed before the buttons exist does
    nothing, so the wait is for the current view's own button (keyed ``label_pos_<N>``).
    """
    page.wait_for_selector('[data-test-script-state="notRunning"]', timeout=30_000)
    caption = page.get_by_text(re.compile(r"^claim_support · unit .* · view \d+$"))
    if caption.count():
        view = re.search(r"view (\d+)$", caption.inner_text()).group(1)
        page.wait_for_selector(f".st-key-label_pos_{view} button:enabled", timeout=30_000)


def _start(page, url: str, annotator: str) -> None:
    page.goto(url)
    name = page.get_by_label(NAME)
    name.fill(annotator)
    name.press("Enter")  # no click elsewhere: the name box goes away, so the keys work at once
    page.get_by_text(re.compile(rf"^{annotator}: 0 of {N_UNITS} units labelled")).wait_for(timeout=30_000)
    _idle(page)
    assert page.evaluate("document.activeElement.tagName") == "BODY"


def _wait_count(page, annotator: str, done: int) -> None:
    page.get_by_text(re.compile(rf"^{annotator}: {done} of {N_UNITS} units labelled")).wait_for(timeout=30_000)
    _idle(page)


def _shown_unit(page) -> str:
    return re.search(r"unit (\S+) ·", page.get_by_text(re.compile(r"^claim_support · unit ")).inner_text()).group(1)


def test_label_three_units_with_the_keyboard_then_reload(server, browser):
    dialogs: list[str] = []
    page = browser.new_page()
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    _start(page, server["url"], "kb")
    passage = page.get_by_text(f"Passage 0 {SCRIPT} says claim 0 holds.")
    passage.wait_for()  # the script tag is shown as text
    for done, key in enumerate(("1", "2", "1"), start=1):
        page.keyboard.press(key)
        _wait_count(page, "kb", done)
    page.get_by_text("claim number 3", exact=True).wait_for()
    page.reload()
    _wait_count(page, "kb", 3)
    page.get_by_text("Labelling as").wait_for()  # the name is kept in the URL
    assert page.get_by_text("kb", exact=True).count() == 1
    page.get_by_text("claim number 3", exact=True).wait_for()  # resumes at the first unlabelled unit
    page.close()
    mine = [row for row in _labels(server["db"]) if row["annotator"] == "kb"]
    assert mine == [
        {"unit_id": "claim_support:q00:0", "annotator": "kb", "value": "supported"},
        {"unit_id": "claim_support:q01:0", "annotator": "kb", "value": "unsupported"},
        {"unit_id": "claim_support:q02:0", "annotator": "kb", "value": "supported"},
    ]
    assert dialogs == []  # no script ran


def test_two_sessions_labelling_at_once_lose_nothing(server, browser):
    rounds = 8
    contexts = [browser.new_context(), browser.new_context()]
    pages = [context.new_page() for context in contexts]
    names = ("alice", "bob")
    try:
        for page, name in zip(pages, names):
            _start(page, server["url"], name)
        for done in range(1, rounds + 1):
            for page in pages:  # both commit before either waits: the writes overlap
                page.get_by_role("button", name=re.compile(r"^supported")).click()
            for page, name in zip(pages, names):
                _wait_count(page, name, done)
    finally:
        for context in contexts:
            context.close()
    rows = _labels(server["db"])
    for name in names:
        units = [row["unit_id"] for row in rows if row["annotator"] == name]
        assert len(units) == rounds and len(set(units)) == rounds
        assert all(row["value"] == "supported" for row in rows if row["annotator"] == name)
    alice = {row["unit_id"] for row in rows if row["annotator"] == "alice"}
    bob = {row["unit_id"] for row in rows if row["annotator"] == "bob"}
    assert not alice & bob  # overlap 1: the leases keep the two people on different units


def test_keys_pressed_during_reruns_never_land_on_a_unit_not_shown(server, browser):
    """Press "1" far faster than the page reruns: every label must be on a unit that was on screen
    when a key was pressed, and no unit may be labelled twice; the extra presses are refused."""
    page = browser.new_page()
    _start(page, server["url"], "fast")
    page.evaluate("""() => {
        window.__shown = [];
        document.addEventListener('keydown', () => {
            const el = [...document.querySelectorAll('[data-testid="stCaptionContainer"]')]
                .find(e => e.innerText.startsWith('claim_support · unit '));
            window.__shown.push(el ? el.innerText : '');
        }, true);
    }""")
    presses = 24
    for _ in range(presses):
        page.keyboard.press("1")
        page.wait_for_timeout(25)  # much less than one rerun
    _idle(page)
    page.wait_for_timeout(500)
    _idle(page)
    shown = {re.search(r"unit (\S+) ·", text).group(1) for text in page.evaluate("window.__shown") if text}
    page.close()
    mine = [row for row in _labels(server["db"]) if row["annotator"] == "fast"]
    units = [row["unit_id"] for row in mine]
    assert units, "no press was applied at all"
    assert len(units) == len(set(units)), f"a unit was labelled twice: {units}"
    assert set(units) <= shown, f"labels on units never shown at a key press: {set(units) - shown}"
    assert len(units) < presses  # presses during a rerun were refused, not applied elsewhere
