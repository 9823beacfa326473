"""``model.save`` / ``load_model`` / ``save_weights`` / ``load_weights`` in any file name.

One checkpoint file (atomic, checksummed, loads with ``torch.load(weights_only=True)``; see
:mod:`arignote.checkpoint`) holds plain data only::

    {"format": "arignote-model/1", "class_name": "Sequential", "config": "<JSON layer configs>",
     "weights": state_dict, "compile": "<JSON: loss, metrics, optimizer>", "optimizer": state_dict}

A Keras user's ``model.save("model.h5")`` therefore works; the file is arignote's format, not
HDF5. A wrapped ``torch.nn.Module`` has no layer configs: its file holds the weights only and
``load_model`` explains how to restore it (build the module, then ``load_weights``).

Example::

    >>> import os, tempfile
    >>> from arignote.models import Sequential, load_model
    >>> from arignote.layers import Dense
    >>> m = Sequential([Dense(2, input_dim=3)])
    >>> path = os.path.join(tempfile.mkdtemp(), "model.h5")
    >>> m.save(path)
    >>> load_model(path).get_weights()[0].shape
    (3, 2)
"""

from __future__ import annotations

import json
import os
from typing import Any

import torch

from arignote import checkpoint

__all__ = ["save_model", "load_model", "save_weights", "load_weights", "MODEL_FORMAT", "WEIGHTS_FORMAT"]

MODEL_FORMAT = "arignote-model/1"
WEIGHTS_FORMAT = "arignote-weights/1"


def _cpu_state(module: Any) -> dict:
    return {k: v.detach().cpu() for k, v in module.state_dict().items()}


def _compile_config(model: Any) -> str | None:
    if not model.compiled:
        return None
    from arignote import losses

    args = model._compile_args
    opt = model.optimizer
    opt_config = None
    get_config = getattr(opt, "get_config", None)
    if callable(get_config):
        opt_config = {"class_name": type(opt).__name__, "config": get_config()}
    elif isinstance(args.get("optimizer"), str):
        opt_config = args["optimizer"]
    metrics = [m for m in args.get("metrics", []) if isinstance(m, str)]
    try:
        loss = losses.serialize(args["loss"])
    except (ValueError, TypeError):
        loss = None
    return json.dumps({"loss": loss, "metrics": metrics, "optimizer": opt_config})


def save_model(model: Any, filepath: str, include_optimizer: bool = True) -> None:
    """Write architecture, weights and (optionally) optimizer state to ``filepath``."""
    from arignote.models.sequential import Sequential

    model._ensure_built(None)
    obj: dict[str, Any] = {"format": MODEL_FORMAT, "class_name": type(model).__name__,
                           "weights": _cpu_state(model.module), "epochs_done": int(model.epochs_done)}
    if isinstance(model, Sequential):
        obj["config"] = json.dumps(model.get_config())
    else:
        obj["config"] = None
        obj["module_class"] = f"{type(model.module).__module__}.{type(model.module).__qualname__}"
    compile_config = _compile_config(model)
    if compile_config is not None:
        obj["compile"] = compile_config
        if include_optimizer and model.optimizer is not None and getattr(model.optimizer, "built", True):
            try:
                obj["optimizer"] = model.optimizer.state_dict()
            except (RuntimeError, AttributeError):
                pass  # an optimizer never stepped has no state to keep
    checkpoint.save(os.fspath(filepath), obj)


def _read(filepath: str) -> dict:
    obj = checkpoint.load(os.fspath(filepath))
    if not isinstance(obj, dict) or obj.get("format") not in (MODEL_FORMAT, WEIGHTS_FORMAT):
        raise checkpoint.CheckpointError(
            f"{filepath}: an arignote checkpoint but not a saved model or weights file "
            "(write one with model.save(path) or model.save_weights(path))")
    if not isinstance(obj.get("weights"), dict):
        raise _unusable(filepath, "its weights are not a state dict")
    return obj


def _unusable(filepath: str, reason: str, exc: BaseException | None = None) -> checkpoint.CheckpointError:
    """The error for a file whose checksum is right but whose contents cannot be used."""
    if exc is not None:
        first = (str(exc).strip().splitlines() or ["no message"])[0][:300]
        reason += f" ({type(exc).__name__}: {first})"
    return checkpoint.CheckpointError(f"{filepath}: {reason}")


# what from_config / load_state_dict / compile raise on contents that do not make a model
_CONTENT_ERRORS = (ValueError, TypeError, KeyError, AttributeError, IndexError, RuntimeError)


def load_model(filepath: str, custom_objects: dict | None = None, compile: bool = True) -> Any:
    """Rebuild a model saved with ``model.save(filepath)``: layers, weights, compile settings, optimizer.

    Every way the file can be unusable (missing, truncated, corrupt, a checksum that verifies over
    contents that do not make a model: bad JSON, an unknown layer or optimizer class, weights that
    do not fit) raises :class:`arignote.checkpoint.CheckpointError` naming the file and the reason.
    Layer and optimizer classes are looked up only among arignote's own (and ``custom_objects``),
    never by an arbitrary name from the file.

    Example: ``model = arignote.models.load_model("model.h5")``.
    """
    from arignote.models.sequential import Sequential

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
    except _CONTENT_ERRORS as exc:
        raise _unusable(filepath, "its model config does not rebuild a model", exc) from None
    try:
        model.module.load_state_dict(obj["weights"])
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
                    _optimizer_from(spec["optimizer"]).build(list(model.module.parameters())) \
                        .load_state_dict(state)
                except _CONTENT_ERRORS as exc:
                    raise _unusable(filepath, "its optimizer state does not fit the model; "
                                    "load_model(path, compile=False) skips it", exc) from None
                model._pending_optimizer_state = state
    return model


def _optimizer_from(spec: Any) -> Any:
    """An optimizer from its saved form: a name or ``{"class_name", "config"}``, looked up only among
    arignote's optimizers (:func:`arignote.optimizers.get`), never by ``getattr`` on a module."""
    from arignote import optimizers

    if isinstance(spec, (dict, str)):
        return optimizers.get(spec)
    raise ValueError(f"the saved optimizer is a {type(spec).__name__}, not a name or a "
                     "class_name/config dict")


def save_weights(model: Any, filepath: str) -> None:
    """Write only the weights (state_dict) to ``filepath``."""
    model._ensure_built(None)
    checkpoint.save(os.fspath(filepath), {"format": WEIGHTS_FORMAT, "weights": _cpu_state(model.module)})


def load_weights(model: Any, filepath: str) -> None:
    """Load weights written by ``save_weights`` or ``save`` into ``model`` (same architecture).

    A file that does not fit (other layers, other shapes) raises
    :class:`arignote.checkpoint.CheckpointError` naming the file and the first differences.
    """
    obj = _read(filepath)
    model._ensure_built(None)
    state = obj["weights"]
    current = model.module.state_dict()
    missing = [k for k in current if k not in state]
    unexpected = [k for k in state if k not in current]
    if missing or unexpected:
        raise checkpoint.CheckpointError(
            f"{filepath} does not match this model's architecture: missing {missing[:5]}, "
            f"unexpected {unexpected[:5]}")
    for key, value in state.items():
        if not isinstance(value, torch.Tensor):
            raise _unusable(filepath, f"weight '{key}' is a {type(value).__name__}, not a tensor")
        if tuple(value.shape) != tuple(current[key].shape):
            raise checkpoint.CheckpointError(
                f"{filepath}: weight '{key}' has shape {tuple(value.shape)} but the model's is "
                f"{tuple(current[key].shape)}")
    try:
        model.module.load_state_dict(state)
    except _CONTENT_ERRORS as exc:
        raise _unusable(filepath, "its weights do not load into this model", exc) from None
