"""The Keras-style ``Layer`` base: a ``torch.nn.Module`` that builds its parameters from a shape.

Contract (what :mod:`arignote.models` relies on):

* ``build(input_shape)`` creates parameters from the per-sample input shape (no batch dim, Keras
  channels-last for images, e.g. ``(32, 32, 3)``); calling it again is a no-op.
* ``compute_output_shape(input_shape)`` returns the per-sample output shape, channels-last.
* ``input_shape_hint`` is the shape given as ``input_shape=``/``input_dim=`` (or None).
* ``name`` is a Keras-like auto name (``conv2d_1``, ``dense_2``) unless given.
* ``get_config()`` returns JSON-able constructor kwargs; ``from_config(cfg)`` rebuilds the layer;
  :func:`serialize` / :func:`deserialize` speak Keras's ``{"class_name", "config"}`` form.
* Image activations travel between layers as *logical NCHW tensors in channels_last memory
  format*: ``to_internal`` (model input) and ``from_internal`` (model output) convert, zero-copy.
  Every 4-D tensor a layer receives or returns is internal; ``image_layer = True`` marks the
  layers that only make sense on images.

Example::

    >>> from arignote.layers import Dense
    >>> d = Dense(10, input_dim=784)
    >>> d.input_shape_hint, d.compute_output_shape((784,))
    ((784,), (10,))
"""

from __future__ import annotations

import difflib
import numbers
import re
from typing import Any

import torch
from torch import nn

from arignote.layers.activations import name_of
from arignote.utils.generic_utils import get_custom_objects

__all__ = [
    "Layer",
    "serialize",
    "deserialize",
    "to_internal",
    "from_internal",
    "reset_name_counters",
    "unknown_argument_error",
]

_NAME_COUNTS: dict[str, int] = {}
_REGISTRY: dict[str, type] = {}

# kwargs every layer accepts (Keras 2 ``Layer.__init__``)
_BASE_KWARGS = ("name", "input_shape", "input_dim", "batch_input_shape", "batch_size", "dtype", "trainable")


def reset_name_counters() -> None:
    """Restart auto names at ``dense_1`` etc. (``backend.clear_session()`` calls this)."""
    _NAME_COUNTS.clear()


def _snake_case(name: str) -> str:
    # Keras 2's rule: Conv2D -> conv2d, MaxPooling2D -> max_pooling2d, LSTM -> lstm
    intermediate = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", intermediate).lower()


def _auto_name(cls: type) -> str:
    prefix = getattr(cls, "_name_prefix", None) or _snake_case(cls.__name__)
    _NAME_COUNTS[prefix] = _NAME_COUNTS.get(prefix, 0) + 1
    return f"{prefix}_{_NAME_COUNTS[prefix]}"


def unknown_argument_error(where: str, key: str, valid: list[str]) -> TypeError:
    """A ``TypeError`` naming the unknown keyword argument, with a did-you-mean hint."""
    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
    hint = f" Did you mean '{close[0]}'?" if close else f" Valid arguments: {', '.join(sorted(valid))}."
    return TypeError(f"{where} got an unexpected keyword argument '{key}'.{hint}")


def positive_int(value: Any, what: str, where: str) -> int:
    """``value`` as a Python int > 0 (numpy integers welcome), else a ValueError naming ``where``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or int(value) != value or value <= 0:
        raise ValueError(f"{where}: {what} must be a positive integer, got {value!r}")
    return int(value)


def to_internal(x: torch.Tensor) -> torch.Tensor:
    """Keras NHWC batch -> the internal logical NCHW view (channels_last memory when ``x`` is contiguous).

    Non-image tensors pass through unchanged.

    Example::

        >>> to_internal(torch.zeros(2, 32, 32, 3)).shape
        torch.Size([2, 3, 32, 32])
    """
    return x.permute(0, 3, 1, 2) if x.dim() == 4 else x


def from_internal(y: torch.Tensor) -> torch.Tensor:
    """Internal NCHW batch -> Keras NHWC (a free view of a channels_last tensor); others unchanged."""
    return y.permute(0, 2, 3, 1) if y.dim() == 4 else y


def _shape_tuple(value: Any, what: str) -> tuple:
    if isinstance(value, numbers.Integral):
        return (int(value),)
    try:
        shape = tuple(None if d is None else int(d) for d in value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a tuple of ints such as (32, 32, 3), got {value!r}") from None
    if any(d is not None and d <= 0 for d in shape):
        raise ValueError(f"{what} must have positive dimensions, got {value!r}")
    return shape


class Layer(nn.Module):
    """Base of every arignote layer: an ``nn.Module`` built lazily from a per-sample input shape.

    Subclasses implement ``_build(input_shape)`` (create parameters), ``compute_output_shape`` and
    ``forward``, and list their constructor arguments in ``_config_keys``.
    """

    image_layer = False  # True: only meaningful on images (4-D internal NCHW tensors)
    device_context = None  # set by the placement engineer (arignote.parallel.placement)
    _config_keys: tuple[str, ...] = ()

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        for key in kwargs:
            if key not in _BASE_KWARGS:
                raise unknown_argument_error(type(self).__name__, key, [*self._config_keys, *_BASE_KWARGS])
        self.name = kwargs.get("name") or _auto_name(type(self))
        self.trainable = bool(kwargs.get("trainable", True))
        self.dtype_name = kwargs.get("dtype")
        self.built = False
        self.input_shape_hint = None
        if kwargs.get("batch_input_shape") is not None:
            self.input_shape_hint = _shape_tuple(kwargs["batch_input_shape"], "batch_input_shape")[1:]
        elif kwargs.get("input_shape") is not None:
            self.input_shape_hint = _shape_tuple(kwargs["input_shape"], "input_shape")
        elif kwargs.get("input_dim") is not None:
            self.input_shape_hint = _shape_tuple(kwargs["input_dim"], "input_dim")
        self.built_input_shape: tuple | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # built-in layers only: a user's class (even one named Dense) needs custom_objects, as in Keras
        if cls.__module__.startswith("arignote.layers"):
            _REGISTRY[cls.__name__] = cls

    @property
    def trainable(self) -> bool:
        """Keras ``layer.trainable``: setting it (before compile) freezes or unfreezes the weights."""
        return self._trainable

    @trainable.setter
    def trainable(self, value: bool) -> None:
        self._trainable = bool(value)
        for p in self.parameters():
            p.requires_grad_(self._trainable)

    # ---------------------------------------------------------------- building

    def build(self, input_shape: Any) -> None:
        """Create the parameters for per-sample ``input_shape`` (channels-last); idempotent."""
        if self.built:
            return
        shape = _shape_tuple(input_shape, f"input shape of layer '{self.name}'")
        self._build(shape)
        if not self.trainable:
            for p in self.parameters():
                p.requires_grad_(False)
        self.built_input_shape = shape
        self.built = True

    def _build(self, input_shape: tuple) -> None:
        """Create parameters (override in layers that have some)."""

    def compute_output_shape(self, input_shape: Any) -> tuple:
        """Per-sample output shape (Keras channels-last convention)."""
        return tuple(input_shape)

    # ---------------------------------------------------------------- Keras-style custom layers

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # built-in layers override forward; a Keras-style custom layer defines call(x)
        return self.call(x)

    def call(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError(f"{type(self).__name__} must define call(x) (or forward(x))")

    def add_weight(self, name: str, shape: Any, initializer: Any = "glorot_uniform", trainable: bool = True,
                   dtype: str | None = None) -> nn.Parameter:
        """Create and register a parameter in Keras layout (kernel ``(in, out)``, conv ``(kh, kw, in, out)``).

        For custom layers written the Keras way::

            class Scale(Layer):
                def build(self, input_shape):
                    self.gamma = self.add_weight("gamma", (input_shape[-1],), initializer="ones")
                    super().build(input_shape)

                def call(self, x):
                    return x * self.gamma
        """
        from arignote.layers.activations import check_initializer, initialize

        check_initializer(initializer, f"initializer of weight '{name}'")
        shape = tuple(int(d) for d in shape)
        t = torch.empty(shape, dtype=getattr(torch, dtype) if dtype else self._param_dtype())
        # initializers compute fans in torch layout (out, in, ...): give them that view
        view = t.t() if t.dim() == 2 else (t.permute(3, 2, 0, 1) if t.dim() == 4 else t)
        initialize(view, initializer)
        param = nn.Parameter(t, requires_grad=trainable and self.trainable)
        self.register_parameter(name, param)
        return param

    def _param_dtype(self) -> torch.dtype:
        from arignote import backend

        return getattr(torch, self.dtype_name or backend.floatx())

    def count_params(self) -> int:
        """Number of scalars in this layer's parameters (what ``summary()`` prints)."""
        return sum(p.numel() for p in self.parameters())

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
            if tuple(new.shape) != tuple(old.shape):
                raise ValueError(
                    f"layer '{self.name}' weight {i} has shape {tuple(old.shape)}, got {tuple(new.shape)}"
                )
        with torch.no_grad():
            self._set_keras_weights([torch.as_tensor(w) for w in weights])

    def _keras_weights(self) -> list[torch.Tensor]:
        return [*self.parameters(), *self.buffers()]

    def _set_keras_weights(self, weights: list[torch.Tensor]) -> None:
        for t, w in zip([*self.parameters(), *self.buffers()], weights):
            t.copy_(w)

    # ---------------------------------------------------------------- config

    def get_config(self) -> dict:
        """JSON-able constructor kwargs (Keras ``get_config``)."""
        cfg: dict[str, Any] = {"name": self.name, "trainable": self.trainable}
        if self.dtype_name:
            cfg["dtype"] = self.dtype_name
        if self.input_shape_hint is not None:
            cfg["input_shape"] = list(self.input_shape_hint)
        for key in self._config_keys:
            value = getattr(self, key)
            if callable(value):  # an activation function given as a callable
                value = name_of(value)
            cfg[key] = list(value) if isinstance(value, tuple) else value
        return cfg

    @classmethod
    def from_config(cls, config: dict) -> Layer:
        """Rebuild a layer from :meth:`get_config`'s output."""
        return cls(**config)

    def extra_repr(self) -> str:
        return f"name={self.name!r}"


def serialize(layer: Layer) -> dict:
    """``{"class_name": "Dense", "config": {...}}`` (Keras's layer serialization format)."""
    return {"class_name": type(layer).__name__, "config": layer.get_config()}


def deserialize(spec: dict, custom_objects: dict | None = None) -> Layer:
    """Rebuild a layer from :func:`serialize`'s output.

    Example::

        >>> deserialize({"class_name": "Dropout", "config": {"rate": 0.5}}).rate
        0.5
    """
    if not isinstance(spec, dict) or "class_name" not in spec:
        raise ValueError(f"a serialized layer is a dict with 'class_name' and 'config', got {spec!r}")
    name = spec["class_name"]
    classes = {**_REGISTRY, **get_custom_objects(), **(custom_objects or {})}
    cls = classes.get(name)
    if cls is None or name.startswith("_"):
        close = difflib.get_close_matches(name, list(classes), n=1, cutoff=0.6)
        hint = (
            f" Did you mean '{close[0]}'?"
            if close
            else " Pass custom_objects={'Name': cls} for your own layers."
        )
        raise ValueError(f"unknown layer class '{name}'.{hint}")
    return cls.from_config(dict(spec.get("config", {})))
