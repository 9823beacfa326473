"""ImageNet input preprocessing and prediction decoding, as Keras 2's ``applications.imagenet_utils``.

``preprocess_input(x, data_format=None, mode='caffe')`` takes a batch (or one image) of RGB
pixels in 0..255, numpy or torch, and returns what the network was trained on:

* ``caffe`` (VGG16/19, ResNet50): RGB -> BGR, then the ImageNet channel means subtracted;
* ``tf`` (Inception, Xception, MobileNet, NASNet): scaled to -1..1;
* ``torch`` (DenseNet): scaled to 0..1, then normalised by the ImageNet means and deviations.

``decode_predictions(preds, top=5)`` turns ``(samples, 1000)`` scores into
``[(wordnet_id, name, score), ...]`` per sample, best first, from Keras's
``imagenet_class_index.json`` (cached in ``~/.keras/models``).

Example::

    >>> import numpy as np
    >>> preprocess_input(np.full((1, 2, 2, 3), 127.5, "float32"), mode="tf")[0, 0, 0]
    array([0., 0., 0.], dtype=float32)
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from arignote.applications._weights import WeightFile, fetch
from arignote.backend import image_data_format

__all__ = ["preprocess_input", "decode_predictions", "CLASS_INDEX_FILE"]

CLASS_INDEX_FILE = WeightFile(
    "imagenet_class_index.json",
    "https://storage.googleapis.com/download.tensorflow.org/data/imagenet_class_index.json",
    "c2c37ea517e94d9795004a39431a14cb",
)

_CAFFE_MEAN_BGR = (103.939, 116.779, 123.68)
_TORCH_MEAN = (0.485, 0.456, 0.406)
_TORCH_STD = (0.229, 0.224, 0.225)
_MODES = ("caffe", "tf", "torch")
_class_index: dict[str, list[str]] | None = None


def _channel_shape(data_format: str) -> tuple[int, ...]:
    """The shape that broadcasts a per-channel vector over an image (3-D) or a batch (4-D)."""
    if data_format == "channels_last":
        return (3,)
    return (3, 1, 1)


def preprocess_input(x: Any, data_format: str | None = None, mode: str = "caffe", **kwargs: Any) -> Any:
    """``x`` (numpy or torch, RGB 0..255, one image or a batch) prepared for an ImageNet network.

    A numpy float array is changed in place and returned (as Keras 2 does); integers are
    converted to float32 first. ``data_format`` defaults to :func:`arignote.backend.image_data_format`.
    """
    if kwargs:
        raise TypeError(f"preprocess_input got unexpected arguments {sorted(kwargs)}")
    data_format = data_format or image_data_format()
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(
            f"preprocess_input: unknown data_format {data_format!r}; use 'channels_last' or 'channels_first'"
        )
    if mode not in _MODES:
        raise ValueError(f"preprocess_input: unknown mode {mode!r}; choose one of {', '.join(_MODES)}")
    is_numpy = isinstance(x, np.ndarray)
    if is_numpy and not np.issubdtype(x.dtype, np.floating):
        x = x.astype("float32")
    elif not is_numpy and not x.is_floating_point():
        x = x.float()
    if x.ndim not in (3, 4):
        raise ValueError(
            f"preprocess_input expects one image (3-D) or a batch (4-D), got shape {tuple(x.shape)}"
        )
    if mode == "tf":
        x /= 127.5
        x -= 1.0
        return x
    channel_axis = x.ndim - 1 if data_format == "channels_last" else x.ndim - 3
    shape = _channel_shape(data_format)
    if mode == "torch":
        mean, std = np.array(_TORCH_MEAN).reshape(shape), np.array(_TORCH_STD).reshape(shape)
        x /= 255.0
    else:  # caffe: RGB -> BGR, zero-centred, not scaled
        x = _flip(x, channel_axis)
        mean, std = np.array(_CAFFE_MEAN_BGR).reshape(shape), None
    if is_numpy:
        x -= mean.astype(x.dtype)
        if std is not None:
            x /= std.astype(x.dtype)
        return x
    import torch

    x = x - torch.as_tensor(mean, dtype=x.dtype, device=x.device)
    return x / torch.as_tensor(std, dtype=x.dtype, device=x.device) if std is not None else x


def _flip(x: Any, axis: int) -> Any:
    if isinstance(x, np.ndarray):
        return np.flip(x, axis)
    return x.flip(axis)


def decode_predictions(preds: Any, top: int = 5, **kwargs: Any) -> list[list[tuple[str, str, float]]]:
    """The ``top`` classes of each row of ``preds`` (shape ``(samples, 1000)``), best first."""
    global _class_index
    if kwargs:
        raise TypeError(f"decode_predictions got unexpected arguments {sorted(kwargs)}")
    preds = np.asarray(preds)
    if preds.ndim != 2 or preds.shape[1] != 1000:
        raise ValueError(
            "decode_predictions expects a batch of ImageNet predictions, a 2-D array of shape "
            f"(samples, 1000); got an array of shape {preds.shape}"
        )
    if _class_index is None:
        with open(fetch(CLASS_INDEX_FILE), encoding="utf-8") as f:
            _class_index = json.load(f)
    out = []
    for row in preds:
        best = np.argsort(row)[::-1][:top]
        out.append([(*_class_index[str(i)], row[i]) for i in best])
    return out
