"""``score --batch``: the REAL openai client against the fake server's /v1/files and /v1/batches.

The reference for every batch run is an interactive run of the same items against the same fake
server (whose batch lines are answered by the same handlers as interactive calls): items.jsonl
must be byte-identical and summary.json equal except the judge usage block.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import openai
import pytest
from click.testing import CliRunner
from fake_openai import CHAT_PATH, EMBEDDINGS_PATH, FakeOpenAI, Fault

from workbench.batch.runner import (
    BatchError,
    BatchOptions,
    BatchRun,
    batch_dry_run,
    build_batch_judges,
    load_state,
    run_batch_scoring,
)
from workbench.cli import main
from workbench.config import JudgeConfig
from workbench.judges.cache import JudgeCache
from workbench.judges.openai_compat import OpenAICompatEmbedder, OpenAICompatJudge
from workbench.scoring.dataset import load_eval_set
from workbench.scoring.pipeline import ScoreOptions, run_scoring, write_outputs

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo_rag.jsonl"
SECRET = "sk-secret-batch-0123456789"


@pytest.fixture(scope="module")
def items50():
    """13 hand-made RAG items + the first 37 BEGIN items (citations, references, unanswerables)."""
    return load_eval_set(DEMO) + load_eval_set(ROOT / "data" / "begin_eval.jsonl")[:37]


@pytest.fixture
def fake():
    with FakeOpenAI(logprob_confidence=0.9, api_key=SECRET) as server:
        server.batch_polls_to_complete = 2
        yield server


def config(**overrides) -> JudgeConfig:
    return JudgeConfig(backend="openai", model="judge-m", embedding_model="embed-m", **overrides)


def client_for(fake: FakeOpenAI) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=fake.base_url, api_key=SECRET, max_retries=0)


def interactive(fake, items, tmp_path, name="interactive"):
    """Reference run: OpenAICompatJudge + embedder, own cache, outputs in tmp_path/name."""
    cache = JudgeCache(tmp_path / f"{name}.db")
    client = client_for(fake)
    judge = OpenAICompatJudge(config(), client=client, cache=cache, retry_base_delay=0.01)
    records, summary = run_scoring(items, judge, OpenAICompatEmbedder(config(), client, cache=cache),
                                   ScoreOptions(), progress=False)
    write_outputs(tmp_path / name, records, summary)
    return tmp_path / name


def batch(fake, items, tmp_path, name="batch", cache_name="batch.db", **bopts):
    """A batch run into tmp_path/name with its own cache; returns (out dir, summary)."""
    judge, embedder = build_batch_judges(config(), client=client_for(fake), cache=JudgeCache(tmp_path / cache_name))
    out = tmp_path / name
    records, summary = run_batch_scoring(items, judge, embedder, ScoreOptions(), out,
                                         BatchOptions(poll_interval=0.01, progress=False, retry_base_delay=0.01, **bopts), echo=lambda m: None)
    write_outputs(out, records, summary)
    return out, summary


def assert_same_outputs(a: Path, b: Path) -> None:
    assert (a / "items.jsonl").read_bytes() == (b / "items.jsonl").read_bytes()
    sa, sb = (json.loads((d / "summary.json").read_text()) for d in (a, b))
    assert sa.pop("judge")["fingerprint"] == sb.pop("judge")["fingerprint"]
    assert sa == sb


def creates(fake) -> int:
    return sum(1 for r in fake.requests if r.method == "POST" and r.path == "/v1/batches")


def test_batch_run_equals_interactive_run_and_fills_the_shared_cache(fake, tmp_path, items50):
    ref = interactive(fake, items50, tmp_path)
    interactive_bodies = sorted(json.dumps(b, sort_keys=True) for b in fake.bodies(CHAT_PATH))
    fake.reset()
    out, summary = batch(fake, items50, tmp_path)
    assert_same_outputs(ref, out)
    # no interactive call was made: everything went through files + batches
    assert fake.count(CHAT_PATH) == 0 and fake.count(EMBEDDINGS_PATH) == 0
    state = load_state(out)
    assert [s["endpoint"] for s in state["stages"]] == ["/v1/chat/completions"] * 2 + ["/v1/embeddings"]
    assert state["stages"][0]["name"].startswith("decompose") and state["stages"][1]["name"] == "verify"
    assert creates(fake) == 3 and state["failed"] == {}
    # the chat lines sent in batches are exactly the interactive request bodies
    lines = [json.loads(x) for p in sorted((out / "batch").glob("s[12]-*.input.jsonl")) for x in p.read_text().splitlines()]
    assert sorted(json.dumps(x["body"], sort_keys=True) for x in lines) == interactive_bodies
    assert summary["judge"]["calls"] == len(interactive_bodies) + 1  # chat lines + one embeddings line
    item_ids = {i.id for i in items50}
    for line in lines:
        stage, item_id, task, index, key8 = re.fullmatch(r"(s\d-r0):(.+):(\w+):(\d+):([0-9a-f]{8})", line["custom_id"]).groups()
        assert item_id in item_ids and task in {"decompose", "verify", "reverse_questions", "refusal", "context_relevance"}
    # the cache is the interactive one: an interactive run over it makes no call at all
    fake.reset()
    cache = JudgeCache(tmp_path / "batch.db")
    judge = OpenAICompatJudge(config(), client=client_for(fake), cache=cache)
    run_scoring(items50, judge, OpenAICompatEmbedder(config(), judge.client, cache=cache), ScoreOptions(), progress=False)
    assert fake.count() == 0 and judge.usage().calls == 0 and judge.usage().cache_hits > 0


def test_no_api_key_in_state_or_batch_files(fake, tmp_path):
    out, _ = batch(fake, load_eval_set(DEMO), tmp_path)
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) >= 8
    assert not [p for p in files if SECRET in p.read_text(encoding="utf-8")]


def test_interrupted_run_resumes_without_resubmitting(fake, tmp_path):
    items = load_eval_set(DEMO)
    ref = interactive(fake, items, tmp_path)
    fake.reset()
    fake.batch_polls_to_complete = 3

    class Stop(Exception):
        pass

    def stop_in_stage_two(records):
        if records[0]["input_path"].startswith("batch/s2") and records[0]["status"] != "completed":
            raise Stop

    with pytest.raises(Stop):
        batch(fake, items, tmp_path, on_poll=stop_in_stage_two)
    state = load_state(tmp_path / "batch")
    assert [s["done"] for s in state["stages"]] == [True, False]
    stage2_batch = state["stages"][1]["batches"][0]["batch_id"]
    assert creates(fake) == 2 and fake.count("/v1/files") == 2
    out, _ = batch(fake, items, tmp_path)
    state = load_state(out)
    assert creates(fake) == 3  # only the embeddings stage is new
    assert fake.count("/v1/files") == 3
    assert state["stages"][1]["batches"][0]["batch_id"] == stage2_batch
    assert_same_outputs(ref, out)
    # a third run of the same command: everything cached, nothing uploaded or submitted
    before = fake.count()
    batch(fake, items, tmp_path)
    assert creates(fake) == 3 and {r.path for r in fake.requests[before:]} == set()


def test_failed_lines_are_retried_then_recorded_on_their_items(fake, tmp_path):
    items = load_eval_set(DEMO)
    ref = interactive(fake, items, tmp_path)
    fake.reset()
    target = items[2]  # its refusal check fails in every round; one verify of item 0 fails once

    def fault(line, seen):
        if line["url"] != CHAT_PATH:
            return None
        content = line["body"]["messages"][0]["content"]
        if '{"refusal"' in content and target.answer in content:
            return "scripted permanent failure"
        if "<claim>" in content and items[0].answer.split(" [")[0][:40] in content and seen == 0:
            return "scripted transient failure"
        return None

    fake.batch_line_fault = fault
    out, summary = batch(fake, items, tmp_path)
    state = load_state(out)
    rounds = [sorted({b["round"] for b in s["batches"]}) for s in state["stages"]]
    assert rounds[0] == [0, 1, 2]  # the permanent failure used all three submissions
    assert len(state["failed"]) == 1
    assert fake.count(CHAT_PATH) == 0  # the final pass never calls the API for the failure
    got = [json.loads(x) for x in (out / "items.jsonl").read_text().splitlines()]
    want = [json.loads(x) for x in (ref / "items.jsonl").read_text().splitlines()]
    failed = next(r for r in got if r["id"] == target.id)
    assert failed["abstained"] is None
    assert failed["errors"] == ["is_refusal: batch request failed after 3 submissions: HTTP 500: scripted permanent failure"]
    # every other item (including item 0, whose verify succeeded on retry) is as interactive
    assert [r for r in got if r["id"] != target.id] == [r for r in want if r["id"] != target.id]
    assert summary["judge"]["failures"] == 1 and summary["errors"]["items_with_errors"] == 1
    assert set(summary) == set(json.loads((ref / "summary.json").read_text()))


def test_expired_batch_lines_go_to_a_follow_up_batch(fake, tmp_path):
    items = load_eval_set(DEMO)
    ref = interactive(fake, items, tmp_path)
    fake.reset()
    fake.batch_expire_after = 60  # stage 1 has 89 lines: 29 expire and are resubmitted
    out, _ = batch(fake, items, tmp_path)
    first = load_state(out)["stages"][0]["batches"]
    assert [(b["round"], b["status"], b["succeeded"], b["failed"]) for b in first] == [
        (0, "expired", 60, 29), (1, "completed", 29, 0)]
    assert_same_outputs(ref, out)


def test_rejected_logprobs_are_dropped_in_the_retry_round(fake, tmp_path):
    items = load_eval_set(DEMO)[:4]
    fake.reject_logprobs = True
    ref = interactive(fake, items, tmp_path)
    fake.reset()
    out, _ = batch(fake, items, tmp_path)
    assert load_state(out)["unsupported"] == ["logprobs"]
    assert_same_outputs(ref, out)


def test_dry_run_writes_stage_one_and_submits_nothing(fake, tmp_path, items50):
    judge, embedder = build_batch_judges(config(), client=client_for(fake), cache=JudgeCache(tmp_path / "c.db"))
    stages = batch_dry_run(items50, judge, embedder, ScoreOptions(), tmp_path / "dry")
    assert fake.count() == 0
    assert [s["endpoint"] for s in stages] == ["/v1/chat/completions", "/v1/chat/completions", "/v1/embeddings"]
    assert [s["exact"] for s in stages] == [True, False, False]
    lines = Path(stages[0]["files"][0]).read_text().splitlines()
    assert len(lines) == stages[0]["requests"] > 50
    assert stages[0]["estimated_tokens"] == sum(max(1, len(json.loads(x)["body"]["messages"][0]["content"]) // 4)
                                                 for x in lines)
    # the real run's first stage submits exactly the dry run's requests
    out, _ = batch(fake, items50, tmp_path)
    real = load_state(out)["stages"]
    assert real[0]["requests"] == stages[0]["requests"]
    assert real[1]["requests"] == pytest.approx(stages[1]["requests"], rel=0.25)  # an estimate
    assert real[2]["requests"] == stages[2]["requests"]


def test_transient_api_errors_are_retried_and_a_dead_api_stops_resumably(fake, tmp_path):
    items = load_eval_set(DEMO)[:3]
    fake.push_fault(Fault.server_error(503, path="/v1/files"), Fault.drop(path="/v1/files"))
    out, _ = batch(fake, items, tmp_path)
    assert [r.fault for r in fake.requests if r.path == "/v1/files"][:3] == ["status", "drop", None]
    assert all(s["done"] for s in load_state(out)["stages"])
    fake.reset()
    fake.push_fault(*[Fault.server_error(500, path="/v1/files")] * 5)  # the first try + 4 retries
    with pytest.raises(BatchError, match="re-run the same command"):
        batch(fake, items, tmp_path, name="dead", cache_name="dead.db")
    assert creates(fake) == 0
    out, _ = batch(fake, items, tmp_path, name="dead", cache_name="dead.db")  # the API is back: resumes
    assert (out / "items.jsonl").read_bytes() == (tmp_path / "batch" / "items.jsonl").read_bytes()


def test_state_of_another_judge_is_refused(fake, tmp_path):
    items = load_eval_set(DEMO)[:2]
    batch(fake, items, tmp_path)
    other = JudgeConfig(backend="openai", model="another-model", embedding_model="embed-m")
    judge, embedder = build_batch_judges(other, client=client_for(fake), cache=JudgeCache(tmp_path / "x.db"))
    with pytest.raises(BatchError, match="another --out"):
        BatchRun(items, judge, embedder, ScoreOptions(), tmp_path / "batch")


def test_large_stage_is_split_into_parts(fake, tmp_path):
    items = load_eval_set(DEMO)
    ref = interactive(fake, items, tmp_path)
    fake.reset()
    out, _ = batch(fake, items, tmp_path, max_inputs_per_batch=30, texts_per_embedding_line=7)
    stages = load_state(out)["stages"]
    assert [len(s["batches"]) for s in stages] == [3, 2, 3]  # 89 / 30, 43 / 30, 62 texts / 30
    assert_same_outputs(ref, out)


def test_fake_batch_cancel_and_missing_file():
    with FakeOpenAI() as server:
        server.batch_polls_to_complete = 5
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-x", max_retries=0)
        line = {"custom_id": "a", "method": "POST", "url": "/v1/embeddings", "body": {"model": "e", "input": ["hi"]}}
        uploaded = client.files.create(file=("in.jsonl", (json.dumps(line) + "\n").encode()), purpose="batch")
        created = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/embeddings", completion_window="24h")
        assert created.status == "validating" and created.request_counts.total == 1
        assert client.batches.cancel(created.id).status == "cancelling"
        assert client.batches.retrieve(created.id).status == "cancelled"
        with pytest.raises(openai.NotFoundError):
            client.files.content("file-nope")


# -- the CLI ------------------------------------------------------------------------------------
def cli_env(fake, tmp_path) -> dict:
    return {**os.environ, "OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": SECRET, "WORKBENCH_MODEL": "judge-m",
            "WORKBENCH_EMBEDDING_MODEL": "embed-m", "WORKBENCH_CACHE": str(tmp_path / "cli-cache.db"),
            "WORKBENCH_DB": str(tmp_path / "no-labels.db"), "WORKBENCH_BATCH_POLL_SECONDS": "0.05"}


def test_cli_batch_usage_errors(tmp_path):
    runner = CliRunner()
    result = runner.invoke(main, ["score", str(DEMO), "--judge", "offline", "--batch"])
    assert result.exit_code == 2 and "--batch needs --judge openai" in result.output
    result = runner.invoke(main, ["score", str(DEMO), "--judge", "openai", "--batch", "--no-cache"],
                           env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert result.exit_code == 2 and "drop --no-cache" in result.output


def test_cli_dry_run_prints_stages(fake, tmp_path):
    result = CliRunner().invoke(main, ["score", str(DEMO), "--judge", "openai", "--batch-dry-run", "--out",
                                       str(tmp_path / "run"), "--json"], env=cli_env(fake, tmp_path))
    assert result.exit_code == 0, result.output
    stages = json.loads(result.stdout)
    assert stages[0]["requests"] == 89 and stages[0]["exact"] is True
    assert fake.count() == 0 and not (tmp_path / "run" / "batch_state.json").exists()


def test_cli_killed_during_polling_resumes_without_new_batches(fake, tmp_path):
    """Done-when: kill the process while it polls; re-running submits nothing for submitted stages."""
    env = cli_env(fake, tmp_path)
    out = tmp_path / "run"
    cmd = [sys.executable, "-c", "from workbench.cli import main; main()", "score", str(DEMO), "--judge", "openai",
           "--batch", "--out", str(out), "--json"]
    fake.batch_polls_to_complete = 10_000  # stage 1 never completes while the first process runs
    proc = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            state = load_state(out) if (out / "batch_state.json").exists() else None
            batches = state["stages"][0]["batches"] if state and state["stages"] else []
            if batches and batches[0].get("batch_id") and fake.count("/v1/batches/" + batches[0]["batch_id"]) >= 2:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the batch was never submitted and polled")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    first_id = batches[0]["batch_id"]
    assert creates(fake) == 1
    fake.batch_polls_to_complete = 1
    runner = CliRunner()
    done = runner.invoke(main, cmd[3:], env=env)  # the same command, resumed (in-process)
    assert done.exit_code == 0, done.output
    state = load_state(out)
    assert state["stages"][0]["batches"][0]["batch_id"] == first_id
    assert creates(fake) == 3  # stage 1 reused; stages 2 and 3 new
    summary = json.loads(done.stdout)
    assert summary["n_items"] == 13 and summary["errors"]["items_with_errors"] == 0
    # same items.jsonl as an interactive CLI run on the same server
    result = runner.invoke(main, [*cmd[3:7], "--out", str(tmp_path / "inter"), "--no-cache"], env=env)
    assert result.exit_code == 0, result.output
    assert (out / "items.jsonl").read_bytes() == (tmp_path / "inter" / "items.jsonl").read_bytes()
