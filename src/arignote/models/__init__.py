"""Keras 2 models: :class:`Sequential`, and :class:`Model` wrapping any ``torch.nn.Module``.

``compile`` names the loss, optimizer and metrics; ``fit``/``evaluate``/``predict`` run on the
device the configuration names (``device`` flag), with ``floatX`` and ``precision`` applied and
the startup banner printed before the first epoch. Initial weights, Dropout masks and shuffling draw
from torch's global RNG: ``torch.manual_seed(0)`` before building and fitting makes a run reproducible,
and so does ``numpy.random.seed(7)`` as on Keras 2 when torch is not seeded (arignote then seeds torch
from numpy's stream, :mod:`arignote.random_state`).

Example::

    >>> import numpy as np
    >>> from arignote.models import Sequential
    >>> from arignote.layers import Dense
    >>> model = Sequential()
    >>> model.add(Dense(16, activation="relu", input_shape=(4,)))
    >>> model.add(Dense(3, activation="softmax"))
    >>> model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    >>> x, y = np.random.rand(64, 4).astype("float32"), np.random.randint(0, 3, 64)
    >>> history = model.fit(x, y, epochs=2, batch_size=16, verbose=0)
    >>> len(history.history["loss"])
    2
"""

from __future__ import annotations

from arignote._lazy import lazy_namespace

# public name -> module defining it, imported on first use: `from arignote.models import Sequential`
# loads the model classes, not the file formats (h5py) or the loaders (issue 32, import time)
_NAMES = {
    "Input": "arignote.layers.input_layer", "InputLayer": "arignote.layers.input_layer",
    "Model": "arignote.models.model",
    "Sequential": "arignote.models.sequential",
    "clone_model": "arignote.models.cloning",
    "load_model": "arignote.models.loading", "model_from_config": "arignote.models.loading",
    "model_from_json": "arignote.models.loading", "model_from_yaml": "arignote.models.loading",
    "save_model": "arignote.models.saving",
}
__getattr__, __dir__ = lazy_namespace(__name__, _NAMES, globals(), torch_backed=True)

__all__ = ["Input", "InputLayer", "Model", "Sequential", "clone_model", "load_model", "model_from_config",
           "model_from_json", "model_from_yaml", "save_model"]
