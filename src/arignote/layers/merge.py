"""Merge layers (Keras 2 ``keras.layers.merge``): ``Add``, ``Subtract``, ``Multiply``, ``Average``,
``Maximum``, ``Minimum``, ``Concatenate``, ``Dot`` and their functional forms ``add([a, b])``, ...

Called on a list of tensors. Element-wise merges broadcast shapes of different ranks as Keras 2
does (the lower-rank input gets unit axes after the batch axis); masks are combined with a logical AND
(``Concatenate`` concatenates them). No weights.

Example::

    >>> import torch
    >>> add([torch.ones(2, 3), torch.ones(2, 3)]).sum().item()
    12.0
    >>> Concatenate().compute_output_shape([(3,), (4,)])
    (7,)
"""

from __future__ import annotations

import sys
import types
from typing import Any

import torch
import torch.nn.functional as F

from arignote.layers import op_layer as ops
from arignote.layers._util import KerasLayer
from arignote.layers.base import Layer

__all__ = [
    "Add",
    "Subtract",
    "Multiply",
    "Average",
    "Maximum",
    "Minimum",
    "Concatenate",
    "Dot",
    "add",
    "subtract",
    "multiply",
    "average",
    "maximum",
    "minimum",
    "concatenate",
    "dot",
]


def _all_masks(masks: list) -> torch.Tensor:
    # Keras 2's K.all: a float mask (K.variable) counts its nonzero entries as true
    out = masks[0].to(torch.bool)
    for m in masks[1:]:
        out = out & m.to(torch.bool)
    return out


def _check_masks(inputs: Any, mask: Any) -> bool:
    """Keras 2's checks of ``compute_mask(inputs, mask)`` on a merge; whether any mask is given."""
    if mask is None:
        return False
    if not isinstance(mask, (list, tuple)):
        raise ValueError("`mask` should be a list.")
    if not isinstance(inputs, (list, tuple)):
        raise ValueError("`inputs` should be a list.")
    if len(mask) != len(inputs):
        raise ValueError("The lists `inputs` and `mask` should have the same length.")
    return any(m is not None for m in mask)


def _concat_given_masks(masks: list, ranks: list, axis: int) -> torch.Tensor:
    # every input masked: only the inputs' ranks are needed (they may be symbolic)
    full = [m.to(torch.bool).unsqueeze(-1) if m.dim() < rank else m.to(torch.bool)
            for m, rank in zip(masks, ranks)]
    return torch.cat(full, dim=axis).all(dim=-1)


def _concat_masks(inputs: list, masks: list, axis: int) -> torch.Tensor:
    # Keras 2: a missing mask is all-true; masks one rank below their input get a trailing axis
    full = []
    for x, m in zip(inputs, masks):
        m = torch.ones(x.shape, dtype=torch.bool, device=x.device) if m is None else m.to(torch.bool)
        full.append(m.unsqueeze(-1).expand(x.shape) if m.dim() < x.dim() else m)
    return torch.cat(full, dim=axis).all(dim=-1)


def _shapes(input_shape: Any, where: str, exactly: int | None = None) -> list[tuple]:
    if (
        not isinstance(input_shape, (list, tuple))
        or not input_shape
        or not isinstance(input_shape[0], (list, tuple))
    ):
        raise ValueError(f"{where}: a merge layer should be called on a list of inputs, got {input_shape!r}")
    shapes = [tuple(s) for s in input_shape]
    if exactly is not None and len(shapes) != exactly:
        raise ValueError(f"{where} should be called on exactly {exactly} inputs, got {len(shapes)}")
    if len(shapes) < 2:
        raise ValueError(
            f"{where}: a merge layer should be called on a list of at least 2 inputs. "
            f"Got {len(shapes)} inputs."
        )
    return shapes


def _broadcast(a: tuple, b: tuple, where: str) -> tuple:
    if len(a) < len(b):
        a, b = b, a
    out = list(a[: len(a) - len(b)])
    for i, j in zip(a[len(a) - len(b) :], b):
        if i is None or j is None:
            out.append(None)
        elif i == 1 or j == 1 or i == j:
            out.append(max(i, j) if 1 in (i, j) else i)
        else:
            raise ValueError(f"{where}: operands could not be broadcast together with shapes {a} {b}")
    return tuple(out)


class _Merge(KerasLayer, Layer):
    """Keras 2's base of the merge layers: a subclass defines ``_merge_function(inputs)`` on the list
    of input tensors (how published code writes a custom merge, e.g. WGAN-GP's random average)::

        class RandomWeightedAverage(_Merge):
            def _merge_function(self, inputs):
                alpha = K.random_uniform((32, 1))
                return alpha * inputs[0] + (1 - alpha) * inputs[1]
    """

    supports_masking = True
    _exactly: int | None = None

    def _merge_function(self, xs: list[torch.Tensor]) -> torch.Tensor:
        raise NotImplementedError(f"{self._where()}: a _Merge subclass defines _merge_function(inputs)")

    def _where(self) -> str:
        return f"{type(self).__name__} '{self.name}'"

    def build_keras(self, input_shape: Any) -> None:
        self.output_shape_keras(input_shape)

    def output_shape_keras(self, input_shape: Any) -> tuple:
        shapes = _shapes(input_shape, self._where(), self._exactly)
        out = shapes[0][1:]
        for s in shapes[1:]:
            out = _broadcast(out, s[1:], self._where())
        return (None, *out)

    def _inputs(self, inputs: Any) -> list[torch.Tensor]:
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(f"{self._where()}: a merge layer should be called on a list of inputs")
        xs = list(inputs)
        if self._exactly is not None and len(xs) != self._exactly:
            raise ValueError(
                f"{self._where()} should be called on exactly {self._exactly} inputs, got {len(xs)}"
            )
        rank = max(x.dim() for x in xs)
        # Keras 2: a lower-rank input gets unit axes after the batch axis (right-aligned broadcasting)
        return [x.reshape(x.shape[0], *([1] * (rank - x.dim())), *x.shape[1:]) for x in xs]

    def call(self, inputs: Any, mask: Any = None) -> torch.Tensor:
        return self._merge_function(self._inputs(inputs))

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        if not _check_masks(inputs, mask):
            return None
        return ops.apply("merge_masks", _all_masks, [m for m in mask if m is not None])


class Add(_Merge):
    """Element-wise sum of the inputs."""

    def _merge_function(self, xs: list[torch.Tensor]) -> torch.Tensor:
        out = xs[0]
        for x in xs[1:]:
            out = out + x
        return out


class Subtract(_Merge):
    """``inputs[0] - inputs[1]`` (exactly two inputs)."""

    _exactly = 2

    def _merge_function(self, xs: list[torch.Tensor]) -> torch.Tensor:
        return xs[0] - xs[1]


class Multiply(_Merge):
    """Element-wise product."""

    def _merge_function(self, xs: list[torch.Tensor]) -> torch.Tensor:
        out = xs[0]
        for x in xs[1:]:
            out = out * x
        return out


class Average(Add):
    """Element-wise mean."""

    def _merge_function(self, xs: list[torch.Tensor]) -> torch.Tensor:
        return super()._merge_function(xs) / len(xs)


class Maximum(_Merge):
    """Element-wise maximum."""

    def _merge_function(self, xs: list[torch.Tensor]) -> torch.Tensor:
        out = xs[0]
        for x in xs[1:]:
            out = torch.maximum(out, x)
        return out


class Minimum(_Merge):
    """Element-wise minimum."""

    def _merge_function(self, xs: list[torch.Tensor]) -> torch.Tensor:
        out = xs[0]
        for x in xs[1:]:
            out = torch.minimum(out, x)
        return out


class Concatenate(_Merge):
    """Concatenation along ``axis=-1`` (axes count the batch, as in Keras)."""

    _config_keys = ("axis",)

    def __init__(self, axis: int = -1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.axis = int(axis)

    def output_shape_keras(self, input_shape: Any) -> tuple:
        shapes = _shapes(input_shape, self._where())
        rank = len(shapes[0])
        axis = self.axis % rank
        for s in shapes:
            if len(s) != rank or any(
                a != b and None not in (a, b) for i, (a, b) in enumerate(zip(s, shapes[0])) if i != axis
            ):
                raise ValueError(
                    f"{self._where()}: a `Concatenate` layer requires inputs with matching shapes "
                    f"except for the concat axis. Got inputs shapes: {shapes}"
                )
        out = list(shapes[0])
        sizes = [s[axis] for s in shapes]
        out[axis] = None if None in sizes else sum(sizes)
        return tuple(out)

    def call(self, inputs: Any, mask: Any = None) -> torch.Tensor:
        if not isinstance(inputs, (list, tuple)) or len(inputs) < 2:
            raise ValueError(
                f"{self._where()}: a `Concatenate` layer should be called on a list of at least 2 inputs"
            )
        return torch.cat(list(inputs), dim=self.axis)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        if not _check_masks(inputs, mask):
            return None
        if all(m is not None for m in mask):
            ranks = [len(x.shape) for x in inputs]
            return ops.apply("concatenate_masks", _concat_given_masks, list(mask), ranks, self.axis)
        return ops.apply("concatenate_masks", _concat_masks, list(inputs), list(mask), self.axis)


class Dot(_Merge):
    """Batched dot product over ``axes`` (an int or a pair; axes count the batch), optionally of
    L2-normalized inputs (``normalize=True``: cosine proximity). Two inputs."""

    _exactly = 2
    _config_keys = ("axes", "normalize")

    def __init__(self, axes: Any, normalize: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(axes, int):
            self.axes = axes
        elif isinstance(axes, (list, tuple)) and len(axes) == 2 and all(isinstance(a, int) for a in axes):
            self.axes = list(axes)
        else:
            raise ValueError(
                f"Dot '{self.name}': invalid format for `axes`, an int or a list of two ints, got {axes!r}"
            )
        self.normalize = bool(normalize)

    def _axes(self, ranks: tuple[int, int]) -> list[int]:
        axes = [self.axes, self.axes] if isinstance(self.axes, int) else list(self.axes)
        return [a % r for a, r in zip(axes, ranks)]

    def output_shape_keras(self, input_shape: Any) -> tuple:
        a, b = _shapes(input_shape, self._where(), 2)
        ax, bx = self._axes((len(a), len(b)))
        if None not in (a[ax], b[bx]) and a[ax] != b[bx]:
            raise ValueError(
                f"{self._where()}: dimension incompatibility {a[ax]} != {b[bx]}. Layer shapes: {a}, {b}"
            )
        out = [d for i, d in enumerate(a) if i != ax] + [d for i, d in enumerate(b) if i not in (0, bx)]
        return tuple(out) if len(out) > 1 else (out[0], 1)

    def call(self, inputs: Any, mask: Any = None) -> torch.Tensor:
        x, y = list(inputs)
        ax, bx = self._axes((x.dim(), y.dim()))
        if self.normalize:
            x, y = F.normalize(x, dim=ax, eps=1e-12), F.normalize(y, dim=bx, eps=1e-12)
        n, k = x.shape[0], x.shape[ax]
        xt = x.movedim(ax, -1)
        yt = y.movedim(bx, 1)
        out = torch.bmm(xt.reshape(n, -1, k), yt.reshape(n, k, -1))
        out = out.reshape(n, *xt.shape[1:-1], *yt.shape[2:])
        return out.unsqueeze(1) if out.dim() == 1 else out

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        return None


def add(inputs: list, **kwargs: Any) -> Any:
    """Functional form of :class:`Add`: ``add([x1, x2])``."""
    return Add(**kwargs)(inputs)


def subtract(inputs: list, **kwargs: Any) -> Any:
    """Functional form of :class:`Subtract`."""
    return Subtract(**kwargs)(inputs)


def multiply(inputs: list, **kwargs: Any) -> Any:
    """Functional form of :class:`Multiply`."""
    return Multiply(**kwargs)(inputs)


def average(inputs: list, **kwargs: Any) -> Any:
    """Functional form of :class:`Average`."""
    return Average(**kwargs)(inputs)


def maximum(inputs: list, **kwargs: Any) -> Any:
    """Functional form of :class:`Maximum`."""
    return Maximum(**kwargs)(inputs)


def minimum(inputs: list, **kwargs: Any) -> Any:
    """Functional form of :class:`Minimum`."""
    return Minimum(**kwargs)(inputs)


def concatenate(inputs: list, axis: int = -1, **kwargs: Any) -> Any:
    """Functional form of :class:`Concatenate`: ``concatenate([x1, x2], axis=-1)``."""
    return Concatenate(axis=axis, **kwargs)(inputs)


def dot(inputs: list, axes: Any, normalize: bool = False, **kwargs: Any) -> Any:
    """Functional form of :class:`Dot`."""
    return Dot(axes=axes, normalize=normalize, **kwargs)(inputs)


class _MergeModule(types.ModuleType):
    """This module, callable as Keras 1's ``merge`` function was, only to say what replaced it
    (Keras 2 scripts still call it: Keras-GAN's aae.py; Keras 2.3.1 says "'module' object is not
    callable")."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("merge([a, b], mode=...) is Keras 1's merge function, gone in Keras 2 (where "
                        "keras.layers.merge is a module): use add/multiply/concatenate/average/maximum/"
                        "dot([a, b]) for a named mode, or Lambda(function, output_shape=...)([a, b]) for a "
                        "mode function")


sys.modules[__name__].__class__ = _MergeModule
