"""The installable product: build the wheel, install it in a fresh virtual environment, run it elsewhere.

The checkout is copied to a temporary folder (so the build writes nothing into it), built into an
sdist and a wheel from that sdist (``uv build``), and the wheel is installed with uv into a new
virtual environment at the versions ``uv.lock`` pins (``make setup`` installs the same way, so uv's
cache usually has them; a cold cache needs the package registry). Every command then runs from a
temporary folder that is not the checkout, with a clean environment, so nothing can be imported
from the source tree: ``workbench --version``, ``--help``, ``workbench demo`` (outputs checked) and
``workbench app`` (health endpoint, the page, and the Label page rendered in chromium).

Marked ``installed``: ``make test`` runs it (``pytest -m "not installed"`` leaves it out).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.installed

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("workbench", "workbench_app")
# Not part of a build: environments, caches, outputs, earlier builds.
IGNORED = {".git", ".venv", ".venv-real", "build", "dist", "runs", ".workbench", ".pytest_cache", ".hypothesis",
           "__pycache__", ".mypy_cache", ".ruff_cache", "node_modules"}
sys.path.insert(0, str(ROOT / "scripts"))
from screenshots import CHROMIUM, CHROMIUM_ARGS, free_port  # noqa: E402  (the flags every browser test uses)


def uv_command() -> list[str]:
    """How to run uv: ``uv`` on PATH, else ``python -m uv`` (what ``make setup`` uses)."""
    found = shutil.which("uv")
    if found:
        return [found]
    for python in (sys.executable, shutil.which("python3")):
        if python and subprocess.run([python, "-m", "uv", "--version"], capture_output=True).returncode == 0:
            return [python, "-m", "uv"]
    pytest.fail("uv not found (neither `uv` on PATH nor `python3 -m uv`): `make setup` installs it")


def run(command: list, *, cwd: Path, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run ``command``; fail the test with its output when it exits non-zero."""
    done = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(map(str, command))} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


def source_files(root: Path) -> set[str]:
    """Every file of the two packages in the checkout, as wheel paths (``workbench/data/NOTICE``)."""
    files = set()
    for package in PACKAGES:
        for path in (root / package).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                files.add(path.relative_to(root).as_posix())
    return files


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """Build and install the wheel once: ``{"wheel", "sdist", "venv", "cwd", "env", "tmp"}``."""
    tmp = tmp_path_factory.mktemp("installed")
    uv = uv_command()
    src = tmp / "src"
    shutil.copytree(ROOT, src, symlinks=True,
                    ignore=lambda _d, names: [n for n in names if n in IGNORED or n.endswith((".egg-info", ".db"))])
    dist = tmp / "dist"
    run([*uv, "build", "--sdist", "--wheel", "--out-dir", dist, src], cwd=tmp)  # the wheel is built from the sdist
    [wheel] = dist.glob("*.whl")
    [sdist] = dist.glob("*.tar.gz")
    locked = run([*uv, "export", "--frozen", "--no-emit-project", "--no-hashes", "--no-header",
                  "--format", "requirements-txt", "--project", src], cwd=tmp).stdout
    (tmp / "locked.txt").write_text(locked, encoding="utf-8")
    venv = tmp / "venv"
    run([*uv, "venv", "--quiet", "--python", sys.executable, venv], cwd=tmp)
    run([*uv, "pip", "install", "--quiet", "--python", venv / "bin" / "python", "-c", tmp / "locked.txt", wheel], cwd=tmp)

    cwd = tmp / "elsewhere"  # not the checkout: nothing importable from the source tree
    (cwd / "home").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("WORKBENCH_", "PYTHON", "VIRTUAL_ENV", "OPENAI_"))}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", VIRTUAL_ENV=str(venv), HOME=str(cwd / "home"))
    return {"wheel": wheel, "sdist": sdist, "venv": venv, "cwd": cwd, "env": env, "tmp": tmp}


def test_the_wheel_and_the_sdist_carry_every_file_of_the_packages(installed):
    expected = source_files(ROOT)
    for must in ("workbench_app/main.py", "workbench_app/views/label.py", "workbench/data/NOTICE",
                 "workbench/data/demo_rag.jsonl", "workbench/data/licenses/xstest-LICENSE",
                 "workbench/calibration/guidelines.md", "workbench/judges/prompts/verify_v1.txt",
                 "workbench/judges/refusal_model.json", "workbench/judges/offline_model.json"):
        assert must in expected  # the checkout really has them (the comparison below is not vacuous)
    in_wheel = set(zipfile.ZipFile(installed["wheel"]).namelist())
    assert sorted(expected - in_wheel) == []
    with tarfile.open(installed["sdist"]) as sdist:
        top = sdist.getnames()[0].split("/")[0]
        in_sdist = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert sorted(expected - in_sdist) == []
    assert {"pyproject.toml", "README.md"} <= in_sdist, top


def test_workbench_is_imported_from_the_new_environment(installed):
    python = installed["venv"] / "bin" / "python"
    shown = run([python, "-c", "import json, workbench, workbench_app, workbench_app.common as c; "
                 "print(json.dumps([workbench.__file__, workbench_app.__file__, c.guidelines_text()]))"],
                cwd=installed["cwd"], env=installed["env"]).stdout
    workbench_file, app_file, guidelines = json.loads(shown.splitlines()[-1])
    site = installed["venv"].resolve()
    assert Path(workbench_file).resolve().is_relative_to(site)
    assert Path(app_file).resolve().is_relative_to(site)
    assert guidelines and guidelines.startswith("# Labelling guidelines")  # the packaged copy, no labels/ here
    router = (Path(app_file).parent / "main.py").read_text(encoding="utf-8")
    pages = re.findall(r'st\.Page\("([^"]+)"', router)
    assert pages and all((Path(app_file).parent / page).is_file() for page in pages)


def test_version_and_help(installed):
    workbench = installed["venv"] / "bin" / "workbench"
    version = run([workbench, "--version"], cwd=installed["cwd"], env=installed["env"]).stdout
    assert re.search(r"version \d+\.\d+", version)
    shown = run([workbench, "--help"], cwd=installed["cwd"], env=installed["env"]).stdout
    for command in ("score", "demo", "labels", "judge", "agreement", "calibrate", "gate", "report", "app"):
        assert f"  {command} " in shown


def test_demo_runs_on_the_packaged_data(installed):
    out = installed["tmp"] / "demo"
    done = run([installed["venv"] / "bin" / "workbench", "demo", "--out", out, "--limit", "40"],
               cwd=installed["cwd"], env=installed["env"])
    data_line = next(line for line in done.stderr.splitlines() if line.startswith("data: "))
    data_dir = Path(data_line[len("data: "):].split(" (")[0])
    assert data_dir.resolve().is_relative_to(installed["venv"].resolve()) and (data_dir / "NOTICE").is_file()
    for name in ("rag/summary.json", "rag/items.jsonl", "begin/summary.json", "begin/items.jsonl",
                 "agreement.json", "thresholds.json", "labels.db"):
        assert (out / name).is_file(), name
    summary = json.loads((out / "begin" / "summary.json").read_text(encoding="utf-8"))
    assert summary["n_items"] == 40
    assert json.loads((out / "rag" / "summary.json").read_text(encoding="utf-8"))["corrected"]


def test_app_serves_the_label_page(installed):
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)")
    port = free_port()
    log = installed["tmp"] / "app.log"
    db_file = installed["tmp"] / "app-labels.db"
    with open(log, "w", encoding="utf-8") as sink:
        proc = subprocess.Popen([str(installed["venv"] / "bin" / "workbench"), "app", "--port", str(port),
                                 "--db", str(db_file)],
                                cwd=installed["cwd"], env=installed["env"], stdout=sink, stderr=sink,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, f"workbench app exited {proc.returncode}:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"no health answer on port {port}:\n{log.read_text()}"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as response:
                    if response.read().decode() == "ok":
                        break
            except OSError:
                time.sleep(0.3)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as response:
            page = response.read().decode("utf-8")
        assert "<title>Streamlit</title>" in page and 'id="root"' in page
        assert db_file.is_file() and "store: created a new label store" in log.read_text()

        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:  # the router found its pages in the installed package
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                tab = browser.new_page()
                tab.goto(f"http://127.0.0.1:{port}/", timeout=60_000)
                tab.get_by_text("Your name").first.wait_for(timeout=60_000)
                assert tab.get_by_role("link", name="Calibration").count() >= 1
            finally:
                browser.close()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)  # the group this test started; the CLI passes it to streamlit
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
