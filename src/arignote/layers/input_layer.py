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

from arignote.graph import ops  # noqa: F401 - registers the operators of symbolic tensors
from arignote.graph.node import Node
from arignote.graph.tensor import KerasTensor
from arignote.layers.base import Layer, _shape_tuple

__all__ = ["InputLayer", "Input"]


class InputLayer(Layer):
    """The layer behind ``Input()``: declares the batch input shape; passes its input through."""

    _name_prefix = "input"  # Keras names these input_1, input_2, ...
    _config_keys = ("sparse",)

    def __init__(self, input_shape: Any = None, batch_size: int | None = None, batch_input_shape: Any = None,
                 dtype: str | None = None, input_tensor: Any = None, sparse: bool = False,
                 name: str | None = None, **kwargs: Any) -> None:
        if input_shape is None and batch_input_shape is None:
            raise ValueError("Input needs shape=..., e.g. Input(shape=(32, 32, 3)) (per sample, no batch "
                             "dim)")
        if sparse:
            raise ValueError("Input(sparse=True) is not supported: arignote feeds dense tensors; densify the "
                             "data (x.toarray()) first")
        if input_tensor is not None:
            raise ValueError("Input(tensor=...) is not supported: a symbolic input is made from its shape; "
                             "call the next layer on the tensor you have instead")
        super().__init__(input_shape=input_shape, batch_input_shape=batch_input_shape, batch_size=batch_size,
                         dtype=dtype, name=name, **kwargs)
        self.sparse = False
        self.is_placeholder = True
        self.built = True
        self._built_input_shape = self.batch_input_shape
        self._output_dtype = self.dtype
        tensor = KerasTensor(self.batch_input_shape, self.dtype, name=self.name, history=(self, 0, 0))
        Node(self, [], [tensor], [], [None])

    def get_config(self) -> dict:
        return {"batch_input_shape": list(self.batch_input_shape), "dtype": self.dtype, "sparse": False,
                "name": self.name}

    def compute_output_shape(self, input_shape: Any) -> Any:
        return input_shape

    def call(self, inputs: Any) -> Any:
        return inputs


def Input(shape: Any = None, batch_shape: Any = None, name: str | None = None, dtype: str | None = None,
          sparse: bool = False, tensor: Any = None) -> KerasTensor:
    """Keras 2 ``Input``: a symbolic tensor of per-sample ``shape`` (or full ``batch_shape``)."""
    if shape is None and batch_shape is None:
        raise ValueError("Input needs shape=..., e.g. Input(shape=(32, 32, 3)) (per sample, no batch dim)")
    if shape is not None:
        shape = _shape_tuple(shape, "Input shape")
    layer = InputLayer(input_shape=shape, batch_input_shape=batch_shape, name=name, dtype=dtype,
                       sparse=sparse, input_tensor=tensor)
    return layer._inbound_nodes[0].output_tensors[0]
