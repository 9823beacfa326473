"""``Embedding`` (Keras 2 ``keras.layers.embeddings``): integer indices -> dense vectors.

Weights: ``Embedding.embeddings`` ``(input_dim, output_dim)``, the Keras ``embeddings`` weight as is.
``mask_zero=True`` makes index 0 padding: the layer's mask (``compute_mask``) is ``inputs != 0`` and
mask-aware layers after it (RNNs, pooling, ``TimeDistributed``...) skip those steps.

Example::

    >>> import torch
    >>> e = Embedding(10, 4, mask_zero=True); e.build((3,))
    >>> e(torch.tensor([[1, 2, 0]])).shape, e.compute_mask(torch.tensor([[1, 2, 0]])).tolist()
    (torch.Size([1, 3, 4]), [[True, True, False]])
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from arignote.layers import op_layer as ops
from arignote.layers._util import KerasLayer, constraint_arg, initializer_arg, regularizer_arg
from arignote.layers.base import Layer, positive_int

__all__ = ["Embedding"]


class Embedding(KerasLayer, Layer):
    """Keras 2 ``Embedding(input_dim, output_dim, embeddings_initializer='uniform',
    embeddings_regularizer=None, activity_regularizer=None, embeddings_constraint=None,
    mask_zero=False, input_length=None)``."""

    _config_keys = (
        "input_dim",
        "output_dim",
        "embeddings_initializer",
        "embeddings_regularizer",
        "activity_regularizer",
        "embeddings_constraint",
        "mask_zero",
        "input_length",
    )

    def __init__(
        self,
        input_dim: int,
        output_dim: int,
        embeddings_initializer: Any = "uniform",
        embeddings_regularizer: Any = None,
        activity_regularizer: Any = None,
        embeddings_constraint: Any = None,
        mask_zero: bool = False,
        input_length: Any = None,
        **kwargs: Any,
    ) -> None:
        if "input_shape" not in kwargs and "batch_input_shape" not in kwargs:
            # Keras 2: the input shape is (None, input_length), (None, None) without one
            length = tuple(input_length) if isinstance(input_length, (list, tuple)) else (input_length,)
            kwargs["input_shape"] = length
        super().__init__(**kwargs)
        where = f"Embedding '{self.name}'"
        self.input_dim = positive_int(input_dim, "input_dim", where)
        self.output_dim = positive_int(output_dim, "output_dim", where)
        self.embeddings_initializer = initializer_arg(embeddings_initializer)
        self.embeddings_regularizer = regularizer_arg(embeddings_regularizer)
        self.activity_regularizer = regularizer_arg(activity_regularizer)
        self.embeddings_constraint = constraint_arg(embeddings_constraint)
        self.mask_zero = bool(mask_zero)
        self.input_length = input_length
        self.supports_masking = self.mask_zero
        self._check_input_length()

    def _check_input_length(self) -> None:
        """Keras 2.3.1's check: ``input_length`` names every input dimension after the batch, and a
        length given both ways agrees (``Embedding(..., input_length=2, input_shape=(3, 5))`` is wrong)."""
        if self.input_length is None or self.batch_input_shape is None:
            return
        given = self.input_length
        lengths = list(given) if isinstance(given, (list, tuple)) else [given]
        shape = tuple(self.batch_input_shape[1:])
        if len(lengths) != len(shape) or any(a is not None and b is not None and a != b
                                             for a, b in zip(lengths, shape)):
            raise ValueError(f'Embedding \'{self.name}\': "input_length" is {given}, but received input '
                             f"has shape {tuple(self.batch_input_shape)}")

    def get_config(self) -> dict:
        cfg = super().get_config()
        length = (
            list(self.input_length) if isinstance(self.input_length, (list, tuple)) else [self.input_length]
        )
        if cfg.get("batch_input_shape") == [None, *length]:
            cfg.pop("batch_input_shape")  # carried by input_length
        return cfg

    def build_keras(self, input_shape: tuple) -> None:
        self.new_weight(
            "embeddings",
            (self.input_dim, self.output_dim),
            self.embeddings_initializer,
            None,
            self.embeddings_regularizer,
            self.embeddings_constraint,
        )

    def output_shape_keras(self, input_shape: tuple) -> tuple:
        return (*tuple(input_shape), self.output_dim)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        return ops.apply("not_equal", torch.ne, inputs, 0) if self.mask_zero else None

    def call(self, x: torch.Tensor) -> torch.Tensor:
        # Keras users often feed indices as floats; .long() is free when they are already int64
        return self._activity(F.embedding(x.long(), self.embeddings))

    @property
    def weight(self) -> torch.Tensor:
        """torch's name for the table (``nn.Embedding.weight``)."""
        return self.embeddings
