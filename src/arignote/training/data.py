"""Data for the loop: in-memory arrays kept on the device, or any iterable of ``(x, y)`` batches.

Arrays are converted once (float inputs to ``floatX``, integer labels to int64), moved to the
device once when they take less than half its free memory (always on CPU, where a float32 numpy
array is used in place, without a copy), then shuffled with a device-side permutation and sliced
there: no per-batch host copies. Iterables (a ``torch.utils.data.DataLoader``, a generator) are
moved batch by batch, non-blocking from pinned memory on a GPU.

Example::

    >>> import numpy as np, torch
    >>> data = ArrayData(np.zeros((10, 3), "float32"), np.arange(10), torch.device("cpu"), torch.float32)
    >>> [len(xb) for xb, yb in data.batches(torch.arange(10), 4)]
    [4, 4, 2]
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import torch

from arignote.devices import fastpaths
from arignote.losses.weighting import Weighted
from arignote.parallel.sharding import row_range
from arignote.training.oom import batch_len, take
from arignote.training.rank_split import set_epoch
from arignote.utils.data_utils import is_sequence
from arignote.utils.enqueuers import prefetched

__all__ = ["ArrayData", "IterableData", "as_tensor", "densified", "split_validation", "fits_on_device",
           "is_array", "rows_of"]

# fraction of a GPU's free memory the training arrays may take before they stay on the host
DEVICE_FRACTION = 0.5


def is_array(obj: Any) -> bool:
    """True for numpy arrays and torch tensors (what ``fit(x, y)`` slices on the device), and for
    array-likes with ``__array__`` and ``shape`` (``utils.HDF5Matrix``, a pandas DataFrame), which
    are read into one array."""
    if isinstance(obj, (np.ndarray, torch.Tensor)):
        return True
    return hasattr(obj, "__array__") and hasattr(obj, "shape") and not hasattr(obj, "on_epoch_end")


def fits_on_device(nbytes: int, device: torch.device, free_bytes: int | None) -> bool:
    """Whether arrays of ``nbytes`` go to ``device`` once (always on CPU; GPU: < half the free memory).

    >>> fits_on_device(10**9, torch.device("cpu"), None)
    True
    >>> fits_on_device(6 * 2**30, torch.device("cuda", 0), 10 * 2**30)
    False
    """
    if device.type == "cpu":
        return True
    if free_bytes is None:
        return False
    return nbytes < DEVICE_FRACTION * free_bytes


def densified(a: Any) -> Any:
    """A scipy sparse matrix (anywhere in a list, tuple or dict) as a dense numpy array; anything else
    as it is. Keras 2.3.1 takes sparse inputs and targets in fit/evaluate/predict.

    Example::

        >>> densified([np.ones(2), {"a": 1}])
        [array([1., 1.]), {'a': 1}]
    """
    if callable(getattr(a, "toarray", None)) and hasattr(a, "nnz"):  # scipy.sparse, not imported here
        return a.toarray()
    if isinstance(a, (list, tuple)):
        return type(a)(densified(v) for v in a)
    if isinstance(a, dict):
        return {k: densified(v) for k, v in a.items()}
    return a


def as_tensor(a: Any, float_dtype: torch.dtype, name: str = "x") -> torch.Tensor:
    """A host tensor for array ``a``: floats become ``float_dtype``, integers int64, bools float.

    A numpy array that already has the right dtype is shared, not copied. A scipy sparse matrix is
    made dense (Keras 2.3.1 fits on sparse inputs and targets, densifying each batch).
    """
    t = _tensor_of(densified(a), name)
    want = _dtype_for(t, float_dtype, name)
    return t if t.dtype == want else t.to(want)


def _dtype_for(t: torch.Tensor, float_dtype: torch.dtype, name: str) -> torch.dtype:
    """What :func:`as_tensor` turns ``t``'s dtype into: floats and bools ``float_dtype``, integers int64."""
    if t.is_floating_point() or t.dtype == torch.bool:
        return float_dtype
    if t.is_complex():
        raise TypeError(f"{name} is complex; arignote trains on real numbers")
    return torch.int64


def _tensor_of(a: Any, name: str) -> torch.Tensor:
    """``a`` as a tensor of its own dtype (a numpy array shared when it can be), checked."""
    if isinstance(a, torch.Tensor):
        t = a.detach()
    else:
        arr = np.asarray(a)
        if arr.dtype == object:
            raise TypeError(f"{name} has dtype object (ragged lists or mixed types); pass a numeric array")
        if arr.dtype.kind in "US":
            raise TypeError(f"{name} holds strings ({arr.dtype}); encode them as numbers first")
        if not arr.flags.writeable:
            arr = arr.copy()  # torch.from_numpy needs a writeable buffer
        if not arr.dtype.isnative:
            arr = arr.astype(arr.dtype.newbyteorder("="))
        t = torch.from_numpy(np.ascontiguousarray(arr))
    return t


def split_validation(x: Any, y: Any, fraction: float) -> tuple[Any, Any, Any, Any]:
    """Keras's ``validation_split``: the LAST ``fraction`` of the samples, taken before shuffling
    (apply it to the sample weights too: ``split_validation(w, w, fraction)``).

    >>> split_validation(np.arange(10), np.arange(10), 0.2)[2]
    array([8, 9])
    """
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"validation_split must be in [0, 1), got {fraction!r}")
    n = len(x)
    cut = int(n * (1.0 - fraction))
    if fraction > 0 and (cut == n or cut == 0):
        raise ValueError(
            f"validation_split={fraction} of {n} samples leaves an empty training or validation set; "
            "use a larger fraction or more data")
    return x[:cut], y[:cut], x[cut:], y[cut:]


def rows_of(t: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """Rows ``idx`` (a LongTensor on ``t``'s device) of ``t``, as ``t[idx]`` gives them, the cheap way:
    ``index_select`` for a contiguous ``t`` (one copy loop; on the CPU 2.5x faster than advanced
    indexing for 32 rows of 784 floats and 5x for 128 CIFAR images, the same values and a contiguous
    result alike), advanced indexing otherwise (it keeps a channels-last tensor channels-last, which
    ``index_select`` does not).

    >>> t = torch.arange(12.0).reshape(4, 3)
    >>> rows_of(t, torch.tensor([2, 0])).tolist()
    [[6.0, 7.0, 8.0], [0.0, 1.0, 2.0]]
    """
    return torch.index_select(t, 0, idx) if t.is_contiguous() else t[idx]


class ArrayData:
    """Arrays resident on one device (or on the host when they are too big for it).

    ``batches(indices, batch_size)`` yields ``(xb, yb)`` on ``device``; ``indices`` is a LongTensor
    (the strategy's shard of the epoch) or None for the samples in order. With sample weights ``w``
    (one row per sample, :mod:`arignote.training.sample_weights`) each ``yb`` is
    :class:`~arignote.losses.weighting.Weighted` ``(y rows, w rows)``.
    """

    def __init__(self, x: Any, y: Any, device: torch.device, float_dtype: torch.dtype,
                 free_bytes: int | None = None, w: Any = None) -> None:
        xt = as_tensor(x, float_dtype, "x")
        yt = None if y is None else as_tensor(y, float_dtype, "y")
        wt = None if w is None else as_tensor(w, float_dtype, "sample_weight")
        nbytes = sum(t.numel() * t.element_size() for t in (xt, yt, wt) if t is not None)
        self.device = device
        self.on_device = fits_on_device(nbytes, device, free_bytes)
        where = device if self.on_device else torch.device("cpu")
        self.x = xt.to(where)
        self.y = None if yt is None else yt.to(where)
        self.w = None if wt is None or yt is None else wt.to(where)
        self.n = len(self.x)

    def __len__(self) -> int:
        return self.n

    def batches(self, indices: torch.Tensor | None, batch_size: int) -> Iterator[tuple[torch.Tensor, Any]]:
        x, y = self.x, self.y
        if indices is None:
            # in order: slices are views, nothing is copied
            for start in range(0, self.n, batch_size):
                xb = x[start:start + batch_size]
                yb = None if y is None else y[start:start + batch_size]
                yield self._to_device(xb, self._weighted(yb, slice(start, start + batch_size)))
            return
        indices = indices.to(self.device if self.on_device else torch.device("cpu"))  # rows_of: same device
        for start in range(0, len(indices), batch_size):
            idx = indices[start:start + batch_size]
            xb = rows_of(x, idx)
            yb = None if y is None else rows_of(y, idx)
            yield self._to_device(xb, self._weighted(yb, idx))

    def rank_batches(self, order: torch.Tensor | None, batch_size: int, world_size: int = 1,
                     rank: int = 0) -> Iterator[tuple[torch.Tensor, Any, int, int]]:
        """``(x, y, rows, global rows)``: this rank's rows of each global batch of ``batch_size``
        samples taken in ``order`` (None: in order, as views). A rank with no row of a (last, small)
        batch gets its first row as padding and ``rows=0``: the loop weights it 0 and counts nothing.

        >>> data = ArrayData(np.arange(10.0).reshape(5, 2), None, torch.device("cpu"), torch.float32)
        >>> [(x[:, 0].tolist(), rows, total) for x, _, rows, total in data.rank_batches(None, 4, 2, 1)]
        [([4.0, 6.0], 2, 4), ([8.0], 0, 1)]
        """
        x, y = self.x, self.y
        n = self.n if order is None else len(order)
        if order is not None and not self.on_device:
            order = order.cpu()
        elif order is not None:
            order = order.to(self.device)
        for start in range(0, n, batch_size):
            total = min(batch_size, n - start)
            a, b = row_range(total, world_size, rank)
            rows = b - a
            if not rows:
                a, b = 0, 1
            if order is None:  # slices are views, nothing is copied
                rows_at: Any = slice(start + a, start + b)
                xb = x[rows_at]
                yb = None if y is None else y[rows_at]
            else:
                rows_at = order[start + a:start + b]
                xb = rows_of(x, rows_at)
                yb = None if y is None else rows_of(y, rows_at)
            xb, yb = self._to_device(xb, self._weighted(yb, rows_at))
            yield xb, yb, rows, total

    def _weighted(self, yb: Any, rows: Any) -> Any:
        """``yb``, or ``Weighted((yb, the same rows of w))`` when the data has sample weights."""
        if self.w is None:
            return yb
        return Weighted((yb, self.w[rows] if isinstance(rows, slice) else rows_of(self.w, rows)))

    def _to_device(self, xb: torch.Tensor, yb: Any) -> tuple[torch.Tensor, Any]:
        if self.on_device:
            return xb, yb
        pin = self.device.type == "cuda"
        xb = (xb.pin_memory() if pin else xb).to(self.device, non_blocking=pin)
        if type(yb) is Weighted:
            yb = Weighted(self._moved(t, pin) for t in yb)
        elif yb is not None:
            yb = self._moved(yb, pin)
        return xb, yb

    def _moved(self, t: torch.Tensor, pin: bool) -> torch.Tensor:
        return (t.pin_memory() if pin else t).to(self.device, non_blocking=pin)


def _move(obj: Any, device: torch.device, float_dtype: torch.dtype, name: str) -> Any:
    if isinstance(obj, (list, tuple)) and obj and not isinstance(obj[0], (int, float)):
        return type(obj)(_move(o, device, float_dtype, name) for o in obj)
    t = _tensor_of(obj, name)
    want = _dtype_for(t, float_dtype, name)
    if t.device == device:
        return t if t.dtype == want else t.to(want)
    # a dtype that widens (uint8 images to int64, bools to float32) is converted on the
    # device after the copy, so the narrow bytes cross the bus and a loader's pinned batch is used
    # as it is; a narrowing one (float64 to float32) before it (issue 28 S4)
    widen = want.itemsize > t.dtype.itemsize
    if not widen and t.dtype != want:
        t = t.to(want)
    # a host batch bound for a GPU is pinned (unless its loader did) and copied non_blocking: the
    # copy then overlaps the previous step's kernels
    pin = fastpaths.pin_batches(device.type) and t.device.type == "cpu"
    if pin and not t.is_pinned():
        t = t.pin_memory()
    moved = t.to(device, non_blocking=pin)
    return moved if moved.dtype == want else moved.to(want)


def split_batch(batch: Any) -> tuple[Any, Any, Any]:
    """``(x, y, sample_weight)`` from a batch: ``(x, y)``, ``(x, y, sample_weight)`` (Keras 2's
    generator batches), or a dict with ``x``/``y`` (or inputs/targets) and optionally
    ``sample_weight``; the weight is None when the batch has none."""
    if isinstance(batch, dict):
        for xk, yk in (("x", "y"), ("inputs", "targets"), ("input", "target")):
            if xk in batch:
                return batch[xk], batch.get(yk), batch.get("sample_weight")
        raise ValueError(f"a dict batch needs keys 'x' and 'y', got {sorted(batch)}")
    if isinstance(batch, (tuple, list)) and len(batch) in (2, 3):
        return batch[0], batch[1], batch[2] if len(batch) == 3 else None
    if isinstance(batch, (tuple, list)) and len(batch) == 1:
        return batch[0], None, None
    if is_array(batch):  # inputs alone (what predict needs)
        return batch, None, None
    raise ValueError(
        "each batch of an iterable must be an (x, y) pair or an (x, y, sample_weight) triple; got "
        f"{type(batch).__name__}{'' if not hasattr(batch, '__len__') else f' of length {len(batch)}'}")


class IterableData:
    """Any iterable of ``(x, y)`` batches (``DataLoader``, generator, list of pairs, ``Sequence``).

    A re-iterable object (a DataLoader, a list) starts over every epoch; a one-shot iterator
    (a generator) is drawn from continuously and needs a step count (``steps_name`` names the
    argument that gives it). A Keras ``Sequence`` is *indexable*: the loop passes the order of its
    batches (shuffled, or this rank's share under data parallel), ``workers`` background threads
    (processes with ``use_multiprocessing``) fetch up to ``max_queue_size`` batches ahead, and
    ``on_epoch_end()`` runs after each pass.
    ``targets=True``: every batch must carry ``y`` (training, evaluation).
    """

    def __init__(self, data: Iterable, device: torch.device, float_dtype: torch.dtype,
                 steps_per_epoch: int | None = None, *, name: str = "x", targets: bool = True,
                 steps_name: str = "steps_per_epoch", workers: int = 0, max_queue_size: int = 10,
                 use_multiprocessing: bool = False, shares: Any = None, user_sharded: bool = False) -> None:
        self.data = data
        self.device = device
        self.float_dtype = float_dtype
        self.name, self.targets = name, targets
        self.indexable = is_sequence(data)
        self.one_shot = not self.indexable and iter(data) is data
        if self.one_shot and steps_per_epoch is None:
            raise ValueError(
                f"{name} is a generator/iterator, which gives no epoch length: pass {steps_name}=N "
                "(or pass a re-iterable object: a Sequence, a torch DataLoader or a list of batches)")
        self.steps_per_epoch = steps_per_epoch
        self.workers, self.max_queue_size = int(workers), max(1, int(max_queue_size))
        self.use_multiprocessing = bool(use_multiprocessing)  # workers are processes (a Sequence only)
        if self.use_multiprocessing and self.workers > 0 and not self.indexable:
            warnings.warn(f"{name}: use_multiprocessing=True applies to a Sequence; this "
                          f"{type(data).__name__} is read in the main process (Keras 2 gave each worker "
                          "process a copy of a generator, which repeats its data). For worker processes "
                          "pass a Sequence, or a torch DataLoader(dataset, batch_size, num_workers=N)",
                          UserWarning, stacklevel=2)
        self._it: Iterator | None = None
        self.shares = shares  # (rows, global rows) per batch, from a rank-splitting batch sampler
        self.user_sharded = user_sharded
        self.check: Any = None  # check(x, y, step) on each batch before it moves (batch_checks.for_model)
        # weigh(y, sample_weight) -> weights or None: the batch's weights (training.sample_weights)
        self.weigh: Any = None
        # pack(x, y) -> (x, y): several inputs/outputs of a functional model as one array each
        self.pack: Any = None
        try:
            self.length: int | None = len(data)  # type: ignore[arg-type]
        except TypeError:
            self.length = None

    def __len__(self) -> int:
        if self.indexable:  # a Sequence may change its length after an epoch (Keras 2.3.1 recounts)
            return len(self.data)
        if self.length is None:
            raise TypeError(f"{self.name} has no length")
        return self.length

    def __bool__(self) -> bool:  # a data source is there even when its length is unknown
        return True

    def batches(self, order: Any = None, batch_size: int | None = None,
                epoch: int | None = None) -> Iterator[tuple[Any, Any]]:
        """The epoch's batches on the device. ``order``: batch indices of an indexable Sequence
        (None: all, in order); ignored for other iterables. ``batch_size`` is unused (the data
        makes its own batches); it keeps the signature of :meth:`ArrayData.batches`. ``epoch``
        reaches a DataLoader's ``DistributedSampler`` (its shuffle depends on it)."""
        if epoch is not None:
            set_epoch(self.data, epoch)
        for step, batch in enumerate(self._source(order)):
            yield self._moved(batch, step)
            if not self.indexable and self.steps_per_epoch is not None and step + 1 >= self.steps_per_epoch:
                return

    def rank_batches(self, order: Any = None, world_size: int = 1, rank: int = 0,
                     epoch: int | None = None) -> Iterator[tuple[Any, Any, int, int]]:
        """``(x, y, rows, global rows)``: this rank's rows of each global batch (every rank reads
        the same batches and keeps its rows; a DataLoader rebuilt by
        :mod:`~arignote.training.rank_split` already loads only this rank's rows). ``rows=0``: a
        padding row (see :meth:`ArrayData.rank_batches`)."""
        if epoch is not None:
            set_epoch(self.data, epoch)
        for step, batch in enumerate(self._source(order)):
            x, y = self._checked(batch, step)
            if self.shares is not None:  # the loader's batch sampler split it: (rows, global rows)
                rows, total = self.shares.popleft()
            elif self.user_sharded:  # the user's DistributedSampler: every rank's batch is its own
                rows = batch_len(x)
                total = rows * world_size
            else:
                total = batch_len(x)
                a, b = row_range(total, world_size, rank)
                rows = b - a
                if world_size > 1:
                    a, b = (a, b) if rows else (0, 1)
                    x, y = take(x, a, b), take(y, a, b)
            yield (_move(x, self.device, self.float_dtype, "x"),
                   None if y is None else _move(y, self.device, self.float_dtype, "y"), rows, total)
            if not self.indexable and self.steps_per_epoch is not None and step + 1 >= self.steps_per_epoch:
                return

    def _source(self, order: Any) -> Iterator[Any]:
        if self.indexable:
            return self._indexed(order)
        source = self._it if self.one_shot and self._it is not None else iter(self.data)
        if self.one_shot:
            self._it = source
        return source

    def _checked(self, batch: Any, step: int) -> tuple[Any, Any]:
        try:
            x, y, sample_weight = split_batch(batch)
        except ValueError as exc:
            raise ValueError(f"batch {step} of {self.name}: {exc}") from None
        if y is None and self.targets:
            raise ValueError(f"batch {step} of {self.name} has no targets: yield (x, y) pairs")
        if self.check is not None:
            self.check(x, y, step)
        weights = None
        if y is not None and self.targets and (sample_weight is not None or self.weigh is not None):
            if self.weigh is None:
                raise ValueError(f"batch {step} of {self.name} has sample weights, which this use of the "
                                 "data does not take")
            try:
                weights = self.weigh(y, sample_weight)
            except (ValueError, TypeError) as exc:
                raise ValueError(f"batch {step} of {self.name}: {exc}") from None
        if self.pack is not None:
            x, y = self.pack(x, y if self.targets else None)
        return x, (y if weights is None else Weighted((y, weights)))

    def first(self) -> tuple[Any, Any]:
        """One batch to look at (the memory plan), without starting or ending an epoch of a Sequence."""
        if self.indexable:
            peek = getattr(self.data, "peek", None)  # a PeekedSequence: batch 0 read once in all
            return self._moved(peek() if callable(peek) else self.data[0], 0)
        return next(iter(self.batches()))

    def _moved(self, batch: Any, step: int) -> tuple[Any, Any]:
        x, y = self._checked(batch, step)
        return _move(x, self.device, self.float_dtype, "x"), (
            None if y is None else _move(y, self.device, self.float_dtype, "y"))

    def _indexed(self, order: Any) -> Iterator[Any]:
        """The batches of a Sequence in ``order`` (None: all, or the first ``steps_per_epoch``);
        ``on_epoch_end()`` runs once the pass is complete."""
        seq = self.data
        indices: Any = range(len(seq)) if order is None else [int(i) for i in order]
        if order is None and self.steps_per_epoch is not None:
            indices = indices[:self.steps_per_epoch]
        if self.workers > 0:
            yield from prefetched(seq, indices, self.workers, self.max_queue_size, self.use_multiprocessing)
        else:
            for i in indices:
                yield seq[i]
        seq.on_epoch_end()
