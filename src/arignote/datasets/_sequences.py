"""The word-id processing shared by :mod:`imdb` and :mod:`reuters` (Keras 2's rules, in order):
shuffle with ``RandomState(seed)``, prepend ``start_char`` and shift ids by ``index_from``, drop
sequences of ``maxlen`` words or more, then map ids outside ``[skip_top, num_words)`` to
``oov_char`` (or drop them when ``oov_char`` is None).

Example::

    >>> shift_and_filter([[1, 2], [5, 6, 7]], [0, 1], start_char=1, index_from=3, maxlen=4)
    ([[1, 4, 5]], [0])
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["shift_and_filter", "limit_vocabulary", "object_array", "check_kwargs"]


def check_kwargs(kwargs: dict[str, Any], owner: str) -> int | None:
    """Keras 2's ``nb_words`` (the Keras 1 name of ``num_words``) or a TypeError naming the unknown keys."""
    num_words = kwargs.pop("nb_words", None)
    if num_words is not None:
        warnings.warn(f"{owner}: the `nb_words` argument has been renamed `num_words`", UserWarning,
                      stacklevel=3)
    if kwargs:
        raise TypeError(f"{owner}: unrecognized keyword arguments: {sorted(kwargs)}")
    return num_words


def shift_and_filter(xs: Sequence[Sequence[int]], labels: Sequence[Any], start_char: int | None,
                     index_from: int, maxlen: int | None) -> tuple[list[list[int]], list[Any]]:
    """Prepend ``start_char`` / add ``index_from``, then keep only sequences shorter than ``maxlen``."""
    if start_char is not None:
        out = [[start_char] + [int(w) + index_from for w in x] for x in xs]
    else:
        out = [[int(w) + index_from for w in x] for x in xs]
    kept_labels = list(labels)
    if maxlen:
        pairs = [(x, y) for x, y in zip(out, kept_labels) if len(x) < maxlen]
        out, kept_labels = [p[0] for p in pairs], [p[1] for p in pairs]
    return out, kept_labels


def limit_vocabulary(xs: list[list[int]], num_words: int | None, skip_top: int,
                     oov_char: int | None) -> list[list[int]]:
    """Ids outside ``[skip_top, num_words)`` become ``oov_char`` (dropped when it is None).
    ``num_words=None`` keeps every id up to the largest one seen."""
    if not num_words:
        num_words = max((max(x) for x in xs if x), default=0)
    if oov_char is not None:
        return [[w if skip_top <= w < num_words else oov_char for w in x] for x in xs]
    return [[w for w in x if skip_top <= w < num_words] for x in xs]


def object_array(lists: list[list[int]]) -> np.ndarray:
    """A 1-D object array of lists (what Keras returns for variable-length sequences)."""
    out = np.empty(len(lists), dtype=object)
    for i, x in enumerate(lists):
        out[i] = x
    return out


def shuffled(rng: np.random.RandomState, *arrays: np.ndarray) -> list[np.ndarray]:
    """The arrays permuted by one ``rng.shuffle`` of their indices (Keras's order of draws)."""
    indices = np.arange(len(arrays[0]))
    rng.shuffle(indices)
    return [a[indices] for a in arrays]
