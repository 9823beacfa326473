"""Keras 2's ``keras.engine.saving``: the names published Keras 2 code imports from it.

``save_model`` / ``load_model`` / ``model_from_config`` / ``model_from_json`` / ``model_from_yaml``
are arignote's (:mod:`arignote.models`); ``preprocess_weights_for_loading`` converts a layer's
weights as a Keras 2 file stores them to the layer's own (Theano kernel flips, CuDNN RNN weights,
wrappers and nested models: :mod:`arignote.saving.layouts`); the HDF5 group helpers read and write
Keras 2.3.1's layout (long name lists in numbered chunks). Keras 1 weights are not converted
(``original_keras_version='1'`` raises, as every Keras 1 file does in arignote). ``tf_file_io`` is
None: Keras 2.3.1 saved to ``gs://`` paths through TensorFlow's file_io, which arignote does not use.

Example::

    >>> import io
    >>> from arignote.models import Sequential
    >>> from arignote.layers import Dense
    >>> stream = io.BytesIO()
    >>> save_model(Sequential([Dense(2, input_dim=3, name="d")]), stream)
    >>> _ = stream.seek(0)
    >>> load_model(stream).layers[0].name
    'd'
"""

from __future__ import annotations

from typing import Any

import numpy as np

from arignote.models.loading import load_model, model_from_config, model_from_json, model_from_yaml
from arignote.models.saving import save_model
from arignote.saving import h5file, hdf5, layouts
from arignote.utils.io_utils import ask_to_proceed_with_overwrite

__all__ = ["save_model", "load_model", "model_from_config", "model_from_json", "model_from_yaml",
           "preprocess_weights_for_loading", "save_attributes_to_hdf5_group",
           "load_attributes_from_hdf5_group", "save_weights_to_hdf5_group", "load_weights_from_hdf5_group",
           "load_weights_from_hdf5_group_by_name", "ask_to_proceed_with_overwrite",
           "HDF5_OBJECT_HEADER_LIMIT", "tf_file_io"]

HDF5_OBJECT_HEADER_LIMIT = h5file.HEADER_LIMIT
tf_file_io = None


def _keras1(version: str | None) -> None:
    if version is not None and str(version).startswith("1"):
        raise ValueError(f"preprocess_weights_for_loading: weights from Keras {version} (Keras 1 layouts) "
                         "are not converted by arignote; load and re-save them with Keras 2 first")


def preprocess_weights_for_loading(layer: Any, weights: list, original_keras_version: str | None = None,
                                   original_backend: str | None = None, reshape: bool = False) -> list:
    """The arrays a Keras 2 file holds for ``layer`` (written by Keras ``original_keras_version`` on
    ``original_backend``) as ``layer.set_weights`` takes them; ``reshape=True`` also reshapes a
    convolution kernel of the right size to the layer's kernel shape."""
    _keras1(original_keras_version)
    origin = layouts.Origin(keras_version=original_keras_version, backend=original_backend)
    arrays = layouts.from_file(layer, [np.asarray(w) for w in weights], origin)
    return hdf5.reshaped(layer, arrays, layer.get_weights()) if reshape else arrays


def save_attributes_to_hdf5_group(group: Any, name: str, data: list) -> None:
    """``data`` (names, str or bytes) as the attribute ``name`` of ``group``, split into ``name0``,
    ``name1``, ... when it is over HDF5's 64 KB attribute limit, as Keras 2.3.1 does; a RuntimeError
    for one item over the limit on its own (chunking cannot help), as in Keras 2.3.1."""
    names = [d.decode("utf8") if isinstance(d, (bytes, np.bytes_)) else str(d) for d in data]
    big = [n for n in names if len(n.encode("utf8")) > HDF5_OBJECT_HEADER_LIMIT]
    if big:
        raise RuntimeError(f"The following attributes cannot be saved to HDF5 file because they are larger "
                           f"than {HDF5_OBJECT_HEADER_LIMIT} bytes: {[n[:60] + '...' for n in big]}")
    h5file.write_names(group, name, names)


def load_attributes_from_hdf5_group(group: Any, name: str) -> list[str]:
    """The attribute ``name`` of ``group`` as a list of str, joined from ``name0``, ``name1``, ...
    when Keras chunked it."""
    return h5file.read_names(group, name)


def save_weights_to_hdf5_group(group: Any, layers: list) -> None:
    """The layers' weights in Keras 2's ``model_weights`` layout at ``group``."""
    hdf5._write_weights(group, list(layers), h5file.describe(group))


def load_weights_from_hdf5_group(group: Any, layers: list, reshape: bool = False) -> None:
    """Weights from a Keras 2 weights group into ``layers``, in order (layers without weights skipped)."""
    hdf5._load_group(group, list(layers), h5file.describe(group), reshape=reshape)


def load_weights_from_hdf5_group_by_name(group: Any, layers: list, skip_mismatch: bool = False,
                                         reshape: bool = False) -> None:
    """Weights from a Keras 2 weights group into the layers of the same name."""
    hdf5._load_group(group, list(layers), h5file.describe(group), by_name=True, skip_mismatch=skip_mismatch,
                     reshape=reshape)
