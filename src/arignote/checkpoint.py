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

import errno
import hashlib
import io
import os
import pickle
import re
import zipfile
from collections.abc import Callable
from typing import IO, Any

import torch

try:  # POSIX only: the file-size limit (ulimit -f) is checked before a save when it is known
    import resource
except ImportError:  # pragma: no cover - Windows
    resource = None  # type: ignore[assignment]

from arignote.atomic_file import write_atomically
from arignote.errors import ArignoteError, CheckpointError

__all__ = ["FORMAT", "CheckpointError", "CheckpointSaveError", "save", "load", "is_checkpoint",
           "atomic_write_bytes", "temporary_files", "save_error"]

FORMAT = "arignote-checkpoint/1"


class CheckpointSaveError(ArignoteError, OSError):
    """A checkpoint that could not be written: disk full, quota, file too large, read-only, a
    directory in the way. The message names the file, the cause (the OS's words and the errno name)
    and what is kept; ``errno`` and ``filename`` are set as on any ``OSError``.

    Example::

        >>> err = save_error("/ckpt/e03.h5", errno.ENOSPC)
        >>> str(err), err.errno == errno.ENOSPC
        ('cannot save checkpoint /ckpt/e03.h5: No space left on device (ENOSPC); free space on that disk \
or save to another one; nothing was written there', True)
    """

    def __init__(self, message: str, code: int | None = None, path: str | None = None) -> None:
        super().__init__(message)
        self.errno = code  # type: ignore[misc]
        self.filename = path
        self.message = message

    def __str__(self) -> str:
        return self.message


# What to do about each cause, in one phrase.
_HINTS = {
    errno.ENOSPC: "free space on that disk or save to another one",
    errno.EDQUOT: "your disk quota is used up: delete files or ask for a larger quota",
    errno.EFBIG: "the file-size limit (ulimit -f) or the file system's maximum file size is smaller "
                 "than the checkpoint",
    errno.EROFS: "that file system is mounted read-only: save to a writable directory",
    errno.EACCES: "no permission to write there: save to a directory you own",
    errno.EPERM: "no permission to write there: save to a directory you own",
    errno.EISDIR: "a directory has that name: remove it or choose another file name",
    errno.ENOTDIR: "a part of the path is a file, not a directory",
}


def _kept(path: str) -> str:
    if os.path.isfile(path):
        return f"the previous {os.path.basename(path)} is intact"
    return "nothing was written there"


def save_error(path: str, code: int | None, detail: str = "") -> CheckpointSaveError:
    """The one message every save failure gets: path, cause with errno name, hint, what is kept
    (also used by writers of other formats, e.g. HDF5, for their ``OSError``)."""
    if code is not None:
        cause = f"{os.strerror(code)} ({errno.errorcode.get(code, code)})"
    else:
        cause = "the write failed"
    hint = _HINTS.get(code, "") if code is not None else ""
    parts = [f"cannot save checkpoint {path}: {cause}"]
    if detail:
        parts[0] += f" ({detail})"
    if hint:
        parts.append(hint)
    parts.append(_kept(path))
    return CheckpointSaveError("; ".join(parts), code, path)


def _mb(n: float) -> str:
    if n < 10 * 2**10:
        return f"{int(n)} bytes"
    if n < 10 * 2**20:
        return f"{n / 2**10:.1f} KB"
    return f"{n / 2**20:.1f} MB"


def _check_destination(path: str, directory: str, size: int | None) -> None:
    """Cheap checks before writing: a directory in the way, a missing parent, too little space
    (for the payload alone, a lower bound of the file), a file-size limit below it."""
    if os.path.isdir(path):
        raise save_error(path, errno.EISDIR)
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise save_error(path, exc.errno, f"creating {directory}") from None
    if size is None:
        return
    try:
        st = os.statvfs(directory)
    except (OSError, AttributeError):  # no statvfs (Windows) or an odd file system: just try
        st = None
    if st is not None and st.f_frsize:
        blocks = st.f_bfree if hasattr(os, "geteuid") and os.geteuid() == 0 else st.f_bavail
        free = blocks * st.f_frsize
        if size > free:
            raise save_error(path, errno.ENOSPC, f"it needs at least {_mb(size)}, {_mb(free)} free in "
                                                  f"{directory}")
    if resource is not None:
        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        if limit != resource.RLIM_INFINITY and size > limit:
            raise save_error(path, errno.EFBIG, f"it needs at least {_mb(size)}, the file-size limit "
                                                 f"is {_mb(limit)}")


class _RecordingFile:
    """The temporary file as torch's zip writer sees it: remembers the OSError of a failed write,
    which torch reports only as ``RuntimeError: ... unexpected pos``."""

    def __init__(self, fh: IO[bytes]) -> None:
        self.fh = fh
        self.error: OSError | None = None

    def write(self, data: Any) -> int:
        try:
            return self.fh.write(data)
        except OSError as exc:
            self.error = self.error or exc
            raise

    def flush(self) -> None:
        try:
            self.fh.flush()
        except OSError as exc:
            self.error = self.error or exc
            raise


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (:func:`arignote.atomic_file.write_atomically`)
    with a checkpoint's checks and errors: a failure raises :class:`CheckpointSaveError` and leaves
    the previous file intact.

    Example::

        >>> atomic_write_bytes("/tmp/arignote-doc.bin", b"abc")
    """
    _atomic_write(path, lambda fh: fh.write(data), len(data))


def _atomic_write(path: str | os.PathLike[str], write: Callable[[Any], Any], size: int | None = None) -> None:
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    _check_destination(path, directory, size)
    recorders: list[_RecordingFile] = []

    def recorded(fh: IO[bytes]) -> None:
        recorders.append(_RecordingFile(fh))
        write(recorders[0])

    try:
        write_atomically(path, recorded)
    except (OSError, RuntimeError) as exc:
        # torch's zip writer turns a failed write into RuntimeError("... unexpected pos ..."): the
        # recorder kept the OSError underneath (ENOSPC, EFBIG, EDQUOT ...)
        cause = recorders[0].error if recorders and recorders[0].error is not None else exc
        if isinstance(cause, OSError):
            detail = "" if cause.errno else _first_line(cause)
            if not recorders:  # the temporary file itself could not be made
                detail = f"creating a temporary file in {directory}"
            raise save_error(path, cause.errno, detail) from exc
        raise save_error(path, None, f"{type(exc).__name__}: {_first_line(exc)}") from exc


def save(path: str | os.PathLike[str], obj: Any) -> None:
    """Save ``obj`` (tensors, numpy arrays, state dicts, numbers, strings, lists, dicts) to ``path``
    atomically. Objects that ``torch.load(weights_only=True)`` cannot rebuild (arbitrary classes)
    are refused by :func:`load`, so keep checkpoints to plain data.

    A save that fails (disk full, quota, file-size limit, read-only file system, a directory named
    like the file) raises :class:`CheckpointSaveError` naming the path, the cause and what is kept;
    the previous file at ``path`` is never damaged and the temporary file is removed. Free space and
    the file-size limit are checked before writing.

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
    # streamed into the temporary file; the payload's size is a lower bound of the file's
    _atomic_write(path, lambda fh: torch.save(wrapper, fh), len(raw))


def temporary_files(directory: str | os.PathLike[str], name: str | re.Pattern[str]) -> list[str]:
    """Temporary files that interrupted saves (killed before their rename) left in ``directory``,
    for target file names equal to ``name`` (a string) or matching it (a compiled pattern).

    Example::

        >>> temporary_files("/tmp/no-such-dir", "w.ckpt")
        []
    """
    directory = os.fspath(directory) or "."
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    found = []
    for n in names:
        match = _TEMPORARY.match(n)
        if not match:
            continue
        target = match.group(1)
        if (target == name) if isinstance(name, str) else bool(name.fullmatch(target)):
            found.append(os.path.join(directory, n))
    return sorted(found)


# ".<target name>.<8 characters of tempfile.mkstemp>.tmp"
_TEMPORARY = re.compile(r"^\.(.+)\.[a-z0-9_]{8}\.tmp$")


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
    if os.path.isdir(path):
        raise CheckpointError(f"checkpoint {path} is a directory, not a checkpoint file")
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
