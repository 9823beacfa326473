"""Shared machinery of the built-in layers: argument normalization (Keras 2 ``conv_utils`` rules),
image layout moves, TF-style ``'same'`` padding, and Keras-named weights.

Tensors travel between layers in Keras layout: ``(N, steps, C)``, ``(N, H, W, C)``,
``(N, D, H, W, C)`` for ``channels_last`` and ``(N, C, ...)`` for ``channels_first``. Image layers
move channels to dim 1 for torch's kernels (:func:`to_torch`) and back (:func:`from_torch`); both are
``permute`` views, so a contiguous channels-last batch reaches cuDNN/oneDNN as a channels-last
(NHWC-memory) tensor without a copy.

Example::

    >>> normalize_tuple(3, 2, "kernel_size")
    (3, 3)
    >>> same_pads(5, 3, 2, 1)
    (1, 1)
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import torch
from torch import nn

from arignote import activations
from arignote import constraints as _constraints
from arignote import initializers as _initializers
from arignote import regularizers as _regularizers
from arignote.backend.common import normalize_data_format

__all__ = [
    "normalize_tuple",
    "pad_arg",
    "normalize_padding",
    "normalize_data_format",
    "to_torch",
    "from_torch",
    "conv_output_length",
    "same_pads",
    "KerasWeights",
    "spatial_of",
    "channels_of",
]


def normalize_tuple(
    value: Any, n: int, name: str, where: str = "", allow_zero: bool = False
) -> tuple[int, ...]:
    """An int or an n-sequence of ints as an n-tuple of ints >= 1 (>= 0 with ``allow_zero``)."""
    prefix = f"{where}: " if where else ""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        values: tuple = (int(value),) * n
    else:
        try:
            values = tuple(value)
        except TypeError:
            raise ValueError(
                f"{prefix}The `{name}` argument must be a tuple of {n} integers. Received: {value!r}"
            ) from None
        if len(values) != n or not all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in values
        ):
            raise ValueError(
                f"{prefix}The `{name}` argument must be a tuple of {n} integers. Received: {value!r}"
            )
        values = tuple(int(v) for v in values)
    low = 0 if allow_zero else 1
    if any(v < low for v in values):
        raise ValueError(f"{prefix}`{name}` must be >= {low}, got {value!r}")
    return values


def normalize_padding(value: Any, where: str, allowed: tuple[str, ...] = ("valid", "same")) -> str:
    """``'valid'``/``'same'`` (``'causal'`` for 1-D convolutions), case-insensitive."""
    padding = value.lower() if isinstance(value, str) else value
    if padding not in allowed:
        raise ValueError(f"{where}: padding must be one of {', '.join(map(repr, allowed))}, got {value!r}")
    return padding


def to_torch(x: torch.Tensor, data_format: str) -> torch.Tensor:
    """A Keras-layout batch as torch's ``(N, C, *spatial)`` (a view)."""
    if data_format == "channels_first":
        return x
    return x.permute(0, x.dim() - 1, *range(1, x.dim() - 1))


def from_torch(y: torch.Tensor, data_format: str) -> torch.Tensor:
    """torch's ``(N, C, *spatial)`` back to the Keras layout (a view)."""
    if data_format == "channels_first":
        return y
    return y.permute(0, *range(2, y.dim()), 1)


def spatial_of(shape: tuple, data_format: str) -> tuple:
    """The spatial dims of a full (batch-first) Keras shape."""
    return tuple(shape[2:]) if data_format == "channels_first" else tuple(shape[1:-1])


def channels_of(shape: tuple, data_format: str) -> Any:
    """The channel dim of a full (batch-first) Keras shape."""
    return shape[1] if data_format == "channels_first" else shape[-1]


def with_spatial(batch: Any, channels: Any, spatial: tuple, data_format: str) -> tuple:
    """Compose a full Keras shape from its parts."""
    if data_format == "channels_first":
        return (batch, channels, *spatial)
    return (batch, *spatial, channels)


class PaddingError(ValueError, AssertionError):
    """A padding name the length arithmetic does not know: a ValueError naming the choices, and an
    AssertionError, what Keras 2.3.1's ``conv_utils`` raised (its ``assert padding in {...}``)."""


def check_padding(padding: str, choices: tuple[str, ...]) -> None:
    if padding not in choices:
        raise PaddingError(f"padding={padding!r} is not one of {', '.join(map(repr, choices))}")


def conv_output_length(n: int | None, k: int, padding: str, s: int, d: int = 1) -> int | None:
    """Keras 2 ``conv_utils.conv_output_length`` (``valid``/``same``/``causal``/``full``)."""
    check_padding(padding, ("same", "valid", "full", "causal"))
    if n is None:
        return None
    span = (k - 1) * d + 1
    out = {"same": n, "causal": n, "valid": n - span + 1, "full": n + span - 1}[padding]
    return (out + s - 1) // s


def same_pads(n: int, k: int, s: int, d: int = 1) -> tuple[int, int]:
    """TensorFlow ``'same'`` padding of one axis as ``(before, after)``; the odd one goes after."""
    total = max((math.ceil(n / s) - 1) * s + (k - 1) * d + 1 - n, 0)
    return total // 2, total - total // 2


def check_rank(shape: tuple, rank: int, where: str, what: str) -> tuple:
    """A ValueError naming the layer when the input rank (with batch) is not ``rank``."""
    if len(shape) != rank:
        raise ValueError(
            f"{where} expects {what} (an input of rank {rank} with the batch), got input shape {tuple(shape)}"
        )
    return shape


def regularizer_arg(value: Any) -> Any:
    return _regularizers.get(value)


def constraint_arg(value: Any) -> Any:
    return _constraints.get(value)


def initializer_arg(value: Any) -> Any:
    return _initializers.get(value)


def serial(kind: str, value: Any) -> Any:
    """``get_config`` form of an initializer/regularizer/constraint/activation argument."""
    if value is None:
        return None
    if kind == "activation":
        return activations.serialize(value) if not isinstance(value, str) else value
    module = {"initializer": _initializers, "regularizer": _regularizers, "constraint": _constraints}[kind]
    return module.serialize(value)


def _inverse(perm: tuple) -> tuple:
    return tuple(sorted(range(len(perm)), key=lambda i: perm[i]))


class _KerasViewConstraint:
    """A constraint applied to the Keras-layout view of a torch-layout weight (Keras axes), returning
    the torch layout: what ``layer.constraints[attr](weight)`` must give the training loop."""

    def __init__(self, constraint: Any, layout: KerasLayout) -> None:
        self.constraint, self.layout = constraint, layout

    def __call__(self, w: torch.Tensor) -> torch.Tensor:
        return self.layout.to_torch(self.constraint(self.layout.to_keras(w)))


class KerasLayout:
    """How a torch tensor maps to its Keras weight: the axes ``perm`` (a view) and, for a gated
    recurrent weight kept in cuDNN's gate order, ``blocks = (dim, order)``: torch block ``i`` along
    ``dim`` holds Keras block ``order[i]`` (then the Keras weight is a reordered copy, not a view).
    Applies to a weight and to anything of its layout (an optimizer slot).

    >>> lay = KerasLayout(None, (0, (1, 0, 2)))
    >>> lay.to_keras(torch.arange(3.)).tolist(), lay.to_torch(torch.arange(3.)).tolist()
    ([1.0, 0.0, 2.0], [1.0, 0.0, 2.0])
    """

    def __init__(self, perm: tuple | None, blocks: tuple | None = None) -> None:
        self.perm, self.blocks = perm, blocks

    @property
    def is_view(self) -> bool:
        return self.blocks is None

    def _reorder(self, t: torch.Tensor, pick: tuple) -> torch.Tensor:
        dim = self.blocks[0]
        parts = t.chunk(len(pick), dim)
        return torch.cat([parts[i] for i in pick], dim)

    def to_keras(self, t: torch.Tensor) -> torch.Tensor:
        if self.blocks is not None:
            t = self._reorder(t, _inverse(self.blocks[1]))
        return t.permute(self.perm) if self.perm is not None else t

    def to_torch(self, k: torch.Tensor) -> torch.Tensor:
        if self.perm is not None:
            k = k.permute(_inverse(self.perm))
        return self._reorder(k, self.blocks[1]) if self.blocks is not None else k


class KerasWeights:
    """Mixin: weights kept in torch layout, exposed under Keras 2 names, order and layout.

    A layer calls :meth:`new_weight` in ``build`` for each Keras weight, in Keras's ``layer.weights``
    order. ``perm`` maps the torch tensor to the Keras layout (e.g. Dense's torch ``(units, in)``
    with ``perm=(1, 0)`` is Keras's kernel ``(in, units)``); the weight is initialized in Keras layout
    (so fans are Keras's) and stored permuted. ``get_weights``, constraints (applied on the Keras
    view, registered in the base ``layer.constraints``), regularization penalties (the base
    ``layer.losses``) and the HDF5 converter read the same table.
    """

    def new_weight(
        self,
        name: str,
        keras_shape: tuple,
        initializer: Any,
        perm: tuple | None = None,
        regularizer: Any = None,
        constraint: Any = None,
        trainable: bool = True,
        attr: str | None = None,
        buffer: bool = False,
    ) -> torch.Tensor:
        init = _initializers.get(initializer)
        dtype = self._param_dtype()
        value = init(tuple(int(d) for d in keras_shape), dtype=dtype)
        if not isinstance(value, torch.Tensor):
            value = torch.as_tensor(value)
        value = value.to(dtype)
        if perm is not None:
            value = value.permute(_inverse(perm))
        attr = attr or ("weight" if name == "kernel" else name)  # torch's name for the main tensor
        if buffer:  # a non-trainable state such as BatchNormalization's moving mean
            self.register_buffer(attr, value.contiguous())
            param = getattr(self, attr)
        else:
            param = nn.Parameter(value.contiguous(), requires_grad=trainable and self.trainable)
            setattr(self, attr, param)
            if not trainable:
                self._frozen.add(id(param))
        table = self.__dict__.setdefault("_weight_table", [])
        table[:] = [row for row in table if row[0] != name]
        table.append((name, attr, perm))
        regularizer = _regularizers.get(regularizer)
        if regularizer is not None:
            self._regularizers.append((param, regularizer))
        constraint = _constraints.get(constraint)
        if constraint is not None:
            self.constraints[attr] = (constraint if perm is None
                                      else _KerasViewConstraint(constraint, KerasLayout(perm)))
        return param

    def keep_gate_order(self, name: str, dim: int, order: tuple) -> None:
        """Keep the weight ``name`` with its gate blocks along torch ``dim`` in another order than
        Keras's (torch block ``i`` = Keras block ``order[i]``; cuDNN's order for a GRU): its current
        values are reordered in place; ``get_weights``/``set_weights``, constraints, the HDF5 files and
        optimizer slots keep Keras's order (the Keras weight becomes a reordered copy)."""
        attr, perm = self._row(name)
        param = getattr(self, attr)
        layout = KerasLayout(perm, (dim, tuple(order)))
        with torch.no_grad():
            param.copy_(layout.to_torch(KerasLayout(perm).to_keras(param)))
        self.__dict__.setdefault("_gate_blocks", {})[name] = (dim, tuple(order))
        constraint = self.constraints.get(attr)
        if constraint is not None:
            inner = constraint.constraint if isinstance(constraint, _KerasViewConstraint) else constraint
            self.constraints[attr] = _KerasViewConstraint(inner, layout)

    def keras_layout(self, name: str) -> KerasLayout:
        """The :class:`KerasLayout` of the weight ``name``."""
        return KerasLayout(self._row(name)[1], self.__dict__.get("_gate_blocks", {}).get(name))

    def gate_layouts(self) -> dict[str, KerasLayout]:
        """``{torch attribute: gate reorder}`` of the weights kept in another gate order than Keras's."""
        return {self._row(name)[0]: self.keras_gates(name) for name in self.__dict__.get("_gate_blocks", {})}

    def keras_gates(self, name: str) -> KerasLayout:
        """The gate reorder alone of the weight ``name`` (no axes; identity unless kept in another
        gate order)."""
        return KerasLayout(None, self.__dict__.get("_gate_blocks", {}).get(name))

    def _row(self, name: str) -> tuple:
        for key, attr, perm in self._table():
            if key == name:
                return attr, perm
        raise KeyError(
            f"{type(self).__name__} '{self.name}' has no weight {name!r}; it has {self.weight_names()}"
        )

    def _table(self) -> list:
        return self.__dict__.get("_weight_table", [])

    def weight_names(self) -> list[str]:
        """Keras names of the weights, in Keras order (``['kernel', 'bias']``)."""
        return [row[0] for row in self._table()]

    def keras_view(self, name: str) -> torch.Tensor:
        """The weight ``name`` in Keras layout: a view of the torch tensor, or, for gates kept in
        another order (:meth:`keep_gate_order`), a reordered copy that ``K.set_value`` writes back."""
        param = getattr(self, self._row(name)[0])
        layout = self.keras_layout(name)
        view = layout.to_keras(param)
        if not layout.is_view:
            view._keras_source = (param, layout)  # the optimizer-state mapping reads it
            view._keras_write = lambda value: param.copy_(layout.to_torch(value))
        return view

    def _keras_weights(self) -> list[torch.Tensor]:
        return [self.keras_view(name) for name in self.weight_names()]

    def _set_keras_weights(self, weights: list[torch.Tensor]) -> None:
        for name, w in zip(self.weight_names(), weights):
            param = getattr(self, self._row(name)[0])
            param.copy_(self.keras_layout(name).to_torch(w.to(dtype=param.dtype, device=param.device)))

    def apply_constraints(self) -> None:
        """Project each constrained weight of this layer and the layers inside it (Keras layout,
        Keras axes), as Keras 2 does after each optimizer update."""
        with torch.no_grad():
            for module in self.modules():
                for attr, constraint in getattr(module, "constraints", {}).items():
                    weight = getattr(module, attr)
                    weight.copy_(constraint(weight))


class KerasLayer(KerasWeights):
    """Mixin of every built-in layer over the Keras 2 ``Layer`` contract of :mod:`.base`: weights from
    :meth:`new_weight`, ``build`` via :meth:`build_keras`, ``compute_output_shape`` via
    :meth:`output_shape_keras` (batch-first shapes); ``get_config`` serializes initializers,
    regularizers, constraints and activations as Keras 2 does; the activity penalty of a call goes to
    ``add_loss``."""

    activity_regularizer: Any = None

    @property
    def kernel(self) -> torch.Tensor:
        """The Keras-layout view of the kernel (as ``layer.kernel`` in Keras 2)."""
        if "kernel" not in self.weight_names():
            raise AttributeError(f"{type(self).__name__} '{self.name}' has no kernel (built: {self.built})")
        return self.keras_view("kernel")

    def build_keras(self, input_shape: Any) -> None:
        """Create the weights for the batch-first ``input_shape`` (override)."""

    def output_shape_keras(self, input_shape: Any) -> Any:
        """The batch-first output shape (override; default: unchanged)."""
        return input_shape

    def build(self, input_shape: Any) -> None:
        if self.built:  # built-in layers keep their weights when built again
            return
        self.build_keras(input_shape)
        super().build(input_shape)  # type: ignore[misc]

    def compute_output_shape(self, input_shape: Any) -> Any:
        return self.output_shape_keras(input_shape)

    def _activity(self, y: torch.Tensor) -> torch.Tensor:
        if self.activity_regularizer is not None:
            self._add_activity_loss(self.activity_regularizer(y))
        return y

    def get_config(self) -> dict:
        """Keras 2 ``get_config``: base fields plus ``_config_keys``, objects in their serialized form."""
        cfg = self._base_config()  # LayerConfig's (these mixins sit beside Layer)
        for key in self._config_keys:
            value = getattr(self, key, None)
            if key.endswith("_initializer"):
                value = serial("initializer", value)
            elif key.endswith("_regularizer"):
                value = serial("regularizer", value)
            elif key.endswith("_constraint"):
                value = serial("constraint", value)
            elif key in ("activation", "recurrent_activation") and value is not None:
                value = serial("activation", value)
            elif isinstance(value, tuple):
                value = list(value)
            cfg[key] = value
        return cfg


def pad_arg(pads: list[tuple[int, int]]) -> tuple[int, ...]:
    """Per-axis ``(before, after)`` pads as ``F.pad``'s argument (last axis first).

    Example::

        >>> pad_arg([(0, 1), (2, 3)])
        (2, 3, 0, 1)
    """
    return tuple(p for pair in reversed(pads) for p in pair)
