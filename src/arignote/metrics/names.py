"""Metric names of both Keras 2 eras: the one logged, and the others answered.

Keras 2.0-2.2 logged ``metrics=['accuracy']`` as ``acc`` and ``metrics=['mae']`` as
``mean_absolute_error`` (the function's name); Keras 2.3 logs the string written in ``compile``.
The ``metrics.names`` flag (default ``2.3``) chooses the spelling that is printed and stored; the
logs handed to callbacks and ``history.history`` are :class:`Logs` dicts that also answer every
other spelling of the same metric, with any prefix (``val_``, an output name), so scripts of
both eras read ``history.history['acc']`` or ``['val_mean_absolute_error']`` without a KeyError.

Example::

    >>> logs = Logs({"loss": 0.5, "accuracy": 0.75, "val_mae": 0.1})
    >>> logs["acc"], logs["val_mean_absolute_error"], "val_acc" in logs, sorted(logs)
    (0.75, 0.1, False, ['accuracy', 'loss', 'val_mae'])
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from arignote import config

__all__ = ["Logs", "as_logs", "logged_name", "legacy_name", "spellings", "resolve"]

# Each group spells one metric: the short names Keras accepts in compile and the function name
# Keras 2.0-2.2 logged (the last of each group).
_GROUPS: tuple[tuple[str, ...], ...] = (
    ("acc", "accuracy"),
    ("mae", "mean_absolute_error"),
    ("mse", "mean_squared_error"),
    ("mape", "mean_absolute_percentage_error"),
    ("msle", "mean_squared_logarithmic_error"),
    ("kld", "kullback_leibler_divergence"),
    ("cosine", "cosine_proximity"),
)
_GROUP_OF = {name: group for group in _GROUPS for name in group}
# Longest spellings first, so "mean_absolute_error" is matched before a shorter suffix.
_BY_LENGTH = sorted(_GROUP_OF, key=len, reverse=True)


def legacy_name(identifier: str) -> str:
    """The name Keras 2.0-2.2 logged for a metric given by this string in ``compile``."""
    if identifier in ("acc", "accuracy"):
        return "acc"
    group = _GROUP_OF.get(identifier)
    return group[-1] if group else identifier


def logged_name(identifier: str) -> str:
    """The name printed and stored for ``identifier`` under the ``metrics.names`` flag."""
    return legacy_name(identifier) if config.get("metrics.names") == "2.2" else identifier


def spellings(key: str) -> list[str]:
    """Other spellings of a log key: ``val_acc`` -> ``['val_accuracy']`` (empty when it has none)."""
    if not isinstance(key, str):
        return []
    for name in _BY_LENGTH:
        if key == name or key.endswith("_" + name):
            prefix = key[: len(key) - len(name)]
            return [prefix + other for other in _GROUP_OF[name] if other != name]
    return []


def resolve(mapping: Mapping[str, Any], key: str) -> str | None:
    """The key of ``mapping`` that holds ``key`` (itself or another spelling), or None."""
    if dict.__contains__(mapping, key) if isinstance(mapping, dict) else key in mapping:
        return key
    for other in spellings(key):
        if dict.__contains__(mapping, other) if isinstance(mapping, dict) else other in mapping:
            return other
    return None


class Logs(dict):
    """A dict of epoch logs (or of History's lists) that also answers the other spellings of its keys.

    Iteration, ``len``, ``keys()``, printing and saving show only the stored spelling; ``[]``,
    ``get`` and ``in`` accept any spelling.
    """

    def __missing__(self, key: Any) -> Any:
        other = resolve(self, key) if isinstance(key, str) else None
        if other is None:
            raise KeyError(key)
        return dict.__getitem__(self, other)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and resolve(self, key) is not None

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self else default

    def setdefault(self, key: Any, default: Any = None) -> Any:
        stored = resolve(self, key) if isinstance(key, str) else None
        if stored is None:
            dict.__setitem__(self, key, default)
            return default
        return dict.__getitem__(self, stored)

    def copy(self) -> Logs:
        return Logs(self)

    def __repr__(self) -> str:
        return dict.__repr__(self)


def as_logs(logs: Mapping[str, Any] | None) -> Any:
    """``logs`` as a :class:`Logs` (a plain dict is wrapped; None and lazy mappings pass through)."""
    if type(logs) is dict:
        return Logs(logs)
    return logs
