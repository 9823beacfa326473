"""IMDB movie-review sentiment, as ``keras.datasets.imdb``: 25,000 + 25,000 reviews as word ids.

Reads Keras's ``imdb.npz`` (object arrays of word-id lists ``x_train``, ``y_train``, ``x_test``,
``y_test``) and ``imdb_word_index.json`` through :func:`arignote.utils.data_utils.get_file`
(``~/.keras/datasets`` and arignote's dataset directories), with Keras's hashes. The lists are
unpickled by a restricted unpickler (lists, numbers, numpy arrays only).

Example::

    >>> from arignote.datasets import imdb
    >>> (x_train, y_train), (x_test, y_test) = imdb.load_data(num_words=10000)   # doctest: +SKIP
    >>> x_train.shape, x_train.dtype, x_train[0][:2], y_train.dtype                 # doctest: +SKIP
    ((25000,), dtype('O'), [1, 14], dtype('int64'))
"""

from __future__ import annotations

import json

import numpy as np

from arignote.datasets import _sequences as seq
from arignote.datasets._files import DatasetError
from arignote.datasets._formats import read_npz_objects
from arignote.datasets._get_file import get_file

__all__ = ["load_data", "get_word_index", "ORIGIN", "FILE_HASH"]

ORIGIN = "https://s3.amazonaws.com/text-datasets/imdb.npz"
FILE_HASH = "599dadb1135973df5b59232a0e9a887c"
WORD_INDEX_ORIGIN = "https://s3.amazonaws.com/text-datasets/imdb_word_index.json"
WORD_INDEX_HASH = "bfafd718b763782e994055a2d397834f"


def load_data(path: str = "imdb.npz", num_words: int | None = None, skip_top: int = 0,
              maxlen: int | None = None, seed: int = 113, start_char: int | None = 1,
              oov_char: int | None = 2, index_from: int = 3, **kwargs):
    """``(x_train, y_train), (x_test, y_test)``: 1-D object arrays of word-id lists, int labels 0/1.

    Each review starts with ``start_char``; word ``i`` of the index is id ``i + index_from``;
    ``num_words`` keeps the most frequent ids (others become ``oov_char``), ``skip_top`` drops the
    most frequent ones, ``maxlen`` drops reviews of ``maxlen`` ids or more, ``seed`` shuffles.
    With ``maxlen``, train and test are filtered each on its own (Keras 2.3.1 split the filtered
    concatenation at the unfiltered train size, moving test reviews into train; tf.keras fixed it).
    """
    num_words = seq.check_kwargs(kwargs, "imdb.load_data") or num_words
    where = get_file(path, origin=ORIGIN, file_hash=FILE_HASH)
    a = read_npz_objects(where, ("x_train", "y_train", "x_test", "y_test"))
    rng = np.random.RandomState(seed)
    x_train, y_train = seq.shuffled(rng, a["x_train"], a["y_train"])
    x_test, y_test = seq.shuffled(rng, a["x_test"], a["y_test"])
    train = seq.shift_and_filter(x_train, y_train, start_char, index_from, maxlen)
    test = seq.shift_and_filter(x_test, y_test, start_char, index_from, maxlen)
    if not train[0] and not test[0]:
        raise ValueError(f"After filtering for sequences shorter than maxlen={maxlen}, no sequence was kept. "
                         "Increase maxlen.")
    xs = seq.limit_vocabulary(train[0] + test[0], num_words, skip_top, oov_char)
    n = len(train[0])
    return ((seq.object_array(xs[:n]), np.asarray(train[1], dtype=y_train.dtype)),
            (seq.object_array(xs[n:]), np.asarray(test[1], dtype=y_test.dtype)))


def get_word_index(path: str = "imdb_word_index.json") -> dict[str, int]:
    """The word -> rank dictionary (rank 1 = most frequent word) of the IMDB reviews."""
    where = get_file(path, origin=WORD_INDEX_ORIGIN, file_hash=WORD_INDEX_HASH)
    return read_word_index(where)


def read_word_index(where: str) -> dict[str, int]:
    try:
        with open(where, encoding="utf-8") as fh:
            index = json.load(fh)
    except (OSError, ValueError) as exc:
        raise DatasetError(f"{where} cannot be read as a JSON word index ({exc}); delete it and load again") \
            from None
    if not isinstance(index, dict):
        raise DatasetError(f"{where} is not a word index (a JSON object word -> id)")
    return index
