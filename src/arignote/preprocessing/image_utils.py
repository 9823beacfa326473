"""Keras 2's image file helpers: ``load_img``, ``img_to_array``, ``array_to_img``, ``save_img``,
``list_pictures`` (with Pillow: ``pip install 'arignote[image]'``).

Arrays are ``(H, W, C)`` float32 (channels-first with ``data_format='channels_first'``); a
grayscale image has one channel. ``array_to_img(scale=True)`` maps the values onto 0-255 as Keras
2.3.1: minus the minimum, divided by the maximum, times 255 (in float32, then truncated).

Example::

    >>> import os, tempfile, numpy as np
    >>> path = os.path.join(tempfile.mkdtemp(), "red.png")
    >>> save_img(path, np.tile([1.0, 0.0, 0.0], (2, 3, 1)))
    >>> x = img_to_array(load_img(path))
    >>> x.shape, x.dtype, x[0, 0].tolist()
    ((2, 3, 3), dtype('float32'), [255.0, 0.0, 0.0])
"""

from __future__ import annotations

import importlib
import os
import warnings
from typing import Any

import numpy as np

from arignote import backend

__all__ = ["load_img", "img_to_array", "array_to_img", "save_img", "list_pictures", "INTERPOLATIONS",
           "WHITE_LIST_FORMATS"]

WHITE_LIST_FORMATS = ("png", "jpg", "jpeg", "bmp", "ppm", "tif", "tiff")
COLOR_MODES = ("grayscale", "rgb", "rgba")
_MODES = {"grayscale": "L", "rgb": "RGB", "rgba": "RGBA"}
INTERPOLATIONS = ("nearest", "bilinear", "bicubic", "lanczos", "box", "hamming")


def _pil() -> Any:
    try:
        return importlib.import_module("PIL.Image")
    except ImportError:
        raise ImportError("Keras image files need Pillow: pip install pillow (or pip install "
                          "'arignote[image]')") from None


def _data_format(data_format: str | None) -> str:
    data_format = backend.image_data_format() if data_format is None else data_format
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError(f"data_format={data_format!r} must be 'channels_first' or 'channels_last'")
    return data_format


def _float_dtype(dtype: Any) -> str:
    if dtype is not None:
        return np.dtype(dtype).name
    return backend.floatx() if backend.floatx() in ("float16", "float32", "float64") else "float32"


def load_img(path: str | os.PathLike[str], grayscale: bool = False, color_mode: str = "rgb",
             target_size: tuple[int, int] | None = None, interpolation: str = "nearest") -> Any:
    """A PIL image from ``path`` in ``color_mode`` (``grayscale``, ``rgb``, ``rgba``), resized to
    ``target_size=(height, width)`` with ``interpolation`` when it differs."""
    pil = _pil()
    if grayscale:
        warnings.warn('grayscale is deprecated. Please use color_mode = "grayscale"', UserWarning,
                      stacklevel=2)
        color_mode = "grayscale"
    if color_mode not in COLOR_MODES:
        raise ValueError(f'color_mode={color_mode!r} must be "grayscale", "rgb", or "rgba"')
    if target_size is not None and interpolation not in INTERPOLATIONS:
        raise ValueError(f"Invalid interpolation method {interpolation!r}; supported methods are "
                         f"{', '.join(INTERPOLATIONS)}")
    try:
        img = pil.open(path)
        img.load()
    except FileNotFoundError:
        raise FileNotFoundError(f"load_img: no image file at {os.fspath(path)!r}") from None
    except OSError as exc:  # PIL.UnidentifiedImageError is an OSError
        raise OSError(f"load_img: {os.fspath(path)!r} cannot be read as an image ({exc})") from None
    if img.mode != _MODES[color_mode]:
        img = img.convert(_MODES[color_mode])
    if target_size is not None:
        width_height = (int(target_size[1]), int(target_size[0]))
        if img.size != width_height:
            img = img.resize(width_height, getattr(pil.Resampling, interpolation.upper()))
    return img


def img_to_array(img: Any, data_format: str | None = None, dtype: Any = None) -> np.ndarray:
    """A PIL image as an ``(H, W, C)`` array (``(C, H, W)`` for ``channels_first``), float32 by default."""
    data_format = _data_format(data_format)
    x = np.asarray(img, dtype=_float_dtype(dtype))
    if x.ndim == 2:
        x = x[:, :, None]
    elif x.ndim != 3:
        raise ValueError(f"img_to_array: unsupported image shape {x.shape}")
    return x.transpose(2, 0, 1) if data_format == "channels_first" else x


def array_to_img(x: Any, data_format: str | None = None, scale: bool = True, dtype: Any = None) -> Any:
    """A PIL image (``L``, ``RGB`` or ``RGBA`` by the channel count) from one ``(H, W, C)`` array."""
    pil = _pil()
    data_format = _data_format(data_format)
    x = np.array(x, dtype=_float_dtype(dtype))
    if x.ndim != 3:
        raise ValueError("Expected image array to have rank 3 (single image). "
                         f"Got array with shape: {x.shape}")
    if data_format == "channels_first":
        x = x.transpose(1, 2, 0)
    if scale:
        x = x - np.min(x)  # keras_preprocessing 1.1.2 (Keras 2.3.1); 1.0.x only lifted negative minima
        top = np.max(x)
        if top != 0:
            x = x / top
        x = x * 255
    channels = x.shape[2]
    if channels not in (1, 3, 4):
        raise ValueError(f"array_to_img: unsupported channel number {channels} (use 1, 3 or 4)")
    pixels = x.astype("uint8")
    return pil.fromarray(pixels[:, :, 0] if channels == 1 else pixels)


def save_img(path: Any, x: Any, data_format: str | None = None, file_format: str | None = None,
             scale: bool = True, **kwargs: Any) -> None:
    """Write one image array to ``path`` (a file name or a file object with ``file_format``);
    ``kwargs`` go to ``PIL.Image.save``. RGBA saved as JPEG is converted to RGB, with a warning."""
    img = array_to_img(x, data_format=data_format, scale=scale)
    if file_format is not None:
        ext = file_format
    elif isinstance(path, (str, os.PathLike)):
        ext = os.path.splitext(os.fspath(path))[1][1:]
    else:
        raise ValueError("save_img: pass file_format= (e.g. 'png') when path is a file object")
    if img.mode == "RGBA" and ext.lower() in ("jpg", "jpeg"):
        warnings.warn("The JPG format does not support RGBA images, converting to RGB.", UserWarning,
                      stacklevel=2)
        img = img.convert("RGB")
    fmt = None if file_format is None else ("JPEG" if file_format.lower() in ("jpg", "jpeg") else file_format)
    img.save(path, format=fmt, **kwargs)


def list_pictures(directory: str, ext: str | tuple[str, ...] = WHITE_LIST_FORMATS) -> list[str]:
    """Every picture under ``directory`` (any depth) whose extension is in ``ext``."""
    suffixes = tuple("." + e for e in ((ext,) if isinstance(ext, str) else ext))
    return [os.path.join(root, f) for root, _, files in os.walk(directory) for f in files
            if f.lower().endswith(suffixes)]
