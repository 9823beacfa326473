"""What ``Model(...)`` was asked for (Keras 2's ``Network.__init__`` argument forms): a functional
model ``Model(inputs, outputs, name=None)`` (also as keywords, and as Keras 1's ``input=``/``output=``),
a torch module ``Model(module, name=None)``, or nothing (a subclassed model defining ``call``); each
also takes Keras 2.3.1's ``trainable=True`` and ``dtype=None`` (the model's own weights' type).
A call that fits none of them is one clear error naming the forms.

Example::

    >>> from arignote.layers import Input, Dense
    >>> x = Input(shape=(3,))
    >>> kind, spec = construction_args((x, Dense(2)(x)), {"name": "m"})
    >>> kind, spec["name"]
    ('graph', 'm')
    >>> construction_args((), {"dtype": "int64"})
    ('empty', {'name': None, 'trainable': True, 'dtype': 'int64'})
"""

from __future__ import annotations

from typing import Any

from torch import nn

from arignote.graph.tensor import KerasTensor, flatten
from arignote.layers.base import Layer

__all__ = ["construction_args"]



class NotSymbolic(TypeError, ValueError):
    """``Model(inputs, outputs)`` given something else than symbolic tensors: a TypeError, and the
    ValueError Keras 2 raised (``except ValueError`` in Keras 2 code catches it)."""

def _is_tensors(x: Any) -> bool:
    leaves = flatten(x) if isinstance(x, (list, tuple, dict)) else [x]
    return bool(leaves) and all(isinstance(t, KerasTensor) for t in leaves)


def construction_args(args: tuple, kwargs: dict) -> tuple[str, dict]:
    """What ``Model(...)`` was asked for: ``("graph", {inputs, outputs, name, trainable, dtype})``,
    ``("module", {...})`` or ``("empty", {name, trainable, dtype})``; a wrong call is one clear error."""
    kwargs = dict(kwargs)
    for legacy, new in (("input", "inputs"), ("output", "outputs")):  # Keras 1 spellings, Keras 2 accepts
        if legacy in kwargs:
            kwargs.setdefault(new, kwargs.pop(legacy))
    name = kwargs.pop("name", None)
    trainable, dtype = bool(kwargs.pop("trainable", True)), kwargs.pop("dtype", None)
    if dtype is not None and not isinstance(dtype, str):
        raise TypeError(f"Model(dtype=...) takes a dtype name such as 'float32' or 'int64', got {dtype!r}")
    inputs, outputs = kwargs.pop("inputs", None), kwargs.pop("outputs", None)
    module = kwargs.pop("module", None)
    if kwargs:
        raise TypeError(f"Model() got unexpected keyword arguments {sorted(kwargs)}; use Model(inputs, "
                        "outputs, name=..., trainable=..., dtype=...) or Model(torch_module, name=...)")
    args = list(args)
    if args and isinstance(args[0], nn.Module) and not isinstance(args[0], Layer):
        module = args.pop(0)
        if args:
            name = args.pop(0)
    elif args:
        if inputs is None:
            inputs = args.pop(0)
        if args and outputs is None:
            outputs = args.pop(0)
        if args and name is None:
            name = args.pop(0)
    if args:
        raise TypeError("Model() takes (inputs, outputs, name) or (torch_module, name); got "
                        f"{len(args)} extra "
                        "positional arguments")
    if module is not None:
        if inputs is not None or outputs is not None:
            raise TypeError("Model() takes either a torch module or inputs/outputs, not both")
        return "module", {"module": module, "name": name, "trainable": trainable, "dtype": dtype}
    if inputs is None and outputs is None:
        return "empty", {"name": name, "trainable": trainable, "dtype": dtype}
    if inputs is None or outputs is None or not _is_tensors(inputs) or not _is_tensors(outputs):
        what = inputs if inputs is not None else outputs
        raise NotSymbolic("Model(inputs, outputs) takes the symbolic tensors of the functional API (from "
                        f"arignote.layers.Input and layers called on them), got {type(what).__name__}; "
                        "to train a torch.nn.Module use Model(my_module), for a layer stack "
                        "Sequential([...])")
    return "graph", {"inputs": inputs, "outputs": outputs, "name": name, "trainable": trainable,
                     "dtype": dtype}
