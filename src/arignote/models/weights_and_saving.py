"""The weights and state of :class:`~arignote.models.Model` (mixed into ``Model``): Keras 2's
``get_weights``/``set_weights``/``count_params``/``reset_states``, the saving hooks
(``save_weights``, ``load_weights``, ``save``, ``to_json``, ``to_yaml``, written by
:mod:`arignote.models.saving`), and the training state BackupAndRestore keeps.

Example::

    >>> import numpy as np
    >>> from arignote.layers import Dense
    >>> from arignote.models import Sequential
    >>> model = Sequential([Dense(2, input_shape=(3,))])
    >>> [w.shape for w in model.get_weights()], model.count_params()
    ([(3, 2), (2,)], 8)
    >>> model.set_weights([np.ones((3, 2)), np.zeros(2)])
    >>> float(model.get_weights()[0].sum())
    6.0
"""

from __future__ import annotations

import importlib
import io
from typing import Any

import numpy as np
import torch

from arignote.layers.bookkeeping import is_model
from arignote.models.functional import Functional

__all__ = ["WeightsAndSaving"]

_REBUILT_LOSS = "<the compiled loss, rebuilt from the compile arguments when unpickled>"


class WeightsAndSaving:
    """Weights, saving and training state; ``self`` is a :class:`~arignote.models.Model`."""

    module: Any
    layers: list
    optimizer: Any
    epochs_done: int
    resume_epoch: int | None
    _trainer: Any
    _is_graph: bool
    _subclassed: bool
    _ensure_built: Any

    def get_weights(self) -> list[np.ndarray]:
        """Weights as numpy arrays: Keras order and layouts layer by layer for a functional or
        subclassed model, state_dict order for a wrapped module."""
        self._ensure_built(None)
        if self._is_graph or self._subclassed:
            return [w for layer in self.layers for w in layer.get_weights()]
        return [t.detach().cpu().numpy().copy() for t in self.module.state_dict().values()]

    def set_weights(self, weights: list) -> None:
        """Load arrays in :meth:`get_weights`'s order and shapes."""
        self._ensure_built(None)
        if self._is_graph or self._subclassed:
            weights = list(weights)
            counts = [len(layer.get_weights()) for layer in self.layers]
            if len(weights) != sum(counts):
                raise ValueError(f"set_weights: the model has {sum(counts)} weight arrays, got "
                                 f"{len(weights)}")
            at = 0
            for layer, n in zip(self.layers, counts):
                if n:
                    layer.set_weights([np.asarray(w) for w in weights[at:at + n]])
                at += n
            return
        state = self.module.state_dict()
        if len(weights) != len(state):
            raise ValueError(f"set_weights: the model has {len(state)} weight arrays, got {len(weights)}")
        new = {}
        for (key, old), w in zip(state.items(), weights):
            if tuple(np.shape(w)) != tuple(old.shape):
                raise ValueError(
                    f"set_weights: '{key}' has shape {tuple(old.shape)}, got {tuple(np.shape(w))}")
            new[key] = torch.as_tensor(np.asarray(w)).to(old.dtype)
        self.module.load_state_dict(new)

    def count_params(self) -> int:
        self._ensure_built(None)
        if self._is_graph:
            return Functional.count_params(self)
        return sum(p.numel() for p in self.module.parameters())

    def reset_states(self) -> None:
        """Keras 2 ``model.reset_states()``: zero the carried states of every stateful layer."""
        for layer in getattr(self, "layers", []):
            if getattr(layer, "stateful", False) and hasattr(layer, "reset_states"):
                layer.reset_states()

    def save_weights(self, filepath: str, overwrite: bool = True) -> None:
        """Write the weights: Keras 2 HDF5 for ``.h5``/``.hdf5``/``.keras`` names, else a checkpoint;
        ``overwrite=False`` asks before replacing a file (Keras 2's prompt)."""
        from arignote.models import saving  # the file formats load with their first use (issue 32)

        saving.save_weights(self, filepath, overwrite=overwrite)

    def load_weights(self, filepath: str, by_name: bool = False, skip_mismatch: bool = False,
                     reshape: bool = False) -> None:
        """Load weights written by :meth:`save_weights` or :meth:`save`, or by Keras 2 (HDF5; there also
        ``by_name=True``, ``skip_mismatch=True`` and ``reshape=True`` as in Keras 2)."""
        from arignote.models import saving  # the file formats load with their first use (issue 32)

        saving.load_weights(self, filepath, by_name=by_name, skip_mismatch=skip_mismatch, reshape=reshape)

    def save(self, filepath: str, overwrite: bool = True, include_optimizer: bool = True) -> None:
        """Architecture + weights + optimizer state in one file: Keras 2 HDF5 for ``.h5``/``.hdf5``/``.keras``
        names, arignote's checkpoint for any other (Keras 2's argument order: ``overwrite`` second)."""
        from arignote.models import saving  # the file formats load with their first use (issue 32)

        saving.save_model(self, filepath, overwrite=overwrite, include_optimizer=include_optimizer)

    def export(self, filepath: str, format: str | None = None, verbose: bool | None = None,
               input_shapes: list[tuple] | None = None) -> None:
        """Keras 3's ``model.export``: the inference graph as ``format="onnx"``, ``"torch"`` (a
        ``torch.export`` ``.pt2``) or ``"keras"`` (a Keras 3 ``.keras`` file); default from the suffix.
        ``input_shapes`` (without the batch) fix open dimensions. See :mod:`arignote.export`."""
        from arignote import export  # a floor beside models; torch.onnx and its kin load only when exporting

        self._ensure_built(None)
        export.export_model(self, filepath, format, input_shapes)
        if verbose:
            print(f"Saved artifact at '{filepath}'.")

    def __reduce_ex__(self, protocol: Any) -> Any:
        """``pickle.dumps(model)`` as Keras 2.3.1 pickles a model: through the same serialization as
        ``model.save`` (architecture, weights, compile settings, optimizer state), here the bytes of a
        Keras 2 HDF5 file; ``pickle.loads`` rebuilds it with ``load_model`` (a custom class, loss or
        optimizer is looked up by name, e.g. inside ``CustomObjectScope``). A model without a Keras
        config (a subclassed model, a wrapped torch module) is pickled as any Python object."""
        if getattr(self, "layers", None) is None or getattr(self, "_subclassed", False):
            return super().__reduce_ex__(protocol)
        stream = io.BytesIO()
        from arignote.models import saving  # the file formats load with their first use (issue 32)

        saving.save_model(self, stream)
        loader = importlib.import_module("arignote.models.loading").from_pickled_hdf5  # a floor up
        return loader, (stream.getvalue(),)

    def __getstate__(self) -> dict:
        # a subclassed model pickled (or copied) after fit / predict: the per-run state holds closures
        # (the trainer's step functions, the compiled loss); the copy drops it, rebuilds the loss from
        # the compile arguments and makes its own trainer at its next fit (Keras 2.3.1 pickles a model)
        state = self.__dict__.copy()
        state["_trainer"] = None
        state["_call_model_losses"] = []  # the last forward's add_loss terms (their autograd graph)
        state.pop("_memory_plan", None)
        if state.get("loss_fn") is not None:
            state["loss_fn"] = _REBUILT_LOSS
        return state

    def __setstate__(self, state: dict) -> None:
        # a model a subclassed model holds comes back through its own pickling (HDF5 bytes for a
        # Sequential or functional one): the copy's module holds that model's new module, so the copy
        # trains and lists it (Model.__setattr__ made the link)
        self.__dict__.update(state)
        if state.get("loss_fn") == _REBUILT_LOSS:
            self.loss_fn = self._with_model_losses(self._one_output_loss(self.loss), self._loss_wrapped)
        children = self.module._modules if state.get("_subclassed") else {}
        for name, value in state.items():
            if name in children and is_model(value):
                children[name] = value.module

    def to_json(self, **kwargs: Any) -> str:
        """The architecture as Keras 2 JSON (``model_from_json`` rebuilds it, here or in Keras 2)."""
        from arignote.models import saving  # the file formats load with their first use (issue 32)

        return saving.to_json(self, **kwargs)

    def to_yaml(self, **kwargs: Any) -> str:
        """The architecture as Keras 2 YAML (``model_from_yaml`` rebuilds it); needs PyYAML
        (``pip install arignote[yaml]``); ``kwargs`` go to ``yaml.safe_dump``."""
        from arignote.models import saving  # the file formats load with their first use (issue 32)

        return saving.to_yaml(self, **kwargs)

    def training_state(self) -> dict[str, Any]:
        """What BackupAndRestore saves: module, optimizer and grad-scaler state, and ``epoch``
        (the number of finished epochs, i.e. the epoch to resume at)."""
        from arignote.models import saving  # the file formats load with their first use (issue 32)

        state: dict[str, Any] = {"module": self.module.state_dict(), "epoch": int(self.epochs_done),
                                 saving.GATES_KEY: saving.GATES_CUDNN}
        if self.optimizer is not None and getattr(self.optimizer, "built", True):
            state["optimizer"] = self.optimizer.state_dict()
        if self._trainer is not None:
            state["scaler"] = self._trainer.scaler.state_dict()
        return state

    def load_training_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`training_state`; the next ``fit`` resumes at ``state['epoch']``."""
        from arignote.models import saving  # the file formats load with their first use (issue 32)

        self.module.load_state_dict(saving.gates_in_cudnn_order(state, state["module"], self.module))
        if "optimizer" in state and self.optimizer is not None:
            self.optimizer.load_state_dict(state["optimizer"])
        if state.get("scaler") and self._trainer is not None:
            self._trainer.scaler.load_state_dict(state["scaler"])
        self.epochs_done = int(state.get("epoch", 0))
        self.resume_epoch = self.epochs_done
