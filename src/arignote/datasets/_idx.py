"""The four-file idx layout shared by MNIST and Fashion-MNIST (``train-images-idx3-ubyte.gz`` ...).

Example::

    >>> IDX_NAMES[0]
    'train-images-idx3-ubyte'
"""

from __future__ import annotations

import os

import numpy as np

from arignote.datasets import _files
from arignote.datasets._files import DatasetError, Remote
from arignote.datasets._formats import read_idx

__all__ = ["IDX_NAMES", "complete", "find_folder", "load_folder", "download_folder"]

IDX_NAMES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
             "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


def _path(folder: str, name: str) -> str | None:
    for candidate in (name + ".gz", name):
        path = os.path.join(folder, candidate)
        if os.path.isfile(path):
            return path
    return None


def complete(folder: str) -> bool:
    """Whether ``folder`` holds all four idx files (gzipped or not)."""
    return all(_path(folder, n) for n in IDX_NAMES)


def find_folder(subdirs: tuple[str, ...]) -> str | None:
    """The first ``<search dir>/<subdir>`` holding all four idx files."""
    for root in _files.search_dirs():
        for sub in subdirs:
            if complete(os.path.join(root, sub)):
                return os.path.join(root, sub)
    return None


def load_folder(folder: str, remotes: dict[str, Remote], verify: bool, shape: tuple[int, int] = (28, 28)):
    """``((x_train, y_train), (x_test, y_test))`` as uint8 arrays from the idx files in ``folder``.

    ``.gz`` files are checked against the official hashes when ``verify``; uncompressed files have
    no published hash, so only their structure (magic number, sizes) is checked.
    """
    arrays = []
    for name in IDX_NAMES:
        path = _path(folder, name)
        if path is None:
            raise DatasetError(f"{folder} lacks {name}.gz")
        if verify and path.endswith(".gz"):
            _files.verify(path, remotes[name].hashes)
        arrays.append(read_idx(path))
    x_train, y_train, x_test, y_test = arrays
    for x, y, split in ((x_train, y_train, "train"), (x_test, y_test, "t10k")):
        if x.ndim != 3 or x.shape[1:] != shape or x.dtype != np.uint8:
            raise DatasetError(f"{folder}: {split} images have shape {x.shape} {x.dtype}, expected (N, "
                               f"{shape[0]}, {shape[1]}) uint8; the files are not this dataset's")
        if y.ndim != 1 or len(y) != len(x):
            raise DatasetError(f"{folder}: {len(x)} {split} images but labels of shape {y.shape}; "
                               "the image and label files do not belong together")
    return (x_train, y_train), (x_test, y_test)


def download_folder(subdir: str, remotes: dict[str, Remote]) -> str:
    """Download the four files into ``<download dir>/<subdir>`` and return that folder."""
    folder = os.path.join(_files.download_dir(), subdir)
    for name in IDX_NAMES:
        if _path(folder, name) is None:
            _files.download(remotes[name], folder)
    return folder
