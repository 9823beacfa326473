"""MNIST handwritten digits, as ``keras.datasets.mnist``: 60,000 + 10,000 28x28 uint8 images.

Looked up (first match wins) in each search directory (``ARIGNOTE_DATA``, ``~/.arignote/datasets``,
``~/.keras/datasets``, ``/usr/share/datasets``): Keras's ``mnist.npz``, then the four idx files
(``train-images-idx3-ubyte.gz``...) in a ``mnist/`` subfolder. Otherwise ``mnist.npz`` is
downloaded from Keras's URL and checked against its official hash.

Example::

    >>> from arignote.datasets import mnist
    >>> (x_train, y_train), (x_test, y_test) = mnist.load_data()   # doctest: +SKIP
    >>> x_train.shape, x_train.dtype, y_train.shape                  # doctest: +SKIP
    ((60000, 28, 28), dtype('uint8'), (60000,))
"""

from __future__ import annotations

import os

import numpy as np

from arignote.datasets import _files, _idx
from arignote.datasets._files import DatasetError, Remote
from arignote.datasets._formats import read_npz

__all__ = ["load_data", "find", "NPZ", "IDX"]

NPZ = Remote(
    "mnist.npz",
    # sha256 of tf.keras's copy; md5 of the Keras 2 copy on s3.
    ("731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1", "8a61469f7ea1b51cbae51d4f78837e45"),
    ("https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz",
     "https://s3.amazonaws.com/img-datasets/mnist.npz"),
)

_IDX_MIRRORS = ("https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/")
_IDX_MD5 = {
    "train-images-idx3-ubyte": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
    "train-labels-idx1-ubyte": "d53e105ee54ea40749a09fcbcd1e9432",
    "t10k-images-idx3-ubyte": "9fb629c4189551a2d022fa330f9573f3",
    "t10k-labels-idx1-ubyte": "ec29112dd5afa0611ce80d1b7f02629c",
}
IDX = {name: Remote(name + ".gz", (md5,), tuple(m + name + ".gz" for m in _IDX_MIRRORS))
       for name, md5 in _IDX_MD5.items()}

_SUBDIRS = ("mnist", "MNIST/raw")
_KEYS = ("x_train", "y_train", "x_test", "y_test")


def find(path: str = "mnist.npz") -> str | None:
    """Where MNIST is on this machine (an ``.npz`` file or an idx folder), or None. Never downloads."""
    if os.path.isabs(path) and os.path.isfile(path):
        return path
    for root in _files.search_dirs():
        candidate = os.path.join(root, path)
        if os.path.isfile(candidate):
            return candidate
        for sub in _SUBDIRS:
            if _idx.complete(os.path.join(root, sub)):
                return os.path.join(root, sub)
    return None


def load_data(path: str = "mnist.npz", verify: bool = True):
    """``(x_train, y_train), (x_test, y_test)``: uint8 images (N, 28, 28) and uint8 labels (N,).

    ``path`` is the npz file name inside the search directories (or an absolute path), as Keras.
    ``verify=False`` skips the official-hash check of local files (their structure is still checked).
    """
    where = find(path)
    if where is None:
        try:
            where = _files.download(NPZ)
        except DatasetError as exc:
            raise DatasetError(_files.offline_message(
                "MNIST", ["mnist.npz (Keras's file)", "mnist/ with train-images-idx3-ubyte.gz, "
                          "train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz"],
                [NPZ, *IDX.values()], str(exc))) from None
    if os.path.isdir(where):
        return _idx.load_folder(where, IDX, verify)
    if verify:
        _files.verify(where, NPZ.hashes)
    arrays = read_npz(where, _KEYS)
    return _checked(where, arrays)


def _checked(where: str, a: dict[str, np.ndarray]):
    for split in ("train", "test"):
        x, y = a[f"x_{split}"], a[f"y_{split}"]
        if x.ndim != 3 or x.shape[1:] != (28, 28) or len(y) != len(x):
            raise DatasetError(f"{where}: x_{split} {x.shape} / y_{split} {y.shape} are not MNIST's shapes "
                               "(N, 28, 28) / (N,); delete or replace the file")
    return (a["x_train"], a["y_train"]), (a["x_test"], a["y_test"])
