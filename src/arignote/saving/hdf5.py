"""Keras 2 HDF5 models and weights: ``save_model``/``load_model``/``save_weights``/``load_weights``.

Files written by Keras 2.x load here, and files written here load in Keras 2.x (see
:mod:`arignote.saving.h5file` for the layout). Weights are matched to layers in order
(``by_name=False``, Keras's default: layers without weights are skipped on both sides) or by
layer name; each layer's arrays go through :func:`arignote.saving.layouts.from_file` (Theano
kernel flips, CuDNN RNN weights, wrappers). A Theano-backend model is converted automatically and
one line says what was done; a ``channels_first`` model loads as saved (channels-first arrays, as
in Keras 2.3.1), or rebuilt channels-last with ``load_model(path, data_format='channels_last')``.

We write ``backend="tensorflow"`` (Keras 2 reads that attribute to decide whether kernels must be
flipped, and arignote's convolutions are correlations, like TensorFlow's), but for a model whose
``'same'`` layers pad as Keras 2's Theano backend did (loaded from a Theano file):
``backend="theano"``, kernels flipped, as Keras on Theano would have written it (see
:mod:`arignote.saving.theano_padding`).

Example::

    >>> import os, tempfile
    >>> from arignote.models import Sequential
    >>> from arignote.layers import Dense
    >>> m = Sequential([Dense(2, input_dim=3, name="d")])
    >>> path = os.path.join(tempfile.mkdtemp(), "w.h5")
    >>> save_weights(m, path)
    >>> m2 = Sequential([Dense(2, input_dim=3, name="d")])
    >>> load_weights(m2, path)
    >>> bool((m2.get_weights()[0] == m.get_weights()[0]).all())
    True
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import numpy as np

from arignote import losses, metrics, optimizers
from arignote.saving import config_to_keras, h5file, keras_config, layouts, optimizer_state, theano_padding
from arignote.utils.generic_utils import CustomObjectScope, get_custom_objects

__all__ = [
    "save_model",
    "load_model",
    "save_weights",
    "load_weights",
    "model_config",
    "model_from_config",
    "announce",
    "KERAS_VERSION",
    "WRITTEN_BACKEND",
]

KERAS_VERSION = "2.3.1"  # the layout we write (Keras 2 reads the version only to detect Keras 1 files)
WRITTEN_BACKEND = "tensorflow"


def _layers_of(model: Any, what: str) -> list[Any]:
    layers = getattr(model, "layers", None)
    if layers is None:
        raise ValueError(
            f"{what}: a Keras 2 HDF5 file stores Keras layers, and this model wraps a plain torch module "
            f"({type(model.module).__name__}); save it with a name ending in .pt or .ckpt (arignote's "
            "checkpoint format) instead"
        )
    return list(layers)


def _origin(group: Any) -> layouts.Origin:
    return layouts.Origin(
        keras_version=h5file.read_str(group, "keras_version"), backend=h5file.read_str(group, "backend")
    )


def announce(path: str, origin: layouts.Origin, conversion: keras_config.Conversion | None) -> None:
    notes = list(origin.notes)
    if conversion is not None and conversion.channels_first:
        notes.append("channels_first layers rebuilt channels_last as asked by data_format='channels_last' ("
                     + _feed_hint(conversion) + ")")
    if conversion is not None and conversion.as_saved:
        notes.append("channels_first layers kept as saved, feed channels-first arrays as in Keras "
                     "(load_model(path, data_format='channels_last') rebuilds it channels-last)")
    if conversion is not None and conversion.dense_after_flatten:
        notes.append(
            "Dense weights after Flatten reordered ("
            + ", ".join(sorted(conversion.dense_after_flatten))
            + ")"
        )
    if notes:
        who = f"Keras {origin.keras_version or '?'}, {origin.backend or 'unknown'} backend"
        print(f"arignote: {path} ({who}): " + "; ".join(notes))


def _feed_hint(conversion: keras_config.Conversion) -> str:
    """How to feed the rebuilt model channels-first arrays: one transpose per input, by its rank
    (images ``(0, 2, 3, 1)``, sequences of images ``(0, 1, 3, 4, 2)``, volumes ``(0, 2, 3, 4, 1)``)."""
    transposes = conversion.transposes
    if not transposes:
        return "feed images channels-last"
    if len(transposes) == 1:
        return f"feed images channels-last: x.transpose{next(iter(transposes.values()))}"
    return "feed images channels-last: " + ", ".join(
        f"{name}: x.transpose{perm}" for name, perm in transposes.items())


# ------------------------------------------------------------------------------------------ writing


def _write_weights(group: Any, layers: list[Any], path: str) -> str:
    """The weights group; returns the ``backend`` it records (see the module doc)."""
    backend, tensorflow_padded = theano_padding.file_backend(layers)
    theano_padding.warn_mixed(path, tensorflow_padded)
    h5file.write_names(group, "layer_names", [layer.name for layer in layers])
    h5file.write_str(group, "backend", backend)
    h5file.write_str(group, "keras_version", KERAS_VERSION)
    if tensorflow_padded:
        h5file.write_names(group, theano_padding.TENSORFLOW_PADDED, tensorflow_padded)
    for layer in layers:
        names, arrays = layouts.to_file(layer, convolving=backend == "theano")
        h5file.write_layer_group(group, layer.name, names, arrays)
    return backend


def save_weights(model: Any, filepath: str) -> None:
    """Write the weights in Keras 2's ``save_weights`` layout (the ``model_weights`` group at the root)."""
    layers = _layers_of(model, str(filepath))
    model._ensure_built(None)
    with h5file.open_for_write(filepath) as f:
        _write_weights(f, layers, str(filepath))


def model_config(model: Any, for_file: bool = False) -> dict:
    """The model's Keras 2 ``{"class_name", "config"}``: as ``to_json`` gives it, or (``for_file``)
    as an HDF5 file's ``model_config`` holds it, a Sequential's input as an explicit InputLayer that
    Keras 2.3.1, tf.keras and Keras 3's legacy loader all read (see ``sequential_to_keras``)."""
    if type(model).__name__ == "Sequential":
        return {"class_name": "Sequential",
                "config": config_to_keras.sequential_to_keras(model.get_config(), input_layer=for_file)}
    get_config = getattr(model, "get_config", None)
    if callable(get_config):  # a functional Model writes Keras 2's layout itself (but for what it nests)
        return {"class_name": "Model",
                "config": config_to_keras.functional_to_keras(get_config(), input_layer=for_file)}
    raise ValueError(f"{type(model).__name__} has no get_config(): its architecture cannot be saved")


def _per_output(value: Any, fn: Any) -> Any:
    """``fn`` applied to a compile argument that may be one item, a list per output or a dict by output."""
    if value is None:
        return None
    if isinstance(value, dict) and not {"class_name", "config"} <= set(value):  # not a stored object
        return {k: _per_output(v, fn) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_per_output(v, fn) for v in value]
    return fn(value)


def _metric_names(value: Any) -> Any:
    """Metrics as Keras 2 writes them: names, Keras 2.3.1 metric class objects as
    ``{'class_name', 'config'}``, and a user's metric function by its ``__name__`` (as Keras 2.3.1's
    JSON encoder writes it: loading the file then needs it in ``custom_objects``)."""
    if isinstance(value, dict):
        return {k: _metric_names(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [m for m in (_metric_names(v) for v in value) if m is not None]
    if isinstance(value, str):
        return value
    stored = metrics.serialize(value) if hasattr(value, "get_config") else None
    if isinstance(stored, dict):
        return stored
    name = getattr(value, "__name__", None)
    return name if callable(value) and isinstance(name, str) and name != "<lambda>" else None


def _training_config(model: Any) -> dict | None:
    if not model.compiled:
        return None
    args = model._compile_args
    try:  # the canonical name ('mean_squared_error', not 'mse'): Keras 3's legacy loader knows only those
        loss = _per_output(args["loss"], losses.serialize)
    except (ValueError, TypeError) as err:
        raise ValueError(
            f"the loss {args['loss']!r} cannot be written to a Keras 2 file: {err}; save with "
            "include_optimizer=False, or give the loss by name"
        ) from None
    return {
        "optimizer_config": _optimizer_config(model.optimizer),
        "loss": loss,
        "metrics": _metric_names(args.get("metrics") or []),
        "weighted_metrics": _metric_names(args.get("weighted_metrics") or []) or None,
        "sample_weight_mode": args.get("sample_weight_mode"),
        "loss_weights": args.get("loss_weights"),
    }


def _optimizer_config(optimizer: Any) -> dict:
    """Keras 2.3.1's spelling (``learning_rate``; ``decay`` only when set), which Keras 3 also reads."""
    spec = optimizers.serialize(optimizer)
    exact = getattr(optimizer, "_exact_config", None)  # the numbers as given, not float32-rounded
    config = dict(exact() if callable(exact) else spec["config"])
    if "lr" in config:
        config["learning_rate"] = config.pop("lr")
    if not config.get("decay"):
        config.pop("decay", None)
    return {"class_name": spec["class_name"], "config": config}


def json_default(obj: Any) -> Any:
    """What ``json.dumps`` cannot write, as Keras 2.3.1's ``get_json_type`` writes it: a numpy array
    as nested lists, a numpy scalar as its value, an object with ``get_config`` as
    ``{'class_name', 'config'}``, a function or class by its name.

    >>> json.dumps({"mu": np.zeros(2, "float32"), "k": np.int64(3)}, default=json_default)
    '{"mu": [0.0, 0.0], "k": 3}'
    """
    if hasattr(obj, "get_config"):
        return {"class_name": type(obj).__name__, "config": obj.get_config()}
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    if callable(obj) and isinstance(getattr(obj, "__name__", None), str):
        return obj.__name__
    raise TypeError(f"Not JSON Serializable: {obj!r}")


def save_model(model: Any, filepath: str, include_optimizer: bool = True) -> None:
    """Architecture (``model_config``), weights, and compile settings + optimizer state when compiled."""
    layers = _layers_of(model, h5file.describe(filepath))
    model._ensure_built(None)
    config = json.dumps(model_config(model, for_file=True), default=json_default)
    training = _training_config(model) if include_optimizer else None
    with h5file.open_for_write(filepath) as f:
        h5file.write_str(f, "keras_version", KERAS_VERSION)
        h5file.write_str(f, "model_config", config)
        backend = _write_weights(f.create_group("model_weights"), layers, h5file.describe(filepath))
        h5file.write_str(f, "backend", backend)
        if training is not None:
            h5file.write_str(f, "training_config", json.dumps(training, default=json_default))
            names_arrays = optimizer_state.to_keras(model, convolving=backend == "theano")
            if names_arrays:
                group = f.create_group("optimizer_weights")
                names, arrays = names_arrays
                h5file.write_names(group, "weight_names", names)
                for name, value in zip(names, arrays):
                    group.create_dataset(name, data=np.asarray(value))


# ------------------------------------------------------------------------------------------ reading


_RESHAPED = ("Conv1D", "Conv2D", "Conv3D", "Conv2DTranspose", "ConvLSTM2D")  # Keras 2.3.1's reshape=True


def reshaped(layer: Any, arrays: list[np.ndarray], current: list[np.ndarray]) -> list[np.ndarray]:
    """Keras 2.3.1's ``reshape=True``: a convolution's kernel from the file given the layer's kernel
    shape when it holds as many values (e.g. a Dense kernel into a 1x1 Conv2D); a ValueError when the
    sizes differ."""
    if type(layer).__name__ not in _RESHAPED or not arrays or not current:
        return arrays
    want = tuple(current[0].shape)
    if tuple(arrays[0].shape) == want:
        return arrays
    if arrays[0].size != int(np.prod(want)):
        raise ValueError(f"Weights must be of equal size to apply a reshape operation. Layer {layer.name}'s "
                         f"weights have shape {want} and size {int(np.prod(want))}. The weights for loading "
                         f"have shape {arrays[0].shape} and size {arrays[0].size}.")
    return [np.reshape(arrays[0], want), *arrays[1:]]


def _apply(
    layer: Any, arrays: list[np.ndarray], origin: layouts.Origin, where: str, skip_mismatch: bool = False,
    reshape: bool = False,
) -> bool:
    arrays = layouts.from_file(layer, arrays, origin)
    current = layer.get_weights()
    if reshape:
        arrays = reshaped(layer, arrays, current)
    problem = None
    if len(arrays) != len(current):
        problem = f"expects {len(current)} weight(s), but the saved weights have {len(arrays)} element(s)"
    else:
        for i, (new, old) in enumerate(zip(arrays, current)):
            if tuple(new.shape) != tuple(old.shape):
                problem = (
                    f"weight {i} has shape {tuple(old.shape)}, but the saved weight has shape "
                    f"{tuple(new.shape)}"
                )
                break
    if problem is not None:
        message = f"{where}: layer '{layer.name}' ({type(layer).__name__}) {problem}"
        if skip_mismatch:
            warnings.warn(f"Skipping loading of weights for layer {layer.name} due to mismatch ({message})",
                          stacklevel=4)
            return False
        raise ValueError(message)
    layer.set_weights([a.astype(o.dtype, copy=False) for a, o in zip(arrays, current)])
    return True


def _load_group(
    group: Any,
    layers: list[Any],
    where: str,
    by_name: bool = False,
    skip_mismatch: bool = False,
    dense_fix: dict[str, tuple] | None = None,
    reshape: bool = False,
) -> layouts.Origin:
    origin = _origin(group)
    if origin.keras_version is not None and origin.keras_version.startswith("1"):
        raise ValueError(
            f"{where} was written by Keras {origin.keras_version}: Keras 1 files are not supported "
            "(load and re-save it with Keras 2 first)"
        )
    names = h5file.read_names(group, "layer_names")
    stored = [(name, *h5file.read_layer_group(group, name, where)) for name in names]
    keep = set(h5file.read_names(group, theano_padding.TENSORFLOW_PADDED))
    if by_name:
        index: dict[str, list[Any]] = {}
        for layer in layers:
            index.setdefault(layer.name, []).append(layer)
        for name, _, arrays in stored:
            for layer in index.get(name, []):
                _apply(layer, _fix(layer, arrays, dense_fix), origin, where, skip_mismatch, reshape)
        theano_padding.apply([layer for layer in layers if layer.name in set(names)], origin, keep)
        return origin
    if skip_mismatch:
        raise ValueError("load_weights: skip_mismatch=True needs by_name=True (as in Keras 2)")
    with_weights = [layer for layer in layers if layer.get_weights()]
    stored = [s for s in stored if s[2]]
    if len(stored) != len(with_weights):
        raise ValueError(
            f"{where} does not match this model: you are trying to load a weight file containing "
            f"{len(stored)} layers into a model with {len(with_weights)} layers (counting the layers with "
            f"weights; file: {[s[0] for s in stored]}; model: {[layer.name for layer in with_weights]})"
        )
    for layer, (_name, _names, arrays) in zip(with_weights, stored):
        _apply(layer, _fix(layer, arrays, dense_fix), origin, where, reshape=reshape)
    theano_padding.apply(layers, origin, keep)
    return origin


def _fix(layer: Any, arrays: list[np.ndarray], dense_fix: dict[str, tuple] | None) -> list[np.ndarray]:
    if dense_fix and layer.name in dense_fix and arrays:
        arrays = list(arrays)
        arrays[0] = layouts.reorder_dense_after_flatten(arrays[0], dense_fix[layer.name])
    return arrays


def load_weights(model: Any, filepath: str, by_name: bool = False, skip_mismatch: bool = False,
                 reshape: bool = False) -> None:
    """Keras 2 ``load_weights`` from an HDF5 weights or whole-model file (in order, or ``by_name``;
    ``reshape=True`` reshapes a convolution kernel of the right size, as Keras 2.3.1)."""
    layers = _layers_of(model, str(filepath))
    model._ensure_built(None)
    with h5file.open_for_read(filepath) as f:
        group = f["model_weights"] if "layer_names" not in f.attrs and "model_weights" in f else f
        if "layer_names" not in group.attrs and "layer_names0" not in group.attrs:
            raise ValueError(
                f"{filepath}: an HDF5 file, but not a Keras weights file (no layer_names "
                f"attribute; top-level keys: {sorted(f.keys())[:10]})"
            )
        origin = _load_group(group, layers, str(filepath), by_name, skip_mismatch, reshape=reshape)
    announce(str(filepath), origin, None)


def _dense_fix_shapes(model: Any, conversion: keras_config.Conversion) -> dict[str, tuple]:
    """Dense name -> channels-last feature-map shape entering the Flatten before it."""
    by_name = {layer.name: layer for layer in model.layers}
    out = {}
    for dense, flatten in conversion.dense_after_flatten.items():
        shape = getattr(by_name.get(flatten), "_built_input_shape", None)  # with the batch dim
        if shape is None:
            raise ValueError(
                f"cannot reorder the weights of Dense '{dense}': the input shape of Flatten "
                f"'{flatten}' is unknown"
            )
        out[dense] = tuple(shape)[1:]
    return out


def model_from_config(
    config: dict, custom_objects: dict | None, source: str, model_classes: dict,
    data_format: str | None = None,
) -> tuple[Any, keras_config.Conversion]:
    """Rebuild a model from Keras 2's ``{"class_name", "config"}`` (``model_config``, ``to_json``);
    ``data_format='channels_last'`` rebuilds a channels_first model channels-last."""
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"{source}: model_config is not a Keras model configuration ({str(config)[:80]})")
    # custom_objects are also in scope while layers rebuild, as Keras 2.3.1 does: a layer's config names
    # a user's function (Dense(activation=K.cos) stores 'cos') that only custom_objects maps
    with CustomObjectScope(custom_objects or {}):
        spec, conversion = keras_config.model_from_keras(config, custom_objects, source,
                                                         data_format=data_format)
        cls = model_classes.get(spec["class_name"])
        if cls is None or not callable(getattr(cls, "from_config", None)):
            raise ValueError(f"{source}: a Keras '{config['class_name']}' model, which arignote cannot "
                             "rebuild")
        return cls.from_config(spec["config"], custom_objects), conversion


def load_model(
    filepath: str, model_classes: dict, custom_objects: dict | None = None, compile: bool = True,
    data_format: str | None = None,
) -> Any:
    """Rebuild a model from a Keras 2 HDF5 file: architecture, weights, compile settings, optimizer state.

    ``model_classes`` maps Keras model class names (``"Sequential"``, ``"Model"``) to the classes
    whose ``from_config(config, custom_objects)`` rebuilds them (:mod:`arignote.models` passes its own).
    ``data_format``: None keeps a channels_first model as saved; ``'channels_last'`` rebuilds it.
    """
    path = h5file.describe(filepath)
    with h5file.open_for_read(filepath) as f:
        text = h5file.read_str(f, "model_config")
        if text is None:
            hint = (
                " (it holds weights only: build the model in code, then model.load_weights(path))"
                if "layer_names" in f.attrs or "layer_names0" in f.attrs
                else ""
            )
            raise ValueError(f"{path}: no model found in the file (no model_config attribute){hint}")
        model, conversion = model_from_config(json.loads(text), custom_objects, path, model_classes,
                                              data_format)
        model._ensure_built(None)
        if "model_weights" not in f:
            raise ValueError(f"{path}: the file has a model_config but no model_weights group")
        dense_fix = _dense_fix_shapes(model, conversion)
        origin = _load_group(f["model_weights"], model.layers, path, dense_fix=dense_fix)
        training = h5file.read_str(f, "training_config")
        if compile and training is not None:
            _compile_from(model, json.loads(training), custom_objects, path)
            if "optimizer_weights" in f:
                group = f["optimizer_weights"]
                names = h5file.read_names(group, "weight_names")
                arrays = [h5file.read_array(group, n, f"{path}: optimizer weight '{n}'") for n in names]
                optimizer_state.from_keras(model, arrays, path,
                                           convolving=origin.flips_kernels)
    announce(path, origin, conversion)
    return model


def _unprefixed(value: Any) -> Any:
    """Metrics by output name with each stored object's ``{output}_`` name prefix taken off: compile
    renames a metric object given for one output to its logged name (``b_auc``), as Keras 2.3.1, and
    that name is what the file holds; compiling it again would log ``b_b_auc``."""
    if not isinstance(value, dict) or {"class_name", "config"} <= set(value):
        return value

    def strip(item: Any, prefix: str) -> Any:
        if isinstance(item, list):
            return [strip(v, prefix) for v in item]
        config = item.get("config") if isinstance(item, dict) else None
        name = config.get("name") if isinstance(config, dict) else None
        if isinstance(name, str) and name.startswith(prefix) and len(name) > len(prefix):
            return {**item, "config": {**config, "name": name[len(prefix):]}}
        return item

    return {output: strip(v, f"{output}_") for output, v in value.items()}


def _compile_from(model: Any, training: dict, custom_objects: dict | None, path: str) -> None:
    spec = training.get("optimizer_config")
    objects = {**get_custom_objects(), **(custom_objects or {})}
    if isinstance(spec, dict) and spec.get("class_name") in objects:
        optimizer = objects[spec["class_name"]].from_config(spec.get("config", {}))
    else:
        optimizer = optimizers.get(spec)

    def named(item: Any) -> Any:
        if isinstance(item, dict) and item.get("class_name") in objects:  # a user's Metric subclass
            return objects[item["class_name"]].from_config(item.get("config", {}))
        if isinstance(item, str) and item not in objects:
            try:
                metrics.get(item)
            except ValueError:  # Keras 2.3.1: "Unknown metric function:rmse"
                raise ValueError(
                    f"{path}: unknown metric function {item!r} in the file's training_config; a metric "
                    f"written by its function's name loads with load_model(path, custom_objects="
                    f"{{{item!r}: {item}}}), or with compile=False"
                ) from None
        return objects.get(item, item) if isinstance(item, str) else item

    loss = _per_output(training.get("loss"),
                       lambda v: losses.deserialize(v, objects) if isinstance(v, dict) else named(v))
    # not `metrics`: that is the module `named` reads
    file_metrics = _per_output(_unprefixed(training.get("metrics") or None), named)
    weighted = _per_output(_unprefixed(training.get("weighted_metrics") or None), named)
    model.compile(optimizer=optimizer, loss=loss, metrics=file_metrics or None,
                  weighted_metrics=weighted or None, sample_weight_mode=training.get("sample_weight_mode"),
                  loss_weights=training.get("loss_weights"))
