"""Keras 2 ``utils.data_utils``: ``Sequence`` (a batch source with a length, indexable, re-shuffled
between epochs), the enqueuers (:mod:`arignote.utils.enqueuers`) and ``get_file`` (the Keras cache of
downloaded files, see :mod:`arignote.datasets._get_file`).

``fit``, ``evaluate`` and ``predict`` (and the Keras 2 ``*_generator`` methods) take a Sequence
like any iterable of batches: an epoch is ``len(seq)`` batches, visited in a shuffled order when
``fit(shuffle=True)``, and ``seq.on_epoch_end()`` runs after each epoch.

Example::

    >>> import numpy as np
    >>> from arignote.utils import Sequence
    >>> class Halves(Sequence):
    ...     def __init__(self, x, y): self.x, self.y = x, y
    ...     def __len__(self): return 2
    ...     def __getitem__(self, i): return self.x[i * 2:(i + 1) * 2], self.y[i * 2:(i + 1) * 2]
    >>> [len(xb) for xb, _ in Halves(np.zeros((4, 3)), np.zeros(4))]
    [2, 2]
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from arignote.datasets._get_file import get_file, hash_file, validate_file
from arignote.utils.enqueuers import GeneratorEnqueuer, OrderedEnqueuer, SequenceEnqueuer

_hash_file = hash_file  # Keras 2.3.1's name (keras.utils.data_utils._hash_file), used by published code

__all__ = ["Sequence", "is_sequence", "get_file", "validate_file", "hash_file", "GeneratorEnqueuer",
           "OrderedEnqueuer", "SequenceEnqueuer"]


class Sequence:
    """Base class of Keras 2 data sequences: define ``__len__`` (batches per epoch) and
    ``__getitem__(index)`` returning ``(x, y)`` batch ``index``; ``on_epoch_end`` is optional."""

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__(index) -> (x, y)")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define __len__() -> number of batches")

    def on_epoch_end(self) -> None:
        """Called after every epoch (e.g. to re-shuffle the samples)."""

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self[i]


def is_sequence(obj: Any) -> bool:
    """True for an arignote or Keras ``Sequence`` (anything with ``__len__``, ``__getitem__`` and
    ``on_epoch_end``): ``fit`` indexes it by batch instead of iterating it."""
    return isinstance(obj, Sequence) or all(
        callable(getattr(type(obj), name, None)) for name in ("__len__", "__getitem__", "on_epoch_end"))
