"""Keras 2 layer and model configs (what ``model.get_config()`` gives) rewritten in Keras 3's form, for the
``config.json`` of a ``.keras`` file: every object carries ``module``/``class_name``/``config``/
``registered_name`` (Keras 3's ``serialization_lib``), a Sequential starts with an explicit InputLayer
(``batch_shape``), and a Keras 2 argument Keras 3 spells otherwise is renamed (``LeakyReLU(alpha)`` ->
``negative_slope``). What Keras 3 cannot express with the same numbers raises :class:`ExportError` naming the
layer (a ``Lambda``: Keras 3 keeps Python bytecode; ``hard_sigmoid``: Keras 3's is ``relu6(x + 3) / 6``,
Keras 2's ``clip(0.2 x + 0.5, 0, 1)``; Theano's ``'same'`` padding).

Example::

    >>> cfg = {"class_name": "Dense", "config": {"name": "d", "units": 2, "activation": "relu",
    ...        "batch_input_shape": [None, 3], "dtype": "float32",
    ...        "kernel_initializer": {"class_name": "VarianceScaling", "config": {"distribution": "normal"}}}}
    >>> out = layer_entry(cfg)
    >>> out["module"], "batch_input_shape" in out["config"], out["config"]["kernel_initializer"]["config"]
    ('keras.layers', False, {'distribution': 'truncated_normal'})
"""

from __future__ import annotations

import copy
from typing import Any

from arignote.export.signature import ExportError

__all__ = ["model_entry", "layer_entry", "MODEL_CLASSES", "WRAPPERS"]

MODEL_CLASSES = {"Sequential", "Model", "Functional"}
WRAPPERS = {"Bidirectional", "TimeDistributed"}
# Keras 2 layers Keras 3 does not have: what to do instead
_NO_KERAS3 = {
    "Lambda": "Keras 3 stores a Lambda's Python bytecode, which arignote does not write: rebuild the "
              "model with a layer in place of the Lambda, or export to ONNX / .pt2",
    "LocallyConnected1D": "Keras 3 has no LocallyConnected layers: export to ONNX / .pt2",
    "LocallyConnected2D": "Keras 3 has no LocallyConnected layers: export to ONNX / .pt2",
    "ThresholdedReLU": "Keras 3 has no ThresholdedReLU: export to ONNX / .pt2",
    "MaxoutDense": "a Keras 1 layer Keras 3 does not have: export to ONNX / .pt2",
    "Highway": "a Keras 1 layer Keras 3 does not have: export to ONNX / .pt2",
    "CuDNNLSTM": "export to ONNX / .pt2, or load the weights into LSTM(recurrent_activation='sigmoid') first",
    "CuDNNGRU": "export to ONNX / .pt2, or load the weights into GRU(reset_after=True, "
                "recurrent_activation='sigmoid') first",
}
# nested objects by the suffix of their argument name -> Keras 3 module
_OBJECT_MODULES = {"_initializer": "keras.initializers", "_regularizer": "keras.regularizers",
                   "_constraint": "keras.constraints"}
_RENAMED = {"LeakyReLU": {"alpha": "negative_slope"}}
_DROPPED = ("batch_input_shape", "input_dtype", "input_shape", "input_length")  # input_dim: Embedding's


def _obj(module: str, class_name: str, config: dict, registered: str | None = None) -> dict:
    return {"module": module, "class_name": class_name, "config": config, "registered_name": registered}


def _nested_object(module: str, value: Any) -> Any:
    if value is None or not isinstance(value, dict):
        return value
    name, cfg = value["class_name"], dict(value.get("config") or {})
    if name == "VarianceScaling" and cfg.get("distribution") == "normal":  # Keras 2's truncated normal
        cfg["distribution"] = "truncated_normal"
    return _obj(module, name, cfg)


def _refuse(layer_name: str, class_name: str, why: str) -> ExportError:
    return ExportError(f"layer '{layer_name}' ({class_name}) has no Keras 3 equivalent: {why}")


def _layer_config(class_name: str, config: dict) -> dict:
    name = config.get("name", "?")
    if class_name in _NO_KERAS3:
        raise _refuse(name, class_name, _NO_KERAS3[class_name])
    out = {}
    for key, value in config.items():
        if key in _DROPPED:
            continue
        if key in ("activation", "recurrent_activation") and value == "hard_sigmoid":
            why = (f"{key}='hard_sigmoid' is Keras 2's clip(0.2 x + 0.5, 0, 1), Keras 3's is relu6(x + 3) "
                   "/ 6: export to ONNX / .pt2, or retrain with 'sigmoid'")
            raise _refuse(name, class_name, why)
        module = next((m for suffix, m in _OBJECT_MODULES.items() if key.endswith(suffix)), None)
        if module is not None:
            value = _nested_object(module, value)
        elif key in ("layer", "backward_layer") and class_name in WRAPPERS:
            value = layer_entry(value)
        out[_RENAMED.get(class_name, {}).get(key, key)] = value
    return out


def layer_entry(entry: dict, layer: Any = None) -> dict:
    """One Keras 2 ``{"class_name", "config"[, "name", "inbound_nodes"]}`` entry in Keras 3's form.
    ``layer`` (the arignote layer) is checked for what its config does not say (Theano padding)."""
    class_name = entry["class_name"]
    if class_name in MODEL_CLASSES:
        return model_entry(entry, layer)
    if layer is not None:
        for inner in (layer, getattr(layer, "layer", None)):
            if inner is not None and getattr(inner, "theano_same_padding", False):
                raise _refuse(inner.name, type(inner).__name__, "it pads 'same' as Keras 2's Theano backend "
                              "(even kernel or strides), Keras 3 as TensorFlow: export to ONNX / .pt2")
    out = _obj("keras.layers", class_name, _layer_config(class_name, entry["config"]))
    for key in ("name", "inbound_nodes"):
        if key in entry:
            out[key] = copy.deepcopy(entry[key])
    return out


def _input_layer(name: str, batch_shape: list, dtype: str) -> dict:
    return _obj("keras.layers", "InputLayer", {"batch_shape": list(batch_shape), "dtype": dtype,
                                                "sparse": False, "name": name})


def _sequential(entry: dict, model: Any) -> dict:
    cfg = entry["config"]
    layers = cfg["layers"] if isinstance(cfg, dict) else cfg
    first = layers[0]["config"] if layers else {}
    shape = first.get("batch_input_shape")
    if shape is None and model is not None:
        shape = [None if d is None else int(d) for d in model.input_shape]
    if shape is None:
        raise ExportError(f"Sequential '{cfg.get('name')}' has no input shape: build it (model.build(...)) "
                          "first")
    live = list(getattr(model, "layers", [])) if model is not None else []
    entries = [_input_layer(f"{cfg.get('name', 'sequential')}_input", shape, first.get("dtype", "float32"))]
    for i, sub in enumerate(layers):
        entries.append(layer_entry(sub, live[i] if i < len(live) else None))
    name = cfg.get("name", "sequential")
    return {"module": "keras", "class_name": "Sequential",
            "config": {"name": name, "trainable": True, "layers": entries, "build_input_shape": list(shape)},
            "registered_name": None, "build_config": {"input_shape": list(shape)}}


def _renumber(layers: list[dict]) -> Any:
    """Keras 2 numbers a nested model's first call node 1 (its node 0 is its own graph); Keras 3 numbers the
    calls of every layer from 0 (a Keras 2 index left as is: "nodes failed to be resolved")."""
    models = {e["name"] for e in layers if e["class_name"] in MODEL_CLASSES}

    def fix(ref: list) -> None:
        if ref[0] in models and ref[1] > 0:
            ref[1] -= 1

    for e in layers:
        for node in e.get("inbound_nodes", []):
            for ref in node:
                fix(ref)
    return fix


def _functional(entry: dict, model: Any) -> dict:
    cfg = copy.deepcopy(entry["config"])
    fix = _renumber(cfg["layers"])
    for key in ("input_layers", "output_layers"):
        refs = cfg[key] if isinstance(cfg[key][0], list) else [cfg[key]]
        for ref in refs:
            fix(ref)
        cfg[key] = refs
    live = {layer.name: layer for layer in getattr(model, "layers", [])} if model is not None else {}
    layers = []
    for e in cfg["layers"]:
        if e["class_name"] == "InputLayer":
            c = e["config"]
            out = _input_layer(c["name"], c["batch_input_shape"], c.get("dtype", "float32"))
            out.update(name=e["name"], inbound_nodes=[])
        else:
            out = layer_entry(e, live.get(e["name"]))
            out["name"], out["inbound_nodes"] = e["name"], e.get("inbound_nodes", [])
        layers.append(out)
    return {"module": "keras.src.models.functional", "class_name": "Functional",
            "config": {"name": cfg.get("name", "model"), "trainable": True, "layers": layers,
                       "input_layers": cfg["input_layers"], "output_layers": cfg["output_layers"]},
            "registered_name": "Functional", "build_config": {"input_shape": None}}


def model_entry(entry: dict, model: Any = None) -> dict:
    """A Keras 2 model config (``{"class_name": "Sequential"|"Model", "config": ...}``) in Keras 3's form."""
    if entry["class_name"] == "Sequential":
        return _sequential(entry, model)
    return _functional(entry, model)
