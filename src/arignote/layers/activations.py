"""Older helper names kept for :mod:`arignote.layers.base`: activation lookup, ``name_of`` and
initializer filling, now thin wrappers over :mod:`arignote.activations` and
:mod:`arignote.initializers` (the Keras 2 modules).

Example::

    >>> get("linear") is None   # no op: layers may skip the call
    True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from arignote import activations as _activations
from arignote import initializers as _initializers

__all__ = ["get", "name_of", "check_initializer", "initialize"]


def get(identifier: Any, image: bool = False) -> Callable | None:
    """The activation function (``None`` for ``linear``); ``image`` is accepted for older callers."""
    fn = _activations.get(identifier)
    return None if fn is _activations.linear else fn


def name_of(identifier: Any) -> str:
    """The serializable name of an activation (for ``get_config``)."""
    return _activations.serialize(_activations.get(identifier))


def check_initializer(name: Any, what: str) -> Any:
    """Validate an initializer early (at layer construction), with did-you-mean."""
    try:
        _initializers.get(name)
    except ValueError as e:
        raise ValueError(f"{what}: {e}") from None
    return name


def initialize(t: torch.Tensor, name: Any) -> torch.Tensor:
    """Fill ``t`` in place with initializer ``name``; ``t.shape`` is read as the Keras layout."""
    with torch.no_grad():
        t.copy_(_initializers.get(name)(tuple(t.shape), dtype=t.dtype))
    return t
