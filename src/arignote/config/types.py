"""How a flag's value is read: a string (rc file, ``ARIGNOTE_FLAGS``) or a Python value (code).

Each parser returns the typed value or raises ``ValueError`` with what was expected;
:mod:`arignote.config` turns that into a ``ConfigError`` naming the flag and its source.

Example::

    >>> from arignote.config.types import parse_bool, choice
    >>> parse_bool("on"), choice("fp32", "mixed-bf16")("mixed-bf16")
    (True, 'mixed-bf16')
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any


def parse_bool(text: Any) -> bool:
    if isinstance(text, bool):
        return text
    s = str(text).strip().lower()
    if s in ("1", "true", "yes", "on"):
        return True
    if s in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected true or false")


def auto_bool(text: Any) -> str | bool:
    """``auto`` or a bool (true/false/on/off/1/0): a switch arignote decides unless told."""
    if isinstance(text, str) and text.strip().lower() == "auto":
        return "auto"
    try:
        return parse_bool(text)
    except ValueError:
        raise ValueError("expected auto, true or false") from None


auto_bool.kind = "auto|bool"  # type: ignore[attr-defined]


def parse_float(text: Any) -> float:
    if isinstance(text, bool):
        raise ValueError("expected a number")
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("expected a finite number")
    return value


def parse_int(text: Any) -> int:
    if isinstance(text, bool):
        raise ValueError("expected a whole number")
    if isinstance(text, float) and not text.is_integer():
        raise ValueError("expected a whole number")
    return int(str(text).strip()) if not isinstance(text, (int, float)) else int(text)


def non_negative(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def check(text: Any) -> Any:
        value = parse(text)
        if value < 0:
            raise ValueError("must be >= 0")
        return value

    return check


def positive(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def check(text: Any) -> Any:
        value = parse(text)
        if value <= 0:
            raise ValueError("must be > 0")
        return value

    return check


def choice(*options: str) -> Callable[[Any], str]:
    def check(text: Any) -> str:
        s = str(text).strip()
        if s not in options:
            raise ValueError("expected one of " + ", ".join(options))
        return s

    check.options = options  # type: ignore[attr-defined]
    return check


def text(text: Any) -> str:
    return str(text).strip()


def device(text: Any) -> str:
    s = str(text).strip()
    if not s:
        raise ValueError("expected a device spec such as auto, cpu, cuda, cuda1, all or free:2")
    from arignote.devices.spec import spec_problem  # pure module, no torch

    problem = spec_problem(s)
    if problem:
        raise ValueError(problem)
    return s


def _size(text: Any, what: str) -> float:
    from arignote import sizes  # why: parsed only when a size flag is set (not at the first use, issue 32)

    try:
        return sizes.mib_or_fraction(sizes.parse_size(text))
    except ValueError as exc:
        raise ValueError(f"{exc}; {what}") from None


def preallocate(text: Any) -> float:
    """``memory.preallocate``: a size (fraction, %, MiB, GiB...), ``0`` grow on demand, ``< 0`` no caching."""
    if not isinstance(text, bool):
        try:
            value = float(str(text).strip()) if isinstance(text, str) else float(text)
        except ValueError:
            value = None
        if value is not None and math.isfinite(value) and value < 0:
            return value
    return _size(text, "memory.preallocate takes 0 (grow on demand), a size, or a negative number "
                 "(no caching)")


preallocate.kind = "size"  # type: ignore[attr-defined]


def limit(text: Any) -> float:
    """``memory.limit``: ``0`` (no cap) or a size: a fraction, a percentage, MiB, GiB..."""
    return _size(text, "memory.limit takes 0 (no cap) or a size")


limit.kind = "size"  # type: ignore[attr-defined]


def mib(text: Any) -> int:
    """An absolute size in whole MiB (``memory.host_cache``): ``1024``, ``512MiB``, ``1GiB``."""
    from arignote import sizes  # why: parsed only when a size flag is set (not at the first use, issue 32)

    size = sizes.parse_size(text)
    if size.nbytes is None and size.fraction != 0:
        raise ValueError(f"{text!r} is a fraction, but this flag takes an absolute size such as 1GiB or "
                         "512MiB")
    return (size.nbytes or 0) // sizes.MiB


mib.kind = "size"  # type: ignore[attr-defined]


def is_bare_number(raw: Any) -> bool:
    """Whether ``raw`` is a number written without a unit (``4096``, ``"8"``; not ``True``): a size flag
    given so is read as MiB, which the registry warns about for small values (``memory.limit=8``)."""
    try:
        float(raw)
    except (TypeError, ValueError):
        return False
    return not isinstance(raw, bool)
