"""``format="keras"``: a Keras 3 ``.keras`` file written by arignote with zipfile and h5py (no Keras import).

The zip holds what Keras 3's ``saving_lib`` reads: ``config.json`` (the model in Keras 3's serialized form,
:mod:`.keras3_config`), ``metadata.json``, and ``model.weights.h5`` where each layer's variables sit at
``layers/<snake_case class name, numbered _1, _2 in layer order>/vars/0..``; an RNN's under ``cell/vars``,
a Bidirectional's under ``forward_layer/`` and ``backward_layer/``, a TimeDistributed's under ``layer/``, a
nested model's under its own ``layers/``. Keras 2 and Keras 3 share the weight layouts (kernels
``(..., in, out)``, gate order i f c o / z r h, ``reset_after`` biases ``(2, 3 units)``), so the arrays are
``layer.get_weights()`` as they are.

Example::

    >>> import os, tempfile, zipfile
    >>> from arignote.models import Sequential
    >>> from arignote.layers import Dense
    >>> model = Sequential([Dense(3, input_shape=(4,))])
    >>> path = os.path.join(tempfile.mkdtemp(), "m.keras")
    >>> export_keras3(model, path)
    >>> sorted(zipfile.ZipFile(path).namelist())
    ['config.json', 'metadata.json', 'model.weights.h5']
"""

from __future__ import annotations

import datetime
import io
import json
import re
import zipfile
from typing import IO, Any

import h5py
import numpy as np

from arignote._version import __version__
from arignote.atomic_file import write_atomically
from arignote.export.keras3_config import MODEL_CLASSES, model_entry
from arignote.export.signature import ExportError, refuse_stateful

__all__ = ["export_keras3", "weight_paths", "KERAS3_FORMAT_VERSION"]

KERAS3_FORMAT_VERSION = "3.0.0"  # the saving_lib layout written (unchanged from 3.0 to 3.15)
_RNNS = {"SimpleRNN", "GRU", "LSTM", "ConvLSTM2D"}


def snake_case(name: str) -> str:
    """Keras 3's ``naming.to_snake_case``: ``BatchNormalization`` -> ``batch_normalization``."""
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


def _keras3_class(layer: Any) -> str:
    name = type(layer).__name__
    if name == "Model" or (name != "Sequential" and hasattr(layer, "layers") and hasattr(layer, "inputs")):
        return "Functional"
    return name


def _is_model(layer: Any) -> bool:
    return type(layer).__name__ in MODEL_CLASSES or _keras3_class(layer) == "Functional"


def _keras3_layers(model: Any) -> list:
    """The layers in Keras 3's ``model.layers`` order: a Sequential's without its InputLayer."""
    layers = list(model.layers)
    if type(model).__name__ == "Sequential":
        layers = [layer for layer in layers if type(layer).__name__ != "InputLayer"]
    return layers


def weight_paths(layer: Any, prefix: str) -> dict[str, list[np.ndarray]]:
    """``{h5 group path: [arrays]}`` of ``layer``'s variables under ``prefix``: every group Keras 3 visits."""
    kind = type(layer).__name__
    out: dict[str, list] = {f"{prefix}/vars".lstrip("/"): []}
    if _is_model(layer):
        used: dict[str, int] = {}
        for sub in _keras3_layers(layer):
            base = snake_case(_keras3_class(sub))
            n = used.get(base, -1) + 1
            used[base] = n
            out.update(weight_paths(sub, f"{prefix}/layers/{base if n == 0 else f'{base}_{n}'}"))
    elif kind in _RNNS:
        out[f"{prefix}/cell/vars"] = list(layer.get_weights())
    elif kind == "Bidirectional":
        out.update(weight_paths(layer.forward_layer, f"{prefix}/forward_layer"))
        out.update(weight_paths(layer.backward_layer, f"{prefix}/backward_layer"))
    elif kind == "TimeDistributed":
        out.update(weight_paths(layer.layer, f"{prefix}/layer"))
    else:
        out[f"{prefix}/vars".lstrip("/")] = list(layer.get_weights())
    return out


def _weights_h5(model: Any) -> bytes:
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as f:
        for group, arrays in weight_paths(model, "").items():
            g = f.require_group(group)
            for i, a in enumerate(arrays):
                g.create_dataset(str(i), data=np.asarray(a))
    return buffer.getvalue()


def export_keras3(model: Any, path: str) -> None:
    """Write ``model`` as a Keras 3 ``.keras`` file (load it with ``keras.saving.load_model(path)``)."""
    if not hasattr(model, "get_config") or not hasattr(model, "layers"):
        raise ExportError(f"{type(model).__name__} wraps a torch module: a Keras 3 file needs Keras layers "
                          "(export it to ONNX or .pt2)")
    refuse_stateful(model)
    entry = {"class_name": type(model).__name__ if type(model).__name__ == "Sequential" else "Model",
             "config": model.get_config()}
    config = model_entry(entry, model)
    config["compile_config"] = None
    metadata = {"keras_version": KERAS3_FORMAT_VERSION, "written_by": f"arignote {__version__}",
                "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S")}
    weights = _weights_h5(model)

    def zipped(fh: IO[bytes]) -> None:
        with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("metadata.json", json.dumps(metadata))
            zf.writestr("config.json", json.dumps(config))
            zf.writestr("model.weights.h5", weights)

    write_atomically(path, zipped, mode=0o644, suffix=".part")
