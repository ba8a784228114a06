"""Build the judge and embedder a run asks for (the only place that picks a backend)."""
from __future__ import annotations

from workbench.config import JudgeConfig
from workbench.judges.base import Embedder, Judge


def build_judge(config: JudgeConfig) -> tuple[Judge, Embedder]:
    """Return ``(judge, embedder)`` for ``config.backend`` (``offline`` or ``openai``).

    Raises ``ValueError`` for an unknown backend.
    """
    if config.backend == "offline":
        from workbench.judges.offline import OfflineEmbedder, OfflineJudge

        embedder = OfflineEmbedder()
        return OfflineJudge(embedder=embedder), embedder
    if config.backend == "openai":
        from workbench.judges.openai_compat import OpenAICompatEmbedder, OpenAICompatJudge

        judge = OpenAICompatJudge(config)
        # one endpoint: one connection pool, one cache, one in-flight budget (429s back off both)
        # (the client is built on first use: a run answered from the cache never imports openai)
        return judge, OpenAICompatEmbedder(config, client=lambda: judge.client, cache=judge.cache,
                                           limiter=judge.limiter)
    raise ValueError(f"unknown judge backend {config.backend!r}: expected 'offline' or 'openai'")
