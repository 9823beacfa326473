"""Keras 2 HDF5 files (h5py): whole models and weights, both ways, and their layout converters.

:mod:`~arignote.saving.hdf5` reads and writes; :mod:`~arignote.saving.h5file` is the file layout;
:mod:`~arignote.saving.layouts` is the per-layer-type table (weight names, Theano kernel flips,
CuDNN RNN weights, Dense-after-Flatten reordering); :mod:`~arignote.saving.keras_config` turns
Keras 2 ``model_config`` JSON into arignote layers (:mod:`~arignote.saving.layer_arguments`) and
:mod:`~arignote.saving.config_to_keras` back; :mod:`~arignote.saving.optimizer_state`
maps ``optimizer_weights``; :mod:`~arignote.saving.theano_padding` keeps Keras 2's Theano
``padding='same'`` from a file through the model and back. ``model.save(path)`` / ``load_model`` /
``save_weights`` / ``load_weights`` choose this format by extension (``.h5``, ``.hdf5``, ``.hdf``,
``.keras``); see :mod:`arignote.models.saving`.

Example::

    >>> import os, tempfile
    >>> from arignote.models import Sequential, load_model
    >>> from arignote.layers import Dense
    >>> path = os.path.join(tempfile.mkdtemp(), "model.h5")
    >>> Sequential([Dense(2, input_dim=3)]).save(path)
    >>> is_hdf5(path), type(load_model(path)).__name__
    (True, 'Sequential')
"""

from arignote._lazy import lazy_namespace

# imported on first use: h5py loads when a file is read or written, not with every model
__getattr__, __dir__ = lazy_namespace(__name__, {
    "is_hdf5": "arignote.saving.h5file",
    **{name: "arignote.saving.hdf5" for name in ("load_model", "load_weights", "save_model", "save_weights")},
}, globals())

__all__ = ["is_hdf5", "save_model", "load_model", "save_weights", "load_weights", "HDF5_EXTENSIONS"]

HDF5_EXTENSIONS = (".h5", ".hdf5", ".hdf", ".keras")
