"""Atomic, checksummed checkpoint files that load with ``torch.load(weights_only=True)``.

A checkpoint is a small dict saved with ``torch.save``::

    {"format": "arignote-checkpoint/1", "sha256": "<hex of payload>", "payload": uint8 tensor}

where ``payload`` holds the ``torch.save`` bytes of the user's object. The outer file is written to a
temporary file in the same directory, flushed, fsync'ed, renamed over the target with ``os.replace``
and the directory is fsync'ed, so a crash leaves either the old file or the new one, never half of
one. :func:`load` checks the format and the checksum before unpickling the payload (again with
``weights_only=True``), so a truncated, corrupt or foreign file raises :class:`CheckpointError`
naming the file and what is wrong.

Example::

    >>> import tempfile, os, torch
    >>> from arignote import checkpoint
    >>> path = os.path.join(tempfile.mkdtemp(), "w.ckpt")
    >>> checkpoint.save(path, {"w": torch.ones(2)})
    >>> checkpoint.load(path)["w"].tolist()
    [1.0, 1.0]
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import pickle
import tempfile
import zipfile
from collections.abc import Callable
from typing import IO, Any

import torch

from arignote.errors import CheckpointError

__all__ = ["FORMAT", "CheckpointError", "save", "load", "is_checkpoint", "atomic_write_bytes"]

FORMAT = "arignote-checkpoint/1"


def _fsync_dir(directory: str) -> None:
    # Make the rename itself durable. Some platforms (Windows) cannot open a directory: skip there.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: temp file in the same directory, fsync, rename, fsync dir.

    Example::

        >>> atomic_write_bytes("/tmp/arignote-doc.bin", b"abc")
    """
    _atomic_write(path, lambda fh: fh.write(data))


def _atomic_write(path: str | os.PathLike[str], write: Callable[[IO[bytes]], Any]) -> None:
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(directory)


def save(path: str | os.PathLike[str], obj: Any) -> None:
    """Save ``obj`` (tensors, numpy arrays, state dicts, numbers, strings, lists, dicts) to ``path``
    atomically. Objects that ``torch.load(weights_only=True)`` cannot rebuild (arbitrary classes)
    are refused by :func:`load`, so keep checkpoints to plain data.

    Example::

        >>> save("/tmp/arignote-doc.ckpt", {"epoch": 3})
    """
    inner = io.BytesIO()
    torch.save(obj, inner)
    raw = inner.getbuffer()  # no copy: the payload tensor and the hash read the same memory
    wrapper = {
        "format": FORMAT,
        "sha256": hashlib.sha256(raw).hexdigest(),
        "payload": torch.frombuffer(raw, dtype=torch.uint8),
    }
    _atomic_write(path, lambda fh: torch.save(wrapper, fh))  # streamed into the temporary file


# What torch.load raises on a damaged or foreign file (it has no single exception type for it).
_LOAD_ERRORS = (RuntimeError, pickle.UnpicklingError, EOFError, zipfile.BadZipFile, OSError,
                ValueError, KeyError, AttributeError, TypeError, IndexError, UnicodeDecodeError)


def load(path: str | os.PathLike[str], map_location: Any = "cpu") -> Any:
    """Load what :func:`save` wrote, after checking the format and the sha256 checksum.

    Raises :class:`CheckpointError` (a ``ValueError``) naming ``path`` when the file is missing,
    truncated, corrupt or not an arignote checkpoint.

    Example::

        >>> save("/tmp/arignote-doc.ckpt", [1, 2])
        >>> load("/tmp/arignote-doc.ckpt")
        [1, 2]
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise CheckpointError(f"checkpoint {path}: no such file")
    size = os.path.getsize(path)
    if size == 0:
        raise CheckpointError(f"checkpoint {path}: file is empty (0 bytes); it was never completely written")
    try:
        wrapper = torch.load(path, map_location="cpu", weights_only=True)
    except _LOAD_ERRORS as exc:
        raise CheckpointError(
            f"checkpoint {path} ({size} bytes) is truncated or corrupt: torch.load failed "
            f"({type(exc).__name__}: {_first_line(exc)})"
        ) from None
    if not (isinstance(wrapper, dict) and wrapper.get("format") == FORMAT):
        found = wrapper.get("format") if isinstance(wrapper, dict) else type(wrapper).__name__
        raise CheckpointError(
            f"checkpoint {path} is not an arignote checkpoint (expected format {FORMAT!r}, found {found!r}); "
            "write it with arignote.checkpoint.save, or load it with torch.load yourself"
        )
    payload, expected = wrapper.get("payload"), wrapper.get("sha256")
    if not isinstance(payload, torch.Tensor) or payload.dtype != torch.uint8 or not isinstance(expected, str):
        raise CheckpointError(f"checkpoint {path} is corrupt: its payload or checksum field is malformed")
    raw = payload.numpy().tobytes()
    actual = hashlib.sha256(raw).hexdigest()
    if actual != expected:
        raise CheckpointError(
            f"checkpoint {path} is corrupt: sha256 of its payload is {actual[:16]}..., "
            f"the file records {expected[:16]}...; restore it from a backup or retrain"
        )
    try:
        with torch.serialization.safe_globals(_numpy_globals()):
            return torch.load(io.BytesIO(raw), map_location=map_location, weights_only=True)
    except _LOAD_ERRORS as exc:
        raise CheckpointError(
            f"checkpoint {path}: checksum is correct but the payload does not load with weights_only=True "
            f"({type(exc).__name__}: {_first_line(exc)})"
        ) from None


def _numpy_globals() -> list[Any]:
    """What unpickling plain numpy arrays and scalars needs (``get_weights()`` lists): reconstruct
    functions that build an array from a dtype and raw bytes, never code from the file."""
    import numpy as np

    multiarray = getattr(np, "_core", None) or np.core
    # numpy >= 1.25 pickles a dtype through its class (numpy.dtypes.Float32DType); object arrays stay refused.
    dtype_classes = [type(np.dtype(code)) for code in "?bBhHiIlLqQefdgFDGSUV" + "Mm"]
    return [multiarray.multiarray._reconstruct, multiarray.multiarray.scalar, np.ndarray, np.dtype,
            *dtype_classes]


def is_checkpoint(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a complete, valid arignote checkpoint (does not raise)."""
    try:
        load(path)
    except CheckpointError:
        return False
    return True


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else "no message"
