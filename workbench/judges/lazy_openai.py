"""The ``openai`` package, imported on first attribute use.

Importing ``openai`` costs about a second of CPU (it builds hundreds of pydantic models); a run
answered entirely from the judge cache never touches the client, so it should not pay for it.
``from workbench.judges.lazy_openai import openai`` gives an object whose attributes are the
package's (``openai.AsyncOpenAI``, ``openai.RateLimitError``, ...), importing it on first access.

The import makes about 70,000 objects that live as long as the process (classes, schemas,
functions): the cycle collector is paused while it runs (collections in the middle of it find
nothing to free), and in a ``workbench`` process of its own (``FREEZE_AFTER_IMPORT``, set by the
command line) everything alive after it is frozen (``gc.freeze``), so later full collections and
the collection at exit do not walk it again.
"""
from __future__ import annotations

import gc
import importlib
import sys
from typing import Any

#: Set by the ``workbench`` command (``workbench.cli``) in its own process: freeze after the import.
#: Left off in a process that lives on (the app, a test run), where frozen objects are never freed.
FREEZE_AFTER_IMPORT = False


def import_openai() -> Any:
    """``import openai`` with the cycle collector paused (restored as it was), then ``gc.freeze()``
    when ``FREEZE_AFTER_IMPORT`` is set. Returns the module (at once when it is imported already)."""
    if "openai" in sys.modules:  # (import_module still waits for another thread's import to finish)
        return importlib.import_module("openai")
    enabled = gc.isenabled()
    gc.disable()
    try:
        module = importlib.import_module("openai")
    finally:
        if enabled:
            gc.enable()
    if FREEZE_AFTER_IMPORT:
        gc.freeze()
    return module


class _LazyOpenAI:
    """Stands in for the ``openai`` module until an attribute is needed (then caches it)."""

    def __getattr__(self, name: str) -> Any:
        value = getattr(import_openai(), name)
        setattr(self, name, value)
        return value


openai: Any = _LazyOpenAI()
