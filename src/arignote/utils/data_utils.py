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

__all__ = ["Sequence", "PeekedSequence", "is_sequence", "get_file", "validate_file", "hash_file",
           "GeneratorEnqueuer", "OrderedEnqueuer", "SequenceEnqueuer"]


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


class PeekedSequence:
    """A ``Sequence`` whose batch 0 is read once before training (the up-front checks, the memory
    plan: :meth:`peek`) and handed to the loader's own first read of it, so every batch is read as
    often as Keras 2.3.1 reads it (``steps x epochs``, no extra read). Anything else is the
    sequence's own (``len``, ``on_epoch_end``, attributes).

    Example::

        >>> class Counted(Sequence):
        ...     reads = 0
        ...     def __len__(self): return 2
        ...     def __getitem__(self, i): Counted.reads += 1; return i
        >>> seq = PeekedSequence(Counted())
        >>> seq.peek(), seq.peek(), seq[0], seq[1], Counted.reads
        (0, 0, 0, 1, 2)
    """

    def __init__(self, sequence: Any) -> None:
        self.sequence = sequence
        self._held: list = []  # [batch 0] between the first peek and the loader's read of it

    def peek(self) -> Any:
        if not self._held:
            self._held.append(self.sequence[0])
        return self._held[0]

    def __getitem__(self, index: int) -> Any:
        if index == 0 and self._held:
            return self._held.pop()
        return self.sequence[index]

    def __len__(self) -> int:
        return len(self.sequence)

    def on_epoch_end(self) -> None:
        self._held.clear()  # a later epoch reads batch 0 again, as Keras does
        hook = getattr(self.sequence, "on_epoch_end", None)
        if callable(hook):
            hook()

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self[i]

    def __getstate__(self) -> dict:
        # a worker process (use_multiprocessing) reads every batch itself: a copy of the held batch
        # there could outlive the epoch it belongs to
        return {"sequence": self.sequence, "_held": []}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    def __getattr__(self, name: str) -> Any:
        if name == "sequence":  # not set yet (unpickling in a worker process)
            raise AttributeError(name)
        return getattr(self.sequence, name)
