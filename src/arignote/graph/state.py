"""Process-wide state the graph shares with the backend: the learning phase and live values.

* ``learning_phase`` is what ``K.learning_phase()`` answers: every :class:`~arignote.layers.Layer`
  sets it from its module's ``training`` flag before running ``call``, so
  ``K.in_train_phase(x, alt)`` inside a custom layer or ``Lambda`` follows ``model.fit``/``predict``.
  ``K.set_learning_phase`` pins it (``forced``).
* ``probing`` is true while the graph runs a layer on small zeros to learn its output shape (a
  ``K.print_tensor`` stays quiet then: Keras 2 prints values only when the graph is evaluated).
* ``live`` maps symbolic tensors to the torch values of the graph run in progress. A Keras 2
  custom loss may close over a symbolic tensor of the model (the VAE's ``z_mean``); while the
  loss runs, backend functions read that tensor's value of the current batch from here.

Example::

    >>> from arignote.graph import state
    >>> state.phase(), state.live_value(object()) is None
    (0, True)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

__all__ = ["phase", "set_phase", "force_phase", "live_value", "live_values", "NeedsAutograd", "probing",
           "is_probing", "remember_forward", "forward_value", "model_forward_begin", "model_forward_end",
           "model_forward_id", "model_forward_restart"]


class NeedsAutograd(ValueError):
    """Raised by ``K.gradients`` on torch tensors computed while autograd was off (``predict``,
    validation); a functional graph catches it and runs its forward again with autograd on."""

_PHASE = [0]
_FORCED: list[Any] = [None]
_LIVE: list[dict | None] = [None]
_PROBING = [False]
_LAST_FORWARD: list[dict | None] = [None]
_MODEL_FORWARD = [0, 0]  # [depth of model forwards in progress, number of outermost ones begun]


def phase() -> int:
    """1 while training, 0 otherwise (the forced value when one is set)."""
    forced = _FORCED[0]
    return _PHASE[0] if forced is None else forced


def set_phase(training: bool) -> None:
    """Called by layers before ``call`` (cheap: one list store)."""
    _PHASE[0] = 1 if training else 0


def forced_phase() -> int | None:
    """The phase ``K.set_learning_phase`` pinned (0 or 1), or None (follow fit/predict)."""
    return _FORCED[0]


def force_phase(value: Any) -> None:
    """``K.set_learning_phase(0|1)``; ``None`` goes back to following the modules."""
    if value not in (None, 0, 1, True, False):
        raise ValueError(f"the learning phase is 0 (test) or 1 (train), got {value!r}")
    _FORCED[0] = None if value is None else int(value)


def live_value(tensor: Any) -> Any:
    """The value of symbolic ``tensor`` in the graph run in progress, or None."""
    live = _LIVE[0]
    return None if live is None else live.get(id(tensor))


def model_forward_begin() -> None:
    """A model's forward starts (a graph or a layer stack; nested ones count once).

    Not counted while torch.compile traces a step: Dynamo guards on a global it sees change, so a
    counter bumped in the traced forward recompiled the step at every call (jit=on). A traced forward
    therefore has no id, and a layer's call losses are those of its last call there."""
    if torch.compiler.is_compiling():
        return
    if _MODEL_FORWARD[0] == 0:
        _MODEL_FORWARD[1] += 1
    _MODEL_FORWARD[0] += 1


def model_forward_end() -> None:
    if not torch.compiler.is_compiling():
        _MODEL_FORWARD[0] -= 1


def model_forward_restart() -> None:
    """The outermost forward runs again from the start (what its layers added so far is void)."""
    if not torch.compiler.is_compiling():
        _MODEL_FORWARD[1] += 1


def model_forward_id() -> int | None:
    """The number of the outermost model forward in progress, None outside any: a layer called
    twice in one forward (shared) keeps the losses of both calls (Keras 2 counts each call)."""
    return _MODEL_FORWARD[1] if _MODEL_FORWARD[0] else None


def remember_forward(values: dict | None) -> None:
    """Keep the values of the last forward of a graph compiled with a custom loss (``{id(symbolic
    tensor): torch value}``): what ``K.gradients`` inside that loss differentiates against wherever
    the loss is evaluated (the total loss, or one output's loss reported as a metric)."""
    _LAST_FORWARD[0] = values


def forward_value(tensor: Any) -> Any:
    """The value of symbolic ``tensor`` in the graph run in progress, else in the last remembered
    forward, or None."""
    value = live_value(tensor)
    if value is None and _LAST_FORWARD[0] is not None:
        value = _LAST_FORWARD[0].get(id(tensor))
    return value


@contextmanager
def live_values(values: dict | None) -> Iterator[None]:
    """Make ``{id(symbolic tensor): torch value}`` visible to backend functions inside the block."""
    old = _LIVE[0]
    _LIVE[0] = values
    try:
        yield
    finally:
        _LIVE[0] = old


@contextmanager
def probing() -> Iterator[None]:
    """Mark the block as a shape probe on dummy data (see :func:`is_probing`)."""
    old = _PROBING[0]
    _PROBING[0] = True
    try:
        yield
    finally:
        _PROBING[0] = old


def is_probing() -> bool:
    """True while the graph runs a layer on small zeros to learn its output shape.

    >>> with probing():
    ...     is_probing()
    True
    """
    return _PROBING[0]
