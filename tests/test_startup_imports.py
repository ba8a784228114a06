"""A fast start: ``workbench --help`` and ``--version`` import no heavy module.

The CLI's command modules import only click and light workbench modules at the top; numpy,
pandas, scipy, statsmodels, the label store's sqlite-utils, streamlit, wordllama and openai are
imported inside the commands that need them. The help lists every command, so it imports every
command module: one heavy import at the top of any of them shows here. Speed itself is measured by
``bench/bench_startup.py``, not here.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HEAVY = ("numpy", "pandas", "scipy", "statsmodels", "sqlite_utils", "streamlit", "wordllama", "openai")

# Runs the CLI in-process in a child and reports what it imported (after a marker line on stdout).
PROBE = """
import json, sys
from workbench.cli import main
try:
    main(args=sys.argv[1:], prog_name="workbench")
except SystemExit as exc:
    code = exc.code
else:
    code = 0
print("\\n@@probe@@" + json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def run_probe(*args: str, cwd) -> tuple[str, int, set[str]]:
    """(stdout before the marker, exit code, modules loaded) of ``workbench <args>`` in a child."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WORKBENCH_")}
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    shown, _, report = done.stdout.rpartition("@@probe@@")
    probe = json.loads(report)
    return shown, probe["code"], set(probe["modules"])


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_and_version_import_no_heavy_module(flag, tmp_path):
    shown, code, modules = run_probe(flag, cwd=tmp_path)
    assert code in (0, None)
    if flag == "--help":  # the help really listed the commands, so every command module was imported
        for command in ("score", "demo", "labels", "judge", "calibrate", "gate", "report", "app"):
            assert f"  {command} " in shown
        assert "workbench.cli.labels" in modules and "workbench.cli.score" in modules
    else:
        assert "version" in shown
    heavy = sorted(name for name in HEAVY if name in modules)
    assert heavy == [], f"`workbench {flag}` imports {heavy}: move those imports into the commands that need them"


def test_the_probe_sees_a_heavy_import(tmp_path):
    """The check above can fail: a command that imports numpy at run time shows it in the probe."""
    probe = PROBE.replace("from workbench.cli import main", "from workbench.cli import main\nimport numpy")
    done = subprocess.run([sys.executable, "-c", probe, "--version"], capture_output=True, text=True, cwd=tmp_path,
                          timeout=120)
    modules = set(json.loads(done.stdout.rpartition("@@probe@@")[2])["modules"])
    assert "numpy" in modules
