"""``K.function``, ``K.gradients`` and the learning phase on functional graphs (Keras 2 backend).

``K.function(inputs, outputs)`` compiles the nodes between symbolic ``inputs`` and ``outputs`` into a
:class:`~arignote.graph.network.GraphModule` and returns a callable taking a list of arrays.
``K.gradients(loss, variables)`` records gradient nodes: symbolic tensors whose value is
``torch.autograd.grad`` of the loss, so visualization scripts (gradient ascent on an input image,
saliency maps) run unchanged. ``K.learning_phase()`` may be listed among the inputs and fed 0/1.

Example::

    >>> import numpy as np
    >>> from arignote.layers import Input, Dense
    >>> from arignote import backend as K
    >>> x = Input(shape=(3,)); y = K.sum(K.square(x), axis=1)
    >>> f = K.function([x], [y, K.gradients(y, x)[0]])
    >>> [v.tolist() for v in f([np.array([[1., 2., 3.]])])]
    [[14.0], [[2.0, 4.0, 6.0]]]
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from arignote import config
from arignote.graph import state
from arignote.graph.network import GraphModule
from arignote.graph.node import symbolic_call
from arignote.graph.tensor import KerasTensor
from arignote.graph.topology import topology
from arignote.layers.op_layer import OpLayer

__all__ = ["LearningPhase", "learning_phase", "set_learning_phase", "function", "gradients"]


class LearningPhase(int):
    """What ``K.learning_phase()`` returns: the current phase (0 test, 1 train) as an int that
    ``K.function`` also recognizes as its learning-phase input."""


def learning_phase() -> LearningPhase:
    return LearningPhase(state.phase())


def set_learning_phase(value: Any) -> None:
    """Pin the phase ``K.in_train_phase`` sees (0 or 1; ``None`` follows fit/predict again)."""
    state.force_phase(value)


class _Gradient(OpLayer):
    """``d loss / d variable`` in a graph (``K.gradients``)."""

    def __init__(self, variable: Any) -> None:
        super().__init__("gradients", self._grad, None, {})
        self.variable = variable  # a torch parameter, or None when the variable is the 2nd input

    def _grad(self, loss: torch.Tensor, wrt: torch.Tensor | None = None) -> torch.Tensor:
        target = wrt if wrt is not None else self.variable
        total = loss.sum() if loss.dim() else loss
        (grad,) = torch.autograd.grad(total, target, retain_graph=True, allow_unused=True)
        return torch.zeros_like(target) if grad is None else grad

    def call(self, inputs: Any) -> Any:
        return self._grad(*inputs)

    def compute_output_shape(self, input_shape: Any) -> Any:
        if self.variable is not None:
            return tuple(self.variable.shape)
        return tuple(input_shape[1])


def gradients(loss: Any, variables: Any) -> list:
    """Keras 2 ``K.gradients(loss, variables)``: one gradient per variable (symbolic inputs or weights).

    On torch tensors (inside a ``Lambda`` or a custom layer's ``call``) the gradients are taken
    right away, differentiable themselves when autograd is on (training goes through them).
    """
    if isinstance(loss, torch.Tensor):
        return _eager_gradients(loss, variables)
    if not isinstance(loss, KerasTensor):
        raise ValueError(f"K.gradients: the loss is a symbolic or torch tensor, got {type(loss).__name__}")
    out = []
    for v in variables if isinstance(variables, (list, tuple)) else [variables]:
        if isinstance(v, KerasTensor):
            out.append(symbolic_call(_Gradient(None), [loss, v], {}))
        elif isinstance(v, torch.Tensor):
            out.append(symbolic_call(_Gradient(v), [loss], {}))
        else:
            raise ValueError("K.gradients: a variable is a symbolic tensor or a weight, got "
                             f"{type(v).__name__}")
    return out


def _eager_gradients(loss: torch.Tensor, variables: Any) -> list:
    # a symbolic tensor of the graph a custom loss closes over (WGAN-GP's averaged samples): its value
    # in the forward that computed the loss (what Keras 2's one graph connected it to)
    wrt = [_live(v) for v in (variables if isinstance(variables, (list, tuple)) else [variables])]
    if not all(isinstance(v, torch.Tensor) for v in wrt):
        raise ValueError("K.gradients: the loss is a torch tensor, so the variables must be torch tensors "
                         f"too, got {[type(v).__name__ for v in wrt]}")
    if not loss.requires_grad:  # a functional graph catches this and runs again with autograd on its inputs
        raise state.NeedsAutograd("K.gradients: autograd recorded nothing the loss depends on (it was "
                                  "computed under torch.no_grad(), or from tensors that require no gradient)")
    total = loss.sum() if loss.dim() else loss
    grads = torch.autograd.grad(total, wrt, create_graph=True, allow_unused=True)
    return [torch.zeros_like(v) if g is None else g for g, v in zip(grads, wrt)]


def _live(v: Any) -> Any:
    if not isinstance(v, KerasTensor):
        return v
    value = state.forward_value(v)
    if value is None:
        raise ValueError(f"K.gradients: the symbolic tensor {v.name!r} is not part of the forward pass that "
                         "computed the loss; take gradients with respect to tensors of the model being "
                         "trained (a loss passed to its compile), or build a K.function for them")
    if not value.requires_grad:
        raise ValueError(f"K.gradients: autograd did not track {v.name!r} in this forward pass; pass the "
                         "tensor to the loss through functools.partial, a closure or a default argument so "
                         "compile() sees it")
    return value


def function(inputs: Any, outputs: Any, updates: Any = None, **kwargs: Any) -> Any:
    """Keras 2 ``K.function``: ``f([array, ...]) -> [array, ...]`` computing ``outputs`` from ``inputs``."""
    if updates:
        raise ValueError("K.function(updates=...) is not supported: torch applies updates inside the layers; "
                         "train with model.fit or an optimizer")
    inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    outputs_list = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    phase_at = [i for i, x in enumerate(inputs) if isinstance(x, LearningPhase)]
    tensors = [x for x in inputs if not isinstance(x, LearningPhase)]
    order, _ = topology(tensors, outputs_list)
    graph = GraphModule(tensors, outputs_list, order)
    needs_grad = any(isinstance(n.outbound_layer, _Gradient) for n in order)
    dtype = getattr(torch, config.get("floatX"))

    def run(values: Any) -> list:
        values = list(values) if isinstance(values, (list, tuple)) else [values]
        if len(values) != len(inputs):
            raise ValueError(f"this K.function takes {len(inputs)} inputs, got {len(values)}")
        phase = int(values[phase_at[0]]) if phase_at else 0
        feed = []
        for i, v in enumerate(values):
            if i in phase_at:
                continue
            # ascontiguousarray: preprocess_input's BGR flip (x[..., ::-1]) is a negative-stride view
            t = torch.as_tensor(np.ascontiguousarray(v)) if not isinstance(v, torch.Tensor) else v
            if t.is_floating_point():
                t = t.to(dtype)
                if needs_grad:
                    t = t.detach().requires_grad_(True)
            feed.append(t)
        device = next((p.device for p in graph.parameters()), None)
        if device is not None:
            feed = [t.to(device) if t.device != device else t for t in feed]
        graph.train(bool(phase))
        with torch.set_grad_enabled(needs_grad):
            out = graph(feed[0] if len(feed) == 1 else feed)
        out = out if isinstance(out, list) else [out]
        return [o.detach().cpu().numpy() for o in out]

    return run
