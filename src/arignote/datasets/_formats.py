"""Readers for the official dataset file formats: idx (MNIST, Fashion-MNIST), Keras's mnist.npz,
and CIFAR-10's Python pickles, unpickled without running code.

Example::

    >>> import io, pickle, numpy as np
    >>> blob = pickle.dumps({b"data": np.zeros((1, 3072), np.uint8), b"labels": [3]}, protocol=2)
    >>> safe_unpickle(io.BytesIO(blob), "doc")[b"labels"]
    [3]
"""

from __future__ import annotations

import gzip
import io
import pickle
import zipfile
from typing import IO, Any

import numpy as np

from arignote.datasets._files import DatasetError

__all__ = ["read_idx", "read_npz", "read_npz_objects", "safe_unpickle"]

_IDX_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path: str) -> np.ndarray:
    """An idx file (``train-images-idx3-ubyte`` or its ``.gz``) as a numpy array of its dims.

    Layout (LeCun's MNIST page): two zero bytes, a type code (0x08 = ubyte), the number of dims,
    each dim as a big-endian int32, then the values.
    """
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as fh:
            data = fh.read()
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise DatasetError(f"{path} cannot be read as an idx file ({exc}); "
                           "delete it and load again") from None
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _IDX_TYPES:
        raise DatasetError(f"{path} is not an idx file (bad magic number {data[:4].hex()}); "
                           "delete or replace it")
    ndim = data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise DatasetError(f"{path} is truncated (header cut short); delete it and load again")
    dims = tuple(int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
    dtype = np.dtype(_IDX_TYPES[data[2]])
    expected = int(np.prod(dims)) * dtype.itemsize
    if len(data) - header != expected:
        raise DatasetError(f"{path} is truncated or damaged: dims {dims} need {expected} bytes of values, "
                           f"the file has {len(data) - header}; delete it and load again")
    array = np.frombuffer(data, dtype=dtype, offset=header).reshape(dims)
    return array.astype(dtype.newbyteorder("="), copy=True)


def read_npz(path: str, keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The arrays ``keys`` of an ``.npz`` file, loaded without pickle (``allow_pickle=False``)."""
    try:
        with np.load(path, allow_pickle=False) as f:
            missing = [k for k in keys if k not in f.files]
            if missing:
                raise DatasetError(f"{path} lacks arrays {missing} (it has {f.files}); it is not Keras's "
                                   "mnist.npz: delete or replace it")
            return {k: np.asarray(f[k]) for k in keys}
    except (OSError, ValueError, EOFError) as exc:
        raise DatasetError(f"{path} cannot be read as an npz file ({exc}); "
                           "delete it and load again") from None


class _RefusedGlobal(pickle.UnpicklingError):
    """A dataset pickle asked for a global outside the allow-list."""


class _RestrictedUnpickler(pickle.Unpickler):
    """Unpickles plain data and numpy arrays only: any other global (a class, a function such as
    ``os.system``) is refused, so a tampered file cannot run code."""

    # What CIFAR-10's dicts need: numpy's array rebuild from (dtype, raw bytes), and ``_codecs.encode``
    # that Python 3 pickles use for bytes at protocol 2. Older numpy names ``numpy.core``.
    _ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("_codecs", "encode"),
    }

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in self._ALLOWED:
            raise _RefusedGlobal(f"global '{module}.{name}' is not allowed in a dataset file")
        if module == "_codecs":
            import codecs

            return codecs.encode
        if name in ("_reconstruct", "scalar"):
            multiarray = getattr(np, "_core", None) or np.core
            return getattr(multiarray.multiarray, name)
        return getattr(np, name)


def safe_unpickle(fh: IO[bytes], where: str) -> Any:
    """Unpickle a CIFAR-style batch (Python 2 pickles read with ``encoding='bytes'``) from ``fh``."""
    try:
        return _RestrictedUnpickler(fh, encoding="bytes").load()
    except _RefusedGlobal as exc:
        raise DatasetError(f"{where} refused: {exc}; it is not an official CIFAR-10 batch file") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError,
            OSError) as exc:
        raise DatasetError(f"{where} is truncated or damaged ({type(exc).__name__}: {exc}); "
                           "delete it and load again") from None


def unpickle_bytes(blob: bytes, where: str) -> Any:
    """:func:`safe_unpickle` for bytes in memory (a member read from the .tar.gz)."""
    return safe_unpickle(io.BytesIO(blob), where)


def read_npz_objects(path: str, keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The arrays ``keys`` of an ``.npz`` whose arrays may hold Python objects (Keras's imdb.npz and
    reuters.npz store lists of word ids), unpickled by the restricted unpickler (numpy arrays, lists
    and numbers only) instead of ``np.load(allow_pickle=True)``, which would run any code in the file."""
    out = {}
    try:
        with zipfile.ZipFile(path) as z:
            names = {n[:-4]: n for n in z.namelist() if n.endswith(".npy")}
            missing = [k for k in keys if k not in names]
            if missing:
                raise DatasetError(f"{path} lacks arrays {missing} (it has {sorted(names)}); "
                                   "delete or replace it")
            for k in keys:
                with z.open(names[k]) as fh:
                    blob = fh.read()
                out[k] = _npy_from_bytes(blob, f"{path}:{k}")
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise DatasetError(f"{path} cannot be read as an npz file ({exc}); "
                           "delete it and load again") from None
    return out


def _npy_from_bytes(blob: bytes, where: str) -> np.ndarray:
    fh = io.BytesIO(blob)
    try:
        version = np.lib.format.read_magic(fh)
        read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                       else np.lib.format.read_array_header_2_0)
        shape, fortran, dtype = read_header(fh)
    except ValueError as exc:
        raise DatasetError(f"{where} is not a .npy array ({exc}); delete or replace the file") from None
    if not dtype.hasobject:
        return np.load(io.BytesIO(blob), allow_pickle=False)
    try:
        array = _RestrictedUnpickler(fh, encoding="latin1").load()
    except _RefusedGlobal as exc:
        raise DatasetError(f"{where} refused: {exc}; it is not an official Keras dataset file") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError,
            KeyError) as exc:
        raise DatasetError(f"{where} is truncated or damaged ({type(exc).__name__}: {exc}); "
                           "delete it and load again") from None
    array = np.asarray(array, dtype=object) if not isinstance(array, np.ndarray) else array
    if array.shape != tuple(shape):
        raise DatasetError(f"{where}: the pickled array has shape {array.shape}, the header says {shape}")
    return array
