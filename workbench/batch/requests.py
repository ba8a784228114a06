"""Batch request files for ``score --batch``: the collecting pass, input JSONL lines, the dry run.

See :mod:`workbench.batch.runner` for the whole flow. ``build_lines`` turns recorded requests
(:class:`~workbench.batch.judge.PendingRequest`) into batch input lines, split into parts within a
provider's per-batch limits; ``batch_dry_run`` writes the first stage and estimates the others.
"""
from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from workbench.batch.judge import CURRENT_ITEM, CacheOnlyEmbedder, CacheOnlyJudge, PendingRequest
from workbench.judges.base import run_sync
from workbench.judges.openai_compat import RESPONSE_FORMATS, TOP_LOGPROBS, max_tokens_for, response_format_body
from workbench.scoring.pipeline import ScoreOptions, score_item
from workbench.types import EvalItem

CHAT_ENDPOINT = "/v1/chat/completions"
EMBEDDINGS_ENDPOINT = "/v1/embeddings"


@dataclass(frozen=True)
class BatchOptions:
    """Knobs of a batch run (none of them change a verdict).

    Attributes:
        poll_interval: seconds between status polls.
        max_rounds: submissions per request in all (first + retries of failed / expired lines).
        max_inputs_per_batch: lines (chat) or texts (embeddings) per batch; OpenAI's limit is 50,000.
        max_bytes_per_batch: input file size per batch; OpenAI's limit is 200 MB.
        texts_per_embedding_line: texts in one ``/v1/embeddings`` request line.
        completion_window: the Batch API's window (OpenAI accepts ``24h``).
        progress: show a tqdm bar while polling.
        on_poll: called with the list of batch records after each poll (tests stop a run here).
        retry_base_delay: first backoff (seconds) when a Files/Batches call fails transiently.
    """

    poll_interval: float = 30.0
    max_rounds: int = 3
    max_inputs_per_batch: int = 50_000
    max_bytes_per_batch: int = 190_000_000
    texts_per_embedding_line: int = 256
    completion_window: Literal["24h"] = "24h"
    progress: bool = True
    on_poll: Callable[[list[dict]], None] | None = None
    retry_base_delay: float = 1.0


# -- request files -------------------------------------------------------------------------------
def chat_body(request: PendingRequest, judge: CacheOnlyJudge, unsupported: Sequence[str] = ()) -> dict:
    """The ``/v1/chat/completions`` body the interactive judge would send for ``request``."""
    body: dict[str, Any] = {"model": judge.model, "messages": [{"role": "user", "content": request.text}],
                            "temperature": judge.config.temperature}
    if judge.config.seed is not None:
        body["seed"] = judge.config.seed
    body["max_tokens"] = max_tokens_for(request.task)  # as interactive calls (part of the cache key)
    if request.json_mode and "response_format" not in unsupported:
        response_format = response_format_body(judge.response_format or RESPONSE_FORMATS[0], request.task)
        if response_format is not None:
            body["response_format"] = response_format
    if request.logprobs and "logprobs" not in unsupported:
        body.update(logprobs=True, top_logprobs=TOP_LOGPROBS)
    return body


def build_lines(requests: Sequence[PendingRequest], *, endpoint: str, stage: int, round_: int,
                judge: CacheOnlyJudge, embedder: CacheOnlyEmbedder, options: BatchOptions,
                unsupported: Sequence[str] = ()) -> list[list[tuple[dict, list[str]]]]:
    """Batch input lines split into parts within the per-batch limits.

    Returns parts; each part is a list of ``(line, cache keys answered by the line)``.
    """
    units: list[tuple[dict, list[str], int]] = []  # (line, keys, inputs)
    if endpoint == CHAT_ENDPOINT:
        for r in requests:
            custom_id = f"s{stage}-r{round_}:{r.item_id}:{r.task}:{r.index}:{r.key[:8]}"
            line = {"custom_id": custom_id, "method": "POST", "url": CHAT_ENDPOINT,
                    "body": chat_body(r, judge, unsupported)}
            units.append((line, [r.key], 1))
    else:
        size = max(1, min(options.texts_per_embedding_line, 2048))
        for n, start in enumerate(range(0, len(requests), size)):
            chunk = requests[start : start + size]
            line = {"custom_id": f"s{stage}-r{round_}:embeddings:{n}", "method": "POST", "url": EMBEDDINGS_ENDPOINT,
                    "body": {"model": embedder.model, "input": [r.text for r in chunk]}}
            units.append((line, [r.key for r in chunk], len(chunk)))
    parts: list[list[tuple[dict, list[str]]]] = []
    current: list[tuple[dict, list[str]]] = []
    inputs = size_bytes = 0
    for line, keys, n_inputs in units:
        line_bytes = len(json.dumps(line, ensure_ascii=False).encode()) + 1
        if current and (inputs + n_inputs > options.max_inputs_per_batch
                        or size_bytes + line_bytes > options.max_bytes_per_batch):
            parts.append(current)
            current, inputs, size_bytes = [], 0, 0
        current.append((line, keys))
        inputs += n_inputs
        size_bytes += line_bytes
    if current:
        parts.append(current)
    return parts


def write_part(directory: Path, name: str, part: Sequence[tuple[dict, list[str]]]) -> tuple[Path, Path]:
    """Write ``<name>.input.jsonl`` (the upload) and ``<name>.keys.json`` (custom_id -> cache keys)."""
    directory.mkdir(parents=True, exist_ok=True)
    input_path, keys_path = directory / f"{name}.input.jsonl", directory / f"{name}.keys.json"
    with input_path.open("w", encoding="utf-8") as fh:
        for line, _ in part:
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")
    keys_path.write_text(json.dumps({line["custom_id"]: keys for line, keys in part}), encoding="utf-8")
    return input_path, keys_path


def stage_name(requests: Sequence[PendingRequest], endpoint: str) -> str:
    if endpoint == EMBEDDINGS_ENDPOINT:
        return "embeddings"
    order = ["decompose", "verify", "reverse_questions", "refusal", "context_relevance"]
    tasks = {r.task for r in requests}
    return "+".join(sorted(tasks, key=lambda t: (order.index(t) if t in order else len(order), t)))


# -- collecting passes ---------------------------------------------------------------------------
async def collect_pass(items: Sequence[EvalItem], judge: CacheOnlyJudge, embedder: CacheOnlyEmbedder,
                       options: ScoreOptions) -> None:
    """Run the pipeline once over ``items`` to fill ``judge.pending`` / ``embedder.pending``.

    The records are thrown away; each item's requests are named by its id (``CURRENT_ITEM``).
    """
    judge.recorder.reset()
    embedder.recorder.reset()
    gate = asyncio.Semaphore(max(1, options.items_in_flight))

    async def one(item: EvalItem) -> None:
        async with gate:
            CURRENT_ITEM.set(item.id)
            try:
                await score_item(item, judge, embedder, options)
            except Exception:  # noqa: BLE001 - a failing item is recorded by the final pass, not here
                pass

    await asyncio.gather(*(one(item) for item in items))


# -- dry run -------------------------------------------------------------------------------------
def batch_dry_run(items: Sequence[EvalItem], judge: CacheOnlyJudge, embedder: CacheOnlyEmbedder,
                  options: ScoreOptions, out_dir: Path, batch_options: BatchOptions | None = None) -> list[dict]:
    """Write the first stage's batch files and estimate every stage, submitting nothing.

    The first stage is exact (what a real run would submit now). Later stages are estimated by a
    pass where missing replies are placeholders (claims = the answer's sentences, questions of
    about 60 characters): counts and tokens are estimates. Tokens = characters / 4.
    Returns one dict per stage: ``stage``, ``name``, ``endpoint``, ``requests``,
    ``estimated_tokens``, ``exact``, ``files``.
    """
    bopts = batch_options or BatchOptions()
    out_dir = Path(out_dir)

    async def passes():
        await collect_pass(items, judge, embedder, options)
        exact_chat, exact_embed = list(judge.pending.values()), list(embedder.pending.values())
        judge.mode = embedder.mode = "estimate"
        try:
            await collect_pass(items, judge, embedder, options)
        finally:
            judge.mode = embedder.mode = "collect"
        return exact_chat, exact_embed, list(judge.pending.values()), list(embedder.pending.values())

    exact_chat, exact_embed, all_chat, all_embed = run_sync(passes())
    stages: list[dict] = []
    first, endpoint = (exact_chat, CHAT_ENDPOINT) if exact_chat else (exact_embed, EMBEDDINGS_ENDPOINT)
    if first:
        parts = build_lines(first, endpoint=endpoint, stage=1, round_=0, judge=judge, embedder=embedder,
                            options=bopts)
        files = [str(write_part(out_dir / "batch", f"dry-run-s1-r0-p{n}", part)[0]) for n, part in enumerate(parts)]
        stages.append({"stage": 1, "name": stage_name(first, endpoint), "endpoint": endpoint, "requests": len(first),
                       "estimated_tokens": sum(r.estimated_tokens for r in first), "exact": True, "files": files})
    seen = {r.key for r in first}
    later_chat = [r for r in all_chat if r.key not in seen] if endpoint == CHAT_ENDPOINT else []
    if later_chat:
        stages.append({"stage": len(stages) + 1, "name": stage_name(later_chat, CHAT_ENDPOINT),
                       "endpoint": CHAT_ENDPOINT, "requests": len(later_chat),
                       "estimated_tokens": sum(r.estimated_tokens for r in later_chat), "exact": False, "files": []})
    later_embed = [r for r in all_embed if r.key not in seen]
    if later_embed:
        stages.append({"stage": len(stages) + 1, "name": "embeddings", "endpoint": EMBEDDINGS_ENDPOINT,
                       "requests": len(later_embed), "estimated_tokens": sum(r.estimated_tokens for r in later_embed),
                       "exact": False, "files": []})
    return stages


def format_dry_run(stages: Sequence[dict]) -> str:
    """A table of :func:`batch_dry_run` stages."""
    if not stages:
        return "nothing to submit: every request is already in the judge cache"
    lines = [f"{'stage':<6} {'requests':>9} {'est. tokens':>12}  {'kind':<9} what"]
    for s in stages:
        unit = "texts" if s["endpoint"] == EMBEDDINGS_ENDPOINT else "requests"
        lines.append(f"{s['stage']:<6} {s['requests']:>9} {s['estimated_tokens']:>12}  "
                     f"{'exact' if s['exact'] else 'estimate':<9} {s['name']} ({unit}, {s['endpoint']})")
    files = [f for s in stages for f in s["files"]]
    lines.append("tokens = prompt characters / 4; later stages depend on the first stage's replies")
    lines.extend(f"wrote {f}" for f in files)
    return "\n".join(lines)
