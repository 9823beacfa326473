"""arignote's model configs written as Keras 2.3.1 writes them (``to_json``, an HDF5 file's
``model_config``): a Sequential's declared input as ``batch_input_shape`` on its first layer (or, for
files, an explicit ``InputLayer``), nested models converted likewise, a wrapper's inner layer with
its ``module``.

Example::

    >>> spec = {"class_name": "TimeDistributed", "config": {"name": "td", "layer": {
    ...         "class_name": "Dense", "config": {"name": "d", "units": 2}}}}
    >>> layer_to_keras(spec)["config"]["layer"]["module"]
    'keras.layers'
"""

from __future__ import annotations

from typing import Any

__all__ = ["with_batch_input_shape", "sequential_to_keras", "functional_to_keras", "layer_to_keras"]


def with_batch_input_shape(config: dict, shape: Any) -> dict:
    """A layer config with ``batch_input_shape`` where Keras 2.3.1's ``Layer.get_config`` puts it
    (after ``trainable``), in place of any ``input_shape`` / ``batch_input_shape`` it had.

    Example::

        >>> with_batch_input_shape({"name": "d", "trainable": True, "units": 2}, (None, 3))
        {'name': 'd', 'trainable': True, 'batch_input_shape': [None, 3], 'units': 2}
    """
    out: dict[str, Any] = {}
    for key, value in config.items():
        if key in ("batch_input_shape", "input_shape"):
            continue
        out[key] = value
        if key == "trainable":
            out["batch_input_shape"] = list(shape)
    out.setdefault("batch_input_shape", list(shape))
    return out


def sequential_to_keras(config: dict, input_layer: bool = False) -> dict:
    """arignote's Sequential config -> Keras 2.3.1's, ready for ``json.dumps``: the layers the user
    added, the first with the declared input shape as ``batch_input_shape`` (with the batch
    dimension), and ``build_input_shape`` for a model built from data.

    ``input_layer`` (what HDF5 files get): the declared input shape as an explicit first
    ``InputLayer`` instead, as tf.keras 2 writes Sequential models. Keras 2.3.1 reads both forms;
    Keras 3's legacy HDF5 loader reads only this one right (``batch_input_shape`` on any other layer
    is taken as ``input_shape``, one dimension too many, for Keras 2.3.1's own files too).

    >>> spec = {"name": "s", "layers": [{"class_name": "Dense", "config": {"name": "d",
    ...         "batch_input_shape": [None, 3]}}]}
    >>> [layer["class_name"] for layer in sequential_to_keras(spec)["layers"]]
    ['Dense']
    >>> [layer["class_name"] for layer in sequential_to_keras(spec, input_layer=True)["layers"]]
    ['InputLayer', 'Dense']
    """
    layers = []
    for i, spec in enumerate(config["layers"]):
        cfg = dict(spec["config"])
        shape = cfg.get("input_shape")
        batch_shape = [None, *shape] if shape is not None else cfg.get("batch_input_shape")
        if batch_shape is not None and i == 0 and not input_layer:
            cfg = with_batch_input_shape(cfg, batch_shape)
        else:
            cfg.pop("input_shape", None)
            cfg.pop("batch_input_shape", None)
            if batch_shape is not None and i == 0 and spec["class_name"] != "InputLayer":
                layers.append({"class_name": "InputLayer", "config": {
                    "batch_input_shape": list(batch_shape), "dtype": cfg.get("dtype", "float32"),
                    "sparse": False, "name": f"{cfg.get('name', 'layer')}_input"}})
            elif batch_shape is not None and i == 0:
                cfg["batch_input_shape"] = list(batch_shape)
        cfg.setdefault("dtype", "float32")
        layers.append(layer_to_keras({"class_name": spec["class_name"], "config": cfg}, input_layer))
    out: dict[str, Any] = {"name": config.get("name"), "layers": layers}
    if config.get("build_input_shape") is not None:
        out["build_input_shape"] = list(config["build_input_shape"])  # already with the batch dimension
    return out


def functional_to_keras(config: dict, input_layer: bool = False) -> dict:
    """arignote's functional ``Model`` config -> Keras 2's (its nested models and wrappers converted;
    ``input_layer``: nested Sequentials as :func:`sequential_to_keras` writes them for files)."""
    return {**config, "layers": [layer_to_keras(spec, input_layer) for spec in config.get("layers") or []]}


# Keras 3's deserializer finds a built-in class inside a wrapper only by its module (tf.keras >= 2.13
# writes it too); Keras 2 ignores the key, and a user's registered class is still looked up first
_INNER_MODULE = "keras.layers"


def layer_to_keras(spec: dict, input_layer: bool = False) -> dict:
    """One layer spec (a functional entry with ``name``/``inbound_nodes``, or a Sequential entry) as
    Keras 2 writes it: a nested Sequential or Model converted likewise (``input_layer``: see
    :func:`sequential_to_keras`), a wrapper's inner layer with its ``module``.
    """
    cls = spec.get("class_name")
    config = spec.get("config") or {}
    if cls == "Sequential":
        return {**spec, "config": sequential_to_keras(config, input_layer)}
    if cls in ("Model", "Functional"):
        return {**spec, "config": functional_to_keras(config, input_layer)}
    inner = {k: config[k] for k in ("layer", "forward_layer", "backward_layer")
             if isinstance(config.get(k), dict) and "class_name" in config[k]}
    if inner:
        config = {**config, **{k: {**layer_to_keras(v, input_layer), "module": _INNER_MODULE}
                               for k, v in inner.items()}}
    return {**spec, "config": config}
