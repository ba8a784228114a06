"""Build the judge and embedder a run asks for (the only place that picks a backend)."""
from __future__ import annotations

from workbench.config import JudgeConfig
from workbench.judges.base import Embedder, Judge

EMBEDDERS = ("auto", "offline", "openai")


def build_judge(config: JudgeConfig, *, embedder: str = "auto") -> tuple[Judge, Embedder]:
    """Return ``(judge, embedder)`` for ``config.backend`` (``offline`` or ``openai``).

    ``embedder``: ``auto`` = the judge's own backend; ``offline`` = the bundled embeddings (an
    LLM judge on an endpoint without ``/v1/embeddings``); ``openai`` = the endpoint's embeddings.
    Raises ``ValueError`` for an unknown backend or embedder.
    """
    if embedder not in EMBEDDERS:
        raise ValueError(f"unknown embedder {embedder!r}: expected one of {', '.join(EMBEDDERS)}")
    wanted = config.backend if embedder == "auto" else embedder
    if config.backend == "offline":
        from workbench.judges.offline import OfflineEmbedder, OfflineJudge

        offline = OfflineEmbedder()
        judge: Judge = OfflineJudge(embedder=offline)
        if wanted == "offline":
            return judge, offline
        from workbench.judges.openai_compat import OpenAICompatEmbedder

        return judge, OpenAICompatEmbedder(config)
    if config.backend == "openai":
        from workbench.judges.openai_compat import OpenAICompatEmbedder, OpenAICompatJudge

        judge = OpenAICompatJudge(config)
        if wanted == "offline":
            from workbench.judges.offline import OfflineEmbedder

            return judge, OfflineEmbedder()
        # one endpoint: one connection pool, one cache, one in-flight budget (429s back off both)
        # (the client is built on first use: a run answered from the cache never imports openai)
        shared = OpenAICompatEmbedder(config, client=lambda: judge.client, cache=judge.cache, limiter=judge.limiter)
        shared.after_gate = judge._gate  # a wrong URL or key is found (and reported) by the judge's first call
        return judge, shared
    raise ValueError(f"unknown judge backend {config.backend!r}: expected 'offline' or 'openai'")
