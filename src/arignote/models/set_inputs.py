"""Keras 2.3.1's ``Model._set_inputs(inputs, outputs=None, training=None)``: set a model's input (and
output) tensors after construction, from symbolic tensors or from data.

* A ``Sequential`` is built for the per-sample shape of ``inputs`` (one input).
* A model whose ``inputs`` are set raises ``ValueError('Model inputs are already set.')``.
* A functional model (after ``model.inputs = None``) takes back its graph's own input tensors; its
  graph is fixed by its layers' calls, so other tensors are refused with the way to build one.
* A subclassed model gets ``Input`` tensors (data: one per array, shape ``(None, *array.shape[1:])``),
  ``outputs`` from its ``call`` on them unless given, and ``input_names`` / ``output_names``
  ``input_1`` ... / ``output_1`` ... as in Keras 2.3.1.

Example::

    >>> import numpy as np
    >>> from arignote.layers import Dense, Input
    >>> from arignote.models import Model
    >>> x = Input(shape=(3,)); model = Model(x, Dense(2)(x))
    >>> model.inputs = None
    >>> set_inputs(model, [x]); model.predict(np.zeros((1, 3))).shape
    (1, 2)
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from arignote.graph.tensor import KerasTensor

__all__ = ["set_inputs"]


def _as_list(x: Any) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _symbolic(value: Any, name: str) -> Any:
    """``value`` as a symbolic input: a symbolic tensor as it is, data as an ``Input`` of its shape."""
    # why: Input lives in the layers package, which imports the models' base modules
    from arignote.layers.input_layer import Input

    if isinstance(value, KerasTensor):
        return value
    array = np.asarray(value)
    if array.ndim == 1:
        array = array[:, None]
    return Input(batch_shape=(None, *array.shape[1:]), name=name)


def set_inputs(model: Any, inputs: Any, outputs: Any = None, training: Any = None) -> None:
    """Set ``model``'s inputs (and outputs) as Keras 2.3.1's ``Model._set_inputs`` (see the module doc)."""
    if type(model).__name__ == "Sequential":
        first = _as_list(inputs)
        if len(first) != 1:
            raise ValueError(f"a Sequential model takes one input, _set_inputs got {len(first)}")
        model.build(input_shape=(None, *tuple(first[0].shape)[1:]))
        return
    if model.__dict__.get("inputs"):
        raise ValueError("Model inputs are already set.")
    given = _as_list(inputs)
    if model._is_graph:
        own = model.__dict__["_graph_inputs"]
        if len(given) != len(own) or any(g is not t for g, t in zip(given, own)):
            raise ValueError(f"{model.name} is a functional model: its inputs are those of its graph "
                             f"({[t.name for t in own]}); to run its layers on other tensors call the model "
                             "on them, outputs = model(new_inputs), and build Model(new_inputs, outputs)")
        model.inputs = list(own)
        return
    tensors = [_symbolic(v, f"input_{i + 1}") for i, v in enumerate(given)]
    if outputs is None:
        arg = tensors[0] if len(tensors) == 1 else tensors
        takes_training = "training" in inspect.signature(model.call).parameters
        outputs = model.call(arg, training=training) if takes_training else model.call(arg)
    model.inputs = tensors
    model.input_names = [f"input_{i + 1}" for i in range(len(tensors))]
    model.outputs = _as_list(outputs)
    model.output_names = [f"output_{i + 1}" for i in range(len(model.outputs))]
