"""Optimizer state between Keras 2's ``optimizer_weights`` and arignote's torch optimizers.

Keras 2.3.1 stores ``[iterations] + slots`` where the slots are, per trainable weight in model
order: SGD ``moment`` (Keras ``v = momentum * v - lr * g``; torch keeps ``b`` with ``v = -lr * b``),
RMSprop / Adagrad ``accumulator``, Adadelta ``accumulator`` + ``delta_accumulator``, Adam ``m``,
``v`` and ``vhat`` (shape ``(1,)`` unless ``amsgrad``), Adamax ``m`` + ``u``, Nadam ``m`` + ``v``
(after ``iterations``, Nadam keeps its scalar ``m_schedule``, torch's per-parameter ``mu_product``).
Each slot has the Keras layout of its weight; torch keeps it in the parameter's layout. Where a
layer's Keras weight is a view of one torch parameter (Dense, convolutions, Embedding,
BatchNormalization, LSTM kernels ...), the same view maps the slot; a ``GRU(reset_after=True)``
keeps its gates in cuDNN's order and maps slots with its gate reorder. Where neither holds, the
state has no Keras layout: saving then
leaves ``optimizer_weights`` out and loading starts a fresh optimizer, each with a warning naming
the layer (as Keras 2 warns when it cannot restore an optimizer). A Theano file stores its conv
kernels flipped for convolution, and their slots with them (Keras's updates are elementwise): they
are flipped on the way in and out as the kernels are (Keras 2 itself never converts slots between
backends).

Example::

    >>> from arignote.models import Sequential
    >>> from arignote.layers import Dense
    >>> m = Sequential([Dense(2, input_dim=3)])
    >>> m.compile("adam", "mse")
    >>> to_keras(m) is None   # nothing to save before the first training step
    True
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import torch

from arignote.saving import layouts

__all__ = ["to_keras", "from_keras", "SLOTS"]

# Keras slot names per optimizer, and the torch state key each maps to
SLOTS: dict[str, tuple[tuple[str, str], ...]] = {
    "SGD": (("moment", "momentum_buffer"),),
    "RMSprop": (("accumulator", "square_avg"),),
    "Adagrad": (("accumulator", "sum"),),
    "Adadelta": (("accumulator", "square_avg"), ("delta_accumulator", "acc_delta")),
    "Adam": (("m", "exp_avg"), ("v", "exp_avg_sq"), ("vhat", "max_exp_avg_sq")),
    "Adamax": (("m", "exp_avg"), ("u", "exp_inf")),
    "Nadam": (("m", "exp_avg"), ("v", "exp_avg_sq")),
}
# scalars Keras keeps after ``iterations`` and before the slots, and the per-parameter torch state
# key holding the same value: Nadam's momentum-schedule product
SCALARS: dict[str, tuple[tuple[str, str], ...]] = {"Nadam": (("m_schedule", "mu_product"),)}


class _Unmappable(Exception):
    pass


def _views(model: Any) -> list[tuple[torch.nn.Parameter, torch.Tensor, bool]]:
    """``(parameter, keras_view, convolved)`` per trainable Keras weight, in Keras's model order (a
    nested model contributes its layers' weights in their order); ``convolved``: a kernel a Theano
    file stores flipped, and its slots with it."""
    out = []
    for layer in model.layers:
        if getattr(layer, "layers", None) is not None and not hasattr(layer, "_keras_weights"):
            out += _views(layer)
            continue
        params = [p for p in layer.parameters() if p.requires_grad]
        if not params:
            continue
        keras = list(layer._keras_weights())
        flipped = set(layouts.convolved(layer))
        covered: set[int] = set()
        for position, view in enumerate(keras):
            source = getattr(view, "_keras_source", None)  # a reordered copy (GRU gates in cuDNN's order)
            owner = [
                p
                for p in params
                if (p is source[0] if source is not None else
                    view.untyped_storage().data_ptr() == p.untyped_storage().data_ptr()
                    and view.numel() == p.numel()
                    and view.storage_offset() == p.storage_offset())  # RNN weights share cuDNN's flat buffer
            ]
            if not owner:
                continue  # a buffer (moving statistics) or a computed array
            out.append((owner[0], view, position in flipped))
            covered.add(id(owner[0]))
        missing = [p for p in params if id(p) not in covered]
        if missing:
            raise _Unmappable(f"layer '{layer.name}' ({type(layer).__name__})")
    return out


def _to_keras_layout(slot: torch.Tensor, param: torch.Tensor, view: torch.Tensor) -> np.ndarray:
    slot = slot.detach().cpu()
    source = getattr(view, "_keras_source", None)
    if source is not None:
        return source[1].to_keras(slot).numpy().copy()
    if slot.stride() != param.stride():
        slot = torch.empty_strided(param.shape, param.stride(), dtype=slot.dtype).copy_(slot)
    offset = view.storage_offset() - param.storage_offset()
    return slot.as_strided(view.shape, view.stride(), offset).numpy().copy()


def _from_keras_layout(value: np.ndarray, param: torch.Tensor, view: torch.Tensor) -> torch.Tensor:
    source = getattr(view, "_keras_source", None)
    if source is not None:
        return source[1].to_torch(torch.as_tensor(value)).to(param.dtype).contiguous()
    out = torch.empty_strided(param.shape, param.stride(), dtype=param.dtype)
    offset = view.storage_offset() - param.storage_offset()
    out.as_strided(view.shape, view.stride(), offset).copy_(torch.as_tensor(value))
    return out


def _kind(optimizer: Any) -> str | None:
    for cls in type(optimizer).__mro__:
        if cls.__name__ in SLOTS:
            return cls.__name__
    return None


def _sgd_scale(optimizer: Any) -> float:
    """The lr of the last step taken (Keras ``v = -lr * b``); from ``decay`` when not recorded."""
    last = getattr(optimizer, "_last_step_lr", None)
    if last is not None:
        return float(last)
    done = max(int(optimizer.iterations) - 1, 0)
    return float(optimizer._lr / (1.0 + optimizer.decay * done))


def to_keras(model: Any, convolving: bool = False) -> tuple[list[str], list[np.ndarray]] | None:
    """``(weight_names, arrays)`` for the ``optimizer_weights`` group, or None when there is no state;
    ``convolving``: for a Theano file (conv kernels' slots flipped as the kernels)."""
    opt = model.optimizer
    kind = _kind(opt)
    if kind is None or getattr(opt, "torch", None) is None or not opt.iterations:
        return None
    try:
        views = _views(model)
    except _Unmappable as err:
        warnings.warn(
            f"the optimizer state of {err} has no Keras 2 layout: the file is written without "
            "optimizer_weights (training resumes with a fresh optimizer)",
            stacklevel=3,
        )
        return None
    name = type(opt).__name__
    names, arrays = [f"{name}/iterations:0"], [np.array(opt.iterations, dtype=np.int64)]
    for scalar, key in SCALARS.get(kind, ()):
        state = opt.torch.state.get(views[0][0], {}) if views else {}
        names.append(f"{name}/{scalar}:0")
        arrays.append(np.array(float(state[key]) if key in state else 1.0, dtype=np.float32))
    for slot, key in SLOTS[kind]:
        for i, (param, view, flip) in enumerate(views):
            state = opt.torch.state.get(param, {})
            if slot == "vhat" and not getattr(opt, "amsgrad", False):
                value = np.zeros((1,), dtype=np.float32)
            elif key in state:
                value = _to_keras_layout(state[key], param, view)
                if kind == "SGD":
                    value = -_sgd_scale(opt) * value
                if flip and convolving:
                    value = layouts.flip_kernel(value)
            else:
                value = np.zeros(tuple(view.shape), dtype=np.float32)
            names.append(f"training/{name}/{slot}_{i}:0")
            arrays.append(value)
    return names, arrays


def from_keras(model: Any, arrays: list[np.ndarray], where: str, convolving: bool = False) -> None:
    """Load a file's ``optimizer_weights`` into ``model.optimizer`` (applied when the model is placed);
    ``convolving``: a Theano file, whose conv kernels' slots are flipped as the kernels are."""
    opt = model.optimizer
    kind = _kind(opt)
    if kind is None:
        warnings.warn(
            f"{where}: the state of a {type(opt).__name__} optimizer cannot be restored; the model "
            "starts with a freshly initialized optimizer",
            stacklevel=3,
        )
        return
    try:
        views = _views(model)
    except _Unmappable as err:
        warnings.warn(
            f"{where}: the optimizer state of {err} cannot be mapped to torch; the model starts with "
            "a freshly initialized optimizer",
            stacklevel=3,
        )
        return
    n = len(views)
    slots, scalars = SLOTS[kind], SCALARS.get(kind, ())
    arrays = list(arrays)
    if scalars and len(arrays) == n * len(slots) + 1:  # a file written before Keras kept m_schedule
        arrays[1:1] = [np.array(1.0, dtype=np.float32)] * len(scalars)  # (Keras 2.3.1 does the same)
    if len(arrays) != 1 + len(scalars) + n * len(slots):
        warnings.warn(
            f"{where}: optimizer_weights holds {len(arrays)} arrays, a {kind} over {n} weights needs "
            f"{1 + len(scalars) + n * len(slots)}; the model starts with a freshly initialized optimizer",
            stacklevel=3,
        )
        return
    iterations = int(np.asarray(arrays[0]))
    scalar_values = {key: float(np.asarray(arrays[1 + k])) for k, (_, key) in enumerate(scalars)}
    arrays = [arrays[0], *arrays[1 + len(scalars):]]
    opt.build(list(model.module.parameters()))
    opt.iterations = iterations
    opt._last_step_lr = None
    for j, (slot, key) in enumerate(slots):
        for i, (param, view, flip) in enumerate(views):
            value = np.asarray(arrays[1 + j * n + i])
            if flip and convolving and value.ndim > 2:
                value = layouts.flip_kernel(value)
            if slot == "vhat" and not getattr(opt, "amsgrad", False):
                continue
            if kind == "SGD" and not getattr(opt, "momentum", 0.0):
                continue
            if tuple(value.shape) != tuple(view.shape):
                warnings.warn(
                    f"{where}: optimizer slot {slot}_{i} has shape {value.shape}, the weight "
                    f"{tuple(view.shape)}; the model starts with a freshly initialized optimizer",
                    stacklevel=3,
                )
                opt.torch = None
                return
            tensor = _from_keras_layout(value, param, view)
            if kind == "SGD":
                tensor = tensor / -_sgd_scale(opt)
            state = opt.torch.state[param]
            state[key] = tensor
            if kind != "SGD":
                state["step"] = torch.tensor(float(iterations))
            for scalar_key, value in scalar_values.items():
                state[scalar_key] = torch.tensor(value)
    if kind == "SGD" and iterations:
        opt._last_step_lr = _sgd_scale(opt)
    model._pending_optimizer_state = opt.state_dict()
