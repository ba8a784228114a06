"""Paths, judge configuration and thresholds files.

Environment: ``WORKBENCH_HOME`` (project root for relative defaults), ``WORKBENCH_DB`` (label
store), ``WORKBENCH_JUDGE`` (``offline`` | ``openai``), ``WORKBENCH_MODEL``,
``WORKBENCH_EMBEDDING_MODEL``, ``WORKBENCH_TIMEOUT`` (seconds per judge call); the OpenAI client reads ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``
itself. API keys are never stored in a ``JudgeConfig``.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from workbench.jsonl import read_json_object
from workbench.types import Thresholds

DEFAULT_THRESHOLDS = Thresholds()


def home() -> Path:
    """Root folder for relative defaults (``WORKBENCH_HOME`` or the current directory)."""
    return Path(os.environ.get("WORKBENCH_HOME", ".")).expanduser()


def default_db_path() -> Path:
    """The label database: ``WORKBENCH_DB`` or ``<home>/labels/workbench.db``."""
    env = os.environ.get("WORKBENCH_DB")
    return Path(env).expanduser() if env else home() / "labels" / "workbench.db"


def default_cache_path() -> Path:
    """The judge call cache: ``WORKBENCH_CACHE`` or ``<home>/.workbench/cache.db``."""
    env = os.environ.get("WORKBENCH_CACHE")
    return Path(env).expanduser() if env else home() / ".workbench" / "cache.db"


@dataclass(frozen=True)
class JudgeConfig:
    """Which judge to build. ``backend`` is ``offline`` or ``openai``; ``None`` fields use env/defaults."""

    backend: str = "offline"
    model: str | None = None
    embedding_model: str | None = None
    base_url: str | None = None
    concurrency: int | None = None  # None = adaptive
    use_cache: bool = True
    cache_path: Path | None = None
    timeout: float = 60.0
    max_retries: int = 4
    temperature: float = 0.0
    seed: int | None = None
    verify_mode: str = "per-claim"

    @staticmethod
    def from_env(**overrides) -> JudgeConfig:
        """Build from ``WORKBENCH_*`` variables; explicit non-``None`` overrides win."""
        values = {
            "backend": os.environ.get("WORKBENCH_JUDGE", "offline"),
            "model": os.environ.get("WORKBENCH_MODEL"),
            "embedding_model": os.environ.get("WORKBENCH_EMBEDDING_MODEL"),
            "base_url": os.environ.get("OPENAI_BASE_URL"),
        }
        if os.environ.get("WORKBENCH_TIMEOUT"):  # seconds per judge call (slow local servers)
            values["timeout"] = float(os.environ["WORKBENCH_TIMEOUT"])
        values.update({k: v for k, v in overrides.items() if v is not None})
        return JudgeConfig(**values)


class ThresholdsError(ValueError):
    """A thresholds file that cannot be read."""


def load_thresholds(path: str | Path | None) -> Thresholds:
    """Read ``thresholds.json`` written by ``calibrate``; defaults (0.85 / 0.70) when ``path`` is None.

    A task missing from the file keeps its default threshold.
    """
    if path is None:
        return DEFAULT_THRESHOLDS
    path = Path(path)
    try:
        _, data = read_json_object(path)
    except FileNotFoundError:
        raise ThresholdsError(f"{path}: thresholds file not found") from None
    except ValueError as exc:  # not JSON, or JSON that is not an object (a list has no tasks)
        raise ThresholdsError(str(exc)) from None

    def pick(key: str, default: float | None) -> float | None:  # a float whenever default is
        entry = data.get(key)
        if entry is None:
            return default
        value = entry.get("threshold") if isinstance(entry, dict) else entry
        if value is None:
            return default
        if not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise ThresholdsError(f"{path}: field {key}.threshold: expected a number in [0, 1], got {value!r}")
        return float(value)

    return Thresholds(
        faithfulness=pick("faithfulness", DEFAULT_THRESHOLDS.faithfulness) or 0.0,
        answer_relevance=pick("answer_relevance", DEFAULT_THRESHOLDS.answer_relevance) or 0.0,
        claim_support=pick("claim_support", None),
        source=str(path),
        judge=data.get("judge"),
    )


def save_thresholds(payload: dict, path: str | Path) -> Path:
    """Write a thresholds payload (the ``thresholds.json`` contract) atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path
