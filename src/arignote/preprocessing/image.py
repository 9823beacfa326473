"""Keras 2 ``preprocessing.image``: ``ImageDataGenerator`` (real-time augmentation) and ``flow``.

Same constructor, defaults and order of operations as Keras 2.2: per batch, a random transform per
image (rotation, shifts, shear, zoom, channel shift, flips, brightness; see
:mod:`arignote.preprocessing.transforms`), then ``standardize``: ``preprocessing_function`` (per
image), ``rescale``, samplewise then featurewise centring / std normalization, ZCA whitening.
Images are channels-last ``(N, H, W, C)`` numpy arrays. The warp runs for the whole batch in one
torch call on the CPU; torch is imported on first use, not by ``import arignote``.

``flow_from_directory`` and ``flow_from_dataframe`` read image files with Pillow (see
:mod:`arignote.preprocessing.file_iterators`); ``load_img``, ``img_to_array``, ``array_to_img``,
``save_img`` are here too, the ``Iterator`` base class (:mod:`arignote.preprocessing.iterator`),
and Keras's single-image transforms (``apply_affine_transform``,
``random_rotation``, ``random_shift``, ... see :mod:`arignote.preprocessing.affine_transformations`).
``flow(x=(images, extra))`` carries extra inputs along with the images, as in Keras 2. Not supported
(a clear error): ``data_format="channels_first"``.

Example::

    >>> import numpy as np
    >>> from arignote.preprocessing.image import ImageDataGenerator
    >>> x = np.random.rand(10, 8, 8, 3).astype("float32")
    >>> datagen = ImageDataGenerator(width_shift_range=0.1, horizontal_flip=True)
    >>> batches = datagen.flow(x, np.arange(10), batch_size=4, seed=0)
    >>> len(batches), [xb.shape for xb, yb in batches]
    (3, [(4, 8, 8, 3), (4, 8, 8, 3), (2, 8, 8, 3)])
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from arignote import backend
from arignote.preprocessing import transforms
from arignote.preprocessing.affine_transformations import (
    apply_affine_transform,
    apply_brightness_shift,
    apply_channel_shift,
    flip_axis,
    random_brightness,
    random_channel_shift,
    random_rotation,
    random_shear,
    random_shift,
    random_zoom,
    transform_matrix_offset_center,
)
from arignote.preprocessing.file_iterators import DataFrameIterator, DirectoryIterator
from arignote.preprocessing.image_utils import array_to_img, img_to_array, list_pictures, load_img, save_img
from arignote.preprocessing.iterator import Iterator
from arignote.preprocessing.numpy_array_iterator import NumpyArrayIterator, check_images, rng_for

__all__ = ["ImageDataGenerator", "Iterator", "NumpyArrayIterator", "DirectoryIterator", "DataFrameIterator",
           "load_img", "img_to_array", "array_to_img", "save_img", "list_pictures", "apply_affine_transform",
           "apply_brightness_shift", "apply_channel_shift", "flip_axis", "random_brightness",
           "random_channel_shift", "random_rotation", "random_shear", "random_shift", "random_zoom",
           "transform_matrix_offset_center"]

_FIT_CHUNK = 1024  # images per step of fit's sums (bounds its float64 temporaries)


def _check_range(name: str, value: Any) -> Any:
    ok = isinstance(value, (int, float, np.number)) and not isinstance(value, bool)
    if isinstance(value, (list, tuple, np.ndarray)):
        ok = np.ndim(value) == 1 and len(value) > 0 and np.issubdtype(np.asarray(value).dtype, np.number)
    if not ok:
        raise ValueError(f"{name} must be a number or a list of numbers (as Keras 2), got {value!r}")
    return value


def _one_image(x: Any, where: str) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 3:
        raise ValueError(f"{where} takes one image (H, W, C), got shape {x.shape}; use flow for batches")
    return x


def _pair(name: str, value: Any) -> list[float]:
    if not isinstance(value, (list, tuple, np.ndarray)) or len(value) != 2:
        raise ValueError(f"{name} should be a tuple or list of two floats [lower, upper], got {value!r}")
    return [float(value[0]), float(value[1])]


class ImageDataGenerator:
    """Generate batches of images with real-time data augmentation (Keras 2).

    Arguments are Keras 2's, with its defaults. Shifts are a fraction of the size when < 1, pixels
    when >= 1 (an int ``k``: integers in ``(-k, k)``; a list: one of its values with a random sign);
    ``zoom_range`` is a float ``z`` (``[1 - z, 1 + z]``) or ``[lower, upper]``; angles in degrees.
    ``fill_mode`` is ``nearest``, ``constant`` (with ``cval``), ``reflect`` or ``wrap`` (tiling);
    ``interpolation_order`` the warp's spline order (1 bilinear, 0 nearest pixel; 2-5 need SciPy).
    ``dtype=None`` is ``backend.floatx()`` (float32 when floatX has no numpy type, e.g. bfloat16).
    ``data_format`` must be ``None`` or ``"channels_last"``.

    As in Keras, ``fit`` computes the featurewise statistics of the data it is given, without
    ``rescale`` or ``preprocessing_function``: fit on data in the scale ``standardize`` sees them.

    >>> gen = ImageDataGenerator(featurewise_center=True)
    >>> gen.fit(np.ones((2, 4, 4, 3)) * [1, 2, 3])
    >>> gen.mean.ravel().tolist(), gen.standardize(np.full((4, 4, 3), 5.0))[0, 0].tolist()
    ([1.0, 2.0, 3.0], [4.0, 3.0, 2.0])
    """

    def __init__(self, featurewise_center: bool = False, samplewise_center: bool = False,
                 featurewise_std_normalization: bool = False, samplewise_std_normalization: bool = False,
                 zca_whitening: bool = False, zca_epsilon: float = 1e-6, rotation_range: float = 0,
                 width_shift_range: Any = 0., height_shift_range: Any = 0., brightness_range: Any = None,
                 shear_range: float = 0., zoom_range: Any = 0., channel_shift_range: float = 0.,
                 fill_mode: str = "nearest", cval: float = 0., horizontal_flip: bool = False,
                 vertical_flip: bool = False, rescale: float | None = None,
                 preprocessing_function: Callable[[np.ndarray], np.ndarray] | None = None,
                 data_format: str | None = None, validation_split: float = 0.0, interpolation_order: int = 1,
                 dtype: Any = None) -> None:
        if data_format is None:
            data_format = backend.image_data_format()
        if data_format != "channels_last":
            raise ValueError(
                f"data_format={data_format!r} is not supported: arignote's image API is channels_last "
                "(N, H, W, C); drop data_format and transpose channels-first arrays once with "
                "x.transpose(0, 2, 3, 1)")
        if fill_mode not in transforms.FILL_MODES:
            raise ValueError(f"fill_mode={fill_mode!r} is unknown: use one of "
                             f"{', '.join(transforms.FILL_MODES)}")
        if not isinstance(interpolation_order, (int, np.integer)) or not 0 <= interpolation_order <= 5:
            raise ValueError(f"interpolation_order must be a spline order from 0 to 5 (1: bilinear, 0: "
                             f"nearest pixel), got {interpolation_order!r}")
        if not 0.0 <= validation_split < 1.0:
            raise ValueError(
                f"validation_split must be in [0, 1) (the fraction held out), got {validation_split!r}")
        if isinstance(zoom_range, (int, float, np.number)) and not isinstance(zoom_range, bool):
            zoom_range = [1 - zoom_range, 1 + zoom_range]
        self.zoom_range = _pair("zoom_range", zoom_range)
        self.brightness_range = (None if brightness_range is None
                                 else _pair("brightness_range", brightness_range))
        self.rotation_range = float(_check_range("rotation_range", rotation_range))
        self.width_shift_range = _check_range("width_shift_range", width_shift_range)
        self.height_shift_range = _check_range("height_shift_range", height_shift_range)
        self.shear_range = float(_check_range("shear_range", shear_range))
        self.channel_shift_range = float(_check_range("channel_shift_range", channel_shift_range))
        if preprocessing_function is not None and not callable(preprocessing_function):
            raise ValueError(
                f"preprocessing_function must be a function of one image, got {preprocessing_function!r}")
        if dtype is None:
            dtype = backend.floatx() if backend.floatx() in ("float16", "float32", "float64") else "float32"
        self.dtype = np.dtype(dtype).name
        self.featurewise_center, self.samplewise_center = featurewise_center, samplewise_center
        self.featurewise_std_normalization = featurewise_std_normalization
        self.samplewise_std_normalization = samplewise_std_normalization
        self.zca_whitening, self.zca_epsilon = zca_whitening, zca_epsilon
        self.fill_mode, self.cval, self.interpolation_order = fill_mode, cval, int(interpolation_order)
        self.horizontal_flip, self.vertical_flip = horizontal_flip, vertical_flip
        self.rescale, self.preprocessing_function = rescale, preprocessing_function
        self.data_format, self.channel_axis, self.row_axis, self.col_axis = data_format, 3, 1, 2
        self._validation_split = validation_split
        self.mean: np.ndarray | None = None
        self.std: np.ndarray | None = None
        self.principal_components: np.ndarray | None = None
        self._implied_settings()

    def _implied_settings(self) -> None:
        # Keras 2's overrides, with its warnings
        if self.zca_whitening and not self.featurewise_center:
            self.featurewise_center = True
            warnings.warn("zca_whitening overrides featurewise_center: set to True", stacklevel=3)
        if self.zca_whitening and self.featurewise_std_normalization:
            self.featurewise_std_normalization = False
            warnings.warn("zca_whitening overrides featurewise_std_normalization: set to False", stacklevel=3)
        if self.featurewise_std_normalization and not self.featurewise_center:
            self.featurewise_center = True
            warnings.warn("featurewise_std_normalization implies featurewise_center: set to True",
                          stacklevel=3)
        if self.samplewise_std_normalization and not self.samplewise_center:
            self.samplewise_center = True
            warnings.warn("samplewise_std_normalization implies samplewise_center: set to True", stacklevel=3)

    def flow(self, x: Any, y: Any = None, batch_size: int = 32, shuffle: bool = True, seed: int | None = None,
             sample_weight: Any = None, save_to_dir: str | None = None, save_prefix: str = "",
             save_format: str = "png", subset: str | None = None) -> NumpyArrayIterator:
        """A :class:`NumpyArrayIterator` (a ``utils.Sequence``) of augmented, standardized batches
        ``(x, y)`` (``x`` alone without ``y``; ``(x, y, sample_weight)`` with weights)."""
        return NumpyArrayIterator(x, y, self, batch_size=batch_size, shuffle=shuffle,
                                  sample_weight=sample_weight, seed=seed, save_to_dir=save_to_dir,
                                  save_prefix=save_prefix, save_format=save_format, subset=subset,
                                  dtype=self.dtype)

    def flow_from_directory(self, directory: str, target_size: Any = (256, 256), color_mode: str = "rgb",
                            classes: list[str] | None = None, class_mode: Any = "categorical",
                            batch_size: int = 32, shuffle: bool = True, seed: int | None = None,
                            save_to_dir: str | None = None, save_prefix: str = "", save_format: str = "png",
                            follow_links: bool = False, subset: str | None = None,
                            interpolation: str = "nearest") -> DirectoryIterator:
        """A :class:`DirectoryIterator` over ``directory/<class>/*.png|jpg|...`` (Keras 2 arguments)."""
        return DirectoryIterator(directory, self, target_size=target_size, color_mode=color_mode,
                                 classes=classes, class_mode=class_mode, batch_size=batch_size,
                                 shuffle=shuffle, seed=seed, save_to_dir=save_to_dir, save_prefix=save_prefix,
                                 save_format=save_format, follow_links=follow_links, subset=subset,
                                 interpolation=interpolation, dtype=self.dtype)

    def flow_from_dataframe(self, dataframe: Any, directory: str | None = None, x_col: str = "filename",
                            y_col: Any = "class", weight_col: str | None = None,
                            target_size: Any = (256, 256),
                            color_mode: str = "rgb", classes: list[str] | None = None,
                            class_mode: Any = "categorical", batch_size: int = 32, shuffle: bool = True,
                            seed: int | None = None, save_to_dir: str | None = None, save_prefix: str = "",
                            save_format: str = "png", subset: str | None = None,
                            interpolation: str = "nearest",
                            validate_filenames: bool = True, **kwargs: Any) -> DataFrameIterator:
        """A :class:`DataFrameIterator` over the files named in a pandas DataFrame (Keras 2 arguments;
        the deprecated ``has_ext``, ``sort`` and ``drop_duplicates`` are refused by name)."""
        if kwargs:
            raise TypeError(f"flow_from_dataframe: {', '.join(sorted(kwargs))} not supported "
                            "(keras_preprocessing "
                            "deprecated has_ext, sort and drop_duplicates); remove them")
        return DataFrameIterator(dataframe, directory, self, x_col=x_col, y_col=y_col, weight_col=weight_col,
                                 target_size=target_size, color_mode=color_mode, classes=classes,
                                 class_mode=class_mode, batch_size=batch_size, shuffle=shuffle, seed=seed,
                                 save_to_dir=save_to_dir, save_prefix=save_prefix, save_format=save_format,
                                 subset=subset, interpolation=interpolation, dtype=self.dtype,
                                 validate_filenames=validate_filenames)

    def get_random_transform(self, img_shape: tuple[int, ...], seed: int | None = None) -> dict[str, Any]:
        """Keras's dict of one random transform (``theta``, ``tx``, ``ty``, ``shear``, ``zx``, ``zy``,
        ``flip_horizontal``, ``flip_vertical``, ``channel_shift_intensity``, ``brightness``)."""
        p = transforms.draw(rng_for(seed), 1, img_shape[0], img_shape[1], self)
        return {k: None if v is None else v[0].item() for k, v in p.items()}

    def apply_transform(self, x: np.ndarray, transform_parameters: dict[str, Any]) -> np.ndarray:
        """One image ``(H, W, C)`` transformed by ``transform_parameters`` (missing keys: no change)."""
        x = _one_image(x, "apply_transform")
        p = transforms.identity(1)
        for key, value in transform_parameters.items():
            if key not in p:
                raise ValueError(f"unknown transform parameter {key!r}: use {', '.join(p)}")
            p[key] = None if value is None else np.asarray([value])
        return self._apply(x[None].astype(self.dtype), p)[0]

    def random_transform(self, x: np.ndarray, seed: int | None = None) -> np.ndarray:
        """One image ``(H, W, C)`` randomly transformed (``seed`` makes it repeatable)."""
        x = _one_image(x, "random_transform")
        return self.apply_transform(x, self.get_random_transform(x.shape, seed))

    def _apply(self, x: np.ndarray, p: dict[str, Any]) -> np.ndarray:
        return transforms.apply(x, p, self.fill_mode, self.cval, self.interpolation_order)

    def random_transform_batch(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A batch ``(N, H, W, C)`` with one random transform per image drawn from ``rng``."""
        return self._apply(x, transforms.draw(rng, len(x), x.shape[1], x.shape[2], self))

    def standardize(self, x: np.ndarray) -> np.ndarray:
        """Normalize one image ``(H, W, C)`` or a batch ``(N, H, W, C)`` (each image on its own for the
        samplewise steps; Keras 2 would pool a batch). Returns a new array; ``x`` is kept."""
        x = np.asarray(x)
        if x.ndim not in (3, 4):
            raise ValueError(
                f"standardize takes an image (H, W, C) or a batch (N, H, W, C), got shape {x.shape}")
        out = self.standardize_batch(np.array(x[None] if x.ndim == 3 else x, dtype=self.dtype))
        return out[0] if x.ndim == 3 else out

    def standardize_batch(self, x: np.ndarray) -> np.ndarray:
        """:meth:`standardize` for a batch the caller owns (changed in place where possible)."""
        if self.preprocessing_function is not None:
            for i in range(len(x)):
                image = np.asarray(self.preprocessing_function(x[i]))
                if image.shape != x[i].shape:
                    raise ValueError(f"preprocessing_function returned shape {image.shape} for an image of "
                                     f"shape {x[i].shape}: it must return an image of the same shape")
                x[i] = image
        if self.rescale:
            x *= self.rescale
        if self.samplewise_center:
            x -= x.mean(axis=(1, 2, 3), keepdims=True)
        if self.samplewise_std_normalization:
            x /= x.std(axis=(1, 2, 3), keepdims=True) + backend.epsilon()
        if self.featurewise_center or self.featurewise_std_normalization or self.zca_whitening:
            self._check_fitted()
        if self.featurewise_center:
            x -= self.mean
        if self.featurewise_std_normalization:
            x /= self.std + backend.epsilon()
        if self.zca_whitening:
            flat = x.reshape(len(x), -1) @ self.principal_components
            x = flat.reshape(x.shape).astype(x.dtype, copy=False)
        return x

    def _check_fitted(self) -> None:
        if (self.featurewise_center and self.mean is None) or (
                self.featurewise_std_normalization and self.std is None) or (
                self.zca_whitening and self.principal_components is None):
            raise ValueError("this ImageDataGenerator has featurewise_center, featurewise_std_normalization "
                             "or zca_whitening set but was not fit: call datagen.fit(x_train) first")

    def fit(self, x: Any, augment: bool = False, rounds: int = 1, seed: int | None = None) -> None:
        """Compute the featurewise statistics of ``x`` (N, H, W, C), as Keras 2: per-channel ``mean``
        and ``std`` (shape ``(1, 1, C)``) and, for ZCA, ``principal_components`` = ``U diag(1 /
        sqrt(S + zca_epsilon)) U^T`` from the SVD of the covariance of the centred, flattened images.
        ``augment=True`` computes them on ``rounds`` randomly transformed copies of ``x`` instead.
        Sums run in float64 over chunks of images, so fitting needs no full-size copy of ``x``."""
        x = np.asarray(x)
        check_images(x, "fit(x)", stacklevel=3)
        if not (self.featurewise_center or self.featurewise_std_normalization or self.zca_whitening):
            return
        base_seed = int(rng_for(seed).integers(2**31 - 1))

        def chunks() -> Any:  # the same (augmented) images on every pass
            rng = np.random.default_rng(base_seed)
            for _ in range(rounds if augment else 1):
                for start in range(0, len(x), _FIT_CHUNK):
                    part = x[start:start + _FIT_CHUNK].astype(self.dtype)
                    yield (self.random_transform_batch(part, rng) if augment else part).astype(np.float64)

        pixels = len(x) * x.shape[1] * x.shape[2] * (rounds if augment else 1)
        mean = sum(part.sum(axis=(0, 1, 2)) for part in chunks()) / pixels
        if self.featurewise_center:
            self.mean = mean.astype(self.dtype).reshape(1, 1, -1)
        if self.featurewise_std_normalization:
            var = sum(((part - mean) ** 2).sum(axis=(0, 1, 2)) for part in chunks()) / pixels
            self.std = np.sqrt(var).astype(self.dtype).reshape(1, 1, -1)
        if self.zca_whitening:
            flat = (part.reshape(len(part), -1) - np.tile(mean, x.shape[1] * x.shape[2]) for part in chunks())
            sigma = sum(f.T @ f for f in flat) / (pixels // (x.shape[1] * x.shape[2]))
            s, u = np.linalg.eigh(sigma)  # sigma is symmetric PSD: its SVD is this eigendecomposition
            s_inv = 1.0 / np.sqrt(np.clip(s, 0, None) + self.zca_epsilon)
            self.principal_components = ((u * s_inv) @ u.T).astype(self.dtype)

