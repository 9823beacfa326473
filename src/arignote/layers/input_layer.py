"""``Input()`` and ``InputLayer`` (Keras 2 ``engine/input_layer.py``).

``Input(shape=...)`` returns a :class:`~arignote.graph.tensor.KerasTensor` made by a fresh
``InputLayer`` (Keras names them ``input_1``, ``input_2``, ...). An ``InputLayer`` may also start a
``Sequential``.

Example::

    >>> x = Input(shape=(28, 28, 1), name="image")
    >>> x.shape, x._keras_history[0].name
    ((None, 28, 28, 1), 'image')
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from arignote import config
from arignote.graph.node import Node
from arignote.graph.tensor import KerasTensor
from arignote.layers import op_layer as ops  # noqa: F401 - registers the operators of symbolic tensors
from arignote.layers.base import Layer, _shape_tuple

__all__ = ["InputLayer", "Input"]


class InputLayer(Layer):
    """The layer behind ``Input()``: declares the batch input shape; passes its input through."""

    _name_prefix = "input"  # Keras names these input_1, input_2, ...
    _config_keys = ("sparse",)

    def __init__(self, input_shape: Any = None, batch_size: int | None = None, batch_input_shape: Any = None,
                 dtype: str | None = None, input_tensor: Any = None, sparse: bool = False,
                 name: str | None = None, **kwargs: Any) -> None:
        symbolic = input_tensor if isinstance(input_tensor, KerasTensor) else None
        if symbolic is not None:  # Keras 2: a backend tensor of a graph (K.concatenate of a placeholder)
            batch_input_shape = batch_input_shape or tuple(symbolic.shape)
            input_shape = None
            dtype = dtype or symbolic.dtype
        value = None if input_tensor is None or symbolic is not None else _constant(input_tensor, dtype)
        if value is not None and batch_input_shape is None:
            if input_shape is not None:
                batch_input_shape = (batch_size, *_shape_tuple(input_shape, "Input shape"))
                input_shape = None
            else:
                batch_input_shape = tuple(value.shape)  # Keras 2: K.int_shape(input_tensor)
            dtype = dtype or _DTYPE_NAMES.get(value.dtype)
        if input_shape is None and batch_input_shape is None:
            raise ValueError("Input needs shape=..., e.g. Input(shape=(32, 32, 3)) (per sample, no batch "
                             "dim)")
        if sparse:
            raise ValueError("Input(sparse=True) is not supported: arignote feeds dense tensors; densify the "
                             "data (x.toarray()) first")
        super().__init__(input_shape=input_shape, batch_input_shape=batch_input_shape, batch_size=batch_size,
                         dtype=dtype, name=name, **kwargs)
        self.sparse = False
        # Keras 2: an Input wrapping a tensor is no placeholder; the model feeds a constant one itself
        self.is_placeholder = input_tensor is None
        self._fixed = value is not None
        if value is not None:
            declared = tuple(self.batch_input_shape)
            if len(declared) != value.dim() or any(d is not None and d != v for d, v in zip(declared,
                                                                                          value.shape)):
                raise ValueError(f"Input(tensor=...): the tensor has shape {tuple(value.shape)}, which does "
                                 f"not fit the declared shape {declared} (None: any size)")
            self.register_buffer("constant", value, persistent=False)  # moves with the model
            # the tensor's sizes where the declared shape says None (Keras 2 keeps None there): the
            # symbolic shapes of the layers after it are then those they compute with
            self.batch_input_shape = tuple(value.shape)
            self._built_input_shape = self.batch_input_shape
        self.built = True
        self._built_input_shape = self.batch_input_shape
        self._output_dtype = self.dtype
        tensor = KerasTensor(self.batch_input_shape, self.dtype, name=self.name, history=(self, 0, 0))
        if symbolic is not None:
            # an input standing for a tensor its graph computes: a model starts at it (it is its own
            # source, as Keras 2's), a K.function through it computes it from what it came from
            Node(self, [symbolic], [tensor], [symbolic._keras_mask], [None])
        else:
            node = Node(self, [], [tensor], [], [None])
            if not self._fixed:  # Keras 2.3.1's input node: its tensor in and out, no inbound layer
                node.input_tensors, node.input_masks, node.input_shapes = [tensor], [None], [tensor.shape]

    def get_config(self) -> dict:
        return {"batch_input_shape": list(self.batch_input_shape), "dtype": self.dtype, "sparse": False,
                "name": self.name}

    @property
    def fixed(self) -> bool:
        """Whether this input is a concrete tensor of its own (``Input(tensor=array)``), which the model
        feeds itself."""
        return self._fixed

    def compute_output_shape(self, input_shape: Any) -> Any:
        return input_shape

    def call(self, inputs: Any) -> Any:
        return inputs


def Input(shape: Any = None, batch_shape: Any = None, name: str | None = None, dtype: str | None = None,
          sparse: bool = False, tensor: Any = None) -> KerasTensor:
    """Keras 2 ``Input``: a symbolic tensor of per-sample ``shape`` (or full ``batch_shape``).

    ``tensor``: a tensor (torch, numpy, ``K.variable``/``K.constant``) this input stands for, as a
    whole (its first axis is not a batch of the data): a model with it among its inputs uses that
    tensor at every call and ``fit``/``predict``/``evaluate`` take data only for its other inputs
    (Keras 2's ``_feed_inputs``). A symbolic ``tensor`` (a backend operation on a placeholder, as
    ``applications`` get for ``input_tensor``) gives an input a model starts from, computed from that
    tensor inside ``K.function``. Its shape is the tensor's; a ``shape``/``batch_shape`` given too must
    fit it (Keras 2.3.1 keeps the declared None dims; here they take the tensor's sizes, so the shapes
    of the layers after it are known). Example:
    ``masks = Input(tensor=K.variable(m), shape=(None, None, 3))``.
    """
    if shape is None and batch_shape is None and tensor is None:
        raise ValueError("Input needs shape=..., e.g. Input(shape=(32, 32, 3)) (per sample, no batch dim)")
    if shape is not None:
        shape = _shape_tuple(shape, "Input shape")
    layer = InputLayer(input_shape=shape, batch_input_shape=batch_shape, name=name, dtype=dtype,
                       sparse=sparse, input_tensor=tensor)
    return layer._inbound_nodes[0].output_tensors[0]


_DTYPE_NAMES = {torch.float16: "float16", torch.float32: "float32", torch.float64: "float64",
                torch.bfloat16: "bfloat16", torch.int8: "int8", torch.int16: "int16", torch.int32: "int32",
                torch.int64: "int64", torch.uint8: "uint8", torch.bool: "bool"}


def _constant(tensor: Any, dtype: str | None) -> torch.Tensor:
    """The value an ``Input(tensor=...)`` stands for: a tensor detached from any autograd history (a
    ``K.variable`` keeps sharing its storage, so ``K.set_value`` reaches it on the CPU)."""
    value = tensor.detach() if isinstance(tensor, torch.Tensor) else torch.as_tensor(np.asarray(tensor))
    if dtype is None and value.is_floating_point():
        dtype = config.get("floatX")  # Keras 2's Input declares floatx
    if dtype is not None:
        value = value.to(getattr(torch, dtype))
    return value
