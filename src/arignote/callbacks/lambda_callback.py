"""Keras 2's ``LambdaCallback``: a callback made of plain functions.

Each given function replaces one hook: ``on_epoch_begin(epoch, logs)``, ``on_epoch_end(epoch, logs)``,
``on_batch_begin(batch, logs)``, ``on_batch_end(batch, logs)``, ``on_train_begin(logs)``,
``on_train_end(logs)``; any other ``on_*`` hook of :class:`Callback` may be given by keyword too
(``on_test_end=...``). Batch hooks that are not given cost nothing: ``fit`` skips them.

Example::

    >>> seen = []
    >>> cb = LambdaCallback(on_epoch_end=lambda epoch, logs: seen.append((epoch, logs["loss"])))
    >>> cb.on_epoch_end(0, {"loss": 0.5}); seen
    [(0, 0.5)]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from arignote.callbacks.base import Callback

__all__ = ["LambdaCallback"]

_HOOKS = {name for name in dir(Callback) if name.startswith("on_")}


class LambdaCallback(Callback):
    """A :class:`Callback` whose hooks are the functions given (positional arguments as Keras 2)."""

    def __init__(self, on_epoch_begin: Callable[..., Any] | None = None,
                 on_epoch_end: Callable[..., Any] | None = None,
                 on_batch_begin: Callable[..., Any] | None = None,
                 on_batch_end: Callable[..., Any] | None = None,
                 on_train_begin: Callable[..., Any] | None = None,
                 on_train_end: Callable[..., Any] | None = None, **kwargs: Any) -> None:
        super().__init__()
        hooks = {"on_epoch_begin": on_epoch_begin, "on_epoch_end": on_epoch_end,
                 "on_batch_begin": on_batch_begin, "on_batch_end": on_batch_end,
                 "on_train_begin": on_train_begin, "on_train_end": on_train_end, **kwargs}
        unknown = sorted(k for k in kwargs if k not in _HOOKS)
        if unknown:
            raise TypeError(f"LambdaCallback: {', '.join(unknown)} are not callback hooks; the hooks are "
                            f"{', '.join(sorted(_HOOKS))}")
        for name, fn in hooks.items():
            if fn is None:
                continue
            if not callable(fn):
                raise TypeError(f"LambdaCallback: {name} must be a function, got {fn!r}")
            setattr(self, name, fn)
