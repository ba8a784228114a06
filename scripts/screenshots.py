"""Refresh ``docs/screenshots/*.png``: every app page on the demo store, in headless Chromium at 1400x900.

Builds the demo store (``workbench demo``) in a temporary folder unless ``--home`` names one that
already holds ``runs/demo/labels.db``, starts ``workbench app`` on a loopback port, and saves for each
page ``<page>.png`` (what a 1400x900 window shows) and ``<page>_full.png`` (the whole page).

Needs Debian's ``/usr/bin/chromium`` (``make browser``); never downloads a browser.

Example: .venv/bin/python scripts/screenshots.py --out docs/screenshots --port 8530
"""
from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1400, "height": 900}
# page name -> URL path and query (the Label page needs an annotator name)
PAGES: dict[str, str] = {
    "label": "?annotator=demo",
    "data": "data",
    "agreement": "agreement",
    "calibration": "calibration",
    "scores": "scores",
}


def free_port() -> int:
    """A free loopback TCP port chosen by the OS."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def build_demo(home: Path) -> Path:
    """Run ``workbench demo --out <home>/runs/demo`` unless its store exists; return the store path."""
    db = home / "runs" / "demo" / "labels.db"
    if not db.is_file():
        code = "import sys; from workbench.cli import main; sys.exit(main())"
        subprocess.run([sys.executable, "-c", code, "demo", "--out", str(db.parent)], cwd=ROOT,
                       env={**os.environ, "WORKBENCH_HOME": str(home)}, check=True, stdout=subprocess.DEVNULL)
    if not db.is_file():
        raise RuntimeError(f"workbench demo did not write {db}")
    return db


@contextlib.contextmanager
def app_server(home: Path, db: Path, port: int, timeout: float = 60.0) -> Iterator[str]:
    """``workbench app --db db --port port`` with ``WORKBENCH_HOME=home``; yields its URL, stops it after."""
    env = {k: v for k, v in os.environ.items() if k != "WORKBENCH_APP_TOKEN"}
    env["WORKBENCH_HOME"] = str(home)
    proc = subprocess.Popen([sys.executable, "-m", "workbench.cli.app", "--db", str(db), "--port", str(port)],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"workbench app exited early with code {proc.returncode}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1) as response:
                    if response.status == 200:
                        break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"workbench app did not answer on port {port} within {timeout} s") from None
                time.sleep(0.3)
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.terminate()  # cli_app forwards SIGTERM to the streamlit child
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the group this script started, by its id
            proc.wait(timeout=5)


def settle(page, timeout: float = 120.0) -> None:
    """Wait until Streamlit has finished the script run and every chart has drawn.

    Done = the app's script state is not ``running``, no status widget or spinner, and every ``.vega-embed`` holds an SVG or canvas,
    for one second in a row.
    """
    deadline = time.monotonic() + timeout
    quiet_since = None
    page.wait_for_selector('[data-testid="stMain"]', timeout=timeout * 1000)
    while time.monotonic() < deadline:
        error = page.query_selector('[data-testid="stException"]')
        if error:
            raise RuntimeError(f"page {page.url} raised: {error.inner_text()[:500]}")
        busy = page.evaluate(
            """() => {
                const app = document.querySelector('[data-testid="stApp"]');
                if (!app || app.getAttribute('data-test-script-state') === 'running') return true;
                const main = document.querySelector('[data-testid="stMain"]');
                if (!main || !main.innerText.trim()) return true;  // nothing rendered yet (pages need no h1)
                if (document.querySelector('[data-testid="stStatusWidget"]')) return true;
                if (document.querySelector('[data-testid="stSpinner"]')) return true;
                if (document.querySelector('[data-testid="stSkeleton"]')) return true;
                for (const e of document.querySelectorAll('.vega-embed')) {
                    if (!e.querySelector('svg, canvas')) return true;
                }
                return false;
            }"""
        )
        now = time.monotonic()
        if busy:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = now
        elif now - quiet_since >= 1.0:
            page.wait_for_timeout(300)  # let vega finish its layout pass
            return
        page.wait_for_timeout(200)
    raise TimeoutError(f"page {page.url} still running after {timeout} s")


def open_page(browser, url: str, name: str):
    """A new 1400x900 tab on app page ``name`` (a key of ``PAGES``), settled."""
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(url + PAGES[name])
    settle(page)
    return page


def full_height(page) -> int:
    """The height of the app's scrolling content in CSS pixels."""
    return int(page.evaluate(
        """() => {
            const main = document.querySelector('[data-testid="stMain"]');
            const block = document.querySelector('[data-testid="stMainBlockContainer"]') || main;
            return Math.max(block.scrollHeight + 120, main.scrollHeight, window.innerHeight);
        }"""
    ))


def capture(browser, url: str, out: Path, names: list[str]) -> list[Path]:
    """Save ``<name>.png`` (1400x900) and ``<name>_full.png`` (whole page) for each page name."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in names:
        page = open_page(browser, url, name)
        try:
            target = out / f"{name}.png"
            page.screenshot(path=str(target))
            written.append(target)
            page.set_viewport_size({"width": VIEWPORT["width"], "height": full_height(page)})
            page.wait_for_timeout(800)
            settle(page)
            target = out / f"{name}_full.png"
            page.screenshot(path=str(target), full_page=True)
            written.append(target)
        finally:
            page.close()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots", help="folder for the PNGs")
    parser.add_argument("--home", type=Path, default=None,
                        help="WORKBENCH_HOME holding runs/demo (built there when missing); default a temp folder")
    parser.add_argument("--port", type=int, default=None, help="loopback port for the app (default: a free one)")
    parser.add_argument("--pages", nargs="*", default=list(PAGES), choices=list(PAGES), help="pages to capture")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).is_file():
        print(f"{CHROMIUM} is missing: install Debian's chromium (make browser)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as scratch:
        home = (args.home or Path(scratch)).resolve()
        db = build_demo(home)
        with app_server(home, db, args.port or free_port()) as url, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                for path in capture(browser, url, args.out, args.pages):
                    print(path)
            finally:
                browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
