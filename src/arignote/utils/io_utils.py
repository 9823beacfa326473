"""Keras 2 ``utils.io_utils``: ``HDF5Matrix`` (an HDF5 dataset used like a numpy array, with h5py),
``ask_to_proceed_with_overwrite``, and ``save_to_binary_h5py`` / ``load_from_binary_h5py`` (an HDF5
file built or read in memory, as bytes on a stream). Keras's internal ``H5Dict`` is not provided.

Indexing reads only the rows asked for (``x[10:20]``, ``x[5]``, ``x[[1, 4]]``), offset by
``start``; ``normalizer`` is applied to every read. ``fit``/``predict`` take it as ``x`` or ``y``
(``np.asarray(matrix)`` reads rows ``start:end`` once).

Example::

    >>> import h5py, numpy as np, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "d.h5")
    >>> with h5py.File(path, "w") as f: _ = f.create_dataset("x", data=np.arange(10.0).reshape(5, 2))
    >>> m = HDF5Matrix(path, "x", start=1, end=4, normalizer=lambda a: a / 2)
    >>> m.shape, m[0].tolist(), len(m)
    ((3, 2), [1.0, 1.5], 3)
"""

from __future__ import annotations

import importlib
import io
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from arignote.errors import KerasNameMissing

__all__ = ["HDF5Matrix", "ask_to_proceed_with_overwrite", "save_to_binary_h5py", "load_from_binary_h5py",
           "H5Dict"]


def _h5py() -> Any:
    try:
        return importlib.import_module("h5py")
    except ImportError:
        raise ImportError("HDF5Matrix needs h5py (an arignote dependency): pip install h5py") from None


class HDF5Matrix:
    """Rows ``start:end`` of dataset ``dataset`` in the HDF5 file ``datapath``, read on indexing."""

    refs: dict[str, Any] = {}  # open files, shared by the matrices of one file (as Keras 2)

    def __init__(self, datapath: str, dataset: str, start: int = 0, end: int | None = None,
                 normalizer: Callable[[np.ndarray], np.ndarray] | None = None) -> None:
        h5py = _h5py()
        handle = self.refs.get(datapath)
        if handle is None or not handle.id.valid:
            try:
                handle = h5py.File(datapath, "r")
            except OSError as exc:
                raise OSError(f"HDF5Matrix: cannot open {datapath!r} as an HDF5 file ({exc})") from None
            self.refs[datapath] = handle
        if dataset not in handle:
            raise KeyError(f"HDF5Matrix: {datapath!r} has no dataset {dataset!r} "
                           f"(it has: {', '.join(sorted(handle.keys())) or 'none'})")
        self.data = handle[dataset]
        total = self.data.shape[0]
        self.start = int(start)
        self.end = total if end is None else int(end)
        if not 0 <= self.start <= self.end <= total:
            raise ValueError(f"HDF5Matrix: start={start}, end={end} must satisfy "
                             f"0 <= start <= end <= {total} (rows of {dataset!r})")
        self.normalizer = normalizer
        first = self.data[self.start:self.start + 1] if self.end > self.start else self.data[0:1]
        first = normalizer(first) if normalizer is not None else first
        self._base_shape = tuple(first.shape[1:])
        self._base_dtype = first.dtype

    def __len__(self) -> int:
        return self.end - self.start

    def _rows(self, key: Any) -> Any:
        n = len(self)
        if isinstance(key, slice):
            if key.stop is not None and key.stop > n:  # Keras 2.3.1: a slice past the end is an error
                raise IndexError(f"HDF5Matrix slice {key.start}:{key.stop} goes past its {n} rows")
            first, stop, step = key.indices(n)
            if step != 1:
                raise IndexError("HDF5Matrix: slices with a step are not supported; index with a list")
            return slice(self.start + first, self.start + max(first, stop))
        if isinstance(key, (int, np.integer)):
            k = int(key) + n if key < 0 else int(key)
            if not 0 <= k < n:
                raise IndexError(f"HDF5Matrix index {key} is out of range for {n} rows")
            return self.start + k
        idx = np.asarray(key)
        if idx.dtype == bool:
            idx = np.flatnonzero(idx)
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            raise IndexError(f"HDF5Matrix indices must be in [0, {n}); got {idx.min()}..{idx.max()}")
        return idx + self.start

    def __getitem__(self, key: Any) -> np.ndarray:
        rows = self._rows(key)
        if isinstance(rows, np.ndarray):
            # h5py needs increasing, unique indices: read sorted, then put back in the asked order
            order = np.argsort(rows, kind="stable")
            unique, inverse = np.unique(rows[order], return_inverse=True)
            out = self.data[unique.tolist()][inverse]
            values = np.empty_like(out)
            values[order] = out
        else:
            values = self.data[rows]
        return self.normalizer(values) if self.normalizer is not None else values

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        values = self[:]
        return values.astype(dtype) if dtype is not None else values

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self), *self._base_shape)

    @property
    def dtype(self) -> np.dtype:
        return self._base_dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))


def ask_to_proceed_with_overwrite(filepath: str) -> bool:
    """Keras 2's prompt ``[WARNING] <filepath> already exists - overwrite? [y/n]``: True for ``y``,
    False for ``n``. Where nobody can answer (stdin is not a terminal: a batch job, a notebook
    kernel), it raises instead of waiting forever; pass ``overwrite=True`` there."""
    if not sys.stdin or not sys.stdin.isatty():
        raise FileExistsError(f"{filepath} already exists and overwrite=False, and there is no terminal to "
                              "ask whether to overwrite it: pass overwrite=True or another file name")
    answer = input(f"[WARNING] {filepath} already exists - overwrite? [y/n]").strip().lower()
    while answer not in ("y", "n"):
        answer = input('Enter "y" (overwrite) or "n" (cancel).').strip().lower()
    if answer == "n":
        return False
    print("[TIP] Next time specify overwrite=True!")
    return True


def save_to_binary_h5py(save_function: Callable[[Any], Any], stream: Any) -> Any:
    """Call ``save_function`` on an in-memory ``h5py.File``, then write the file's bytes to ``stream``
    (anything with ``write(bytes)``, e.g. ``io.BytesIO``); returns what ``save_function`` returned."""
    h5py = _h5py()
    with h5py.File("in-memory-h5py", "w", driver="core", backing_store=False) as h5file:
        value = save_function(h5file)
        h5file.flush()
        image = h5file.id.get_file_image()
    stream.write(image)
    return value


def load_from_binary_h5py(load_function: Callable[[Any], Any], stream: Any) -> Any:
    """Call ``load_function`` on an ``h5py.File`` opened in memory from ``stream.read()`` (the bytes of
    an HDF5 file); returns what ``load_function`` returned."""
    h5py = _h5py()
    with h5py.File(io.BytesIO(stream.read()), "r") as h5file:
        return load_function(h5file)


class H5Dict:
    """Keras 2.3.1's internal dict-like view of an HDF5 file, group or dict (what its saving code wrote
    through). arignote does not provide it: use ``h5py.File``/``Group`` directly, or
    ``model.save``/``arignote.models.load_model``, which also take an open ``h5py.File``/``Group``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise KerasNameMissing(
            "arignote.utils.io_utils.H5Dict (Keras 2.3.1's internal dict view of an HDF5 group) is "
            "deliberately not provided by arignote; use h5py.File/Group directly, or model.save(h5file) "
            "and arignote.models.load_model(h5file)")
