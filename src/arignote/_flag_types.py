"""How a flag's value is read: a string (rc file, ``ARIGNOTE_FLAGS``) or a Python value (code).

Each parser returns the typed value or raises ``ValueError`` with what was expected;
:mod:`arignote.config` turns that into a ``ConfigError`` naming the flag and its source.

Example::

    >>> from arignote._flag_types import parse_bool, choice
    >>> parse_bool("on"), choice("fp32", "mixed-bf16")("mixed-bf16")
    (True, 'mixed-bf16')
"""

from __future__ import annotations

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


def parse_float(text: Any) -> float:
    if isinstance(text, bool):
        raise ValueError("expected a number")
    return float(text)


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


def limit(text: Any) -> float:
    value = parse_float(text)
    if value < 0:
        raise ValueError("must be 0 (no cap), a fraction in (0, 1] or MiB > 1")
    return value
