"""Reuters newswire topics, as ``keras.datasets.reuters``: 11,228 newswires in 46 topics, as word ids.

Reads Keras's ``reuters.npz`` (object arrays ``x`` of word-id lists and ``y`` of topics) and
``reuters_word_index.json`` through :func:`arignote.utils.data_utils.get_file`, with Keras's hashes.

Example::

    >>> from arignote.datasets import reuters
    >>> (x_train, y_train), (x_test, y_test) = reuters.load_data(num_words=10000)   # doctest: +SKIP
    >>> len(x_train), len(x_test)                                                     # doctest: +SKIP
    (8982, 2246)
"""

from __future__ import annotations

import numpy as np

from arignote.datasets import _sequences as seq
from arignote.datasets._formats import read_npz_objects
from arignote.datasets._get_file import get_file
from arignote.datasets.imdb import read_word_index

__all__ = ["load_data", "get_word_index", "ORIGIN", "FILE_HASH"]

ORIGIN = "https://s3.amazonaws.com/text-datasets/reuters.npz"
FILE_HASH = "87aedbeb0cb229e378797a632c1997b6"
WORD_INDEX_ORIGIN = "https://s3.amazonaws.com/text-datasets/reuters_word_index.json"
WORD_INDEX_HASH = "4d44cc38712099c9e383dc6e5f11a921"


def load_data(path: str = "reuters.npz", num_words: int | None = None, skip_top: int = 0,
              maxlen: int | None = None, test_split: float = 0.2, seed: int = 113,
              start_char: int | None = 1, oov_char: int | None = 2, index_from: int = 3, **kwargs):
    """``(x_train, y_train), (x_test, y_test)``: object arrays of word-id lists and int topics.

    Arguments as :func:`arignote.datasets.imdb.load_data`; ``test_split`` is the fraction of the
    (shuffled, ``maxlen``-filtered) newswires put in the test set.
    """
    num_words = seq.check_kwargs(kwargs, "reuters.load_data") or num_words
    if not 0 <= test_split < 1:
        raise ValueError(f"reuters.load_data: test_split={test_split!r} must be in [0, 1)")
    where = get_file(path, origin=ORIGIN, file_hash=FILE_HASH)
    a = read_npz_objects(where, ("x", "y"))
    rng = np.random.RandomState(seed)
    xs, labels = seq.shuffled(rng, a["x"], a["y"])
    dtype = labels.dtype
    xs, labels = seq.shift_and_filter(xs, labels, start_char, index_from, maxlen)
    xs = seq.limit_vocabulary(xs, num_words, skip_top, oov_char)
    idx = int(len(xs) * (1 - test_split))
    labels = np.asarray(labels, dtype=dtype)
    return (seq.object_array(xs[:idx]), labels[:idx]), (seq.object_array(xs[idx:]), labels[idx:])


def get_word_index(path: str = "reuters_word_index.json") -> dict[str, int]:
    """The word -> rank dictionary (rank 1 = most frequent word) of the Reuters newswires."""
    return read_word_index(get_file(path, origin=WORD_INDEX_ORIGIN, file_hash=WORD_INDEX_HASH))
