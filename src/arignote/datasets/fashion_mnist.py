"""Fashion-MNIST (Zalando), as ``keras.datasets.fashion_mnist``: 60,000 + 10,000 28x28 uint8 images.

Looked up in a ``fashion-mnist/`` subfolder of each search directory, which covers Keras's cache
(``~/.keras/datasets/fashion-mnist``) and Debian's package ``dataset-fashion-mnist``
(``/usr/share/datasets/fashion-mnist``, whose .gz files are recompressed: their own hashes are
accepted too); otherwise the four official .gz files are downloaded and checked.

Example::

    >>> from arignote.datasets import fashion_mnist
    >>> (x_train, y_train), (x_test, y_test) = fashion_mnist.load_data()   # doctest: +SKIP
    >>> x_test.shape, y_test.dtype                                         # doctest: +SKIP
    ((10000, 28, 28), dtype('uint8'))
"""

from __future__ import annotations

from arignote.datasets import _files, _idx
from arignote.datasets._files import DatasetError, Remote

__all__ = ["load_data", "find", "IDX"]

_MIRRORS = ("http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
            "https://storage.googleapis.com/tensorflow/tf-keras-datasets/")
# md5 from github.com/zalandoresearch/fashion-mnist; sha256 of Debian's package files
# (dataset-fashion-mnist 0.0~git20200523.55506a9-1, measured from the .deb).
_HASHES = {
    "train-images-idx3-ubyte": ("8d4fb7e6c68d591d4c3dfef9ec88bf0d",
                                "b0564c3eedabfbf835052cff8503ea422014ce006caf5b757f851416ee8300c7"),
    "train-labels-idx1-ubyte": ("25c81989df183df01b3e8a0aad5dffbe",
                                "0ae29f65d86684f32d1b9c85147786c547b9c6aebcaf235f0400a0cce308b056"),
    "t10k-images-idx3-ubyte": ("bef4ecab320f06d8554ea6380940ec79",
                               "cc1d090a38ace84dfa1aa66e3ada7c336ef481a96936906477e6dd344da56eaa"),
    "t10k-labels-idx1-ubyte": ("bb300cfdad3c16e7a12a480ee83cd310",
                               "8d3605d196f4be44669e46906da9733c8131fef761fdbfec72c424d5222f1a05"),
}
IDX = {name: Remote(name + ".gz", hashes, tuple(m + name + ".gz" for m in _MIRRORS))
       for name, hashes in _HASHES.items()}

_SUBDIRS = ("fashion-mnist", "FashionMNIST/raw")


def find() -> str | None:
    """The folder holding Fashion-MNIST's four idx files on this machine, or None. Never downloads."""
    return _idx.find_folder(_SUBDIRS)


def load_data(verify: bool = True):
    """``(x_train, y_train), (x_test, y_test)``: uint8 images (N, 28, 28), uint8 labels (N,) in 0..9."""
    folder = find()
    if folder is None:
        try:
            folder = _idx.download_folder("fashion-mnist", IDX)
        except DatasetError as exc:
            raise DatasetError(_files.offline_message(
                "Fashion-MNIST",
                ["fashion-mnist/ with train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, "
                 "t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz "
                 "(Debian: apt install dataset-fashion-mnist)"],
                list(IDX.values()), str(exc))) from None
    return _idx.load_folder(folder, IDX, verify)
