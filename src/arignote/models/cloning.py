"""Keras 2's ``clone_model``: the same architecture with new layers and freshly initialized weights.

A Sequential or functional model is rebuilt from its own configuration (``get_config``), so
shared layers stay shared, nested models are cloned too, and nothing is shared with the original;
the classes of the model's own layers (custom ones included) are handed to ``from_config``, so no
``custom_objects`` are needed. ``input_tensors`` rebuilds the clone on other inputs (symbolic
tensors from ``Input`` or tensors, which become ``Input(tensor=...)``), as Keras 2.3.1 does; the
clone is then one node of the new model rather than its layers laid flat.

Example::

    >>> from arignote.models import Sequential
    >>> from arignote.layers import Dense
    >>> model = Sequential([Dense(2, input_shape=(3,), name="d")])
    >>> twin = clone_model(model)
    >>> twin.layers[0].name, twin.layers[0] is model.layers[0]
    ('d', False)
"""

from __future__ import annotations

from typing import Any

from arignote.graph.tensor import KerasTensor
from arignote.layers import Input
from arignote.models.model import Model
from arignote.models.sequential import Sequential
from arignote.utils.generic_utils import to_list

__all__ = ["clone_model"]


def _layer_classes(model: Any) -> dict[str, type]:
    """Every layer class the model uses (recursively), by name: what ``from_config`` looks up."""
    classes: dict[str, type] = {}
    for layer in getattr(model, "layers", []):
        classes[type(layer).__name__] = type(layer)
        if getattr(layer, "layers", None) is not None:
            classes.update(_layer_classes(layer))
        for inner in ("layer", "forward_layer", "backward_layer", "cell"):  # wrappers, RNN cells
            obj = getattr(layer, inner, None)
            if obj is not None and hasattr(obj, "get_config"):
                classes.setdefault(type(obj).__name__, type(obj))
    return classes


def clone_model(model: Model, input_tensors: Any = None) -> Model:
    """A new model of ``model``'s architecture with new layers and newly initialized weights (Keras
    2.3.1 ``keras.models.clone_model``); copy the weights with ``clone.set_weights(model.get_weights())``.

    ``input_tensors``: a list of tensors to build the clone on instead of new ``Input`` layers.
    """
    if not isinstance(model, Model) or not (isinstance(model, Sequential) or model._is_graph):
        raise ValueError(f"clone_model: expected a Sequential or functional Model, got "
                         f"{type(model).__name__}; a model around a torch.nn.Module or a subclassed Model "
                         "has no configuration to rebuild from: build a new instance in code")
    # the live model's own config: its Lambdas' functions are the user's code, not a file's
    clone = type(model).from_config(model.get_config(), custom_objects=_layer_classes(model), safe_mode=False)
    if input_tensors is None:
        return clone
    tensors = [x if isinstance(x, KerasTensor) else Input(tensor=x) for x in to_list(input_tensors)]
    if len(tensors) != len(clone.inputs):
        raise ValueError(f"clone_model: the model has {len(clone.inputs)} inputs, input_tensors gives "
                         f"{len(tensors)}")
    outputs = clone(tensors[0] if len(tensors) == 1 else tensors)
    return Model(tensors[0] if len(tensors) == 1 else tensors, outputs, name=model.name)
