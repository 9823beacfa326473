"""A layer's weights, Keras 2's way (a mixin of :class:`arignote.layers.base.Layer`): ``add_weight``
(Keras layouts, regularizers, constraints, ``trainable=False`` weights), the ``weights`` /
``trainable_weights`` / ``non_trainable_weights`` lists (:mod:`arignote.layers._trainable` splits
them), ``get_weights`` / ``set_weights`` as numpy arrays, and ``count_params``.

Example::

    >>> import numpy as np
    >>> from arignote.layers import Layer
    >>> layer = Layer()
    >>> w = layer.add_weight("w", (2, 3), initializer="ones")
    >>> b = layer.add_weight("b", (3,), initializer="zeros", trainable=False)
    >>> layer.built = True
    >>> [a.shape for a in layer.get_weights()], layer.count_params(), len(layer.trainable_weights)
    ([(2, 3), (3,)], 9, 1)
    >>> layer.set_weights([np.full((2, 3), 2.0), np.ones(3)]); float(w.sum())
    12.0
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import torch
from torch import nn

from arignote import constraints, regularizers
from arignote.layers import _trainable
from arignote.layers.layer_tensors import _initial_value, persistent_buffers
from arignote.legacy import conversions as legacy_interfaces

__all__ = ["LayerWeights"]


class LayerWeights:
    """The weight methods of a layer (``self`` is a ``Layer``: ``name``, ``dtype``, ``trainable``,
    ``built``, ``_frozen``, ``_regularizers``, ``constraints`` come from it)."""

    @legacy_interfaces.add_weight_args
    def add_weight(self, name: str | None = None, shape: Any = None, dtype: Any = None,
                   initializer: Any = None, regularizer: Any = None, trainable: bool = True,
                   constraint: Any = None) -> nn.Parameter:
        """Create and register a weight in Keras layout (kernel ``(in, out)``, conv ``(kh, kw, in, out)``).

        For custom layers written the Keras way::

            class Scale(Layer):
                def build(self, input_shape):
                    self.gamma = self.add_weight("gamma", (input_shape[-1],), initializer="ones")
                    super().build(input_shape)

                def call(self, x):
                    return x * self.gamma
        """
        shape = () if shape is None else tuple(int(d) for d in shape)
        default = f"weight_{len(list(self.parameters(recurse=False)))}"
        attr = self._weight_attr(re.sub(r"\W", "_", name or default))
        if dtype is None:
            torch_dtype = self._param_dtype()
        else:
            torch_dtype = dtype if isinstance(dtype, torch.dtype) else getattr(torch, str(dtype))
        where = f"{self.name}: initializer of weight '{name}'"
        value = _initial_value(initializer, shape, torch_dtype, where)
        trains = bool(trainable) and self.trainable and (value.is_floating_point() or value.is_complex())
        param = nn.Parameter(value, requires_grad=trains)  # an integer weight is a counter
        self.register_parameter(attr, param)
        if not trainable:
            self._frozen.add(id(param))
        if regularizer is not None:
            self._regularizers.append((param, regularizers.get(regularizer)))
        if constraint is not None:
            self.constraints[attr] = constraints.get(constraint)
        return param

    def _weight_attr(self, attr: str) -> str:
        """Where ``add_weight`` registers a weight named ``attr``: under that name unless it is taken.
        A placeholder ``self.gamma = None`` from ``__init__`` makes way (the Keras idiom); a name
        already used by another weight, attribute or the class (Keras allows two weights called
        ``'w'``) gets a suffix, ``w_1``."""
        if self.__dict__.get(attr, 0) is None:
            del self.__dict__[attr]
        taken = (*self.__dict__, *self._parameters, *self._buffers, *self._modules,
                 *(n for cls in type(self).__mro__ for n in vars(cls)))
        if attr not in taken:
            return attr
        i = 1
        while f"{attr}_{i}" in taken:
            i += 1
        return f"{attr}_{i}"

    def _param_dtype(self) -> torch.dtype:
        return getattr(torch, self.dtype)

    @property
    def weights(self) -> list:
        """Keras 2.3.1: ``trainable_weights + non_trainable_weights``, in Keras layouts (a list that
        compares weights by identity, as Keras's variables: ``_trainable.WeightList``)."""
        return _trainable.WeightList(self._keras_weights())

    @property
    def trainable_weights(self) -> list:
        """Keras 2.3.1: this layer's trainable weights, then its sublayers'; none while it is frozen."""
        return _trainable.WeightList(_trainable.keras_split(self)[0])

    @property
    def non_trainable_weights(self) -> list:
        """Keras 2.3.1: the other weights (frozen: its own weights, then each sublayer's)."""
        return _trainable.WeightList(_trainable.keras_split(self)[1])

    def count_trainable_params(self) -> int:
        """The trainable part of :meth:`count_params` (Keras layouts)."""
        if not any(p.requires_grad for p in self.parameters()):
            return 0
        frozen = sum(p.numel() for p in self.parameters() if not p.requires_grad)
        return self.count_params() - frozen - sum(b.numel() for b in persistent_buffers(self))

    def count_params(self) -> int:
        """Number of scalars in this layer's weights (what ``summary()`` prints)."""
        if not self.built:
            raise ValueError(f"You tried to call `count_params` on {self.name}, but the layer isn't built. "
                             "You can build it manually via: `layer.build(batch_input_shape)`.")
        return sum(t.numel() for t in self._keras_weights())

    # ---------------------------------------------------------------- weights (Keras layout)

    def get_weights(self) -> list:
        """Weights as numpy arrays, in Keras order and layout where the layer defines it."""
        return [t.detach().cpu().numpy().copy() for t in self._keras_weights()]

    def set_weights(self, weights: list) -> None:
        """Load numpy arrays given in :meth:`get_weights`'s order and shapes."""
        current = self.get_weights()
        if len(weights) != len(current):
            raise ValueError(f"layer '{self.name}' expects {len(current)} weight arrays, got {len(weights)}")
        for i, (new, old) in enumerate(zip(weights, current)):
            if tuple(np.shape(new)) != tuple(old.shape):
                raise ValueError(
                    f"layer '{self.name}' weight {i} has shape {tuple(old.shape)}, got {tuple(np.shape(new))}"
                )
        with torch.no_grad():
            self._set_keras_weights([torch.as_tensor(np.asarray(w)) for w in weights])

    def _keras_weights(self) -> list[torch.Tensor]:
        # Keras 2.3.1's layer.weights: trainable_weights + non_trainable_weights, at every level
        return _trainable.keras_weights(self)

    def _set_keras_weights(self, weights: list[torch.Tensor]) -> None:
        for t, w in zip(self._keras_weights(), weights):
            t.copy_(w)
