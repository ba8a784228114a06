"""Runs against misbehaving endpoints (tests/fake_openai.py): they stop early or exit non-zero,
never report a failed run as a result. The real openai client is used throughout."""
from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

from click.testing import CliRunner
from fake_openai import CHAT_PATH, EMBEDDINGS_PATH, FakeOpenAI

from workbench.cli import main
from workbench.scoring.dataset import load_eval_set
from workbench.scoring.estimate import estimate_run

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo_rag.jsonl"
SECRET = "sk-test-SECRET-51c0"


def env_for(base_url: str, tmp_path: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "WORKBENCH_"))}
    return {**env, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": SECRET, "WORKBENCH_MODEL": "judge-m",
            "WORKBENCH_EMBEDDING_MODEL": "embed-m", "WORKBENCH_CACHE": str(tmp_path / "cache.db"),
            "WORKBENCH_DB": str(tmp_path / "no-labels.db"), **extra}


def score(tmp_path: Path, base_url: str, *args: str, out: str = "run", **env: str):
    started = time.monotonic()
    result = CliRunner().invoke(main, ["score", str(DEMO), "--judge", "openai", "--out", str(tmp_path / out), *args],
                                env=env_for(base_url, tmp_path, **env))
    return result, time.monotonic() - started


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- fail fast: 401 / 404 / nothing listening ---------------------------------------------------------
def test_wrong_key_stops_after_one_call_naming_url_model_and_cause(fake_openai, tmp_path):
    fake_openai.api_key = "sk-the-right-one"
    result, seconds = score(tmp_path, fake_openai.base_url)
    assert result.exit_code == 3, result.output
    assert fake_openai.count() == 1  # the first call went alone; nothing else was spent
    assert fake_openai.base_url in result.output and "'judge-m'" in result.output
    assert "HTTP 401" in result.output and "OPENAI_API_KEY" in result.output
    assert not (tmp_path / "run").exists()
    assert time.monotonic() - fake_openai.requests[0].time < 10  # stopped within seconds of the first reply
    assert SECRET not in result.output


def test_unknown_model_404_stops_at_once(tmp_path):
    with FakeOpenAI(models={"served-model"}) as fake:
        result, _ = score(tmp_path, fake.base_url)
        assert result.exit_code == 3 and fake.count() == 1
        assert "HTTP 404" in result.output and "--model" in result.output


def test_wrong_base_url_path_404_stops_at_once(fake_openai, tmp_path):
    result, _ = score(tmp_path, fake_openai.base_url.removesuffix("/v1"))  # forgot the /v1
    assert result.exit_code == 3 and fake_openai.count() == 1
    assert "ends in /v1" in result.output


def test_nothing_listening_stops_within_seconds(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"
    result, seconds = score(tmp_path, url)
    assert result.exit_code == 3, result.output
    assert f"cannot connect to {url}" in result.output and "no server is listening" in result.output
    assert seconds < 60 and not (tmp_path / "run").exists()  # no retries with backoff (imports included)


# -- too many failures: everything written, then exit 4; the table leads with it ---------------------------
def junk_refusals(request: dict):
    from fake_openai import default_responder

    prompt = request["messages"][-1]["content"]
    if '{"refusal"' in prompt:
        return "I am a small model and I like to talk about the weather."
    return default_responder(request)


def test_more_than_max_failed_exits_4_after_writing_and_says_unknown(tmp_path):
    with FakeOpenAI(responder=junk_refusals) as fake:
        result, _ = score(tmp_path, fake.base_url)
        assert result.exit_code == 4, result.output
        lines = result.stdout.splitlines()
        assert lines[0].startswith("UNSCORED             13 of 13 items carry a judge failure (100.0%) -- above --max-failed 5.0%")
        abstention = next(line for line in lines if line.startswith("abstention"))
        assert abstention == "abstention           unknown (judge failed on 13 items)"
        assert "exit code 4" in result.output
        summary = json.loads((tmp_path / "run" / "summary.json").read_text())
        assert summary["failures"]["items_failed"] == 13 and summary["failures"]["too_many"] is True
        assert summary["failures"]["by_metric"] == {"abstention": 13}
        records = [json.loads(x) for x in (tmp_path / "run" / "items.jsonl").read_text().splitlines()]
        assert len(records) == 13 and all(any(e.startswith("is_refusal: ") for e in r["errors"]) for r in records)
        assert all(r["faithfulness"] is not None for r in records if not r["abstained"])  # the rest still scored
        # with a generous threshold the same run passes (from the cache: no new call)
        calls = fake.count()
        result, _ = score(tmp_path, fake.base_url, "--max-failed", "1.0", out="run2")
        assert result.exit_code == 0, result.output
        assert fake.count() - calls == 13 * 5  # only the refusal calls (5 attempts each, never cached) again


def test_judge_command_exits_4_when_too_many_units_fail(tmp_path):
    db = tmp_path / "labels.db"
    with FakeOpenAI(responder=junk_refusals) as fake:
        env = env_for(fake.base_url, tmp_path)
        runner = CliRunner()
        added = runner.invoke(main, ["labels", "add", str(DEMO), "--db", str(db), "--judge", "offline"], env=env)
        assert added.exit_code == 0, added.output
        result = runner.invoke(main, ["judge", "--db", str(db), "--judge", "openai", "--task", "abstention"], env=env)
        assert result.exit_code == 4, result.output
        assert result.stdout.startswith("FAILED       13 of 13 units got an error (100.0%, above --max-failed: exit code 4)")
        stored = runner.invoke(main, ["judge", "--db", str(db), "--judge", "openai", "--task", "abstention",
                                      "--max-failed", "1", "--json"], env=env)
        assert stored.exit_code == 0 and json.loads(stored.stdout)["failures"]["units_failed"] == 13


# -- embeddings ----------------------------------------------------------------------------------------
def test_missing_embeddings_is_a_per_metric_error_and_offline_embedder_fixes_it(tmp_path):
    with FakeOpenAI(embeddings=False) as fake:
        result, _ = score(tmp_path, fake.base_url, "--max-failed", "1")
        assert result.exit_code == 0, result.output
        records = [json.loads(x) for x in (tmp_path / "run" / "items.jsonl").read_text().splitlines()]
        relevance_errors = [e for r in records for e in r["errors"] if e.startswith("answer_relevance: ")]
        assert len(relevance_errors) == 13 and "has no /v1/embeddings" in relevance_errors[0]
        assert "--embedder offline" in relevance_errors[0]
        assert all(r["answer_relevance"] is None and r["faithfulness"] is not None
                   for r in records if not r["abstained"])
        assert fake.count(EMBEDDINGS_PATH) == 1  # asked once, then known to be missing
        result, _ = score(tmp_path, fake.base_url, "--embedder", "offline", out="run2")
        assert result.exit_code == 0, result.output
        records = [json.loads(x) for x in (tmp_path / "run2" / "items.jsonl").read_text().splitlines()]
        assert all(r["errors"] == [] for r in records)
        assert sum(r["answer_relevance"] is not None for r in records) >= 10


# -- dry run -------------------------------------------------------------------------------------------
def test_dry_run_is_within_ten_percent_of_the_calls_made_and_prints_tokens_and_cost(fake_openai, tmp_path):
    result = CliRunner().invoke(main, ["score", str(DEMO), "--judge", "openai", "--dry-run", "--json",
                                       "--price-in", "0.15", "--price-out", "0.60"],
                                env=env_for(fake_openai.base_url, tmp_path))
    assert result.exit_code == 0, result.output
    estimate = json.loads(result.stdout)
    assert fake_openai.count() == 0
    result, _ = score(tmp_path, fake_openai.base_url, "--json", "--no-cache")
    assert result.exit_code == 0, result.output
    made = fake_openai.count(CHAT_PATH)
    assert abs(estimate["chat_calls_estimated"] - made) <= 0.1 * made, (estimate, made)
    # embedding requests of concurrent items share requests (embed_batch), so the estimate is a ceiling
    assert 0 < fake_openai.count(EMBEDDINGS_PATH) <= estimate["embedding_calls"]
    summary = json.loads(result.stdout)
    assert estimate["prompt_tokens_estimated"] > 0 and estimate["completion_tokens_max"] > estimate["completion_tokens_estimated"]
    expected_cost = (estimate["prompt_tokens_estimated"] * 0.15 + estimate["completion_tokens_estimated"] * 0.60) / 1e6
    assert abs(estimate["cost_estimated"] - expected_cost) < 1e-6
    assert summary["judge"]["response_format"] == "json_schema" and summary["judge"]["timeouts"] == 0
    assert estimate_run(load_eval_set(DEMO))["chat_calls_estimated"] == estimate["chat_calls_estimated"]
