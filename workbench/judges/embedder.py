"""The bundled offline embedder: wordllama's static word embeddings (l2_supercat, 256 dims),
loaded once per process from the installed ``wordllama`` package, never from the network.
Used by the offline judge (answer relevance) and the refusal detector.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from workbench.judges.base import fingerprint as make_fingerprint

WORDLLAMA_MODEL = "wordllama-l2_supercat-256"


WORDLLAMA_DIM = 256


_WORDLLAMA: Any = None


_WORDLLAMA_LOCK = threading.Lock()


def load_wordllama() -> Any:
    """The bundled wordllama model, loaded once per process (thread-safe), never from the network."""
    global _WORDLLAMA
    if _WORDLLAMA is None:
        with _WORDLLAMA_LOCK:
            if _WORDLLAMA is None:
                # wordllama calls logging.basicConfig(level=INFO) on import, which would make every
                # library (httpx's per-request lines included) log at INFO: put the root logger back.
                root = logging.getLogger()
                level, handlers = root.level, list(root.handlers)
                import wordllama
                from wordllama import WordLlama

                root.setLevel(level)
                root.handlers[:] = handlers
                _WORDLLAMA = WordLlama.load(dim=WORDLLAMA_DIM, cache_dir=Path(wordllama.__file__).parent,
                                            disable_download=True)
    return _WORDLLAMA


class OfflineEmbedder:
    """Bundled static word embeddings (``wordllama`` l2_supercat, 256 dims); deterministic, no network.

    ``embed(texts)`` returns a float array of shape ``(len(texts), 256)`` (not normalised); an
    empty list gives shape ``(0, 256)``.
    """

    def __init__(self) -> None:
        self.fingerprint = make_fingerprint({"backend": "offline", "model": WORDLLAMA_MODEL, "dim": WORDLLAMA_DIM})

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_sync(texts)

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        """Synchronous :meth:`embed` (the model is local and fast)."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, WORDLLAMA_DIM), dtype=float)
        return np.asarray(load_wordllama().embed(texts), dtype=float).reshape(len(texts), WORDLLAMA_DIM)
