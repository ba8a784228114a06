"""Versioned prompt templates for the LLM judge, loaded with their content hash.

Templates live next to this file as ``<name>_v<version>.txt``. A template is never edited in
place once released: a change is a new version file, so the judge fingerprint (which includes
every template's sha256) changes with it and old cache entries are not reused.

Placeholders are written ``{{field}}`` and filled by :meth:`Prompt.render` in one pass, so text
substituted into a template (an answer that itself contains ``{{claim}}``) is never re-expanded.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PROMPT_DIR = Path(__file__).parent
PROMPT_NAMES: tuple[str, ...] = ("decompose", "verify", "reverse_questions", "refusal", "context_relevance",
                                 "verify_batch")
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
_VERSIONED = re.compile(r"^(?P<base>\w+?)_v(?P<version>\d+)$")


@dataclass(frozen=True)
class Prompt:
    """One template: ``name`` as loaded (``verify_v1``), its ``text`` and the sha256 of the text."""

    name: str
    text: str
    sha256: str

    @property
    def fields(self) -> frozenset[str]:
        """Placeholder names the template expects."""
        return frozenset(_PLACEHOLDER.findall(self.text))

    def render(self, **values: object) -> str:
        """Fill every ``{{field}}``; raises ``KeyError`` naming a missing field.

        Extra values are an error too (``ValueError``), so a typo never silently drops an input.
        """
        missing = self.fields - values.keys()
        if missing:
            raise KeyError(f"prompt {self.name}: missing field(s) {sorted(missing)}")
        extra = values.keys() - self.fields
        if extra:
            raise ValueError(f"prompt {self.name}: unknown field(s) {sorted(extra)}")
        return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), self.text)


def _latest_version(base: str) -> str:
    versions = []
    for path in PROMPT_DIR.glob(f"{base}_v*.txt"):
        match = _VERSIONED.match(path.stem)
        if match and match.group("base") == base:
            versions.append((int(match.group("version")), path.stem))
    if not versions:
        raise FileNotFoundError(f"no prompt template {base}_v*.txt in {PROMPT_DIR}")
    return max(versions)[1]


@cache
def load_prompt(name: str) -> Prompt:
    """Load a template by base name (``"verify"`` -> highest ``verify_vN.txt``) or exact ``"verify_v1"``.

    Returns a :class:`Prompt` with the text and its sha256 (hex). Cached per name.
    Raises ``FileNotFoundError`` when no such template exists.
    """
    stem = name if _VERSIONED.match(name) else _latest_version(name)
    path = PROMPT_DIR / f"{stem}.txt"
    if not path.is_file():
        raise FileNotFoundError(f"prompt template {path} not found")
    text = path.read_text(encoding="utf-8")
    return Prompt(name=stem, text=text, sha256=hashlib.sha256(text.encode("utf-8")).hexdigest())


def prompt_hashes(names: tuple[str, ...] = PROMPT_NAMES) -> dict[str, str]:
    """``{loaded name: sha256}`` for the given templates (used in fingerprints and cache keys)."""
    return {p.name: p.sha256 for p in (load_prompt(n) for n in names)}
