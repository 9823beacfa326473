"""``model.save`` / ``load_model`` / ``save_weights`` / ``load_weights``: the extension decides the format.

* ``.h5``, ``.hdf5``, ``.hdf``, ``.keras`` (Keras 2's legacy name): a Keras 2 HDF5 file
  (:mod:`arignote.saving`), which Keras 2.x (and Keras 3's legacy HDF5 loader) reads, and which loads
  files Keras 2 wrote.
* any other name (``.ckpt``, ``.pt``, ...): arignote's checkpoint (atomic, checksummed, loads with
  ``torch.load(weights_only=True)``; see :mod:`arignote.checkpoint`), the default for checkpoints::

    {"format": "arignote-model/1", "class_name": "Sequential", "config": "<JSON layer configs>",
     "weights": state_dict, "compile": "<JSON: loss, metrics, optimizer>", "optimizer": state_dict}

Loading looks at the content, not the name: an HDF5 file is read as Keras 2's, an arignote
checkpoint as ours (also one an older arignote wrote under a ``.h5`` name), and anything else is
refused with what it looks like (a Keras 3 ``.keras`` archive, a bare ``torch.save`` file, JSON).
A wrapped ``torch.nn.Module`` has no layer configs: it saves to checkpoints only, and
``load_model`` explains how to restore it (build the module, then ``load_weights``).

This module writes and reads into a model it is given; rebuilding a model from a file
(``load_model``, ``model_from_json``) needs the model classes and lives in :mod:`.loading`, a floor up.

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

import contextlib
import importlib
import json
import os
import zipfile
from collections.abc import Iterator
from typing import Any

import torch

from arignote import checkpoint, losses, saving
from arignote.errors import UnsafeDeserializationError
from arignote.utils import io_utils

__all__ = ["save_model", "save_weights", "load_weights", "MODEL_FORMAT", "WEIGHTS_FORMAT", "is_hdf5_name",
           "to_json"]

MODEL_FORMAT = "arignote-model/1"
WEIGHTS_FORMAT = "arignote-weights/1"


# a checkpoint written since GRU(reset_after=True) keeps cuDNN's gate order r, z, n in its torch tensors
# carries this key; one without it holds those tensors in Keras's z, r, h (issue 28 S3)
GATES_KEY, GATES_CUDNN = "rnn_gates", "cudnn"


def _cpu_state(module: Any) -> dict:
    return {k: v.detach().cpu() for k, v in module.state_dict().items()}


def gates_in_cudnn_order(obj: dict, state: dict, module: Any) -> dict:
    """``state`` (a checkpoint's module state) with the gate blocks of every weight ``module`` keeps in
    cuDNN's order put in that order when ``obj`` was written before it did (no :data:`GATES_KEY`):
    such files hold GRU(reset_after=True) gates in Keras's order."""
    if obj.get(GATES_KEY) == GATES_CUDNN:
        return state
    layouts = {f"{prefix}.{attr}" if prefix else attr: layout
               for prefix, sub in module.named_modules() if hasattr(sub, "gate_layouts")
               for attr, layout in sub.gate_layouts().items()}
    if not any(key in state for key in layouts):
        return state
    return {k: layouts[k].to_torch(v) if k in layouts else v for k, v in state.items()}


def _compile_config(model: Any) -> str | None:
    if not model.compiled:
        return None

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


def _is_sequential(model: Any) -> bool:
    """``isinstance(model, Sequential)`` by the class's home, without importing it: this module is a floor
    below ``models/model.py``, whose ``save``/``load_weights`` call it (loading.py imports the classes)."""
    return any(c.__name__ == "Sequential" and c.__module__ == "arignote.models.sequential"
               for c in type(model).__mro__)


def is_hdf5_name(filepath: Any) -> bool:
    """True for the names that get a Keras 2 HDF5 file: ``.h5``, ``.hdf5``, ``.hdf``, ``.keras`` (any
    case)."""
    return os.fspath(filepath).lower().endswith(saving.HDF5_EXTENSIONS)


def _describe(path: str) -> str | None:
    """What a file that is neither HDF5 nor an arignote checkpoint looks like (None: maybe ours)."""
    if not os.path.isfile(path):
        return None
    with open(path, "rb") as fh:
        head = fh.read(16)
    if zipfile.is_zipfile(path):
        try:
            with zipfile.ZipFile(path) as z:
                names = z.namelist()
        except (zipfile.BadZipFile, OSError, ValueError):
            return None  # a damaged zip: checkpoint.load names what is wrong with it
        if "config.json" in names and any(n.endswith(".weights.h5") for n in names):
            return ("a Keras 3 '.keras' archive (a zip of config.json and model.weights.h5), which arignote "
                    "does "
                    "not read; in Keras 3 re-save it with model.save('model.h5') (legacy HDF5)")
        return None  # torch's zip container: ours, or a bare torch.save file (checkpoint.load says which)
    if head.lstrip()[:1] in (b"{", b"["):
        return "a JSON text file; an architecture from to_json() loads with arignote.models.model_from_json"
    if head[:1] == b"\x80":
        return "a Python pickle (an old torch.save file?); load it with torch.load yourself"
    if head:
        return f"neither a Keras 2 HDF5 file nor an arignote checkpoint (it starts with {head[:8]!r})"
    return None


@contextlib.contextmanager
def _load_errors(path: str) -> Iterator[None]:
    """Whatever reading a Keras HDF5 file raises on a damaged or hostile file (h5py's KeyError/OSError,
    bad JSON, an unknown class) becomes one CheckpointError naming the file (issue 16: every load
    failure is a CheckpointError)."""
    try:
        yield
    except (checkpoint.CheckpointError, UnsafeDeserializationError):  # (the file is intact: untrusted)
        raise
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, OSError, RuntimeError) as exc:
        lines = str(exc).strip().splitlines()
        text = lines[0].strip("'\"") if lines else "no message"
        if not text.startswith(path):
            text = f"{path}: unusable Keras HDF5 file ({type(exc).__name__}: {text})"
        raise checkpoint.CheckpointError(text) from exc


def _checkpoint_or_error(path: str) -> None:
    what = _describe(path)
    if what is not None:
        raise checkpoint.CheckpointError(f"{path}: {what}")


def save_model(model: Any, filepath: Any, overwrite: bool = True, include_optimizer: bool = True) -> None:
    """Keras 2's ``save_model``: architecture, weights and (optionally) optimizer state in ``filepath``
    (Keras 2 HDF5 for .h5/.hdf5/.keras names, an open ``h5py.File``/``Group`` or a writable binary
    stream such as ``BytesIO``; arignote's checkpoint for other names). With
    ``overwrite=False`` an existing file is kept unless the user answers ``y`` at the prompt."""
    from arignote.saving import h5file  # import time: h5py loads when a model is first written

    if h5file.is_h5_object(filepath) or h5file.is_stream(filepath, "write"):
        saving.save_model(model, filepath, include_optimizer=include_optimizer)  # Keras 2 HDF5, as Keras
        return
    if not overwrite and isinstance(filepath, (str, os.PathLike)) and os.path.isfile(filepath):
        if not io_utils.ask_to_proceed_with_overwrite(os.fspath(filepath)):
            return
    if is_hdf5_name(filepath):
        saving.save_model(model, filepath, include_optimizer=include_optimizer)
        return
    model._ensure_built(None)
    obj: dict[str, Any] = {"format": MODEL_FORMAT, "class_name": type(model).__name__,
                           "weights": _cpu_state(model.module), "epochs_done": int(model.epochs_done),
                           GATES_KEY: GATES_CUDNN}
    if _is_sequential(model):
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


def save_weights(model: Any, filepath: str, overwrite: bool = True) -> None:
    """Write only the weights to ``filepath`` (Keras 2 HDF5 for .h5 names, else a state_dict checkpoint).
    With ``overwrite=False`` an existing file is kept unless the user answers ``y`` at the prompt."""
    if not overwrite and os.path.isfile(filepath) and not io_utils.ask_to_proceed_with_overwrite(
            os.fspath(filepath)):
        return
    if is_hdf5_name(filepath):
        saving.save_weights(model, filepath)
        return
    model._ensure_built(None)
    checkpoint.save(os.fspath(filepath), {"format": WEIGHTS_FORMAT, "weights": _cpu_state(model.module),
                                          GATES_KEY: GATES_CUDNN})


def load_weights(model: Any, filepath: str, by_name: bool = False, skip_mismatch: bool = False,
                 reshape: bool = False) -> None:
    """Load weights written by ``save_weights`` or ``save`` (arignote's or Keras 2's) into ``model``.

    From a Keras HDF5 file, ``by_name=True`` matches layers by name and ``skip_mismatch=True`` (with
    ``by_name``) skips layers whose weights do not fit, with a warning, as in Keras 2. An arignote
    checkpoint that does not fit (other layers, other shapes) raises
    :class:`arignote.checkpoint.CheckpointError` naming the file and the first differences.
    """
    path = os.fspath(filepath)
    if saving.is_hdf5(path):
        with _load_errors(path):
            saving.load_weights(model, path, by_name=by_name, skip_mismatch=skip_mismatch, reshape=reshape)
        return
    _checkpoint_or_error(path)
    if by_name or skip_mismatch or reshape:
        raise ValueError(f"{path}: by_name/skip_mismatch/reshape match Keras layer names in an HDF5 weights "
                         "file; "
                         "this is an arignote checkpoint, which loads the whole model's weights")
    obj = _read(filepath)
    model._ensure_built(None)
    state = gates_in_cudnn_order(obj, obj["weights"], model.module)
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


def to_json(model: Any, **kwargs: Any) -> str:
    """Keras 2's ``model.to_json()``: ``{"class_name", "config", "keras_version", "backend"}`` as JSON
    (``kwargs`` go to ``json.dumps``, e.g. ``indent=2``)."""
    # import time: the HDF5 module (and h5py) loads when a model is first written or read
    from arignote.saving import hdf5 as keras_hdf5

    spec = keras_hdf5.model_config(model)
    spec.update(keras_version=keras_hdf5.KERAS_VERSION, backend=keras_hdf5.WRITTEN_BACKEND)
    return json.dumps(spec, default=keras_hdf5.json_default, **kwargs)


def yaml_module() -> Any:
    """PyYAML, or one error naming the extra that installs it."""
    try:
        return importlib.import_module("yaml")
    except ImportError:
        raise ImportError("YAML model files need PyYAML: pip install arignote[yaml] (or pip install pyyaml)"
                          ) from None


def to_yaml(model: Any, **kwargs: Any) -> str:
    """Keras 2's ``model.to_yaml()``: the :func:`to_json` mapping as YAML (plain lists and mappings)."""
    return yaml_module().safe_dump(json.loads(to_json(model)), **kwargs)
