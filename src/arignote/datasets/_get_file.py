"""Keras 2's ``get_file``: a file from the cache, or downloaded into it, hash-checked, maybe extracted.

Same arguments and return value as ``keras.utils.data_utils.get_file`` (Keras 2.3): the file lives
at ``<cache_dir>/<cache_subdir>/<fname>`` with ``cache_dir`` defaulting to ``$KERAS_HOME`` or
``~/.keras`` (``/tmp/.keras`` when that is not writable); ``untar=True`` returns the extracted
folder ``<fname>`` from ``<fname>.tar.gz``; ``extract=True`` unpacks a tar or zip next to the file
and returns the file.
When ``cache_dir`` is not given and ``cache_subdir`` is ``'datasets'``, arignote's dataset
directories (``ARIGNOTE_DATA``, ``~/.arignote/datasets``, ``~/.keras/datasets``) are searched first,
so a file put where :mod:`arignote.datasets` looks is found too.

A download streams to a temporary file, is hashed on the way and renamed into place only when
the hash matches. Offline, a missing file is one :class:`DatasetError` naming the path to put it
at and the URL to fetch it from by hand. Archives are extracted with tarfile's ``data`` filter
(no absolute paths, no ``..``, no devices) and zip members are checked the same way.

Example::

    >>> import os, tempfile
    >>> cache = tempfile.mkdtemp(); os.makedirs(os.path.join(cache, "datasets"))
    >>> _ = open(os.path.join(cache, "datasets", "a.txt"), "w").write("hi")
    >>> get_file("a.txt", origin="https://example.org/a.txt", cache_dir=cache).endswith("datasets/a.txt")
    True
"""

from __future__ import annotations

import hashlib
import os
import sys
import tarfile
import zipfile

from arignote import config
from arignote.datasets import _files
from arignote.datasets._files import DatasetError, Remote

__all__ = ["get_file", "validate_file", "hash_file"]

_ALGORITHMS = ("auto", "md5", "sha256")


def _algorithm_for(file_hash: str, algorithm: str) -> str:
    if algorithm not in _ALGORITHMS:
        raise ValueError(f"get_file: hash_algorithm={algorithm!r} is not one of 'auto', 'md5', 'sha256'")
    if algorithm != "auto":
        return algorithm
    return "sha256" if len(file_hash) == 64 else "md5"


def hash_file(fpath: str, algorithm: str = "sha256", chunk_size: int = 65535) -> str:
    """The hex ``sha256`` (or ``md5``) digest of ``fpath`` (Keras's ``_hash_file``)."""
    h = hashlib.new("sha256" if algorithm in ("sha256", "auto") else "md5")
    with open(fpath, "rb") as fh:
        for chunk in iter(lambda: fh.read(chunk_size), b""):
            h.update(chunk)
    return h.hexdigest()


def validate_file(fpath: str, file_hash: str, algorithm: str = "auto", chunk_size: int = 65535) -> bool:
    """Whether ``fpath``'s md5/sha256 (``'auto'``: by the hash's length) equals ``file_hash``."""
    return hash_file(fpath, _algorithm_for(file_hash, algorithm), chunk_size) == str(file_hash).lower()


def _cache_base(cache_dir: str | None) -> str:
    if cache_dir is None:  # Keras 2: $KERAS_HOME, else ~/.keras
        cache_dir = config.environ("KERAS_HOME") or os.path.join("~", ".keras")
    base = os.path.expanduser(cache_dir)
    probe = base
    while not os.path.exists(probe) and os.path.dirname(probe) != probe:
        probe = os.path.dirname(probe)
    if not os.access(probe, os.W_OK):  # Keras falls back to /tmp/.keras on a read-only home
        base = os.path.join("/tmp", ".keras")
    return base


def _candidates(fname: str, datadir: str, search: bool) -> list[str]:
    """Where an existing copy may be: the cache first, then arignote's dataset directories."""
    out = [os.path.join(datadir, fname)]
    if search and not os.path.isabs(fname):
        out += [os.path.join(d, fname) for d in _files.search_dirs()]
    seen: list[str] = []
    for p in out:
        if p not in seen:
            seen.append(p)
    return seen


def get_file(fname: str, origin: str, untar: bool = False, md5_hash: str | None = None,
             file_hash: str | None = None, cache_subdir: str = "datasets", hash_algorithm: str = "auto",
             extract: bool = False, archive_format: str | list[str] | None = "auto",
             cache_dir: str | None = None) -> str:
    """Path of ``fname`` in the Keras cache, downloading it from ``origin`` when missing or stale.

    ``file_hash`` (md5 or sha256; ``md5_hash`` is its deprecated spelling) is checked on an
    existing file (a mismatch means a re-download) and on every download (a mismatch keeps
    nothing). ``untar=True``: ``fname`` names the folder extracted from ``fname + '.tar.gz'``.
    ``extract=True``: unpack the tar/zip archive next to it (``archive_format`` 'auto', 'tar',
    'zip', a list of those, or None).
    """
    if not isinstance(fname, (str, os.PathLike)) or not str(fname):
        raise ValueError(f"get_file: fname must be a file name, got {fname!r}")
    fname = os.fspath(fname)
    if md5_hash is not None and file_hash is None:
        file_hash, hash_algorithm = md5_hash, "md5"
    if file_hash is not None:
        hash_algorithm = _algorithm_for(file_hash, hash_algorithm)
    datadir = os.path.join(_cache_base(cache_dir), cache_subdir)
    search = cache_dir is None and cache_subdir == "datasets"
    wanted = fname + ".tar.gz" if untar else fname

    if untar:
        for folder in _candidates(fname, datadir, search):
            if os.path.isdir(folder):
                return folder

    fpath = None
    stale = []
    for candidate in _candidates(wanted, datadir, search):
        if not os.path.isfile(candidate):
            continue
        if file_hash is not None and not validate_file(candidate, file_hash, hash_algorithm):
            stale.append(candidate)
            continue
        fpath = candidate
        break
    if fpath is None:
        target = os.path.join(datadir, wanted) if not os.path.isabs(wanted) else wanted
        if stale:
            print(f"A local file was found ({stale[0]}), but its {hash_algorithm} hash does not match "
                  f"{file_hash}: it is incomplete or outdated, downloading it again.", file=sys.stderr)
        fpath = _download(origin, target, file_hash, stale)
    if untar:
        folder = os.path.join(os.path.dirname(fpath), fname)
        if not os.path.exists(folder):
            extract_archive(fpath, os.path.dirname(fpath), "tar")
        return folder
    if extract:
        extract_archive(fpath, os.path.dirname(fpath), archive_format)
    return fpath


def _download(origin: str, target: str, file_hash: str | None, stale: list[str]) -> str:
    print(f"Downloading data from {origin}", file=sys.stderr)
    try:
        return _files.download(Remote(os.path.basename(target), (file_hash,) if file_hash else (),
                                      (origin,)), os.path.dirname(target))
    except DatasetError as exc:
        why = f" ({'a copy with the wrong hash is at ' + stale[0] + '; ' if stale else ''}{exc})"
        hash_note = f" (its hash must be {file_hash})" if file_hash else ""
        raise DatasetError(
            f"{os.path.basename(target)} is not in the cache and could not be downloaded{why}. "
            f"Fetch {origin} by hand and put it at {target}{hash_note}."
        ) from None


def _safe_member(name: str) -> bool:
    return not (os.path.isabs(name) or ".." in name.replace("\\", "/").split("/"))


def extract_archive(file_path: str, path: str = ".", archive_format: str | list[str] | None = "auto") -> bool:
    """Unpack a tar (plain, gz, bz2, xz) or zip archive into ``path``; False when none matched.

    Members with absolute paths or ``..`` are refused with an error naming the member.
    """
    if archive_format is None:
        return False
    formats = ["tar", "zip"] if archive_format == "auto" else (
        [archive_format] if isinstance(archive_format, str) else list(archive_format))
    for kind in formats:
        if kind not in ("tar", "zip"):
            raise ValueError(f"archive_format {kind!r} is not supported: use 'auto', 'tar', 'zip' or None")
        if kind == "tar" and tarfile.is_tarfile(file_path):
            with tarfile.open(file_path) as archive:
                for m in archive.getmembers():
                    if not _safe_member(m.name):
                        raise DatasetError(f"{file_path}: member {m.name!r} would land outside {path}")
                archive.extractall(path, filter="data")
            return True
        if kind == "zip" and zipfile.is_zipfile(file_path):
            with zipfile.ZipFile(file_path) as archive:
                for name in archive.namelist():
                    if not _safe_member(name):
                        raise DatasetError(f"{file_path}: member {name!r} would land outside {path}")
                archive.extractall(path)
            return True
    return False
