"""The losses a model has of its own, beside the one ``compile`` names (Keras 2's ``model.losses``):
weight and activity penalties of its layers, ``layer.add_loss`` and ``model.add_loss`` terms (symbolic
tensors the graph computes, tensors, callables), and the total loss ``compile`` builds from them.

Example::

    >>> from arignote import regularizers
    >>> from arignote.layers import Input, Dense
    >>> from arignote.models import Model
    >>> x = Input(shape=(3,))
    >>> model = Model(x, Dense(2, kernel_regularizer=regularizers.l2(0.1))(x))
    >>> has_losses(model), len(model_losses(model))
    (True, 1)
    >>> is_custom_loss("mse"), is_custom_loss(lambda y_true, y_pred: y_pred)
    (False, True)
"""

from __future__ import annotations

import functools
from typing import Any

import torch
from torch import nn

from arignote.graph.network import GraphModule
from arignote.graph.tensor import KerasTensor
from arignote.layers.base import Layer

__all__ = ["model_losses", "has_losses", "with_model_losses", "is_custom_loss", "any_custom_loss",
           "captured_tensors"]


def model_losses(model: Any) -> list:
    """Keras 2.3.1's ``model.losses``: for each layer, the losses of its calls inside this model (an
    activity regularizer's penalty: one symbolic tensor per call, ``K.function`` evaluates it; a nested
    model counts its own calls' once per call of it here) and its unconditional ones (weight penalties,
    current values, a weight shared by several layers or models once); then the model's ``add_loss``
    terms (symbolic tensors as given, tensors, callables called), plain numbers last. A model wrapping
    a torch module: its layers' current penalties and losses."""
    module = model.module
    if not model._has_layers():
        out = [loss for m in module.modules() if isinstance(m, Layer) for loss in m._own_losses()]
    else:
        seen: set = set()
        out = []
        for layer in model.layers:
            out += _layer_losses(layer, _owned(model), seen)
    out += [loss() if callable(loss) else loss for loss in model._added_losses()]
    out += held_added_losses(model)
    numbers = [x for x in out if isinstance(x, (int, float))]
    # each tensor once (Keras 2.3.1); a nested model's symbolic losses stand once per call of it
    unique: dict[int, Any] = {}
    for i, x in enumerate(out):
        if not isinstance(x, (int, float)):
            unique.setdefault(-i - 1 if isinstance(x, KerasTensor) else id(x), x)
    return list(unique.values()) + numbers


def held_added_losses(model: Any) -> list:
    """The ``add_loss`` terms (tensors, callables called) of the models ``model`` has as layers, at any
    depth: a subclassed VAE held by another model adds its KL term to that model's loss (Keras 2.3.1's
    ``Network.losses`` takes each layer's ``losses``). Symbolic terms stay with their own graph."""
    out = []
    for layer in getattr(model, "layers", None) or []:
        if not isinstance(layer, Layer) and hasattr(layer, "_added_losses"):
            out += [loss() if callable(loss) else loss for loss in layer._added_losses()
                    if not isinstance(loss, KerasTensor)]
            out += held_added_losses(layer)
    return out


def _owned(model: Any) -> Any:
    """The ids of the nodes a graph model owns (None: a Sequential, whose layers' calls are its own)."""
    order = getattr(model, "_order", None)
    return {id(n) for n in order} if order is not None else None


def _layer_losses(layer: Any, owned: Any, seen: set) -> list:
    nodes = [n for n in getattr(layer, "_inbound_nodes", []) if owned is None or id(n) in owned]
    if not isinstance(layer, Layer):  # a nested model: its own calls' losses once per call of it here
        conditional = model_losses_conditional(layer)
        return [x for _ in nodes for x in conditional] + _unconditional(layer, seen)
    out = [loss for node in nodes for loss in layer.get_losses_for(node.input_tensors)]
    return out + _unconditional(layer, seen)


def model_losses_conditional(model: Any) -> list:
    """The losses of ``model``'s own layer calls that depend on their inputs (activity penalties)."""
    if not hasattr(model, "layers"):
        return []
    owned, out = _owned(model), []
    for layer in model.layers:
        nodes = [n for n in getattr(layer, "_inbound_nodes", []) if owned is None or id(n) in owned]
        if isinstance(layer, Layer):
            out += [loss for node in nodes for loss in layer.get_losses_for(node.input_tensors)]
        else:
            out += [x for _ in nodes for x in model_losses_conditional(layer)]
    return out


def _unconditional(layer: Any, seen: set) -> list:
    """Weight penalties (each weight once across the whole model) and unconditional added losses."""
    if not isinstance(layer, Layer):
        return [x for sub in getattr(layer, "layers", []) for x in _unconditional(sub, seen)]
    out = []
    for m in layer.modules():
        if not isinstance(m, Layer):
            continue
        for p, fn in m._regularizers:
            if id(p) not in seen:
                seen.add(id(p))
                out.append(fn(p))
        out += [loss for loss, key in m._loss_inputs if key is None]
    return out


def has_losses(model: Any) -> bool:
    """Whether ``model`` has losses of its own (Keras 2's ``model.losses`` is not empty): a model-level
    ``add_loss``, a layer's ``add_loss`` (also one its ``call`` made on symbolic tensors while the
    graph was built: the Keras 2 VAE's custom loss layer) or a weight regularizer. Keras 2.3.1 then
    compiles with ``loss=None``."""
    if model._added_losses() or held_added_losses(model):
        return True
    module = model.module
    if not isinstance(module, nn.Module):
        return False
    return any(m._added_losses or m._call_losses or m._regularizers
               or getattr(m, "activity_regularizer", None) is not None  # adds its loss at each call
               for m in module.modules() if isinstance(m, Layer))


def with_model_losses(model: Any, fn: Any) -> Any:
    """``fn(y_true, y_pred)`` plus the model-level losses (``model.add_loss``: symbolic terms the
    graph computes, tensors, callables); a custom loss reads symbolic tensors of the graph it closes
    over from the current forward (the Keras 2.0 VAE's ``z_mean``). The layers' own penalties
    (regularizers, ``layer.add_loss``) are added by the training loop (:mod:`arignote.layers.penalties`)."""

    def total_loss(y_true: Any, y_pred: Any) -> Any:
        module = model.module
        value = None
        if fn is not None:
            if getattr(module, "keep_values", False):
                with module.live_values():
                    value = fn(y_true, y_pred)
            else:
                value = fn(y_true, y_pred)
            if value is not None and value.dim():  # None: every output's loss is None (Keras 2.3.1)
                value = value.mean()
        extra = [loss() if callable(loss) else loss for loss in model._added_losses()
                 if not isinstance(loss, KerasTensor)]
        extra += held_added_losses(model)
        if isinstance(module, GraphModule):
            extra += [t.mean() if t.dim() else t for t in module.extra_losses]
        for loss in extra:
            value = loss if value is None else value + loss
        if value is None:
            if not has_losses(model):  # now: a subclassed model's call adds its losses at each forward
                raise ValueError("the model has no loss to optimize: compile(loss=...) or add_loss(...)")
            # compile(loss=None) on a model whose layers add their losses in call (the training loop
            # adds those): the compiled part is 0, as in Keras 2.3.1 (`total_loss = 0.`)
            ref = y_pred if isinstance(y_pred, torch.Tensor) else next(module.parameters())
            value = ref.new_zeros(())
        return value

    total_loss.__name__ = getattr(fn, "__name__", "loss")
    return total_loss


def is_custom_loss(loss: Any) -> bool:
    """Whether ``loss`` is the user's own function (not a name, a built-in or a loss module)."""
    from arignote import losses as losses_mod  # the loss tables load with the first compile (issue 32)

    return (callable(loss) and not isinstance(loss, (str, nn.Module))
            and loss not in losses_mod._NAMES.values())


def _losses_of(loss: Any) -> list:
    if isinstance(loss, dict):
        return list(loss.values())
    return list(loss) if isinstance(loss, (list, tuple)) else [loss]


def any_custom_loss(loss: Any) -> bool:
    """Whether ``loss`` (one, or a list/dict per output) has a user function among it."""
    return any(is_custom_loss(fn) for fn in _losses_of(loss))


def captured_tensors(loss: Any) -> list[KerasTensor]:
    """The symbolic tensors custom losses close over: ``functools.partial`` arguments, closure cells,
    defaults and the module globals they name (WGAN-GP's ``partial(gradient_penalty_loss,
    averaged_samples=averaged)``). ``K.gradients`` inside the loss differentiates with respect to them,
    so the forward tracks them.

    Example::

        >>> from arignote.layers import Input
        >>> x = Input(shape=(2,))
        >>> [t is x for t in captured_tensors(functools.partial(lambda y_true, y_pred, s: y_pred, s=x))]
        [True]
    """
    found: dict[int, KerasTensor] = {}

    def visit(value: Any, depth: int) -> None:
        if isinstance(value, KerasTensor):
            found[id(value)] = value
        elif isinstance(value, (list, tuple)) and depth < 2:
            for v in value:
                visit(v, depth + 1)
        elif isinstance(value, functools.partial) and depth < 2:
            for v in (value.func, *value.args, *value.keywords.values()):
                visit(v, depth + 1)
        elif callable(value) and hasattr(value, "__code__") and depth < 2:
            cells = [c.cell_contents for c in value.__closure__ or () if _filled(c)]
            names = value.__code__.co_names
            globs = [value.__globals__[n] for n in names if n in value.__globals__]
            for v in (*cells, *(value.__defaults__ or ()), *(value.__kwdefaults__ or {}).values(), *globs):
                visit(v, depth + 1)

    for fn in _losses_of(loss):
        if is_custom_loss(fn):
            visit(fn, 0)
    return list(found.values())


def _filled(cell: Any) -> bool:
    try:
        return cell.cell_contents is not cell  # reading an empty cell raises
    except ValueError:
        return False
