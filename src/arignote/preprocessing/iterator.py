"""Keras 2's ``preprocessing.image.Iterator``: the base class of image batch iterators, and the base
of arignote's own (``NumpyArrayIterator``, ``DirectoryIterator``, ``DataFrameIterator``).

:class:`Iterator` is keras_preprocessing 1.1.2's, so a subclass written for Keras 2 works unchanged:
``Iterator.__init__(n, batch_size, shuffle, seed)``, and the subclass defines
``_get_batches_of_transformed_samples(index_array)`` returning the batch of those samples. It is a
``utils.Sequence`` (``len``, ``it[i]``, ``on_epoch_end``: what ``fit`` uses) and an endless iterator
(``next(it)``, ``reset()``). Its randomness is numpy's global state, as in Keras: with a ``seed``,
``it[i]`` seeds ``np.random`` with ``seed + total_batches_seen`` before the batch (the first one
draws the epoch's order with ``np.random.permutation``), and ``next`` does so before each batch,
drawing a new order at the start of each pass; so a seeded Keras 2 script sees the same order.

arignote's own iterators (:class:`SeededIterator`) keep the same attributes and methods but draw
from their own numpy Generators, one per (seed, epoch) for the order and one per batch for the
augmentation: the same batches in any order of access and from any thread, without touching
``np.random``; iterating them (``for batch in it``) yields one epoch.

Example::

    >>> import numpy as np
    >>> class Squares(Iterator):
    ...     def __init__(self, n, batch_size): super().__init__(n, batch_size, shuffle=False, seed=None)
    ...     def _get_batches_of_transformed_samples(self, index_array): return index_array ** 2
    >>> it = Squares(5, 2)
    >>> len(it), it[2].tolist(), next(it).tolist(), next(it).tolist()
    (3, [16], [0, 1], [4, 9])
"""

from __future__ import annotations

import threading
from collections.abc import Iterator as _PyIterator
from typing import Any

import numpy as np

from arignote.preprocessing.image_utils import WHITE_LIST_FORMATS
from arignote.utils.data_utils import Sequence

__all__ = ["Iterator", "SeededIterator"]


class BatchIndexError(IndexError, ValueError):
    """A batch index past the end (an IndexError, and the ValueError Keras 2 raised)."""


class Iterator(Sequence):
    """Base class of image batch iterators (Keras 2): ``n`` samples in batches of ``batch_size``,
    reshuffled between epochs when ``shuffle``, ``seed`` for a repeatable order (None: numpy's global
    state as it is). Subclasses define ``_get_batches_of_transformed_samples(index_array)``."""

    white_list_formats = WHITE_LIST_FORMATS

    def __init__(self, n: int, batch_size: int, shuffle: bool, seed: int | None) -> None:
        if not isinstance(batch_size, (int, np.integer)) or isinstance(batch_size, bool) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"n (the number of samples) must be an integer >= 0, got {n!r}")
        self.n = int(n)
        self.batch_size = int(batch_size)
        self.seed = seed
        self.shuffle = shuffle
        self.batch_index = 0
        self.total_batches_seen = 0
        self.lock = threading.Lock()
        self.index_array: np.ndarray | None = None
        self.index_generator = self._flow_index()

    # ------------------------------------------------------------------ Sequence
    def _set_index_array(self) -> None:
        """The epoch's sample order: ``np.random.permutation(n)`` when shuffling, else ``0..n-1``."""
        self.index_array = np.random.permutation(self.n) if self.shuffle else np.arange(self.n)

    def _check_index(self, idx: int) -> None:
        if not -len(self) <= idx < len(self):
            raise BatchIndexError(f"asked for batch {idx}, but this {type(self).__name__} has {len(self)} "
                                  f"batches ({self.n} samples in batches of {self.batch_size})")

    def __getitem__(self, idx: int) -> Any:
        self._check_index(idx)
        idx %= len(self)
        if self.seed is not None:
            np.random.seed(self.seed + self.total_batches_seen)
        self.total_batches_seen += 1
        if self.index_array is None:
            self._set_index_array()
        return self._get_batches_of_transformed_samples(self._batch_indices(idx))

    def _batch_indices(self, idx: int) -> np.ndarray:
        return self.index_array[idx * self.batch_size:(idx + 1) * self.batch_size]

    def __len__(self) -> int:
        return -(-self.n // self.batch_size)

    def on_epoch_end(self) -> None:
        """A new order for the next epoch (when shuffling)."""
        self._set_index_array()

    # ------------------------------------------------------------------ endless iteration
    def reset(self) -> None:
        """Make ``next`` start a new pass (with a new order) at the next call."""
        self.batch_index = 0

    def _flow_index(self) -> _PyIterator[np.ndarray]:
        """Index arrays of the batches, pass after pass; a batch never spans two passes."""
        self.reset()
        while True:
            if self.seed is not None:
                np.random.seed(self.seed + self.total_batches_seen)
            if self.batch_index == 0:
                self._set_index_array()
            start = (self.batch_index * self.batch_size) % self.n if self.n else 0
            self.batch_index = self.batch_index + 1 if self.n > start + self.batch_size else 0
            self.total_batches_seen += 1
            yield self.index_array[start:start + self.batch_size]

    def __iter__(self) -> Any:
        return self

    def __next__(self, *args: Any, **kwargs: Any) -> Any:
        return self.next(*args, **kwargs)

    def next(self) -> Any:
        """The next batch (the order under a lock; the batch itself built outside it, as Keras)."""
        with self.lock:
            index_array = next(self.index_generator)
        return self._get_batches_of_transformed_samples(index_array)

    def _get_batches_of_transformed_samples(self, index_array: np.ndarray) -> Any:
        """The batch of the samples ``index_array``: what a subclass defines."""
        raise NotImplementedError(f"{type(self).__name__} must define _get_batches_of_transformed_samples"
                                  "(self, index_array) returning the batch of those samples")

    # the lock and the generator do not pickle (a Sequence sent to a worker process)
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("lock", None)
        state.pop("index_generator", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.lock = threading.Lock()
        self.index_generator = self._flow_index()


def _takes_rng(method: Any) -> Any:
    """Mark an arignote ``_get_batches_of_transformed_samples(index_array, rng=None)``: the batch's
    Generator is passed to it (a subclass's override with Keras's one argument gets none)."""
    method.takes_rng = True
    return method


class SeededIterator(Iterator):
    """arignote's own image iterators: the :class:`Iterator` interface with numpy Generators per
    (seed, epoch) for the order and per (seed, epoch, batch) for the augmentation. ``seed=None`` takes
    a seed from numpy's global state. ``for batch in it`` yields one epoch, then ``on_epoch_end()``;
    ``next(it)`` goes on through the epochs."""

    def __init__(self, n: int, batch_size: int, shuffle: bool, seed: int | None) -> None:
        super().__init__(n, batch_size, shuffle, None)
        self.seed = int(np.random.randint(2**31 - 1)) if seed is None else int(seed)
        self.epoch = 0
        self._set_index_array()

    def _set_index_array(self) -> None:
        order = np.random.default_rng([self.seed, 0, self.epoch]).permutation(self.n)
        self.index_array = order if self.shuffle else np.arange(self.n)

    def __getitem__(self, idx: int) -> Any:
        self._check_index(idx)
        idx %= len(self)
        self.total_batches_seen += 1
        index_array = self._batch_indices(idx)
        make = self._get_batches_of_transformed_samples
        if getattr(make, "takes_rng", False):
            return make(index_array, np.random.default_rng([self.seed, 1, self.epoch, idx]))
        return make(index_array)

    def on_epoch_end(self) -> None:
        """Next epoch: a new order (``shuffle=True``) and new random transforms."""
        self.epoch += 1
        self._set_index_array()

    def __iter__(self) -> _PyIterator[Any]:
        for i in range(len(self)):
            yield self[i]
        self.on_epoch_end()

    def next(self) -> Any:
        """The next batch of this epoch, or the first of the next one (Keras's endless stream)."""
        with self.lock:
            if self.batch_index >= len(self):
                self.on_epoch_end()
                self.batch_index = 0
            self.batch_index += 1
            idx = self.batch_index - 1
        return self[idx]

    def reset(self) -> None:
        """Restart ``next()`` at the first batch of the current epoch."""
        self.batch_index = 0
