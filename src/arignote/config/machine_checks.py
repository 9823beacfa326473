"""What this machine cannot honour: flag checks registered from outside the registry (``devices/``
registers the ``device`` and ``contexts`` checks when ``import arignote`` runs; the registry itself
never asks the hardware), and the one :class:`ConfigError` such a check makes, naming the flag, its
value, where it was set and the fix.

Example::

    >>> set_machine_check("example.flag", lambda v: ("no such GPU", "pick cuda0") if v == "cuda7" else None)
    >>> print(machine_error("example.flag", "cuda7", "ARIGNOTE_FLAGS"))
    example.flag=cuda7 (from ARIGNOTE_FLAGS): no such GPU. Fix: pick cuda0 (in ARIGNOTE_FLAGS).
    >>> machine_error("example.flag", "cuda0", "code") is None
    True
    >>> del MACHINE_CHECKS["example.flag"]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from arignote.errors import ConfigError

__all__ = ["MACHINE_CHECKS", "set_machine_check", "machine_error"]

# flag -> (check(value) -> (problem, fix) or None, error class): what this machine cannot honour.
# devices/ registers the `device` check when it is imported (import arignote does, before any read):
# the registry itself never asks the hardware.
MACHINE_CHECKS: dict[str, tuple[Callable[[Any], tuple[str, str] | None], type[ConfigError]]] = {}


def set_machine_check(name: str, check: Callable[[Any], tuple[str, str] | None],
                      error: type[ConfigError] = ConfigError) -> None:
    """Check flag ``name``'s value against this machine at the first read (rc files, ``ARIGNOTE_FLAGS``)
    and at :func:`arignote.config.configure`: ``check(value)`` returns ``(problem, fix)`` or None.
    Values set with :func:`arignote.config.override` (tests, one-off blocks) are checked where they are
    used instead."""
    MACHINE_CHECKS[name] = (check, error)


def _fix_where(where: str) -> str:
    if where == "code":
        return "in the configure() call"
    if where.isupper():  # ARIGNOTE_FLAGS or a flag's own variable
        return f"in {where}"
    return f"at {where}"


def machine_error(name: str, value: Any, where: str) -> ConfigError | None:
    if name not in MACHINE_CHECKS:
        return None
    check, error = MACHINE_CHECKS[name]
    found = check(value)
    if found is None:
        return None
    problem, fix = found
    return error(f"{name}={value} (from {where}): {problem}. Fix: {fix} ({_fix_where(where)}).",
                 flag=name, value=value, source=where, fix=fix)
