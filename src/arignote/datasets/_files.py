"""Finding, verifying and downloading dataset files.

Search order for every dataset: the ``datasets.dir`` flag (env ``ARIGNOTE_DATA``),
``~/.arignote/datasets``, ``~/.keras/datasets`` (what Keras already downloaded) and Debian's
``/usr/share/datasets`` (package ``dataset-fashion-mnist`` installs
``/usr/share/datasets/fashion-mnist/*.gz``). Only when nothing is found is a file downloaded, from
its official URL, into the first of the first two directories; it is hashed while it streams,
checked against the official md5/sha256 and renamed into place only when it matches.

Example::

    >>> search_dirs()[-1]
    '/usr/share/datasets'
"""

from __future__ import annotations

import hashlib
import os
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO

from arignote import config
from arignote.atomic_file import write_atomically
from arignote.errors import DatasetError

__all__ = ["DatasetError", "Remote", "search_dirs", "download_dir", "file_hash", "verify", "download",
           "DEBIAN_DIR"]

# Debian's dataset packages install here (dataset-fashion-mnist: fashion-mnist/*.gz; read with dpkg -c).
DEBIAN_DIR = "/usr/share/datasets"

# Tests replace this with a stub; everything else uses urllib's opener (http, https and file URLs).
_urlopen = urllib.request.urlopen

_TIMEOUT = 60.0


@dataclass(frozen=True)
class Remote:
    """One official file: its name, accepted hashes (md5 or sha256 hex) and the URLs serving it."""

    name: str
    hashes: tuple[str, ...]
    urls: tuple[str, ...]


def search_dirs() -> list[str]:
    """Directories searched for dataset files, in order (duplicates removed)."""
    dirs = []
    flag = config.get("datasets.dir")
    if flag:
        dirs.append(os.path.abspath(os.path.expanduser(flag)))
    home = os.path.expanduser("~")
    dirs += [os.path.join(home, ".arignote", "datasets"), os.path.join(home, ".keras", "datasets"),
             DEBIAN_DIR]
    seen: list[str] = []
    for d in dirs:
        if d not in seen:
            seen.append(d)
    return seen


def download_dir() -> str:
    """Where downloads go: the ``datasets.dir`` flag when set, else ``~/.arignote/datasets``."""
    return search_dirs()[0] if config.get("datasets.dir") else os.path.join(
        os.path.expanduser("~"), ".arignote", "datasets")


def _algorithm(expected: str) -> str:
    return {32: "md5", 64: "sha256"}.get(len(expected), "")


_HASH_CACHE: dict[tuple[str, int, int, str], str] = {}


def file_hash(path: str, algorithm: str) -> str:
    """Hex digest of a file (cached per path, size and mtime, so repeated loads hash once)."""
    st = os.stat(path)
    key = (os.path.abspath(path), st.st_size, st.st_mtime_ns, algorithm)
    if key not in _HASH_CACHE:
        h = hashlib.new(algorithm)
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        _HASH_CACHE[key] = h.hexdigest()
    return _HASH_CACHE[key]


def verify(path: str, hashes: Iterable[str]) -> None:
    """Raise DatasetError naming ``path`` unless its md5 or sha256 matches one of ``hashes``."""
    hashes = tuple(hashes)
    for expected in hashes:
        if file_hash(path, _algorithm(expected)) == expected.lower():
            return
    got = file_hash(path, "sha256")
    raise DatasetError(
        f"{path} is not the official file (sha256 {got}; expected one of: {', '.join(hashes)}); it may be "
        "truncated or a different version: delete it so arignote downloads the official one, or replace it, "
        "or pass verify=False to load_data() to skip the check"
    )


def download(remote: Remote, directory: str | None = None) -> str:
    """Fetch ``remote`` into ``directory`` (default :func:`download_dir`) and return the path.

    The bytes stream to a temporary file in the same directory while being hashed; the file is
    renamed into place only if the hash matches, so a partial or wrong download leaves nothing.
    """
    directory = directory or download_dir()
    os.makedirs(directory, exist_ok=True)
    target = os.path.join(directory, remote.name)
    failures = []
    for url in remote.urls:
        try:
            _fetch(url, target, remote.hashes)
            return target
        except (urllib.error.URLError, OSError, ValueError) as exc:  # network down, 404, hash mismatch
            failures.append(f"{url}: {exc}")
    raise DatasetError(f"could not download {remote.name}: " + "; ".join(failures))


def _fetch(url: str, target: str, hashes: tuple[str, ...]) -> None:
    digests = {alg: hashlib.new(alg) for alg in {_algorithm(h) for h in hashes} if alg}

    def stream_and_verify(out: IO[bytes]) -> None:
        with _urlopen(url, timeout=_TIMEOUT) as response:
            for chunk in iter(lambda: response.read(1 << 20), b""):
                out.write(chunk)
                for h in digests.values():
                    h.update(chunk)
        got = {alg: h.hexdigest() for alg, h in digests.items()}
        if hashes and not any(got.get(_algorithm(h)) == h.lower() for h in hashes):
            raise ValueError(f"hash mismatch (got {', '.join(f'{a} {v}' for a, v in sorted(got.items()))}; "
                             f"expected one of {', '.join(hashes)}); nothing was saved")

    write_atomically(target, stream_and_verify, suffix=".part")


def offline_message(dataset: str, layouts: list[str], remotes: Iterable[Remote], failure: str = "") -> str:
    """The error text when a dataset is neither present nor downloadable: where to put which files."""
    dirs = search_dirs()
    why = f" ({failure})" if failure else ""
    lines = [f"{dataset} was not found and could not be downloaded{why}."]
    lines.append("Searched: " + ", ".join(dirs) + " (set ARIGNOTE_DATA or the datasets.dir flag to add one).")
    lines.append("Put one of these in one of those directories:")
    lines += [f"  - {layout}" for layout in layouts]
    lines.append("Official files:")
    lines += [f"  - {r.name}: {r.urls[0]} ({r.hashes[0]})" for r in remotes]
    return "\n".join(lines)
