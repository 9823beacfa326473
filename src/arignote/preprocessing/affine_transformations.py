"""Keras 2's single-image transforms (``keras_preprocessing.image.affine_transformations`` 1.1.2):
``apply_affine_transform``, ``apply_channel_shift``, ``apply_brightness_shift``, the ``random_*``
functions, ``flip_axis`` and ``transform_matrix_offset_center``.

Same arguments, defaults and results as keras_preprocessing 1.1.2 (checked against it: see
tests/test_image_affine_keras2.py). The ``random_*`` functions draw from numpy's global random
state in Keras's order, so a script that calls ``np.random.seed(...)`` gets Keras's augmentation.
Angles are in degrees; ``tx`` moves along the rows, ``ty`` along the columns. The warp is
:func:`arignote.preprocessing.transforms.warp` (torch, the one used by ``ImageDataGenerator``) for
spline orders 0 and 1, with scipy.ndimage's fill modes ``nearest``, ``constant``, ``reflect`` and
``wrap`` (scipy's wrap: the first and last pixel overlap); orders 2 to 5 need SciPy
(``pip install 'arignote[scipy]'``).

As in Keras 1.1.2, the ``random_*`` functions pass only ``channel_axis`` on to
``apply_affine_transform``: the centre of the transform is taken from axes 0 and 1 whatever
``row_axis`` and ``col_axis`` say (right for channels-last images with ``channel_axis=2``).
One difference: a negative ``channel_axis`` (-1) puts the channels back where they were, where
Keras returned them first.

Example::

    >>> import numpy as np
    >>> x = np.arange(12, dtype="float32").reshape(3, 4, 1)
    >>> apply_affine_transform(x, ty=1, fill_mode="nearest")[..., 0].tolist()[0]
    [1.0, 2.0, 3.0, 3.0]
    >>> flip_axis(x, 1)[0, :, 0].tolist()
    [3.0, 2.0, 1.0, 0.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from arignote.preprocessing import transforms
from arignote.preprocessing.transforms import transform_matrix_offset_center

__all__ = ["flip_axis", "transform_matrix_offset_center", "apply_affine_transform", "apply_channel_shift",
           "apply_brightness_shift", "random_rotation", "random_shift", "random_shear", "random_zoom",
           "random_channel_shift", "random_brightness"]

FILL_MODES = ("constant", "nearest", "reflect", "wrap")


def flip_axis(x: Any, axis: int) -> np.ndarray:
    """``x`` reversed along ``axis`` (a view)."""
    return np.flip(np.asarray(x), axis)


def _image(x: Any, where: str) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 3:
        raise ValueError(f"{where} takes one image as a rank-3 array (rows, cols, channels in the order "
                         f"its axis arguments give), got shape {x.shape}")
    return x


def apply_affine_transform(x: Any, theta: float = 0, tx: float = 0, ty: float = 0, shear: float = 0,
                           zx: float = 1, zy: float = 1, row_axis: int = 0, col_axis: int = 1,
                           channel_axis: int = 2, fill_mode: str = "nearest", cval: float = 0.,
                           order: int = 1) -> np.ndarray:
    """One image ``x`` (rank 3) rotated by ``theta`` degrees, shifted by ``tx`` rows and ``ty``
    columns, sheared by ``shear`` degrees and zoomed by ``zx`` (rows) and ``zy`` (columns), about
    Keras's centre of the ``row_axis`` x ``col_axis`` plane. Each channel (``channel_axis``) is
    resampled with spline ``order`` (0 nearest, 1 bilinear; 2-5 need SciPy), points outside read by
    ``fill_mode`` (``constant`` uses ``cval``). No transform: ``x`` itself is returned.

    >>> x = np.arange(9.0).reshape(3, 3, 1)
    >>> apply_affine_transform(x, tx=1, order=0)[..., 0].tolist()  # output row r reads row r + 1
    [[3.0, 4.0, 5.0], [6.0, 7.0, 8.0], [6.0, 7.0, 8.0]]
    >>> apply_affine_transform(x, theta=90, order=0)[..., 0].tolist()  # about Keras's centre (2, 2)
    [[6.0, 6.0, 6.0], [7.0, 7.0, 7.0], [8.0, 8.0, 8.0]]
    """
    if fill_mode not in FILL_MODES:
        raise ValueError(f"fill_mode={fill_mode!r} is unknown: use one of {', '.join(FILL_MODES)}")
    if not isinstance(order, (int, np.integer)) or not 0 <= order <= 5:
        raise ValueError(f"order must be a spline order from 0 to 5 (1: bilinear), got {order!r}")
    matrix = transforms.keras_matrix(theta, tx, ty, shear, zx, zy)
    if matrix is None:
        return x
    x = _image(x, "apply_affine_transform")
    matrix = transforms.transform_matrix_offset_center(matrix, x.shape[row_axis], x.shape[col_axis])
    channels_last = np.moveaxis(x, channel_axis, -1)
    out = transforms.warp(channels_last[None], matrix[None], fill_mode, cval, order=int(order))[0]
    return np.moveaxis(out, -1, channel_axis)


def apply_channel_shift(x: Any, intensity: float, channel_axis: int = 0) -> np.ndarray:
    """``x`` plus ``intensity`` on every channel, clipped to the image's own [min, max] (Keras 2).

    >>> apply_channel_shift(np.array([[[0.0, 1.0]]]), 0.5, channel_axis=2).tolist()
    [[[0.5, 1.0]]]
    """
    x = _image(x, "apply_channel_shift")
    shifted = x + intensity
    if np.issubdtype(x.dtype, np.floating):
        shifted = shifted.astype(x.dtype, copy=False)  # numpy 1 kept float32 for a float64 scalar
    return np.clip(shifted, np.min(x), np.max(x))


def apply_brightness_shift(x: Any, brightness: float) -> np.ndarray:
    """Keras 2's brightness shift, through the 0-255 image it makes of ``x``: ``x`` (channels last,
    whatever ``backend.image_data_format()`` says, as keras_preprocessing 1.1.2; 1, 3 or 4 channels)
    scaled to 0-255 as ``array_to_img``, times ``brightness`` as ``PIL.ImageEnhance.Brightness``
    (truncated, clipped; alpha kept), returned as float32 in 0-255 whatever the scale of ``x``.

    >>> apply_brightness_shift(np.array([[[0.0], [1.0]]]), 0.5)[:, :, 0].tolist()
    [[0.0, 127.0]]
    """
    x = _image(x, "apply_brightness_shift")
    if x.shape[2] not in (1, 3, 4):
        raise ValueError(f"apply_brightness_shift: an image (rows, cols, channels) with 1, 3 or 4 channels "
                         f"(L, RGB, RGBA), got shape {x.shape}")
    return transforms.brightness(x[None], np.array([brightness]))[0].astype("float32")


def _check_pair(name: str, value: Any) -> None:
    if len(value) != 2:
        raise ValueError(f"`{name}` should be a tuple or list of two floats. Received: {value}")


def random_rotation(x: Any, rg: float, row_axis: int = 1, col_axis: int = 2, channel_axis: int = 0,
                    fill_mode: str = "nearest", cval: float = 0., interpolation_order: int = 1) -> np.ndarray:
    """Rotation by an angle drawn uniformly from ``[-rg, rg)`` degrees (``np.random``)."""
    theta = np.random.uniform(-rg, rg)
    return apply_affine_transform(x, theta=theta, channel_axis=channel_axis, fill_mode=fill_mode, cval=cval,
                                  order=interpolation_order)


def random_shift(x: Any, wrg: float, hrg: float, row_axis: int = 1, col_axis: int = 2, channel_axis: int = 0,
                 fill_mode: str = "nearest", cval: float = 0., interpolation_order: int = 1) -> np.ndarray:
    """Shift by fractions drawn uniformly from ``[-hrg, hrg)`` of the height, then ``[-wrg, wrg)`` of
    the width (``np.random``, in that order)."""
    x = _image(x, "random_shift")
    h, w = x.shape[row_axis], x.shape[col_axis]
    tx = np.random.uniform(-hrg, hrg) * h
    ty = np.random.uniform(-wrg, wrg) * w
    return apply_affine_transform(x, tx=tx, ty=ty, channel_axis=channel_axis, fill_mode=fill_mode, cval=cval,
                                  order=interpolation_order)


def random_shear(x: Any, intensity: float, row_axis: int = 1, col_axis: int = 2, channel_axis: int = 0,
                 fill_mode: str = "nearest", cval: float = 0., interpolation_order: int = 1) -> np.ndarray:
    """Shear by an angle drawn uniformly from ``[-intensity, intensity)`` degrees (``np.random``)."""
    shear = np.random.uniform(-intensity, intensity)
    return apply_affine_transform(x, shear=shear, channel_axis=channel_axis, fill_mode=fill_mode, cval=cval,
                                  order=interpolation_order)


def random_zoom(x: Any, zoom_range: Any, row_axis: int = 1, col_axis: int = 2, channel_axis: int = 0,
                fill_mode: str = "nearest", cval: float = 0., interpolation_order: int = 1) -> np.ndarray:
    """Zoom by ``zx``, ``zy`` drawn together uniformly from ``zoom_range = (lower, upper)``
    (no draw when it is ``(1, 1)``)."""
    _check_pair("zoom_range", zoom_range)
    if zoom_range[0] == 1 and zoom_range[1] == 1:
        zx, zy = 1, 1
    else:
        zx, zy = np.random.uniform(zoom_range[0], zoom_range[1], 2)
    return apply_affine_transform(x, zx=zx, zy=zy, channel_axis=channel_axis, fill_mode=fill_mode, cval=cval,
                                  order=interpolation_order)


def random_channel_shift(x: Any, intensity_range: float, channel_axis: int = 0) -> np.ndarray:
    """:func:`apply_channel_shift` by an intensity drawn uniformly from ``[-intensity_range,
    intensity_range)``."""
    intensity = np.random.uniform(-intensity_range, intensity_range)
    return apply_channel_shift(x, intensity, channel_axis=channel_axis)


def random_brightness(x: Any, brightness_range: Any) -> np.ndarray:
    """:func:`apply_brightness_shift` by a factor drawn uniformly from ``brightness_range``."""
    _check_pair("brightness_range", brightness_range)
    u = np.random.uniform(brightness_range[0], brightness_range[1])
    return apply_brightness_shift(x, u)
