"""Numbers as a reader sees them: percentages, rounded values and intervals (pure functions).

The one place numbers are formatted: the CLI's and the demo's terminal tables
(``reports.console``), the HTML report and every page of the app go through these helpers, so
nothing prints a raw float such as ``0.05739008087303366``. ``None`` (and, for the app's helpers,
``NaN``) means "not measured" and prints as ``n/a`` (never 0).

Two families, kept apart because their outputs are contracts (terminal tables and the HTML report
are compared byte for byte): :func:`fixed` and :func:`percent` always print the digits asked for
(``3`` -> ``3.000``; a column width pads them), only ``None`` is ``n/a``; :func:`num` and
:func:`pct` are the app's (ints as they are, ``NaN`` -> ``n/a``, tiny shares as ``<0.1%``).
"""
from __future__ import annotations

import html
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any

NA = "n/a"


def _missing(value: Any) -> bool:
    if value is None:
        return True
    try:
        return math.isnan(float(value))
    except (TypeError, ValueError):
        return True


def fixed(value: Any, digits: int = 3) -> str:
    """``value`` with exactly ``digits`` decimals (``3`` -> ``"3.000"``); ``None`` -> ``"n/a"``."""
    return NA if value is None else f"{float(value):.{digits}f}"


def percent(value: Any, digits: int = 1, width: int = 0) -> str:
    """A share as a percentage with exactly ``digits`` decimals, right-aligned in ``width``
    characters before the ``%`` (``percent(0.05, width=5)`` -> ``"  5.0%"``); ``None`` -> ``"n/a"``."""
    spec = f"{width}.{digits}f" if width else f".{digits}f"
    return NA if value is None else f"{100 * float(value):{spec}}%"


def bracketed(pair: Sequence[Any] | None, fmt: Callable[[Any], str] = fixed, missing: str = NA) -> str:
    """An interval as ``"[low, high]"``, each bound through ``fmt``; ``missing`` when either is unknown."""
    if not pair or pair[0] is None or pair[1] is None:
        return missing
    return f"[{fmt(pair[0])}, {fmt(pair[1])}]"


def num(value: Any, digits: int = 2) -> str:
    """``value`` rounded to ``digits`` decimals (``0.746``), or ``"n/a"`` for ``None``/``NaN``.

    An ``int`` prints as is; a float always shows ``digits`` decimals, so columns line up.
    """
    if _missing(value):
        return NA
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, numbers.Integral):
        return str(int(value))
    return f"{float(value):.{digits}f}"


def pct(value: Any, digits: int = 1) -> str:
    """A share in [0, 1] as a percentage (``0.0213`` -> ``"2.1%"``); ``None``/``NaN`` -> ``"n/a"``.

    Shares below 0.1% that are not zero print as ``"<0.1%"`` (with ``digits=1``), so a rare event
    never reads as none.
    """
    if _missing(value):
        return NA
    value = float(value)
    smallest = 10 ** -digits
    if 0 < 100 * value < smallest:
        return f"<{smallest:.{digits}f}%"
    return f"{100 * value:.{digits}f}%"


def interval(ci: Sequence[Any] | None, digits: int = 2, *, percent: bool = False) -> str:
    """``[low, high]`` as ``"[0.67, 0.81]"`` (or ``"[33.1, 39.6]%"`` with ``percent``); ``""`` when unknown."""
    if not ci or len(ci) < 2 or _missing(ci[0]) or _missing(ci[1]):
        return ""
    if percent:
        return f"[{100 * float(ci[0]):.{digits}f}, {100 * float(ci[1]):.{digits}f}]%"
    return f"[{float(ci[0]):.{digits}f}, {float(ci[1]):.{digits}f}]"


def with_interval(value: Any, ci: Sequence[Any] | None, digits: int = 2) -> str:
    """``"0.75 [0.67, 0.81]"``; just the value when the interval is unknown; ``"n/a"`` without a value."""
    text = num(value, digits)
    bounds = interval(ci, digits)
    return f"{text} {bounds}" if bounds and text != NA else text


def pct_with_interval(value: Any, ci: Sequence[Any] | None, digits: int = 1) -> str:
    """``"36.3% [33.1, 39.6]"`` (interval in percent); just the share when the interval is unknown."""
    text = pct(value, digits)
    if text == NA or not ci or len(ci) < 2 or _missing(ci[0]) or _missing(ci[1]):
        return text
    return f"{text} [{100 * float(ci[0]):.{digits}f}, {100 * float(ci[1]):.{digits}f}]"


def pct_range(ci: Sequence[Any] | None, digits: int = 1) -> str:
    """An interval of shares as ``"33.1–39.6%"``; ``""`` when unknown."""
    if not ci or len(ci) < 2 or _missing(ci[0]) or _missing(ci[1]):
        return ""
    return f"{100 * float(ci[0]):.{digits}f}–{100 * float(ci[1]):.{digits}f}%"


def rounded(obj: Any, digits: int = 4) -> Any:
    """A copy of a JSON-like value with every float rounded to ``digits`` decimals (for ``st.json``).

    ``NaN`` becomes ``None``; ints, strings and booleans are unchanged.
    """
    if isinstance(obj, bool) or obj is None or isinstance(obj, (int, str)):
        return obj
    if isinstance(obj, float):
        return None if math.isnan(obj) else round(obj, digits)
    if isinstance(obj, Mapping):
        return {k: rounded(v, digits) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [rounded(v, digits) for v in obj]
    return obj


def value_text(value: Any, digits: int = 3) -> str:
    """Any table value as short text: floats (or strings holding a float) rounded, ``None`` -> ``"n/a"``."""
    if value is None:
        return NA
    if isinstance(value, bool) or isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return num(value, digits)
    if isinstance(value, str):
        try:
            parsed = float(value)
        except ValueError:
            return value
        if "." in value and not math.isnan(parsed):
            return num(parsed, digits)
        return value
    return str(value)


def wilson_interval(successes: int, n: int, *, z: float = 1.96) -> tuple[float, float] | None:
    """Wilson score interval for a proportion ``successes / n`` (95% with the default ``z``).

    Compares nothing: it is the sampling interval of one observed share. ``n == 0`` gives ``None``.
    Bounds lie in [0, 1]; with 0 or ``n`` successes the interval still has width (unlike the
    normal approximation).
    """
    if n <= 0:
        return None
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def highlight_quote_html(text: str, quote: str | None) -> str:
    """``text`` as escaped HTML with every exact occurrence of ``quote`` wrapped in ``<mark>``.

    Both the passage and the quote are untrusted: the pieces are escaped with ``html.escape``
    first, and only then is the ``<mark>`` tag added, so nothing from the data becomes markup.
    Newlines become ``<br>``. An empty/``None`` quote, or one not found verbatim, gives the
    plain escaped text (the caller shows the quote separately).
    """
    text = text or ""
    if not quote or quote not in text:
        return _escape_block(text)
    parts = text.split(quote)
    marked = f"<mark>{_escape_block(quote)}</mark>"
    return marked.join(_escape_block(part) for part in parts)


def _escape_block(text: str) -> str:
    return html.escape(text, quote=True).replace("\n", "<br>")
