"""The ``openai`` package, imported on first attribute use.

Importing ``openai`` costs about a second of CPU (it builds hundreds of pydantic models); a run
answered entirely from the judge cache never touches the client, so it should not pay for it.
``from workbench.judges.lazy_openai import openai`` gives an object whose attributes are the
package's (``openai.AsyncOpenAI``, ``openai.RateLimitError``, ...), importing it on first access.
"""
from __future__ import annotations

import importlib
from typing import Any


class _LazyOpenAI:
    """Stands in for the ``openai`` module until an attribute is needed (then caches it)."""

    def __getattr__(self, name: str) -> Any:
        value = getattr(importlib.import_module("openai"), name)
        setattr(self, name, value)
        return value


openai: Any = _LazyOpenAI()
