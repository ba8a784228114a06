"""The official ``openai`` client a judge talks through: credentials, the base URL, one connection
pool sized to the concurrency limit (its idle-connection checks answered from the socket), one
client per event loop, and the lazy ``client`` attribute of the judge and the embedder.

``OPENAI_API_KEY`` is read here and passed to the client only: never stored, logged or cached.
"""
from __future__ import annotations

import asyncio
import importlib
import os
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Union, cast, overload
from urllib.parse import urlsplit

from workbench.config import JudgeConfig
from workbench.judges.base import JudgeError

if TYPE_CHECKING:
    import openai
else:
    from workbench.judges.lazy_openai import openai  # imported on first use (a cached run never needs it)


PLACEHOLDER_KEY = "sk-no-key"


OPENAI_HOST = "api.openai.com"


class MissingCredentialsError(JudgeError):
    """No ``OPENAI_API_KEY`` and no self-hosted ``base_url`` to fall back on."""


def endpoint_host(base_url: str | None) -> str:
    """The host part of a base URL (no scheme, port, path or credentials); OpenAI's when ``None``."""
    if not base_url:
        return OPENAI_HOST
    return (urlsplit(base_url if "//" in base_url else f"//{base_url}").hostname or "").lower()


#: connections kept when concurrency is adaptive (one call, then an initial window, then growth; calls beyond this queue in the pool)
ADAPTIVE_POOL_SIZE = 64


def pool_size(config: JudgeConfig) -> int:
    """Connections the client keeps: the fixed concurrency cap, else ``ADAPTIVE_POOL_SIZE``."""
    return config.concurrency or ADAPTIVE_POOL_SIZE


def http_client(config: JudgeConfig):
    """The HTTP client under ``AsyncOpenAI``: one connection pool sized to the concurrency limit
    (the default pool keeps up to 100 idle connections, and every request scans them)."""
    client_class = openai.DefaultAsyncHttpxClient  # the SDK's own HTTP library (httpx, or its httpx2 fork)
    http = importlib.import_module(client_class.__mro__[1].__module__.split(".")[0])
    size = pool_size(config)
    client = client_class(limits=http.Limits(max_connections=size, max_keepalive_connections=size))
    pool = getattr(getattr(client, "_transport", None), "_pool", None)
    if pool is not None and hasattr(pool, "_network_backend"):  # otherwise: another httpx layout, left as is
        pool._network_backend = socket_caching_backend(pool._network_backend)
    return client


def socket_caching_backend(inner: Any) -> Any:
    """``inner`` (the ``httpcore`` network backend of the SDK's connection pool) whose streams answer
    ``is_readable`` from the socket found once at connect time.

    The pool asks every idle connection whether it has expired (is its socket readable?) each time
    a request is added or finished; ``anyio`` looks the socket up through a freshly built table of
    attributes on every question, which was the client's largest CPU cost per call with 64
    connections. The answer is the same: a zero-timeout ``poll`` of the same socket. Everything
    else is passed to ``inner`` unchanged.
    """
    import select

    httpcore = importlib.import_module(type(inner).__module__.split(".")[0])  # httpcore or its fork

    def readable(sock: Any) -> bool:
        fd = -1 if sock is None else sock.fileno()
        if fd < 0:
            return True  # no socket: as if the next read returned b""
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))

    class Stream(httpcore.AsyncNetworkStream):
        def __init__(self, stream: Any, sock: Any = None) -> None:
            self._stream = stream
            self._sock = sock if sock is not None else stream.get_extra_info("socket")

        async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return await self._stream.read(max_bytes, timeout)

        async def write(self, buffer: bytes, timeout: float | None = None) -> None:
            await self._stream.write(buffer, timeout)

        async def aclose(self) -> None:
            await self._stream.aclose()

        async def start_tls(self, ssl_context: Any, server_hostname: Any = None, timeout: Any = None) -> Any:
            return Stream(await self._stream.start_tls(ssl_context, server_hostname, timeout), self._sock)

        def get_extra_info(self, info: str) -> Any:
            if info == "is_readable" and hasattr(select, "poll"):
                return readable(self._sock)
            return self._stream.get_extra_info(info)

    class Backend(httpcore.AsyncNetworkBackend):
        async def connect_tcp(self, host: str, port: int, timeout: Any = None, local_address: Any = None,
                              socket_options: Any = None) -> Any:
            return Stream(await inner.connect_tcp(host, port, timeout=timeout, local_address=local_address,
                                                  socket_options=socket_options))

        async def connect_unix_socket(self, path: str, timeout: Any = None, socket_options: Any = None) -> Any:
            return Stream(await inner.connect_unix_socket(path, timeout=timeout, socket_options=socket_options))

        async def sleep(self, seconds: float) -> None:
            await inner.sleep(seconds)

    return Backend()


OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"


def base_url_of(config: JudgeConfig) -> str | None:
    """The endpoint ``make_client`` uses: ``config.base_url``, else ``OPENAI_BASE_URL``, else ``None`` (OpenAI)."""
    return config.base_url or os.environ.get("OPENAI_BASE_URL") or None


def make_client(config: JudgeConfig) -> openai.AsyncOpenAI:
    """An ``AsyncOpenAI`` for ``config`` with client-side retries off, the per-call timeout and a
    connection pool sized to the concurrency limit.

    Raises ``MissingCredentialsError`` when there is no key and no self-hosted base URL.
    """
    api_key = check_credentials(config)
    client = openai.AsyncOpenAI(api_key=api_key, base_url=base_url_of(config), max_retries=0, timeout=config.timeout,
                                http_client=http_client(config))
    setattr(client, "workbench_pool_size", pool_size(config))  # noqa: B010  (copies for other event loops get the same pool size)
    return client


def check_credentials(config: JudgeConfig) -> str:
    """The API key ``make_client`` would use (without importing ``openai``).

    Raises ``MissingCredentialsError`` when there is no key and no self-hosted base URL.
    """
    base_url = base_url_of(config)
    api_key = os.environ.get("OPENAI_API_KEY") or None
    if api_key is None:
        if base_url is None:
            raise MissingCredentialsError(
                "the openai judge needs OPENAI_API_KEY, or OPENAI_BASE_URL pointing at a "
                "self-hosted OpenAI-compatible server (e.g. http://127.0.0.1:8000/v1)"
            )
        if endpoint_host(base_url) == OPENAI_HOST:
            raise MissingCredentialsError(f"OPENAI_API_KEY is not set and {base_url} needs one")
        api_key = PLACEHOLDER_KEY
    return api_key


_PER_LOOP: weakref.WeakKeyDictionary[openai.AsyncOpenAI, tuple[weakref.ref, openai.AsyncOpenAI]] = weakref.WeakKeyDictionary()


def client_for_running_loop(client: openai.AsyncOpenAI) -> openai.AsyncOpenAI:
    """The client to use on the running event loop: ``client`` itself on the first loop it is used
    on, a copy with its own connection pool on any later loop.

    HTTP connections cannot cross event loops, and the sync wrapper (``run_sync``) starts a new
    loop per call. Copies keep the key, base URL and options (client retries off) and are shared
    by every judge and embedder built on the same ``client``.
    """
    loop = asyncio.get_running_loop()
    entry = _PER_LOOP.get(client)
    if entry is None:
        entry = (weakref.ref(loop), client)
        _PER_LOOP[client] = entry
    elif entry[0]() is not loop:
        size = getattr(client, "workbench_pool_size", ADAPTIVE_POOL_SIZE)
        entry = (weakref.ref(loop), client.copy(http_client=http_client(JudgeConfig(concurrency=size)), max_retries=0))
        _PER_LOOP[client] = entry
    return entry[1]


#: What a judge or embedder is given as its client: one, a function returning one (to share another
#: object's client without building it), or ``None`` (built from the config on first use).
ClientSource = Union["openai.AsyncOpenAI", Callable[[], "openai.AsyncOpenAI"], None]


class _LazyClient:
    """The ``client`` attribute of the judge and the embedder: given, or built on first use.

    ``source`` is an ``AsyncOpenAI``, a callable returning one (to share another object's client
    without building it), or ``None`` (build from the config). Credentials are checked at once.
    """

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = f"_{name}_source"

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> _LazyClient: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> openai.AsyncOpenAI: ...

    def __get__(self, obj: Any, owner: type | None = None) -> _LazyClient | openai.AsyncOpenAI:
        if obj is None:
            return self
        source: ClientSource = obj.__dict__.get(self.slot)
        if source is None:
            client = make_client(obj.config)
        elif callable(source) and not hasattr(source, "base_url"):
            client = source()
        else:
            client = cast("openai.AsyncOpenAI", source)
        obj.__dict__[self.slot] = client
        return client

    def __set__(self, obj: object, value: ClientSource) -> None:
        obj.__dict__[self.slot] = value


def _endpoint_url(client: ClientSource, config: JudgeConfig) -> str:
    """The endpoint's base URL (no trailing ``/``) of a given client (one with a ``base_url``, as
    ``_LazyClient`` tells them apart), else of the config; no client is built. Without a client,
    the credentials are checked at once (``MissingCredentialsError``)."""
    if client is not None and hasattr(client, "base_url"):
        return str(cast("openai.AsyncOpenAI", client).base_url).rstrip("/")
    if client is None:
        check_credentials(config)
    return (base_url_of(config) or OPENAI_DEFAULT_BASE_URL).rstrip("/")
