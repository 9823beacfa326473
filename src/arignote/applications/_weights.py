"""Where the applications' pretrained weights come from: Keras 2's official files, by name and hash.

``weights='imagenet'`` loads the very HDF5 files Keras 2 fetched (same names, same MD5 hashes),
from the Keras cache ``~/.keras/models`` (``KERAS_HOME`` moves it), through
:func:`arignote.utils.data_utils.get_file` and arignote's Keras 2 HDF5 loader. Offline, a missing
file is one error naming the file, the directory to put it in and the address to fetch it from.

Example::

    >>> f = WeightFile("vgg16_weights_tf_dim_ordering_tf_kernels_notop.h5", "https://example/x.h5", None)
    >>> f.fname
    'vgg16_weights_tf_dim_ordering_tf_kernels_notop.h5'
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from arignote.utils.data_utils import get_file

__all__ = ["WeightFile", "fetch", "check_weights_argument", "load"]

FCHOLLET = "https://github.com/fchollet/deep-learning-models/releases/download/"


@dataclass(frozen=True)
class WeightFile:
    """One official file: its cache name, the address Keras 2 downloaded it from, its MD5 (or None)."""

    fname: str
    url: str
    md5: str | None


def fetch(file: WeightFile) -> str:
    """The local path of ``file`` in the Keras model cache (downloaded by ``get_file`` when online)."""
    return get_file(file.fname, file.url, cache_subdir="models", file_hash=file.md5)


def check_weights_argument(weights: Any, include_top: bool, classes: int) -> None:
    """Keras 2's checks on ``weights`` and ``classes``, as one clear error each."""
    if not (
        weights in ("imagenet", None) or (isinstance(weights, (str, os.PathLike)) and os.path.exists(weights))
    ):
        raise ValueError(
            "The `weights` argument should be either `None` (random initialization), `imagenet` "
            f"(pre-training on ImageNet), or the path to the weights file to be loaded; got {weights!r}"
        )
    if weights == "imagenet" and include_top and classes != 1000:
        raise ValueError(
            f"If using `weights` as `'imagenet'` with `include_top` as true, `classes` should be "
            f"1000, got {classes}"
        )


def load(model: Any, weights: Any, imagenet: WeightFile | None) -> Any:
    """Load ``weights`` (None, ``'imagenet'`` or a path) into ``model`` and return it."""
    if weights is None:
        return model
    if weights == "imagenet":
        if imagenet is None:
            raise ValueError(
                f"{model.name}: no ImageNet weights exist for this configuration; "
                "use weights=None or a path to your own file"
            )
        weights = fetch(imagenet)
    model.load_weights(os.fspath(weights))
    return model
