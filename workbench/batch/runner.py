"""``workbench score --batch``: the same pipeline, with judge calls sent through the OpenAI Batch API.

How it works (one pipeline, the same outputs as an interactive run):

1. **Collect.** Run the ordinary pipeline (:func:`workbench.scoring.pipeline.score_item` per item) with a
   :class:`~workbench.batch.judge.CacheOnlyJudge` in ``collect`` mode: every judge call is
   answered from the judge cache when possible, otherwise recorded (same prompt, same cache key).
2. **Stage.** The recorded chat requests become one stage: written as batch input JSONL
   (``<out>/batch/s<stage>-r<round>-p<part>.input.jsonl``, one request per line, ``custom_id`` =
   ``s<stage>-r<round>:<item id>:<task>:<n>:<key prefix>``), uploaded with
   ``files.create(purpose="batch")``, submitted with ``batches.create`` and polled with a progress
   bar and an ETA. Output and error files are downloaded; every reply goes through the parser
   the interactive judge uses and is stored in the SAME cache under the SAME key (so a later
   interactive run reuses it). Lines that failed, expired or did not parse are retried in a
   follow-up batch, at most ``max_rounds`` submissions in all; then the request is given up and
   its message recorded.
3. Repeat: the next collecting pass gets further (claims are now known, so verifications are
   recorded). Stages come out as (1) everything that needs nothing else: decompose, reverse
   questions, refusal, citation checks, context judgments; (2) claim and reference-statement
   verifications; (3) embeddings (``/v1/embeddings`` batches, deferred until no chat request is
   missing because nothing a judge does depends on a vector).
4. **Final pass.** ``run_scoring`` with the judge in ``final`` mode: everything is a cache hit,
   no call is made, and a request given up on becomes a recorded ``JudgeError`` on its item.
   ``items.jsonl`` and ``summary.json`` therefore have the schema and values of an interactive
   run; only ``summary["judge"]`` usage differs (``calls`` = batch lines submitted by this run
   directory, tokens as reported in batch outputs, ``cache_hits`` / ``failures`` of the final pass).

Request files, the collecting pass and the dry run live in :mod:`workbench.batch.requests`
(re-exported here). State: ``<out>/batch_state.json`` (judge and embedder fingerprints, stages, batch ids, status,
request counts, tokens, given-up requests). It is rewritten atomically after every step, so
re-running the same command after an interruption polls the batches already submitted instead of
submitting new ones, and requests already in the cache are never submitted. No API key is ever
written to the state or the batch files.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from workbench.batch.judge import CacheOnlyEmbedder, CacheOnlyJudge, PendingRequest
from workbench.batch.requests import (  # noqa: F401 - re-exported: the public batch API lives here
    CHAT_ENDPOINT,
    EMBEDDINGS_ENDPOINT,
    BatchOptions,
    batch_dry_run,
    build_lines,
    chat_body,
    collect_pass,
    format_dry_run,
    stage_name,
    write_part,
)
from workbench.judges.base import JudgeError, run_sync
from workbench.judges.cache import JudgeCache
from workbench.judges.client import client_for_running_loop
from workbench.judges.concurrency import with_retries
from workbench.judges.openai_compat import json_dumps_vector, p_true_from_logprobs
from workbench.judges.parsing import ParseError
from workbench.scoring.pipeline import ScoreOptions, run_scoring
from workbench.types import EvalItem, ItemScore

STATE_FILE = "batch_state.json"
STATE_VERSION = 1
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
MAX_STAGES = 12


class BatchError(RuntimeError):
    """A batch run that cannot go on (state of another judge, a batch the server lost, ...)."""


# -- state ---------------------------------------------------------------------------------------
def load_state(out_dir: Path) -> dict | None:
    """The run's ``batch_state.json`` or ``None``; ``BatchError`` if it is unreadable."""
    path = out_dir / STATE_FILE
    if not path.is_file():
        return None
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise BatchError(f"{path}: cannot read the batch state ({exc}); expected JSON written by a batch run") from exc
    if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
        raise BatchError(f"{path}: field 'version': expected {STATE_VERSION}")
    return state


def save_state(out_dir: Path, state: dict) -> None:
    """Write ``batch_state.json`` atomically (temp file, then rename)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(state, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(out_dir / STATE_FILE)


def new_state(judge: CacheOnlyJudge, embedder: CacheOnlyEmbedder, items: Sequence[EvalItem]) -> dict:
    return {"version": STATE_VERSION, "judge": judge.fingerprint, "embedder": embedder.fingerprint,
            "host": judge.host, "items_sha256": items_digest(items), "n_items": len(items),
            "unsupported": [], "stages": [], "failed": {}, "created": time.time()}


def items_digest(items: Sequence[EvalItem]) -> str:
    """sha256 of the items' ids, questions and answers (tells a resumed run it has the same set)."""
    h = hashlib.sha256()
    for item in items:
        h.update(json.dumps([item.id, item.question, item.answer], ensure_ascii=False).encode())
    return h.hexdigest()


def default_batch_dir(evalset: str | Path, fingerprint: str) -> Path:
    """``runs/batch-<hash of eval set path + content + judge>``: re-running a command resumes it."""
    h = hashlib.sha256(str(Path(evalset).resolve()).encode())
    h.update(Path(evalset).read_bytes())
    h.update(fingerprint.encode())
    return Path("runs") / f"batch-{h.hexdigest()[:12]}"


# -- the driver ----------------------------------------------------------------------------------
class BatchRun:
    """One resumable batch run over ``items`` into ``out_dir`` (see the module docstring)."""

    def __init__(self, items: Sequence[EvalItem], judge: CacheOnlyJudge, embedder: CacheOnlyEmbedder,
                 options: ScoreOptions, out_dir: Path, batch_options: BatchOptions | None = None,
                 *, echo: Callable[[str], None] | None = None) -> None:
        self.items = list(items)
        self.judge, self.embedder = judge, embedder
        self.options = options
        self.out_dir = Path(out_dir)
        self.bopts = batch_options or BatchOptions()
        self.echo = echo or (lambda message: print(message, file=sys.stderr))
        if judge.cache is None:
            raise ValueError("a batch run needs the judge call cache (it is where replies land)")
        self.cache: JudgeCache = judge.cache
        state = load_state(self.out_dir)
        if state is None:
            state = new_state(judge, embedder, self.items)
        elif (state.get("judge"), state.get("embedder")) != (judge.fingerprint, embedder.fingerprint):
            raise BatchError(f"{self.out_dir / STATE_FILE}: this run was started with judge {state.get('judge')} "
                             f"and embedder {state.get('embedder')}, not {judge.fingerprint} / "
                             f"{embedder.fingerprint}; use another --out")
        elif state.get("items_sha256") != items_digest(self.items):
            self.echo(f"warning: {self.out_dir / STATE_FILE}: the eval set changed since this batch run started; "
                      "batches already submitted are reused where their requests are still needed")
        self.state = state
        self.submitted_this_process = 0

    # -- public ----------------------------------------------------------------------------
    def run(self) -> tuple[list[ItemScore], dict]:
        """Run every stage, then the final cache-only pass; returns ``(records, summary)``.

        Raises ``BatchError`` when the Batch API keeps failing (after retries) or the state does
        not fit; the state is saved, so the same command resumes.
        """
        try:
            run_sync(self._stages())
        except JudgeError as exc:
            raise BatchError(f"{exc}; the state is saved in {self.out_dir / STATE_FILE}: "
                             "re-run the same command to resume") from exc
        return self.final_pass()

    async def _api(self, what: str, call: Callable[[], Any]):
        """One Batch/Files API call with the judge's retry policy (429, 5xx, timeouts, drops)."""
        return await with_retries(call, what=f"{what} ({self.judge.host})", max_retries=self.judge.config.max_retries,
                                  base_delay=self.bopts.retry_base_delay, max_delay=60.0)

    def final_pass(self) -> tuple[list[ItemScore], dict]:
        """Score from the cache alone (no calls); given-up requests become recorded errors."""
        failed = self.state.get("failed", {})
        judge = CacheOnlyJudge(self.judge.config, client=self.judge.client, cache=self.cache,
                               logprobs=self.judge.logprobs, mode="final", failures=failed)
        embedder = CacheOnlyEmbedder(self.embedder.config, self.embedder.client, cache=self.cache,
                                     mode="final", failures=failed)
        records, summary = run_scoring(self.items, judge, embedder, self.options, progress=self.bopts.progress)
        batches = [b for s in self.state["stages"] for b in s["batches"]]
        summary["judge"].update(calls=sum(b.get("requests", 0) for b in batches if b.get("batch_id")),
                                prompt_tokens=sum(b.get("prompt_tokens", 0) for b in batches),
                                completion_tokens=sum(b.get("completion_tokens", 0) for b in batches))
        return records, summary

    # -- stages ----------------------------------------------------------------------------
    def _save(self) -> None:
        save_state(self.out_dir, self.state)

    async def _stages(self) -> None:
        self._save()
        for _ in range(MAX_STAGES):
            await collect_pass(self.items, self.judge, self.embedder, self.options)
            failed = self.state["failed"]
            chat = [r for k, r in self.judge.pending.items() if k not in failed]
            embed = [r for k, r in self.embedder.pending.items() if k not in failed]
            if chat:
                await self._run_stage(chat, CHAT_ENDPOINT)
            elif embed:
                await self._run_stage(embed, EMBEDDINGS_ENDPOINT)
            else:
                return
        raise BatchError(f"more than {MAX_STAGES} stages: requests keep missing from the cache after their batches")

    def _open_stage(self, requests: Sequence[PendingRequest], endpoint: str) -> dict:
        stages = self.state["stages"]
        if stages and not stages[-1]["done"] and stages[-1]["endpoint"] == endpoint:
            return stages[-1]
        for stage in stages:  # an unfinished stage of another kind is abandoned (its keys are re-collected)
            stage["done"] = True
        stage = {"stage": len(stages) + 1, "name": stage_name(requests, endpoint), "endpoint": endpoint,
                 "requests": len(requests), "estimated_tokens": sum(r.estimated_tokens for r in requests),
                 "done": False, "batches": [], "errors": {}}
        stages.append(stage)
        unit = "texts" if endpoint == EMBEDDINGS_ENDPOINT else "requests"
        self.echo(f"batch stage {stage['stage']} ({stage['name']}): {stage['requests']} {unit}, "
                  f"~{stage['estimated_tokens']} prompt tokens")
        return stage

    def _missing(self, requests: Mapping[str, PendingRequest]) -> dict[str, PendingRequest]:
        return {k: r for k, r in requests.items() if self.cache.get_entry(k) is None}

    async def _run_stage(self, requests: Sequence[PendingRequest], endpoint: str) -> None:
        todo = {r.key: r for r in requests}
        stage = self._open_stage(requests, endpoint)
        while True:
            rounds = [b["round"] for b in stage["batches"]]
            current = [b for b in stage["batches"] if rounds and b["round"] == max(rounds)]
            if current and not all(b.get("ingested") for b in current):
                await self._finish_round(stage, current, todo)
                continue
            remaining = self._missing(todo)
            if not remaining:
                break
            next_round = max(rounds) + 1 if rounds else 0
            if next_round >= self.bopts.max_rounds:
                for key in remaining:
                    message = stage["errors"].get(key) or "no result in the batch output"
                    self.state["failed"][key] = f"batch request failed after {next_round} submissions: {message}"
                self.echo(f"batch stage {stage['stage']}: gave up on {len(remaining)} requests after "
                          f"{next_round} submissions (recorded on their items)")
                break
            self._write_round(stage, next_round, list(remaining.values()))
        stage["done"] = True
        self._save()

    def _write_round(self, stage: dict, round_: int, requests: list[PendingRequest]) -> None:
        parts = build_lines(requests, endpoint=stage["endpoint"], stage=stage["stage"], round_=round_,
                            judge=self.judge, embedder=self.embedder, options=self.bopts,
                            unsupported=self.state["unsupported"])
        for n, part in enumerate(parts):
            name = f"s{stage['stage']}-r{round_}-p{n}"
            input_path, keys_path = write_part(self.out_dir / "batch", name, part)
            stage["batches"].append({
                "round": round_, "part": n, "input_path": str(input_path.relative_to(self.out_dir)),
                "keys_path": str(keys_path.relative_to(self.out_dir)), "requests": len(part),
                "inputs": sum(len(keys) for _, keys in part), "status": "written", "ingested": False})
        if round_:
            self.echo(f"batch stage {stage['stage']}: retrying {len(requests)} failed requests (round {round_ + 1})")
        self._save()

    # -- one round: upload, submit, poll, ingest ---------------------------------------------
    async def _finish_round(self, stage: dict, records: list[dict], todo: Mapping[str, PendingRequest]) -> None:
        client = client_for_running_loop(self.judge.client)
        for record in records:
            if record.get("ingested"):
                continue
            if not record.get("input_file_id"):
                path = self.out_dir / record["input_path"]
                data = path.read_bytes()
                uploaded = await self._api("upload " + path.name, lambda path=path, data=data: client.files.create(
                    file=(path.name, data), purpose="batch"))
                record["input_file_id"] = uploaded.id
                record["status"] = "uploaded"
                self._save()
            if not record.get("batch_id"):
                found = await self._find_existing(client, record["input_file_id"])
                batch = found or await self._api("create batch", lambda record=record: client.batches.create(
                    input_file_id=record["input_file_id"], endpoint=stage["endpoint"],
                    completion_window=self.bopts.completion_window,
                    metadata={"workbench": f"stage {stage['stage']} round {record['round']} part {record['part']}"}))
                record.update(batch_id=batch.id, status=batch.status, submitted=time.time())
                if not found:
                    self.submitted_this_process += 1
                self._save()
        await self._poll(stage, records)
        for record in records:
            if not record.get("ingested"):
                await self._ingest(client, stage, record, todo)
                record["ingested"] = True
                self._save()

    async def _find_existing(self, client, input_file_id: str):
        """A batch already created for ``input_file_id`` (a crash between create and saving the
        state must not submit twice); ``None`` if none or the endpoint cannot list batches."""
        try:
            page = await client.batches.list(limit=100)
        except Exception:  # noqa: BLE001 - listing is optional on OpenAI-compatible servers
            return None
        return next((b for b in page.data if b.input_file_id == input_file_id), None)

    async def _poll(self, stage: dict, records: list[dict]) -> None:
        from tqdm import tqdm

        client = client_for_running_loop(self.judge.client)
        live = [r for r in records if r.get("status") not in TERMINAL]
        total = sum(r["requests"] for r in records)
        bar = tqdm(total=total, desc=f"batch stage {stage['stage']} ({stage['name']})", unit="req",
                   file=sys.stderr, disable=not self.bopts.progress)
        started = time.monotonic()
        try:
            while True:
                for record in live:
                    batch = await self._api(f"retrieve batch {record['batch_id']}",
                                            lambda record=record: client.batches.retrieve(record["batch_id"]))
                    counts = batch.request_counts
                    record.update(status=batch.status, output_file_id=batch.output_file_id,
                                  error_file_id=batch.error_file_id,
                                  request_counts={"total": getattr(counts, "total", 0) or 0,
                                                  "completed": getattr(counts, "completed", 0) or 0,
                                                  "failed": getattr(counts, "failed", 0) or 0})
                    if batch.status == "failed" and batch.errors is not None:
                        record["errors"] = [getattr(e, "message", str(e)) for e in (batch.errors.data or [])][:5]
                live = [r for r in live if r["status"] not in TERMINAL]
                done = sum(r.get("request_counts", {}).get("completed", 0) + r.get("request_counts", {}).get("failed", 0)
                           if r["status"] not in TERMINAL else r["requests"] for r in records)
                bar.n = min(done, total)
                bar.set_postfix_str(", ".join(sorted({r["status"] for r in records}))
                                    + _eta_text(done, total, time.monotonic() - started))
                bar.refresh()
                self._save()
                if self.bopts.on_poll is not None:
                    self.bopts.on_poll(records)
                if not live:
                    return
                await asyncio.sleep(self.bopts.poll_interval)
        finally:
            bar.close()

    async def _ingest(self, client, stage: dict, record: dict, todo: Mapping[str, PendingRequest]) -> None:
        """Download output and error files; cache every parsed reply; note why others failed."""
        keys_by_id: dict[str, list[str]] = json.loads((self.out_dir / record["keys_path"]).read_text(encoding="utf-8"))
        answered: set[str] = set()
        errors: dict[str, str] = {}
        record.setdefault("prompt_tokens", 0)
        record.setdefault("completion_tokens", 0)
        for file_id in (record.get("output_file_id"), record.get("error_file_id")):
            if not file_id:
                continue
            content = await self._api(f"download {file_id}", lambda file_id=file_id: client.files.content(file_id))
            for raw in content.text.splitlines():
                if not raw.strip():
                    continue
                try:
                    line = json.loads(raw)
                    custom_id = line["custom_id"]
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue  # a line we cannot attribute; its keys count as failed below
                keys = keys_by_id.get(custom_id)
                if keys is None:
                    continue
                answered.add(custom_id)
                problem = self._ingest_line(stage["endpoint"], line, keys, todo, record)
                if problem:
                    errors.update((k, problem) for k in keys)
        batch_level = "; ".join(record.get("errors") or []) or f"batch ended {record.get('status')}"
        for custom_id, keys in keys_by_id.items():
            if custom_id not in answered:
                errors.update((k, f"no result line ({batch_level})") for k in keys)
        for keys in keys_by_id.values():
            for key in keys:
                stage["errors"].pop(key, None)
        stage["errors"].update(errors)
        record["succeeded"] = sum(len(k) for k in keys_by_id.values()) - len(errors)
        record["failed"] = len(errors)

    def _ingest_line(self, endpoint: str, line: dict, keys: list[str], todo: Mapping[str, PendingRequest],
                     record: dict) -> str | None:
        """Cache one output line; returns why it failed, or ``None``."""
        error = line.get("error")
        response = line.get("response") or {}
        body = response.get("body") if isinstance(response, dict) else None
        status = response.get("status_code") if isinstance(response, dict) else None
        if error or status != 200 or not isinstance(body, dict):
            message = (error or {}).get("message") if isinstance(error, dict) else None
            if not message and isinstance(body, dict) and isinstance(body.get("error"), dict):
                message = body["error"].get("message")
            message = message or f"status {status}"
            self._note_unsupported(status, message)
            code = (error or {}).get("code") if isinstance(error, dict) else None
            return f"{code or f'HTTP {status}'}: {' '.join(str(message).split())[:200]}"
        usage = body.get("usage") or {}
        record["prompt_tokens"] += int(usage.get("prompt_tokens") or 0)
        record["completion_tokens"] += int(usage.get("completion_tokens") or 0)
        if endpoint == EMBEDDINGS_ENDPOINT:
            data = sorted(body.get("data") or [], key=lambda d: d.get("index", 0))
            if len(data) != len(keys):
                return f"embeddings: sent {len(keys)} texts, got {len(data)} vectors"
            for key, row in zip(keys, data):
                self.cache.put(key, json_dumps_vector(row["embedding"]))
            return None
        request = todo.get(keys[0])
        if request is None:
            return None  # no longer needed by this run (e.g. cached meanwhile)
        return self._cache_chat(request, body)

    def _cache_chat(self, request: PendingRequest, body: dict) -> str | None:
        from openai.types.chat import ChatCompletion

        try:
            completion = ChatCompletion.model_validate(body)
        except Exception as exc:  # noqa: BLE001 - a malformed body is a failed line
            return f"malformed chat completion: {type(exc).__name__}"
        if not completion.choices:
            return "reply has no choices"
        choice = completion.choices[0]
        content = choice.message.content or ""
        try:
            if request.parse is not None:
                request.parse(content)
        except ParseError as exc:
            return f"unparseable reply: {exc}"
        usage = completion.usage
        meta: dict[str, Any] = {"prompt_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
                                "completion_tokens": int(getattr(usage, "completion_tokens", 0) or 0)}
        if request.logprobs:
            meta["p_true"] = p_true_from_logprobs(getattr(choice, "logprobs", None), key=request.logprob_key)
        self.cache.put(request.key, content, meta)
        return None

    def _note_unsupported(self, status: int | None, message: str) -> None:
        """A 400 naming response_format / logprobs: later rounds leave that parameter out
        (as the interactive judge does after such a 400)."""
        if status != 400:
            return
        lowered = message.lower()
        for param in ("response_format", "logprobs"):
            if param in lowered and param not in self.state["unsupported"]:
                self.state["unsupported"].append(param)
                self.echo(f"warning: endpoint rejected {param}; retrying without it")


def _eta_text(done: int, total: int, elapsed: float) -> str:
    if done <= 0 or done >= total or elapsed <= 0:
        return ""
    remaining = elapsed * (total - done) / done
    return f", ETA {time.strftime('%H:%M:%S', time.gmtime(remaining))}"


# -- one entry point for the CLI and scripts ------------------------------------------------------
def build_batch_judges(config, *, client=None, cache=None) -> tuple[CacheOnlyJudge, CacheOnlyEmbedder]:
    """A collecting judge + embedder for ``config`` (sharing one client and one cache)."""
    judge = CacheOnlyJudge(config, client=client, cache=cache)
    embedder = CacheOnlyEmbedder(config, judge.client, cache=judge.cache)
    return judge, embedder


def run_batch_scoring(items: Sequence[EvalItem], judge: CacheOnlyJudge, embedder: CacheOnlyEmbedder,
                      options: ScoreOptions, out_dir: Path, batch_options: BatchOptions | None = None,
                      *, echo: Callable[[str], None] | None = None) -> tuple[list[ItemScore], dict]:
    """Score ``items`` through the Batch API into ``out_dir`` (resumable); returns ``(records, summary)``.

    The caller writes ``items.jsonl`` / ``summary.json`` (``workbench.scoring.pipeline.write_outputs``).
    """
    return BatchRun(items, judge, embedder, options, out_dir, batch_options, echo=echo).run()
