"""``load_model`` and ``model_from_json``: a model rebuilt from a file or JSON text.

The top floor of ``models/``: it needs the model classes (``Sequential``, ``Model``) to rebuild one,
so it lives above them, while :mod:`.saving` (which ``Model.save``/``load_weights`` call) stays below.

Example::

    >>> import os, tempfile
    >>> from arignote.models import Sequential, load_model
    >>> from arignote.layers import Dense
    >>> m = Sequential([Dense(2, input_dim=3)])
    >>> path = os.path.join(tempfile.mkdtemp(), "model.ckpt")
    >>> m.save(path)
    >>> load_model(path).get_weights()[0].shape
    (3, 2)
"""

from __future__ import annotations

import io
import json
import os
from typing import Any

from arignote import checkpoint, optimizers, saving
from arignote.config.safe_mode import scope as safe_mode_scope
from arignote.errors import UnsafeDeserializationError
from arignote.models.model import Model
from arignote.models.saving import (
    _CONTENT_ERRORS,
    WEIGHTS_FORMAT,
    _checkpoint_or_error,
    _load_errors,
    _read,
    _unusable,
    gates_in_cudnn_order,
    yaml_module,
)
from arignote.models.sequential import Sequential

__all__ = ["load_model", "model_from_config", "model_from_json", "model_from_yaml", "from_pickled_hdf5"]


def _model_classes() -> dict:
    """What rebuilds each Keras model class name (the functional ``Model`` once it has ``from_config``)."""
    return {"Sequential": Sequential, "Model": Model}


def load_model(filepath: str, custom_objects: dict | None = None, compile: bool = True,
               safe_mode: bool = True, data_format: str | None = None) -> Any:
    """Rebuild a model saved with ``model.save(filepath)`` or Keras 2: layers, weights, compile settings,
    optimizer state. ``custom_objects`` maps names in the file to your classes and functions.

    ``safe_mode=True`` (Keras 3's default): a function stored as Python bytecode (a Keras 2
    ``Lambda``) is not run but refused with :class:`~arignote.errors.UnsafeDeserializationError`
    naming the layer; ``safe_mode=False`` trusts this file, ``custom_objects={layer_name: fn}`` gives
    the function instead (:mod:`arignote.config.safe_mode`; the flag ``saving.safe_mode`` for the process).

    Every way the file can be unusable (missing, truncated, corrupt, a checksum that verifies over
    contents that do not make a model: bad JSON, an unknown layer or optimizer class, weights that
    do not fit) raises :class:`arignote.checkpoint.CheckpointError` naming the file and the reason.
    Layer and optimizer classes are looked up only among arignote's own (and ``custom_objects``),
    never by an arbitrary name from the file.

    ``filepath`` may also be an open ``h5py.File``/``Group`` or a readable binary stream holding a
    Keras 2 HDF5 file (an open file, ``BytesIO``), as in Keras 2.3.1.

    A Keras 2 file whose layers say ``data_format='channels_first'`` (every Theano-era CNN) loads as
    saved and takes channels-first arrays, as in Keras 2.3.1, whatever ``image_data_format`` is;
    ``data_format='channels_last'`` (an arignote option) rebuilds it channels-last instead.

    Example: ``model = arignote.models.load_model("model.h5")``.
    """
    from arignote.saving import h5file  # import time: h5py loads when a model is first read

    if h5file.is_h5_object(filepath) or h5file.is_stream(filepath, "read"):  # Keras 2.3.1 takes these too
        where = h5file.describe(filepath)
        with safe_mode_scope(safe_mode, "load_model", where), _load_errors(where):
            return saving.load_model(filepath, _model_classes(), custom_objects, compile, data_format)
    path = os.fspath(filepath)
    with safe_mode_scope(safe_mode, "load_model", path):
        if saving.is_hdf5(path):
            with _load_errors(path):
                return saving.load_model(path, _model_classes(), custom_objects, compile, data_format)
        if data_format is not None:
            raise ValueError(f"load_model({filepath!r}, data_format={data_format!r}): data_format converts "
                             "Keras 2 HDF5 files; an arignote checkpoint loads in the layout it was saved in")
        return _load_checkpoint(filepath, path, custom_objects, compile)


def _load_checkpoint(filepath: str, path: str, custom_objects: dict | None, compile: bool) -> Any:
    _checkpoint_or_error(path)
    obj = _read(filepath)
    if obj["format"] == WEIGHTS_FORMAT:
        raise checkpoint.CheckpointError(
            f"{filepath} holds weights only (model.save_weights): build the same model in code, then "
            "call model.load_weights(path)")
    if obj.get("config") is None:
        raise checkpoint.CheckpointError(
            f"{filepath} was saved from a wrapped torch module ({obj.get('module_class')}), so it holds "
            "weights but no architecture: build the module in code, wrap it with "
            "arignote.models.Model(module), then call model.load_weights(path)")
    if obj.get("class_name") != "Sequential":
        raise checkpoint.CheckpointError(
            f"{filepath}: unknown model class {obj.get('class_name')!r} (load_model rebuilds 'Sequential')")
    try:
        config = json.loads(obj["config"])
    except (TypeError, ValueError) as exc:
        raise _unusable(filepath, "its model config is not valid JSON", exc) from None
    try:
        model = Sequential.from_config(config, custom_objects)
    except UnsafeDeserializationError:
        raise
    except _CONTENT_ERRORS as exc:
        raise _unusable(filepath, "its model config does not rebuild a model", exc) from None
    try:
        model.module.load_state_dict(gates_in_cudnn_order(obj, obj["weights"], model.module))
    except _CONTENT_ERRORS as exc:
        raise _unusable(filepath, "its weights do not fit the architecture it records", exc) from None
    epochs_done = obj.get("epochs_done", 0)
    if isinstance(epochs_done, bool) or not isinstance(epochs_done, int) or epochs_done < 0:
        raise _unusable(filepath, f"it records epochs_done={epochs_done!r}, not a whole number >= 0")
    model.epochs_done = epochs_done
    if compile and obj.get("compile"):
        try:
            spec = json.loads(obj["compile"])
            if not isinstance(spec, dict):
                raise TypeError(f"a JSON object was expected, found {type(spec).__name__}")
        except (TypeError, ValueError) as exc:
            raise _unusable(filepath, "its compile settings are not a JSON object", exc) from None
        if spec.get("loss") is not None and spec.get("optimizer") is not None:
            try:
                model.compile(optimizer=_optimizer_from(spec["optimizer"]), loss=spec["loss"],
                              metrics=spec.get("metrics") or None)
            except _CONTENT_ERRORS as exc:
                raise _unusable(filepath, "its compile settings (loss, metrics, optimizer) are unusable; "
                                "load_model(path, compile=False) skips them", exc) from None
            state = obj.get("optimizer")
            if state is not None:
                try:  # checked now on a scratch optimizer, not at the first fit (where it is applied)
                    weights = list(model.module.parameters()) or [{"params": []}]
                    _optimizer_from(spec["optimizer"]).build(weights).load_state_dict(state)
                except _CONTENT_ERRORS as exc:
                    raise _unusable(filepath, "its optimizer state does not fit the model; "
                                    "load_model(path, compile=False) skips it", exc) from None
                model._pending_optimizer_state = state
    return model


def from_pickled_hdf5(data: bytes) -> Any:
    """What ``pickle.loads`` calls to rebuild a model pickled by ``Model.__reduce__``: ``load_model`` on
    the bytes of the Keras 2 HDF5 file it made (custom objects by name, as registered now). Unpickling
    already trusts its bytes (``pickle.loads`` runs code by design), so a Lambda's stored function loads
    here as it does in ``copy.deepcopy(model)``: safe mode guards files, not pickles."""
    return load_model(io.BytesIO(data), safe_mode=False)


def _optimizer_from(spec: Any) -> Any:
    """An optimizer from its saved form: a name or ``{"class_name", "config"}``, looked up only among
    arignote's optimizers (:func:`arignote.optimizers.get`), never by ``getattr`` on a module."""
    if isinstance(spec, (dict, str)):
        return optimizers.get(spec)
    raise ValueError(f"the saved optimizer is a {type(spec).__name__}, not a name or a "
                     "class_name/config dict")


def model_from_config(config: dict, custom_objects: dict | None = None, safe_mode: bool = True) -> Any:
    """Keras 2's ``model_from_config``: an uncompiled model from ``{"class_name", "config"}`` (what
    ``to_json`` holds, Keras 2's or ours). ``safe_mode``: as :func:`load_model`'s.

    Example::

        >>> from arignote.models import Sequential
        >>> from arignote.layers import Dense
        >>> spec = {"class_name": "Sequential", "config": Sequential([Dense(2, input_dim=3)]).get_config()}
        >>> model_from_config(spec).output_shape
        (None, 2)
    """
    if isinstance(config, list):
        raise TypeError("model_from_config expects a dictionary, not a list; maybe you meant "
                        "Sequential.from_config(config)?")
    # import time: the HDF5 module (and h5py) loads when a model is first read
    from arignote.saving import hdf5 as keras_hdf5

    with safe_mode_scope(safe_mode, "model_from_config"):
        model, _ = keras_hdf5.model_from_config(config, custom_objects, "model_from_config",
                                                 _model_classes())
    return model  # a channels_first model as saved: its Keras 2 weights load with load_weights


def model_from_json(json_string: str, custom_objects: dict | None = None, safe_mode: bool = True) -> Any:
    """Keras 2's ``model_from_json``: an uncompiled model from ``to_json()`` text (Keras 2's or ours).
    ``safe_mode``: as :func:`load_model`'s (a Lambda's stored bytecode is refused by default).

    Example::

        >>> from arignote.models import Sequential
        >>> from arignote.layers import Dense
        >>> text = Sequential([Dense(2, input_dim=3, name="d")]).to_json()
        >>> model_from_json(text).layers[0].name
        'd'
    """
    try:
        spec = json.loads(json_string)
    except json.JSONDecodeError as err:
        raise ValueError(f"model_from_json: not JSON ({err}); pass the text to_json() returned") from None
    with safe_mode_scope(safe_mode, "model_from_json", "the JSON text"):
        return model_from_config(spec, custom_objects, safe_mode)


def model_from_yaml(yaml_string: str, custom_objects: dict | None = None, safe_mode: bool = True) -> Any:
    """Keras 2's ``model_from_yaml``: an uncompiled model from ``to_yaml()`` text (Keras 2's or ours).
    Keras 2 wrote tuples as ``!!python/tuple``; they are read as lists by a safe loader that
    builds nothing else of Python's (needs PyYAML: ``pip install arignote[yaml]``). ``safe_mode``: as
    :func:`load_model`'s (a Lambda's stored bytecode is refused by default)."""
    yaml = yaml_module()

    class _KerasYamlLoader(yaml.SafeLoader):
        pass

    _KerasYamlLoader.add_constructor("tag:yaml.org,2002:python/tuple",
                                     lambda loader, node: loader.construct_sequence(node, deep=True))
    try:
        spec = yaml.load(yaml_string, Loader=_KerasYamlLoader)  # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as err:
        raise ValueError(f"model_from_yaml: not YAML arignote can read ({err}); pass the text to_yaml() "
                         "returned") from None
    with safe_mode_scope(safe_mode, "model_from_yaml", "the YAML text"):
        return model_from_config(spec, custom_objects, safe_mode)
