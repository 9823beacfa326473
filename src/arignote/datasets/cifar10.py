"""CIFAR-10, as ``keras.datasets.cifar10``: 50,000 + 10,000 32x32 colour images in 10 classes.

Looked up in each search directory as the extracted ``cifar-10-batches-py/`` folder
(``data_batch_1`` .. ``data_batch_5``, ``test_batch``: Python pickles) or the official archive
``cifar-10-python.tar.gz`` (also under Keras's name ``cifar-10-batches-py.tar.gz``), which is read
in place without extracting. Otherwise the archive is downloaded and checked against its
official hash. The pickles are read by a restricted unpickler that allows numpy arrays and
nothing else, so a tampered file cannot run code.

Example::

    >>> from arignote.datasets import cifar10
    >>> (x_train, y_train), (x_test, y_test) = cifar10.load_data()   # doctest: +SKIP
    >>> x_train.shape, x_train.dtype, y_train.shape                    # doctest: +SKIP
    ((50000, 32, 32, 3), dtype('uint8'), (50000, 1))
"""

from __future__ import annotations

import os
import tarfile

import numpy as np

from arignote import backend
from arignote.datasets import _files
from arignote.datasets._files import DatasetError, Remote
from arignote.datasets._formats import safe_unpickle, unpickle_bytes
from arignote.datasets.cifar import check_batch, load_batch

__all__ = ["load_data", "load_batch", "find", "ARCHIVE", "BATCH_MD5"]

ARCHIVE = Remote(
    "cifar-10-python.tar.gz",
    ("6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce", "c58f30108f718f92721af3b95e74349a"),
    ("https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",),
)
_KERAS_ARCHIVE = "cifar-10-batches-py.tar.gz"
_FOLDER = "cifar-10-batches-py"
# md5 of the files inside the archive (as published with torchvision's CIFAR10).
BATCH_MD5 = {
    "data_batch_1": "c99cafc152244af753f735de768cd75f",
    "data_batch_2": "d4bba439e000b95fd0a9bffe97cbabec",
    "data_batch_3": "54ebc095f3ab1f0389bbae665268c751",
    "data_batch_4": "634d18415352ddfa80567beed471001a",
    "data_batch_5": "482c414d41f54cd18b22e5b47cb7c3cb",
    "test_batch": "40351d587109b95175f43aff81a1287e",
}
_TRAIN = [f"data_batch_{i}" for i in range(1, 6)]


def find() -> str | None:
    """Where CIFAR-10 is on this machine (the batches folder or the archive), or None. Never downloads."""
    for root in _files.search_dirs():
        folder = os.path.join(root, _FOLDER)
        if all(os.path.isfile(os.path.join(folder, n)) for n in BATCH_MD5):
            return folder
        for name in (ARCHIVE.name, _KERAS_ARCHIVE):
            if os.path.isfile(os.path.join(root, name)):
                return os.path.join(root, name)
    return None


def load_data(verify: bool = True):
    """``(x_train, y_train), (x_test, y_test)``: uint8 images (N, 32, 32, 3) (channels first,
    (N, 3, 32, 32), when ``backend.image_data_format()`` says so, as in Keras 2), uint8 labels (N, 1).

    ``verify=False`` skips the official-hash check of local files (their structure is still checked).
    """
    where = find()
    if where is None:
        try:
            where = _files.download(ARCHIVE)
        except DatasetError as exc:
            raise DatasetError(_files.offline_message(
                "CIFAR-10",
                [f"{_FOLDER}/ with data_batch_1..data_batch_5 and test_batch (extracted archive)",
                 f"{ARCHIVE.name} (the archive itself, not extracted)"],
                [ARCHIVE], str(exc))) from None
    batches = _read_folder(where, verify) if os.path.isdir(where) else _read_archive(where, verify)
    train = [_batch(batches[n], f"{where}:{n}") for n in _TRAIN]
    x_train = np.concatenate([x for x, _ in train])
    y_train = np.concatenate([y for _, y in train])
    x_test, y_test = _batch(batches["test_batch"], f"{where}:test_batch")
    return (x_train, y_train), (x_test, y_test)


def _read_folder(folder: str, verify: bool) -> dict[str, object]:
    out = {}
    for name, md5 in BATCH_MD5.items():
        path = os.path.join(folder, name)
        if verify:
            _files.verify(path, (md5,))
        with open(path, "rb") as fh:
            out[name] = safe_unpickle(fh, path)
    return out


def _read_archive(path: str, verify: bool) -> dict[str, object]:
    if verify:
        _files.verify(path, ARCHIVE.hashes)
    out = {}
    try:
        with tarfile.open(path, "r:gz") as tar:
            for member in tar.getmembers():
                name = os.path.basename(member.name)
                if member.isfile() and name in BATCH_MD5 and os.path.dirname(member.name).endswith(_FOLDER):
                    fh = tar.extractfile(member)
                    out[name] = unpickle_bytes(fh.read(), f"{path}:{member.name}")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise DatasetError(f"{path} cannot be read as a .tar.gz ({exc}); delete it and load again") from None
    missing = [n for n in BATCH_MD5 if n not in out]
    if missing:
        raise DatasetError(f"{path} lacks {_FOLDER}/{', '.join(missing)}; "
                           "it is not the CIFAR-10 python archive")
    return out


def _batch(d: object, where: str) -> tuple[np.ndarray, np.ndarray]:
    """One batch dict as images in the layout ``backend.image_data_format()`` names (channels last by
    default, ``(N, 3, 32, 32)`` for channels first, as Keras 2's ``cifar10.load_data``) and (N, 1) uint8
    labels."""
    data, labels = check_batch(d, "labels", where)
    if labels.size and (labels.min() < 0 or labels.max() > 9):
        raise DatasetError(f"{where}: labels outside 0..9; the file is damaged")
    if backend.image_data_format() == "channels_last":
        data = data.transpose(0, 2, 3, 1)
    return np.ascontiguousarray(data), labels.astype(np.uint8).reshape(-1, 1)
