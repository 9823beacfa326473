"""Keras 2 ``preprocessing.sequence``: ``pad_sequences``, ``skipgrams``, ``make_sampling_table``,
``TimeseriesGenerator`` (same arguments, defaults, shapes and dtypes as keras_preprocessing 1.1).

Example::

    >>> pad_sequences([[1, 2, 3], [4]], maxlen=2)
    array([[2, 3],
           [0, 4]], dtype=int32)
    >>> pad_sequences([[1], [2, 3]], padding="post", value=9).tolist()
    [[1, 9], [2, 3]]
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence as SequenceABC
from typing import Any

import numpy as np

from arignote.utils.data_utils import Sequence

__all__ = ["pad_sequences", "make_sampling_table", "skipgrams", "TimeseriesGenerator",
           "timeseries_generator_from_json"]

_SIDES = ("pre", "post")


def pad_sequences(sequences: Any, maxlen: int | None = None, dtype: Any = "int32", padding: str = "pre",
                  truncating: str = "pre", value: Any = 0.0) -> np.ndarray:
    """``(len(sequences), maxlen, *item_shape)`` array: each sequence cut to its last (``truncating=
    'pre'``) or first (``'post'``) ``maxlen`` items and filled with ``value`` before (``padding='pre'``)
    or after it. ``maxlen`` defaults to the longest sequence; ``dtype=object`` pads strings."""
    if padding not in _SIDES:
        raise ValueError(f'Padding type "{padding}" not understood: use "pre" or "post"')
    if truncating not in _SIDES:
        raise ValueError(f'Truncating type "{truncating}" not understood: use "pre" or "post"')
    if not hasattr(sequences, "__len__"):
        raise ValueError("pad_sequences: `sequences` must be a list of sequences, got "
                         f"{type(sequences).__name__}")
    lengths = []
    for s in sequences:
        if not hasattr(s, "__len__"):
            raise ValueError(f"pad_sequences: `sequences` must be a list of iterables; found {s!r}")
        lengths.append(len(s))
    if maxlen is None:
        maxlen = max(lengths, default=0)
    item_shape: tuple[int, ...] = next((np.asarray(s).shape[1:] for s in sequences if len(s)), ())
    text_dtype = np.issubdtype(np.dtype(dtype), np.str_) if dtype is not object else True
    if isinstance(value, str) and not text_dtype:
        raise ValueError(f"pad_sequences: dtype {dtype} cannot hold the padding value {value!r}; "
                         "pass dtype=object for variable-length strings")
    out = np.full((len(sequences), maxlen, *item_shape), value, dtype=dtype)
    if maxlen == 0:
        return out
    for i, s in enumerate(sequences):
        if not len(s):
            continue
        kept = np.asarray(s[-maxlen:] if truncating == "pre" else s[:maxlen], dtype=dtype)
        if kept.shape[1:] != item_shape:
            raise ValueError(f"pad_sequences: the items of sequence {i} have shape {kept.shape[1:]}, "
                             f"the first non-empty sequence's have {item_shape}")
        if padding == "post":
            out[i, :len(kept)] = kept
        else:
            out[i, maxlen - len(kept):] = kept
    return out


def _remove_long_seq(maxlen: int, seq: list, label: list) -> tuple[list, list]:
    """Keras 2.3.1's ``preprocessing.sequence._remove_long_seq`` (published dataset code imports it):
    the sequences shorter than ``maxlen`` and their labels.

    >>> _remove_long_seq(3, [[1], [1, 2, 3], [4, 5]], ["a", "b", "c"])
    ([[1], [4, 5]], ['a', 'c'])
    """
    kept = [(x, y) for x, y in zip(seq, label) if len(x) < maxlen]
    return [x for x, _ in kept], [y for _, y in kept]


def make_sampling_table(size: int, sampling_factor: float = 1e-5) -> np.ndarray:
    """Probability of keeping the word of each rank (0..size-1) in :func:`skipgrams`: word2vec's
    ``min(1, sqrt(f / sampling_factor) / (f / sampling_factor))`` with Zipf's law for the frequency
    ``f`` of rank ``r``: ``1 / (r (ln r + gamma) + 1/2 - 1/(12 r))`` (rank 0 counted as rank 1)."""
    rank = np.arange(size, dtype=np.float64)
    rank[:1] = 1
    inverse_frequency = rank * (np.log(rank) + 0.577) + 0.5 - 1.0 / (12.0 * rank)
    scaled = sampling_factor * inverse_frequency
    return np.minimum(1.0, scaled / np.sqrt(scaled))


def skipgrams(sequence: SequenceABC[int], vocabulary_size: int, window_size: int = 4,
              negative_samples: float = 1.0, shuffle: bool = True, categorical: bool = False,
              sampling_table: Any = None, seed: int | None = None) -> tuple[list[list[int]], list[Any]]:
    """``(couples, labels)``: ``[word, context]`` pairs within ``window_size`` labelled 1, plus
    ``negative_samples`` times as many ``[word, random word in 1..vocabulary_size-1]`` labelled 0
    (``[0, 1]`` / ``[1, 0]`` when ``categorical``). Index 0 is a non-word and never paired; with a
    ``sampling_table`` a word of rank ``i`` is kept with probability ``sampling_table[i]``.
    ``seed`` makes the draws and the shuffle reproducible (a private RNG: Python's global
    ``random`` state is left alone)."""
    rng = random.Random(seed)
    couples: list[list[int]] = []
    for i, wi in enumerate(sequence):
        if not wi:
            continue
        if sampling_table is not None and sampling_table[wi] < rng.random():
            continue
        for j in range(max(0, i - window_size), min(len(sequence), i + window_size + 1)):
            if j != i and sequence[j]:
                couples.append([wi, sequence[j]])
    positive = len(couples)
    labels: list[Any] = [[0, 1] if categorical else 1] * positive
    if negative_samples > 0 and positive:
        n_negative = int(positive * negative_samples)
        words = [c[0] for c in couples]
        rng.shuffle(words)
        couples += [[words[k % len(words)], rng.randint(1, vocabulary_size - 1)] for k in range(n_negative)]
        labels += [[1, 0] if categorical else 0] * n_negative
    if shuffle:
        order = list(range(len(couples)))
        rng.shuffle(order)
        couples = [couples[k] for k in order]
        labels = [labels[k] for k in order]
    return couples, labels


class TimeseriesGenerator(Sequence):
    """Batches of windows over a time series: sample ``k`` of batch ``b`` is
    ``data[row - length:row:sampling_rate]`` with target ``targets[row]``, for rows from
    ``start_index + length`` to ``end_index`` (default ``len(data) - 1``) every ``stride`` steps.

    ``shuffle=True`` draws ``batch_size`` random rows per batch; ``reverse=True`` flips time in
    each sample. A :class:`arignote.utils.Sequence`: ``fit(gen)`` takes it directly.

    Example::

        >>> import numpy as np
        >>> gen = TimeseriesGenerator(np.arange(10), np.arange(10), length=3, batch_size=2)
        >>> len(gen), gen[0][0].tolist(), gen[0][1].tolist()
        (4, [[0, 1, 2], [1, 2, 3]], [3, 4])
    """

    def __init__(self, data: Any, targets: Any, length: int, sampling_rate: int = 1, stride: int = 1,
                 start_index: int = 0, end_index: int | None = None, shuffle: bool = False,
                 reverse: bool = False, batch_size: int = 128) -> None:
        if len(data) != len(targets):
            raise ValueError(f"Data and targets have to be of same length. Data length is {len(data)} "
                             f"while target length is {len(targets)}")
        for name, v in (("length", length), ("sampling_rate", sampling_rate), ("stride", stride),
                        ("batch_size", batch_size)):
            if not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"TimeseriesGenerator: {name}={v!r} must be a whole number >= 1")
        self.data, self.targets = data, targets
        self.length, self.sampling_rate, self.stride = length, sampling_rate, stride
        self.start_index = start_index + length
        self.end_index = len(data) - 1 if end_index is None else end_index
        self.shuffle, self.reverse, self.batch_size = shuffle, reverse, batch_size
        if self.start_index > self.end_index:
            raise ValueError(f"`start_index+length={self.start_index} > end_index={self.end_index}` is "
                             "disallowed, as no part of the sequence would be left to be used as "
                             "current step.")

    def __len__(self) -> int:
        span = self.batch_size * self.stride
        return (self.end_index - self.start_index + span) // span

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        if self.shuffle:
            rows = np.random.randint(self.start_index, self.end_index + 1, size=self.batch_size)
        else:
            if not 0 <= index < len(self):
                raise IndexError(f"TimeseriesGenerator has {len(self)} batches; "
                                 f"index {index} is out of range")
            first = self.start_index + self.batch_size * self.stride * index
            last = min(first + self.batch_size * self.stride, self.end_index + 1)
            rows = np.arange(first, last, self.stride)
        samples = np.array([self.data[r - self.length:r:self.sampling_rate] for r in rows])
        targets = np.array([self.targets[r] for r in rows])
        return (samples[:, ::-1, ...] if self.reverse else samples), targets

    def get_config(self) -> dict[str, Any]:
        """The constructor arguments, with ``data``/``targets`` as JSON strings (Keras's layout)."""
        def dumped(v: Any, what: str) -> str:
            try:
                return json.dumps(v.tolist() if isinstance(v, np.ndarray) else v)
            except TypeError:
                raise TypeError(f"TimeseriesGenerator.get_config: {what} is not JSON serializable") from None

        return {"data": dumped(self.data, "data"), "targets": dumped(self.targets, "targets"),
                "length": self.length, "sampling_rate": self.sampling_rate, "stride": self.stride,
                "start_index": self.start_index, "end_index": self.end_index, "shuffle": self.shuffle,
                "reverse": self.reverse, "batch_size": self.batch_size}

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps({"class_name": type(self).__name__, "config": self.get_config()}, **kwargs)


def timeseries_generator_from_json(json_string: str) -> TimeseriesGenerator:
    """The generator saved by :meth:`TimeseriesGenerator.to_json`."""
    cfg = dict(json.loads(json_string).get("config") or {})
    cfg["data"] = json.loads(cfg.pop("data"))
    cfg["targets"] = json.loads(cfg.pop("targets"))
    # get_config stores start_index + length (as Keras does); the constructor adds length again
    cfg["start_index"] = cfg["start_index"] - cfg["length"]
    return TimeseriesGenerator(**cfg)
