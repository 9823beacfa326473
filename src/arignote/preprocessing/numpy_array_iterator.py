"""Keras 2 ``NumpyArrayIterator``: what ``ImageDataGenerator.flow`` returns, a ``utils.Sequence``.

``len(it)`` is ``ceil(n / batch_size)``; ``it[i]`` is batch ``i`` of the current epoch, augmented
and standardized: ``(x, y)`` (``x`` in the generator's dtype, ``y`` as given), ``x`` alone when
``y`` is None, ``(x, y, sample_weight)`` with weights. ``x=(images, extra)`` (``extra`` an array or
a list of arrays of the same length) gives ``x`` as ``[images, *extra]``, the extra rows untouched.
``on_epoch_end()`` starts the next epoch: a new order when ``shuffle=True`` and new random transforms.

Randomness: a numpy ``Generator`` per (seed, epoch) for the order and per (seed, epoch, batch) for
the transforms, so the same seed gives the same batches, in any access order and from any
thread. ``seed=None`` takes a seed from numpy's global state (``np.random.seed(...)`` makes a
run repeatable, as in Keras).

Iterating (``for xb, yb in it``) yields one epoch, then calls ``on_epoch_end()``, so every pass
over a Keras-style loop sees a new order and new transforms (Keras's iterator was endless);
``next(it)`` is Keras's endless stream of batches.

Example::

    >>> import numpy as np
    >>> from arignote.preprocessing.image import ImageDataGenerator
    >>> it = ImageDataGenerator().flow(np.zeros((5, 2, 2, 1)), np.arange(5), batch_size=2, shuffle=False)
    >>> len(it), it[2][1].tolist(), next(it)[1].tolist()
    (3, [4], [0, 1])
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np

from arignote.preprocessing.image_utils import array_to_img
from arignote.preprocessing.iterator import SeededIterator, _takes_rng

__all__ = ["NumpyArrayIterator", "check_images", "rng_for"]


def rng_for(seed: Any) -> np.random.Generator:
    """``np.random.default_rng(seed)``; with ``seed=None`` the seed comes from numpy's global state."""
    return np.random.default_rng(np.random.randint(2**31 - 1) if seed is None else seed)


def check_images(x: np.ndarray, where: str, stacklevel: int = 4) -> None:
    """A clear error unless ``x`` is a batch of channels-last images; a warning for odd channel counts."""
    if x.ndim != 4:
        raise ValueError(
            f"{where} needs images as a rank-4 array (samples, height, width, channels); "
            f"got shape {x.shape}. Add the channel axis to grayscale images with x[..., None]")
    if x.shape[3] not in (1, 3, 4):
        warnings.warn(
            f"{where}: images of shape {x.shape} have {x.shape[3]} channels on the last axis (channels_last "
            "expects 1, 3 or 4); if the channels come first, transpose with x.transpose(0, 2, 3, 1)",
            stacklevel=stacklevel)


def _split(arrays: list[Any], fraction: float, subset: str, y: Any) -> list[Any]:
    """Keras 2's subset: 'validation' is the FIRST ``int(n * fraction)`` samples, 'training' the rest."""
    if subset not in ("training", "validation"):
        raise ValueError(f"subset={subset!r} is unknown: use 'training' or 'validation'")
    if fraction == 0:
        raise ValueError(f"subset={subset!r} needs ImageDataGenerator(validation_split=...) > 0")
    cut = int(len(arrays[0]) * fraction)
    if cut == 0 or cut == len(arrays[0]):
        raise ValueError(f"validation_split={fraction} of {len(arrays[0])} samples leaves an empty subset")
    if y is not None and not np.array_equal(np.unique(y[:cut]), np.unique(y[cut:])):
        raise ValueError("the training and validation subsets hold different classes after the split: "
                         "if x and y are sorted by label, shuffle them before flow")
    part = slice(None, cut) if subset == "validation" else slice(cut, None)
    return [None if a is None else a[part] for a in arrays]


class NumpyArrayIterator(SeededIterator):
    """Batches of augmented images from arrays ``x`` (N, H, W, C) and optional ``y``, ``sample_weight``."""

    def __init__(self, x: Any, y: Any, image_data_generator: Any, batch_size: int = 32, shuffle: bool = False,
                 sample_weight: Any = None, seed: int | None = None, data_format: str | None = None,
                 save_to_dir: str | None = None, save_prefix: str = "", save_format: str = "png",
                 subset: str | None = None, dtype: Any = None) -> None:
        if data_format not in (None, "channels_last"):
            raise ValueError(f"data_format={data_format!r} is not supported: arignote images are "
                             "channels_last (N, H, W, C); transpose with x.transpose(0, 2, 3, 1)")
        misc: list[np.ndarray] = []
        if isinstance(x, (tuple, list)) and len(x) == 2 and np.ndim(x[0]) == 4:
            # Keras 2's flow(x=(images, extra)): extra (an array or a list of arrays) rides along
            # untouched, and each batch's x is [images, *extra]
            x, extra = x
            misc = [np.asarray(e) for e in (extra if isinstance(extra, list) else [extra])]
        x = np.asarray(x)
        check_images(x, "flow(x)")
        for i, extra_array in enumerate(misc, 1):
            if len(extra_array) != len(x):
                raise ValueError(f"All of the arrays in `x` should have the same length. Found a pair with: "
                                 f"len(x[0]) = {len(x)}, len(x[{i}]) = {len(extra_array)}")
        y = None if y is None else np.asarray(y)
        sample_weight = None if sample_weight is None else np.asarray(sample_weight)
        for name, other in (("`y` (labels)", y), ("`sample_weight`", sample_weight)):
            if other is not None and len(other) != len(x):  # Keras 2's message
                raise ValueError(f"`x` (images tensor) and {name} should have the same length. Found: "
                                 f"x.shape = {x.shape}, {name.split()[0].strip('`')}.shape = {other.shape}")
        if subset is not None:
            fraction = image_data_generator._validation_split
            x, y, sample_weight, *misc = _split([x, y, sample_weight, *misc], fraction, subset, y)
        self.x, self.y, self.sample_weight = x, y, sample_weight  # x keeps its dtype; batches are converted
        self.x_misc = misc
        self.image_data_generator = image_data_generator
        self.dtype = np.dtype(dtype or image_data_generator.dtype).name
        self.save_to_dir, self.save_prefix, self.save_format = save_to_dir, save_prefix, save_format
        super().__init__(len(x), batch_size, shuffle, seed)

    @_takes_rng
    def _get_batches_of_transformed_samples(self, index_array: np.ndarray,
                                            rng: np.random.Generator | None = None) -> Any:
        """The samples ``index_array``, augmented with ``rng`` (None: one seeded from ``np.random``)
        and standardized, with their labels and weights."""
        rng = rng_for(None) if rng is None else rng
        gen = self.image_data_generator
        batch_x = self.x[index_array].astype(self.dtype, copy=False)
        batch_x = gen.standardize_batch(gen.random_transform_batch(batch_x, rng))
        if self.save_to_dir:
            _save_images(batch_x, index_array, rng, self.save_to_dir, self.save_prefix, self.save_format)
        if self.x_misc:
            batch_x = [batch_x, *(extra[index_array] for extra in self.x_misc)]
        if self.y is None:
            return batch_x
        if self.sample_weight is None:
            return batch_x, self.y[index_array]
        return batch_x, self.y[index_array], self.sample_weight[index_array]


def _save_images(batch: np.ndarray, index_array: np.ndarray, rng: np.random.Generator, directory: str,
                 prefix: str, fmt: str) -> None:
    """Keras's ``save_to_dir``: each image scaled to 0-255 by ``array_to_img(scale=True)``, written as
    ``{prefix}_{index}_{random}.{format}`` (needs Pillow)."""
    if batch.shape[3] not in (1, 3, 4):
        raise ValueError(f"save_to_dir can write images with 1, 3 or 4 channels, not {batch.shape[3]}")
    for image, j in zip(batch, index_array):
        picture = array_to_img(image, data_format="channels_last", scale=True)  # L, RGB or RGBA
        picture.save(os.path.join(directory, f"{prefix}_{j}_{rng.integers(10**4)}.{fmt}"))
