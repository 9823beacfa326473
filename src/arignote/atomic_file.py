"""Atomic file writes on this machine's disks: the one way arignote replaces a file.

:func:`write_atomically` writes to a temporary file in the target's directory (so the rename never
crosses a file system), flushes and fsyncs it, renames it over the target with ``os.replace`` and
fsyncs the directory, so the rename itself survives a power cut. A reader, or a crash at any point,
sees the old file or the new one, never half of one; a failure removes the temporary file and
re-raises. Checkpoints, HDF5 and ``.keras`` files, downloaded datasets and the shared-server
status and queue records all go through it. Torch-free (the ``smi``/``dash`` tools import it).

Example::

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "record.json")
    >>> write_atomically(path, '{"v": 1}', mode=0o644)
    >>> open(path).read(), oct(os.stat(path).st_mode & 0o777)
    ('{"v": 1}', '0o644')
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from typing import IO, Any

__all__ = ["write_atomically", "fsync_directory", "temporary_name_prefix"]


def temporary_name_prefix(path: str | os.PathLike[str]) -> str:
    """The temporary file's name starts with ``.`` + the target's name + ``.`` (hidden, and
    :func:`arignote.checkpoint.temporary_files` can find what a killed writer left)."""
    return "." + os.path.basename(os.fspath(path)) + "."


def fsync_directory(directory: str | os.PathLike[str]) -> None:
    """Make a rename in ``directory`` durable. Platforms that cannot open a directory (Windows) and
    file systems that refuse fsync on one skip it: the rename is still atomic there."""
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


def write_atomically(path: str | os.PathLike[str], content: bytes | str | Callable[[IO[bytes]], Any], *,
                     mode: int | None = None, suffix: str = ".tmp", encoding: str = "utf-8") -> None:
    """Replace ``path`` with ``content`` atomically.

    ``content`` is bytes, text (encoded with ``encoding``) or a function that writes into the open
    binary temporary file (to stream a large file, or to check what was written and raise before the
    rename). ``mode`` sets the file's permission bits (e.g. ``0o644`` for a record other users read);
    ``None`` keeps ``tempfile.mkstemp``'s owner-only ``0o600``. The temporary file is named
    ``.<name>.<8 random characters><suffix>`` beside ``path``, created exclusively (never through a
    symlink someone planted). Any exception (``OSError``, or what ``content`` raises) removes the
    temporary file and propagates unchanged; ``path`` is then untouched.

    Example::

        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "a.bin")
        >>> write_atomically(path, b"abc")
        >>> write_atomically(path, lambda fh: fh.write(b"def"))
        >>> open(path, "rb").read()
        b'def'
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=temporary_name_prefix(path), suffix=suffix, dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            if callable(content):
                content(fh)
            else:
                fh.write(content.encode(encoding) if isinstance(content, str) else content)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_directory(directory)
