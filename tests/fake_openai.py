"""A loopback OpenAI-compatible HTTP server for tests and benchmarks (stdlib only).

    with FakeOpenAI(latency=0.05) as fake:
        client = openai.AsyncOpenAI(base_url=fake.base_url, api_key="sk-test", max_retries=0)
        fake.push_fault(Fault.rate_limit(retry_after=0.2))   # next request gets a 429
        ...
        fake.count("/v1/chat/completions")                 # requests seen

Routes live in ``FakeOpenAI.routes`` (``{(method, path): handler}``); a handler is
``handler(fake, request: RecordedRequest) -> Reply``. Add an endpoint by registering another
handler (``FakeOpenAI.ROUTES[("POST", "/v1/files")] = my_handler`` or ``fake.routes[...]``).

Scripting:
- ``responder(request_json) -> str | dict``: the chat reply content (a dict is JSON-encoded).
  The default (:func:`default_responder`) answers the workbench prompts deterministically.
- ``push_fault(Fault...)``: a FIFO of faults, each consumed by one request (optionally only a
  request to a given path): 429 with Retry-After, 5xx, a delay (longer than the client timeout),
  malformed content, a dropped connection.
- ``latency``: seconds added to every request; ``logprob_confidence``: when set and the request
  asks for logprobs, token logprobs are returned where each boolean token written has this
  probability (the other boolean the rest).
- ``requests``: every request received (path, JSON body, headers without Authorization, time).
- Real-server behaviours: ``max_tokens`` is honoured (a longer reply is cut there, with
  ``finish_reason: "length"``); ``response_formats`` = the ``response_format`` types accepted
  (400 naming the field for others; ``reject_response_format`` rejects all); ``slots=1`` serves
  one request at a time, each taking ``latency`` seconds (llama.cpp's default; ``max_active``
  records the most ever served at once); ``models`` = the model names served (404 otherwise);
  ``embeddings=False`` = no ``/v1/embeddings`` route (404).
- Batch API (``/v1/files``, ``/v1/batches`` create/list/retrieve/cancel): uploads are kept in ``files``; a batch answers every
  line through the same route handlers as interactive calls (so results equal interactive replies)
  and completes after ``batch_polls_to_complete`` retrieves and ``batch_seconds_to_complete``
  seconds (validating -> in_progress -> finalizing -> completed). ``batch_line_fault(line, seen)``
  may fail a line (``seen`` = earlier batch lines with the same body); ``batch_expire_after`` = N
  answers only N lines per batch and ends it ``expired`` (the rest go to the error file).

The server is tuned for concurrency: HTTP/1.1 keep-alive with Content-Length on every reply,
TCP_NODELAY, a 1024-deep accept queue and daemon threads.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHAT_PATH = "/v1/chat/completions"
EMBEDDINGS_PATH = "/v1/embeddings"


# -- scripting types ---------------------------------------------------------------------------
@dataclass
class Fault:
    """One scripted misbehaviour, consumed by the next matching request.

    kind: ``status`` (reply ``status`` with an error body, e.g. 429/500), ``delay`` (sleep
    ``seconds`` before answering normally), ``malformed`` (a normal chat reply whose content is
    ``content``), ``drop`` (close the connection without replying).
    """

    kind: str
    status: int = 500
    retry_after: float | None = None
    seconds: float = 0.0
    content: str = "Sorry, I cannot produce JSON today."
    path: str | None = None

    @staticmethod
    def rate_limit(retry_after: float | None = None, path: str | None = None) -> Fault:
        return Fault("status", status=429, retry_after=retry_after, path=path)

    @staticmethod
    def server_error(status: int = 500, path: str | None = None) -> Fault:
        return Fault("status", status=status, path=path)

    @staticmethod
    def delay(seconds: float, path: str | None = None) -> Fault:
        return Fault("delay", seconds=seconds, path=path)

    @staticmethod
    def malformed(content: str = "Sorry, I cannot produce JSON today.", path: str | None = None) -> Fault:
        return Fault("malformed", content=content, path=path)

    @staticmethod
    def drop(path: str | None = None) -> Fault:
        return Fault("drop", path=path)


@dataclass
class RecordedRequest:
    """A request as the server saw it (the Authorization header is never kept)."""

    method: str
    path: str
    body: Any
    headers: dict[str, str]
    time: float
    fault: str | None = None


@dataclass
class Reply:
    """What a route handler returns: status, JSON-able body (or bytes) and extra headers."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


def error_reply(status: int, message: str, type_: str = "invalid_request_error", **headers: str) -> Reply:
    """An OpenAI-shaped error body."""
    return Reply(status, {"error": {"message": message, "type": type_, "code": None, "param": None}}, headers)


# -- the default responder: deterministic answers to the workbench prompts ---------------------
_WORD = re.compile(r"[a-z0-9]+")
_TAG = {name: re.compile(rf"<{name}>\n?(.*?)\n?</{name}>", re.S) for name in ("answer", "claim")}
_PASSAGE = re.compile(r'<passage id="([^"]*)">\n?(.*?)\n?</passage>', re.S)
_REFUSAL_WORDS = ("i don't know", "i do not know", "cannot answer", "can't answer", "not available", "no information", "unable to")


def _content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if len(w) >= 4 or w.isdigit()]


def _last_user_text(request: dict) -> str:
    for message in reversed(request.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
            return content or ""
    return ""


def detect_task(prompt: str) -> str:
    """Which workbench prompt this is: ``verify``, ``decompose``, ``refusal``, ``context_relevance``
    or ``reverse_questions``."""
    if '{"relevant"' in prompt:
        return "context_relevance"
    if "<claims>" in prompt:
        return "verify_batch"
    if "<claim>" in prompt:
        return "verify"
    if '{"claims"' in prompt:
        return "decompose"
    if '{"refusal"' in prompt:
        return "refusal"
    return "reverse_questions"


def fake_verdict(claim: str, passages: list[tuple[str, str]]) -> dict:
    """Supported when >= 75% of the claim's content words occur in the passages; quote = best sentence."""
    words = set(_content_words(claim))
    pooled = set(_content_words(" ".join(text for _, text in passages)))
    coverage = len(words & pooled) / len(words) if words else 0.0
    supported = bool(passages) and coverage >= 0.75
    best = ("NONE", "NONE", -1)
    if supported:
        for pid, text in passages:
            for sentence in re.split(r"(?<=[.!?])\s+", text):
                overlap = len(words & set(_content_words(sentence)))
                if overlap > best[2] and sentence.strip():
                    best = (sentence.strip(), pid, overlap)
    return {
        "quote": best[0],
        "passage_id": best[1],
        "supported": supported,
        "reason": f"{coverage:.0%} of the claim's content words appear in the passages.",
    }


def default_responder(request: dict) -> str | dict:
    """Deterministic replies to the workbench prompts (see :func:`detect_task`)."""
    prompt = _last_user_text(request)
    task = detect_task(prompt)
    answers = _TAG["answer"].findall(prompt)
    answer = answers[-1] if answers else ""
    if task == "verify":
        claims = _TAG["claim"].findall(prompt)
        return fake_verdict(claims[-1] if claims else "", _PASSAGE.findall(prompt))
    if task == "decompose":
        cleaned = re.sub(r"\s*\[[^\[\]]+\]", "", answer)
        return {"claims": [s.strip() for s in re.split(r"(?<=[.!?])\s+", cleaned) if s.strip()]}
    if task == "refusal":
        return {"refusal": any(phrase in answer.lower() for phrase in _REFUSAL_WORDS)}
    if task == "verify_batch":
        block = re.search(r"<claims>\s*(.*?)\s*</claims>", prompt, re.S)
        claims = [re.sub(r"^\d+\.\s*", "", line) for line in (block.group(1).splitlines() if block else []) if line.strip()]
        passages = _PASSAGE.findall(prompt)
        return {"verdicts": [{"claim_index": i, **fake_verdict(c, passages)} for i, c in enumerate(claims)]}
    if task == "context_relevance":
        passage = re.search(r"<passage>\s*(.*?)\s*</passage>", prompt, re.S)
        question = re.search(r"Question: (.*)", prompt)
        wanted = set(_content_words(question.group(1) if question else ""))
        have = set(_content_words(passage.group(1) if passage else ""))
        return {"relevant": bool(wanted) and len(wanted & have) / len(wanted) >= 0.5, "reason": "word overlap"}
    match = re.search(r"write (\d+) different questions", prompt, re.I)
    n = int(match.group(1)) if match else 3
    words = _content_words(answer) or ["this"]
    chunks = [" ".join(words[i : i + 3]) for i in range(0, len(words), 3)][:n]
    chunks += [f"{chunks[0]} (variant {k})" for k in range(1, n - len(chunks) + 1)]
    return "\n".join(f"What about {chunk}?" for chunk in chunks)


def hashed_embedding(text: str, dim: int = 32) -> list[float]:
    """Deterministic unit vector: hashed bag of words (so shared words raise cosine similarity)."""
    vector = [0.0] * dim
    words = _WORD.findall(text.lower()) or [text]
    for word in words:
        digest = hashlib.sha256(word.encode()).digest()
        vector[digest[0] % dim] += 1.0 if digest[1] % 2 else -1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


def _tokens(text: str) -> list[str]:
    return re.findall(r"\w+|\s+|[^\w\s]", text)


def fake_logprobs(content: str, confidence: float) -> dict:
    """OpenAI-shaped ``logprobs.content`` for ``content``: every token certain except booleans,
    where the token written gets probability ``confidence`` and the other one the rest."""
    out = []
    for token in _tokens(content):
        if token in ("true", "false"):
            p_true = confidence if token == "true" else 1 - confidence
            lp_true = math.log(max(p_true, 1e-12))
            lp_false = math.log(max(1 - p_true, 1e-12))
            top = [{"token": "true", "logprob": lp_true, "bytes": None}, {"token": "false", "logprob": lp_false, "bytes": None}]
            top.sort(key=lambda t: -t["logprob"])
            chosen = lp_true if token == "true" else lp_false
            out.append({"token": token, "logprob": chosen, "bytes": None, "top_logprobs": top})
        else:
            out.append({"token": token, "logprob": 0.0, "bytes": None, "top_logprobs": [{"token": token, "logprob": 0.0, "bytes": None}]})
    return {"content": out, "refusal": None}


# -- route handlers -----------------------------------------------------------------------------
def _chat_completions(fake: FakeOpenAI, request: RecordedRequest, content: str | None = None) -> Reply:
    body = request.body if isinstance(request.body, dict) else {}
    if not body.get("model") or not isinstance(body.get("messages"), list):
        return error_reply(400, "'model' and 'messages' are required")
    if fake.models is not None and body["model"] not in fake.models:
        return error_reply(404, f"The model `{body['model']}` does not exist", "not_found_error")
    if "response_format" in body:
        kind = (body["response_format"] or {}).get("type")
        if fake.reject_response_format or kind not in fake.response_formats:
            return error_reply(400, f"response_format type {kind!r} is not supported by this model")
    if fake.reject_logprobs and body.get("logprobs"):
        return error_reply(400, "logprobs are not supported by this model")
    if content is None:
        produced = fake.responder(body)
        content = produced if isinstance(produced, str) else json.dumps(produced)
    prompt_tokens = sum(len(_WORD.findall(str(m.get("content", "")))) for m in body["messages"])
    finish_reason = "stop"
    limit = body.get("max_tokens")
    words = list(_WORD.finditer(content))
    if isinstance(limit, int) and len(words) > limit:  # one word = one token here
        content = content[: words[limit - 1].end()] if limit > 0 else ""
        finish_reason = "length"
    completion_tokens = min(len(words), limit if isinstance(limit, int) else len(words)) or 1
    with fake._lock:
        fake.finish_reasons.append(finish_reason)
    choice: dict[str, Any] = {"index": 0, "finish_reason": finish_reason, "message": {"role": "assistant", "content": content}}
    choice["logprobs"] = fake_logprobs(content, fake.logprob_confidence) if body.get("logprobs") and fake.logprob_confidence is not None else None
    with fake._lock:
        fake._serial += 1
        serial = fake._serial
    return Reply(200, {
        "id": f"chatcmpl-fake-{serial}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body["model"],
        "choices": [choice],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens},
    })


def _embeddings(fake: FakeOpenAI, request: RecordedRequest) -> Reply:
    body = request.body if isinstance(request.body, dict) else {}
    texts = body.get("input")
    if isinstance(texts, str):
        texts = [texts]
    if not body.get("model") or not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        return error_reply(400, "'model' and 'input' (string or list of strings) are required")
    data = [{"object": "embedding", "index": i, "embedding": hashed_embedding(t, fake.embedding_dim)} for i, t in enumerate(texts)]
    tokens = sum(len(_WORD.findall(t)) for t in texts)
    return Reply(200, {"object": "list", "data": data, "model": body["model"], "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})


# -- Batch API: /v1/files and /v1/batches ------------------------------------------------------------
FILES_PATH = "/v1/files"
BATCHES_PATH = "/v1/batches"
_BATCH_ENDPOINTS = (CHAT_PATH, EMBEDDINGS_PATH)


def _parse_multipart(content_type: str, raw: bytes) -> dict[str, tuple[str | None, bytes]]:
    """``{field name: (filename, bytes)}`` of a multipart/form-data body."""
    from email.parser import BytesParser
    from email.policy import default as default_policy

    message = BytesParser(policy=default_policy).parsebytes(
        f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode() + raw)
    fields: dict[str, tuple[str | None, bytes]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if name:
            fields[name] = (part.get_filename(), part.get_payload(decode=True) or b"")
    return fields


def _file_object(fake: FakeOpenAI, file_id: str) -> dict:
    meta = fake.files[file_id]
    return {"id": file_id, "object": "file", "bytes": len(meta["data"]), "created_at": meta["created_at"],
            "filename": meta["filename"], "purpose": meta["purpose"], "status": "processed"}


def _store_file(fake: FakeOpenAI, data: bytes, filename: str, purpose: str) -> str:
    with fake._lock:
        fake._serial += 1
        file_id = f"file-fake-{fake._serial}"
        fake.files[file_id] = {"data": data, "filename": filename, "purpose": purpose, "created_at": int(time.time())}
    return file_id


def _files_create(fake: FakeOpenAI, request: RecordedRequest) -> Reply:
    ctype = request.headers.get("content-type", "")
    if "multipart/form-data" not in ctype or not isinstance(request.body, (bytes, bytearray)):
        return error_reply(400, "expected a multipart/form-data upload with 'file' and 'purpose'")
    fields = _parse_multipart(ctype, bytes(request.body))
    if "file" not in fields or "purpose" not in fields:
        return error_reply(400, "'file' and 'purpose' are required")
    purpose = fields["purpose"][1].decode()
    file_id = _store_file(fake, fields["file"][1], fields["file"][0] or "upload.jsonl", purpose)
    return Reply(200, _file_object(fake, file_id))


def _file_id(path: str, suffix: str = "") -> str:
    return path[len(FILES_PATH) + 1 : len(path) - len(suffix)]


def _files_retrieve(fake: FakeOpenAI, request: RecordedRequest) -> Reply:
    file_id = _file_id(request.path)
    if file_id not in fake.files:
        return error_reply(404, f"no such file {file_id}", "not_found")
    return Reply(200, _file_object(fake, file_id))


def _files_content(fake: FakeOpenAI, request: RecordedRequest) -> Reply:
    file_id = _file_id(request.path, "/content")
    if file_id not in fake.files:
        return error_reply(404, f"no such file {file_id}", "not_found")
    return Reply(200, fake.files[file_id]["data"], {"Content-Type": "application/octet-stream"})


def _batch_line_result(fake: FakeOpenAI, batch: dict, line: dict, index: int) -> tuple[dict | None, dict | None]:
    """(output line, error line) for one input line; exactly one is not None."""
    custom_id = line.get("custom_id")
    base = {"id": f"batch_req_{batch['id']}_{index}", "custom_id": custom_id}
    if fake.batch_expire_after is not None and index >= fake.batch_expire_after:
        return None, {**base, "response": None,
                      "error": {"code": "batch_expired", "message": "This request could not be executed before the completion window expired."}}
    body = line.get("body")
    key = json.dumps(body, sort_keys=True)
    with fake._lock:
        seen = fake._batch_seen.get(key, 0)
        fake._batch_seen[key] = seen + 1
    message = fake.batch_line_fault(line, seen) if fake.batch_line_fault else None
    if message:
        return None, {**base, "response": {"status_code": 500, "request_id": f"req_{index}",
                                           "body": {"error": {"message": message, "type": "server_error"}}},
                      "error": None}
    handler = fake.ROUTES.get(("POST", line.get("url")))
    reply = handler(fake, RecordedRequest("POST", line.get("url"), body, {}, time.monotonic())) if handler else \
        error_reply(404, f"no route for {line.get('url')}")
    response = {"status_code": reply.status, "request_id": f"req_{index}", "body": reply.body}
    if reply.status != 200:
        return None, {**base, "response": response, "error": None}
    return {**base, "response": response, "error": None}, None


def _run_batch(fake: FakeOpenAI, batch: dict) -> None:
    """Answer every line of the batch's input file; write output and error files."""
    lines = [json.loads(x) for x in fake.files[batch["input_file_id"]]["data"].decode().splitlines() if x.strip()]
    outputs, errors = [], []
    for index, line in enumerate(lines):
        out, err = _batch_line_result(fake, batch, line, index)
        (outputs if out else errors).append(out or err)
    batch["request_counts"] = {"total": len(lines), "completed": len(outputs), "failed": len(errors)}
    if outputs:
        batch["output_file_id"] = _store_file(fake, "".join(json.dumps(o) + "\n" for o in outputs).encode(),
                                              f"{batch['id']}_output.jsonl", "batch_output")
    if errors:
        batch["error_file_id"] = _store_file(fake, "".join(json.dumps(e) + "\n" for e in errors).encode(),
                                             f"{batch['id']}_error.jsonl", "batch_output")
    expired = fake.batch_expire_after is not None and fake.batch_expire_after < len(lines)
    batch["status"] = "expired" if expired else "completed"
    batch["expired_at" if expired else "completed_at"] = int(time.time())


def _batches_create(fake: FakeOpenAI, request: RecordedRequest) -> Reply:
    body = request.body if isinstance(request.body, dict) else {}
    input_file_id, endpoint = body.get("input_file_id"), body.get("endpoint")
    if input_file_id not in fake.files:
        return error_reply(400, f"input_file_id {input_file_id!r} not found")
    if endpoint not in _BATCH_ENDPOINTS or body.get("completion_window") != "24h":
        return error_reply(400, f"endpoint must be one of {_BATCH_ENDPOINTS} and completion_window '24h'")
    with fake._lock:
        fake._serial += 1
        batch_id = f"batch_fake_{fake._serial}"
    now = int(time.time())
    n_lines = sum(1 for x in fake.files[input_file_id]["data"].splitlines() if x.strip())
    batch = {"id": batch_id, "object": "batch", "endpoint": endpoint, "errors": None,
             "input_file_id": input_file_id, "completion_window": "24h", "status": "validating",
             "output_file_id": None, "error_file_id": None, "created_at": now, "in_progress_at": None,
             "expires_at": now + 86400, "completed_at": None, "failed_at": None, "expired_at": None,
             "cancelling_at": None, "cancelled_at": None,
             "request_counts": {"total": n_lines, "completed": 0, "failed": 0},
             "metadata": body.get("metadata"), "_polls": 0, "_started": time.monotonic()}
    with fake._lock:
        fake.batches[batch_id] = batch
    return Reply(200, _public_batch(batch))


def _public_batch(batch: dict) -> dict:
    return {k: v for k, v in batch.items() if not k.startswith("_")}


def _batch_from_path(fake: FakeOpenAI, path: str, suffix: str = "") -> dict | None:
    return fake.batches.get(path[len(BATCHES_PATH) + 1 : len(path) - len(suffix)])


def _batches_retrieve(fake: FakeOpenAI, request: RecordedRequest) -> Reply:
    batch = _batch_from_path(fake, request.path)
    if batch is None:
        return error_reply(404, "no such batch", "not_found")
    with fake._batch_lock:
        if batch["status"] in ("validating", "in_progress", "finalizing"):
            batch["_polls"] += 1
            due = (batch["_polls"] >= fake.batch_polls_to_complete
                   and time.monotonic() - batch["_started"] >= fake.batch_seconds_to_complete)
            if due:
                _run_batch(fake, batch)
            else:
                batch["status"] = "in_progress"
                batch["in_progress_at"] = batch["in_progress_at"] or int(time.time())
                total = batch["request_counts"]["total"]
                batch["request_counts"]["completed"] = min(total, total * batch["_polls"] // max(1, fake.batch_polls_to_complete))
        elif batch["status"] == "cancelling":
            batch["status"] = "cancelled"
            batch["cancelled_at"] = int(time.time())
    return Reply(200, _public_batch(batch))


def _batches_cancel(fake: FakeOpenAI, request: RecordedRequest) -> Reply:
    batch = _batch_from_path(fake, request.path, "/cancel")
    if batch is None:
        return error_reply(404, "no such batch", "not_found")
    with fake._batch_lock:
        if batch["status"] in ("validating", "in_progress", "finalizing"):
            batch["status"] = "cancelling"
            batch["cancelling_at"] = int(time.time())
    return Reply(200, _public_batch(batch))


def _batches_list(fake: FakeOpenAI, request: RecordedRequest) -> Reply:
    with fake._batch_lock:
        data = [_public_batch(b) for b in reversed(list(fake.batches.values()))]
    return Reply(200, {"object": "list", "data": data, "first_id": data[0]["id"] if data else None,
                       "last_id": data[-1]["id"] if data else None, "has_more": False})


_PATTERN_ROUTES: list[tuple[str, re.Pattern[str], Callable[[FakeOpenAI, RecordedRequest], Reply]]] = [
    ("GET", re.compile(r"/v1/files/[^/]+"), _files_retrieve),
    ("GET", re.compile(r"/v1/files/[^/]+/content"), _files_content),
    ("GET", re.compile(r"/v1/batches/[^/]+"), _batches_retrieve),
    ("POST", re.compile(r"/v1/batches/[^/]+/cancel"), _batches_cancel),
]


# -- HTTP plumbing -------------------------------------------------------------------------------
class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # silence stderr
        pass

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        try:
            self.server.fake._handle(self, method)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True  # the client gave up (timeout); nothing to answer

    def send_reply(self, reply: Reply) -> None:
        if isinstance(reply.body, (bytes, bytearray)):
            payload = bytes(reply.body)
            ctype = reply.headers.pop("Content-Type", "application/octet-stream")
        else:
            payload = json.dumps(reply.body).encode()
            ctype = "application/json"
        self.send_response(reply.status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 1024
    fake: FakeOpenAI


class FakeOpenAI:
    """The fake endpoint. Start with ``start()`` (or ``with``), stop with ``stop()``.

    Attributes:
        base_url: ``http://127.0.0.1:<port>/v1`` once started.
        responder: ``request_json -> content`` for chat completions.
        latency: seconds every request waits before replying.
        logprob_confidence: probability of each boolean token written; ``None`` = no logprobs.
        api_key: when set, requests without ``Authorization: Bearer <api_key>`` get a 401.
        reject_response_format / reject_logprobs: answer 400 to requests using them.
        response_formats: ``response_format`` types accepted (others get a 400 naming the field).
        slots: requests served at once (``None`` = unbounded); ``max_active`` = most seen.
        models: model names served (``None`` = any); others get a 404.
        embeddings: ``False`` removes ``/v1/embeddings`` (404, like a chat-only server).
        finish_reasons: the ``finish_reason`` of every chat reply, in order.
        requests: every request received, in arrival order.
    """

    ROUTES: dict[tuple[str, str], Callable[[FakeOpenAI, RecordedRequest], Reply]] = {
        ("POST", CHAT_PATH): _chat_completions,
        ("POST", EMBEDDINGS_PATH): _embeddings,
        ("POST", FILES_PATH): _files_create,
        ("POST", BATCHES_PATH): _batches_create,
        ("GET", BATCHES_PATH): _batches_list,
    }
    # routes with an id in the path: (method, full-match regex, handler), tried after ROUTES
    PATTERN_ROUTES = _PATTERN_ROUTES

    def __init__(
        self,
        *,
        responder: Callable[[dict], str | dict] | None = None,
        latency: float = 0.0,
        logprob_confidence: float | None = None,
        api_key: str | None = None,
        embedding_dim: int = 32,
        host: str = "127.0.0.1",
        port: int = 0,
        slots: int | None = None,
        models: set[str] | None = None,
        embeddings: bool = True,
    ) -> None:
        self.responder = responder or default_responder
        self.latency = latency
        self.logprob_confidence = logprob_confidence
        self.api_key = api_key
        self.embedding_dim = embedding_dim
        self.reject_response_format = False
        self.reject_logprobs = False
        self.response_formats = {"json_schema", "json_object", "text"}
        self.models = models
        self.slots = slots
        self._slot_lock = threading.Semaphore(slots) if slots else None
        self.active = 0
        self.max_active = 0
        self.finish_reasons: list[str] = []
        self.routes = dict(self.ROUTES)
        if not embeddings:
            del self.routes[("POST", EMBEDDINGS_PATH)]
        self.pattern_routes = list(self.PATTERN_ROUTES)
        # Batch API state and knobs (see the module docstring)
        self.files: dict[str, dict] = {}
        self.batches: dict[str, dict] = {}
        self.batch_polls_to_complete = 2
        self.batch_seconds_to_complete = 0.0
        self.batch_line_fault: Callable[[dict, int], str | None] | None = None
        self.batch_expire_after: int | None = None
        self._batch_seen: dict[str, int] = {}
        self._batch_lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self.faults: deque[Fault] = deque()
        self._lock = threading.Lock()
        self._serial = 0
        self._host, self._port = host, port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # lifecycle
    def start(self) -> FakeOpenAI:
        server = _Server((self._host, self._port), _Handler)
        server.fake = self
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True, name="fake-openai")
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start() if self._server is None else self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # scripting
    def push_fault(self, *faults: Fault) -> FakeOpenAI:
        with self._lock:
            self.faults.extend(faults)
        return self

    def count(self, path: str | None = None) -> int:
        """Requests received (to ``path`` if given), faulted ones included."""
        with self._lock:
            return sum(1 for r in self.requests if path is None or r.path == path)

    def bodies(self, path: str = CHAT_PATH) -> list[Any]:
        with self._lock:
            return [r.body for r in self.requests if r.path == path]

    def reset(self) -> None:
        """Forget requests and pending faults (settings stay)."""
        with self._lock:
            self.requests.clear()
            self.faults.clear()
            self.finish_reasons.clear()

    def _take_fault(self, path: str) -> Fault | None:
        with self._lock:
            for i, fault in enumerate(self.faults):
                if fault.path is None or fault.path == path:
                    del self.faults[i]
                    return fault
        return None

    # dispatch
    def _handle(self, handler: _Handler, method: str) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        path = handler.path.split("?", 1)[0]
        ctype = handler.headers.get("Content-Type", "")
        body: Any = raw
        if "json" in ctype or (raw[:1] in (b"{", b"[")):
            try:
                body = json.loads(raw or b"null")
            except json.JSONDecodeError:
                handler.send_reply(error_reply(400, "request body is not valid JSON"))
                return
        headers = {k.lower(): v for k, v in handler.headers.items() if k.lower() != "authorization"}
        fault = self._take_fault(path)
        record = RecordedRequest(method, path, body, headers, time.monotonic(), fault.kind if fault else None)
        with self._lock:
            self.requests.append(record)
        if self._slot_lock is not None:
            with self._slot_lock:  # one at a time (per slot), like a llama.cpp server with -np 1
                with self._lock:
                    self.active += 1
                    self.max_active = max(self.max_active, self.active)
                try:
                    self._serve(handler, method, path, record, fault)
                finally:
                    with self._lock:
                        self.active -= 1
            return
        self._serve(handler, method, path, record, fault)

    def _serve(self, handler: _Handler, method: str, path: str, record: RecordedRequest, fault: Fault | None) -> None:
        if self.latency:
            time.sleep(self.latency)
        if self.api_key is not None and handler.headers.get("Authorization") != f"Bearer {self.api_key}":
            handler.send_reply(error_reply(401, "Incorrect API key provided.", "invalid_api_key"))
            return
        route = self.routes.get((method, path))
        if route is None:
            route = next((h for m, pattern, h in self.pattern_routes if m == method and pattern.fullmatch(path)), None)
        if route is None:
            handler.send_reply(error_reply(404, f"no route for {method} {path}", "not_found"))
            return
        if fault is not None:
            if fault.kind == "drop":
                handler.close_connection = True
                try:
                    handler.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return
            if fault.kind == "status":
                extra = {"Retry-After": f"{fault.retry_after:g}"} if fault.retry_after is not None else {}
                kind = "rate_limit_exceeded" if fault.status == 429 else "server_error"
                handler.send_reply(error_reply(fault.status, f"scripted {fault.status}", kind, **extra))
                return
            if fault.kind == "delay":
                time.sleep(fault.seconds)
            if fault.kind == "malformed" and path == CHAT_PATH:
                handler.send_reply(_chat_completions(self, record, content=fault.content))
                return
        handler.send_reply(route(self, record))
