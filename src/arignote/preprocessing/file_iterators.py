"""Keras 2's ``DirectoryIterator`` and ``DataFrameIterator``: batches of image files, augmented.

What ``ImageDataGenerator.flow_from_directory`` / ``flow_from_dataframe`` return: a
``utils.Sequence`` whose batch ``i`` is ``(x, y)`` with ``x`` of shape ``(n, height, width, channels)``
(``target_size`` + 1, 3 or 4 channels for ``color_mode`` grayscale, rgb, rgba) and ``y`` by
``class_mode``: ``categorical`` one-hot, ``binary`` / ``sparse`` class indices (float), ``input`` a
copy of ``x``, ``raw`` the ``y_col`` values, ``multi_output`` a list of columns, ``None`` no ``y``.
Images are read with Pillow when their batch is asked for; order, shuffling, seeds, augmentation
and ``subset`` work as in :class:`~arignote.preprocessing.numpy_array_iterator.NumpyArrayIterator`.

Example::

    >>> from arignote.preprocessing.image import ImageDataGenerator
    >>> it = ImageDataGenerator(rescale=1 / 255).flow_from_directory(  # doctest: +SKIP
    ...     "data/train", target_size=(64, 64), batch_size=16, class_mode="binary")
    Found 2000 images belonging to 2 classes.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np

from arignote.preprocessing.image_utils import COLOR_MODES, WHITE_LIST_FORMATS, img_to_array, load_img
from arignote.preprocessing.iterator import SeededIterator, _takes_rng
from arignote.preprocessing.numpy_array_iterator import _save_images, rng_for

__all__ = ["DirectoryIterator", "DataFrameIterator"]

_CHANNELS = {"grayscale": 1, "rgb": 3, "rgba": 4}
_SUFFIXES = tuple("." + e for e in WHITE_LIST_FORMATS)


def _split_bounds(generator: Any, subset: str | None) -> tuple[float, float] | None:
    if subset is None:
        return None
    if subset not in ("training", "validation"):
        raise ValueError(f"subset={subset!r} is unknown: use 'training' or 'validation'")
    fraction = generator._validation_split
    if not fraction:
        raise ValueError(f"subset={subset!r} needs ImageDataGenerator(validation_split=...) > 0")
    return (0.0, fraction) if subset == "validation" else (fraction, 1.0)


class _FileBatches(SeededIterator):
    """Shared batching of image files: ``filepaths``, labels by ``class_mode``, randomness per epoch."""

    class_modes: tuple[Any, ...] = ()

    def _setup(self, generator: Any, target_size: Any, color_mode: str, class_mode: Any, batch_size: int,
               shuffle: bool, seed: int | None, data_format: str | None, save_to_dir: str | None,
               save_prefix: str, save_format: str, interpolation: str, dtype: Any) -> None:
        if data_format not in (None, "channels_last"):
            raise ValueError(f"data_format={data_format!r} is not supported: "
                             "arignote images are channels_last")
        if color_mode not in COLOR_MODES:
            raise ValueError(f'Invalid color mode: {color_mode!r}; expected "rgb", "rgba", or "grayscale".')
        if class_mode not in self.class_modes:
            allowed = ", ".join(repr(m) for m in self.class_modes)
            raise ValueError(f"Invalid class_mode: {class_mode!r}; expected one of: {allowed}")
        if len(tuple(target_size)) != 2:
            raise ValueError(f"target_size must be (height, width), got {target_size!r}")
        self.image_data_generator = generator
        self.target_size = tuple(int(v) for v in target_size)
        self.color_mode, self.class_mode, self.interpolation = color_mode, class_mode, interpolation
        self.image_shape = (*self.target_size, _CHANNELS[color_mode])
        self.dtype = np.dtype(dtype or generator.dtype).name
        self.save_to_dir, self.save_prefix, self.save_format = save_to_dir, save_prefix, save_format
        self.data_format = "channels_last"
        SeededIterator.__init__(self, 0, batch_size, shuffle, seed)  # n is set once the files are known

    def _found(self) -> None:
        """The files are listed: the number of samples and the first epoch's order."""
        self.samples = self.n = len(self.filepaths)
        self._set_index_array()

    # --------------------------------------------------------------- batches
    @_takes_rng
    def _get_batches_of_transformed_samples(self, index_array: np.ndarray,
                                            rng: np.random.Generator | None = None) -> Any:
        """The images ``index_array`` read, augmented with ``rng`` (None: one seeded from
        ``np.random``) and standardized, with their labels (and weights)."""
        rng = rng_for(None) if rng is None else rng
        gen = self.image_data_generator
        x = np.zeros((len(index_array), *self.image_shape), dtype=self.dtype)
        for i, j in enumerate(index_array):
            with load_img(self.filepaths[j], color_mode=self.color_mode, target_size=self.target_size,
                          interpolation=self.interpolation) as img:
                x[i] = img_to_array(img, data_format="channels_last", dtype=self.dtype)
        x = gen.standardize_batch(gen.random_transform_batch(x, rng))
        if self.save_to_dir:
            _save_images(x, index_array, rng, self.save_to_dir, self.save_prefix, self.save_format)
        y = self._labels(x, index_array)
        if y is None:
            return x
        weights = getattr(self, "sample_weight", None)
        return (x, y) if weights is None else (x, y, weights[index_array])

    def _labels(self, x: np.ndarray, index_array: np.ndarray) -> Any:
        mode = self.class_mode
        if mode == "input":
            return x.copy()
        if mode in ("binary", "sparse"):
            return np.asarray(self.classes, dtype=self.dtype)[index_array]
        if mode == "categorical":
            y = np.zeros((len(index_array), len(self.class_indices)), dtype=self.dtype)
            for i, j in enumerate(index_array):
                y[i, self.classes[j]] = 1.0
            return y
        if mode == "multi_output":
            return [column[index_array] for column in self.labels]
        if mode == "raw":
            return self.labels[index_array]
        return None

    @property
    def labels(self) -> Any:
        return self.classes


class DirectoryIterator(_FileBatches):
    """Images in ``directory/<class>/...`` (any depth), one class per subdirectory.

    ``classes`` lists the subdirectories to use, in index order (default: all, sorted);
    ``class_indices`` maps each to its index; ``filenames`` are relative to ``directory``.
    With ``subset``, each class directory's sorted files are split: the first
    ``validation_split`` of them are ``validation``, the rest ``training`` (Keras 2).
    """

    class_modes = ("categorical", "binary", "sparse", "input", None)

    def __init__(self, directory: str, image_data_generator: Any, target_size: Any = (256, 256),
                 color_mode: str = "rgb", classes: list[str] | None = None, class_mode: Any = "categorical",
                 batch_size: int = 32, shuffle: bool = True, seed: int | None = None,
                 data_format: str | None = None, save_to_dir: str | None = None, save_prefix: str = "",
                 save_format: str = "png", follow_links: bool = False, subset: str | None = None,
                 interpolation: str = "nearest", dtype: Any = None) -> None:
        self._setup(image_data_generator, target_size, color_mode, class_mode, batch_size, shuffle, seed,
                    data_format, save_to_dir, save_prefix, save_format, interpolation, dtype)
        directory = os.fspath(directory)
        if not os.path.isdir(directory):
            raise FileNotFoundError(f"flow_from_directory: {directory!r} is not a directory")
        self.directory = directory
        if classes is None:
            classes = sorted(d for d in os.listdir(directory) if os.path.isdir(os.path.join(directory, d)))
        missing = [c for c in classes if not os.path.isdir(os.path.join(directory, c))]
        if missing:
            raise FileNotFoundError(f"flow_from_directory: classes {missing} have no subdirectory "
                                    f"in {directory!r}")
        if class_mode == "binary" and len(classes) != 2:
            raise ValueError(f"class_mode='binary' needs 2 classes; {directory!r} has "
                             f"{len(classes)}: {classes}")
        self.class_indices = {c: i for i, c in enumerate(classes)}
        self.num_classes = len(classes)
        bounds = _split_bounds(image_data_generator, subset)
        self.filenames: list[str] = []
        labels: list[int] = []
        for c in classes:
            files = self._files(os.path.join(directory, c), follow_links)
            if bounds is not None:
                files = files[int(bounds[0] * len(files)):int(bounds[1] * len(files))]
            self.filenames += [os.path.join(c, f) for f in files]
            labels += [self.class_indices[c]] * len(files)
        self.classes = np.asarray(labels, dtype="int32")
        self.filepaths = [os.path.join(directory, f) for f in self.filenames]
        self._found()
        print(f"Found {self.samples} images belonging to {self.num_classes} classes.")

    @staticmethod
    def _files(folder: str, follow_links: bool) -> list[str]:
        out = []
        for root, _, files in sorted(os.walk(folder, followlinks=follow_links), key=lambda w: w[0]):
            out += [os.path.relpath(os.path.join(root, f), folder) for f in sorted(files)
                    if f.lower().endswith(_SUFFIXES)]
        return out


class DataFrameIterator(_FileBatches):
    """Images named in column ``x_col`` of a pandas DataFrame (relative to ``directory`` when given),
    labels from ``y_col`` (a list of labels per row for multi-label ``categorical``; a list of
    columns for ``multi_output``), sample weights from ``weight_col``.

    Rows whose file is missing or not an image are dropped with a warning when
    ``validate_filenames``; rows whose label is not in ``classes`` are dropped. With ``subset``,
    the first ``validation_split`` of the rows are ``validation``, the rest ``training``.
    """

    class_modes = ("categorical", "binary", "sparse", "input", "raw", "multi_output", None)

    def __init__(self, dataframe: Any, directory: str | None = None, image_data_generator: Any = None,
                 x_col: str = "filename", y_col: Any = "class", weight_col: str | None = None,
                 target_size: Any = (256, 256), color_mode: str = "rgb", classes: list[str] | None = None,
                 class_mode: Any = "categorical", batch_size: int = 32, shuffle: bool = True,
                 seed: int | None = None, data_format: str | None = None, save_to_dir: str | None = None,
                 save_prefix: str = "", save_format: str = "png", subset: str | None = None,
                 interpolation: str = "nearest", dtype: Any = None, validate_filenames: bool = True) -> None:
        if not hasattr(dataframe, "iloc") or not hasattr(dataframe, "columns"):
            raise TypeError(f"flow_from_dataframe needs a pandas DataFrame (pip install pandas), "
                            f"got {type(dataframe).__name__}")
        self._setup(image_data_generator, target_size, color_mode, class_mode, batch_size, shuffle, seed,
                    data_format, save_to_dir, save_prefix, save_format, interpolation, dtype)
        y_cols = list(y_col) if isinstance(y_col, (list, tuple)) else [y_col]
        needed = [x_col] + ([] if class_mode in ("input", None) else y_cols)
        needed += [weight_col] if weight_col else []
        absent = [c for c in needed if c not in dataframe.columns]
        if absent:
            raise KeyError(f"flow_from_dataframe: columns {absent} are not in the dataframe "
                           f"(it has {list(dataframe.columns)})")
        if class_mode == "multi_output" and not isinstance(y_col, (list, tuple)):
            raise TypeError("class_mode='multi_output' needs y_col to be a list of columns")
        df = dataframe.copy()
        self.directory = directory
        if validate_filenames:
            ok = [self._valid(p) for p in self._paths(df[x_col].tolist())]
            if not all(ok):
                warnings.warn(f"Found {ok.count(False)} invalid image filename(s) in x_col={x_col!r}. These "
                              "filename(s) will be ignored.", UserWarning, stacklevel=3)
                df = df[ok]
        if class_mode in ("categorical", "binary", "sparse"):
            df, classes = self._filter_classes(df, y_col, classes, class_mode)
            self.class_indices = {c: i for i, c in enumerate(classes)}
            self.num_classes = len(classes)
        bounds = _split_bounds(image_data_generator, subset)
        if bounds is not None:
            n = len(df)
            df = df.iloc[int(bounds[0] * n):int(bounds[1] * n)]
        self.filenames = df[x_col].tolist()
        self.filepaths = self._paths(self.filenames)
        self.sample_weight = df[weight_col].to_numpy() if weight_col else None
        if class_mode in ("categorical", "binary", "sparse"):
            values = df[y_col].tolist()
            if class_mode == "categorical":
                self.classes = [[self.class_indices[v] for v in value] if isinstance(value, (list, tuple))
                                else self.class_indices[value] for value in values]
            else:
                self.classes = np.asarray([self.class_indices[v] for v in values], dtype="int32")
            print(f"Found {len(self.filenames)} validated image filenames belonging to "
                  f"{self.num_classes} classes.")
        else:
            self.classes = None
            if class_mode == "raw":
                self._labels_raw = df[y_col].to_numpy()
            elif class_mode == "multi_output":
                self._labels_raw = [df[c].to_numpy() for c in y_cols]
            print(f"Found {len(self.filenames)} validated image filenames.")
        self._found()

    @property
    def labels(self) -> Any:
        return self._labels_raw if self.class_mode in ("raw", "multi_output") else self.classes

    def _paths(self, names: list[Any]) -> list[str]:
        return [os.path.join(self.directory, str(n)) if self.directory else str(n) for n in names]

    @staticmethod
    def _valid(path: str) -> bool:
        return path.lower().endswith(_SUFFIXES) and os.path.isfile(path)

    @staticmethod
    def _filter_classes(df: Any, y_col: Any, classes: list[str] | None, mode: str) -> tuple[Any, list[str]]:
        values = df[y_col].tolist()
        for v in values:
            if isinstance(v, (list, tuple)) and mode != "categorical":
                raise TypeError(f"class_mode={mode!r}: y_col={y_col!r} must hold one label per row, "
                                f"got {v!r}")
            if not isinstance(v, (str, list, tuple)):
                raise TypeError(f"class_mode={mode!r}: y_col={y_col!r} must hold strings "
                                "(use class_mode='raw' "
                                f"for numbers), got {v!r}")
        if classes is None:
            seen = {x for v in values for x in (v if isinstance(v, (list, tuple)) else [v])}
            classes = sorted(seen)
        if mode == "binary" and len(classes) != 2:
            raise ValueError(f"class_mode='binary' needs 2 classes; y_col={y_col!r} has "
                             f"{len(classes)}: {classes}")
        known = set(classes)
        keep = [all(x in known for x in (v if isinstance(v, (list, tuple)) else [v])) for v in values]
        return df[keep], list(classes)

    def _labels(self, x: np.ndarray, index_array: np.ndarray) -> Any:
        if self.class_mode == "categorical":
            y = np.zeros((len(index_array), len(self.class_indices)), dtype=self.dtype)
            for i, j in enumerate(index_array):
                y[i, self.classes[j]] = 1.0  # a list of indices for multi-label rows
            return y
        return super()._labels(x, index_array)
