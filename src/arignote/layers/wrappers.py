"""Layer wrappers (Keras 2 ``keras.layers.wrappers``): ``TimeDistributed`` and ``Bidirectional``.

Weights: ``TimeDistributed`` has the wrapped layer's weights; ``Bidirectional`` the forward layer's
then the backward layer's (Keras order), the sublayers named ``forward_<name>`` / ``backward_<name>``.

Example::

    >>> import torch
    >>> from arignote.layers import Dense, LSTM
    >>> TimeDistributed(Dense(4))(torch.zeros(2, 5, 3)).shape
    torch.Size([2, 5, 4])
    >>> Bidirectional(LSTM(3, return_sequences=True)).compute_output_shape((None, 5, 2))
    (None, 5, 6)
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator
from typing import Any

import torch

from arignote._keras_objects import GLOBAL_CUSTOM_OBJECTS
from arignote.config.safe_mode import scope as safe_mode_scope
from arignote.graph.tensor import KerasTensor
from arignote.layers import _trainable, conditional
from arignote.layers._util import KerasLayer, check_rank
from arignote.layers.base import Layer, deserialize
from arignote.layers.recurrent.conv_rnn import ConvRNN2D
from arignote.layers.recurrent.rnn import with_extra_inputs

__all__ = ["Wrapper", "TimeDistributed", "Bidirectional"]


def _takes(layer: Any, name: str) -> bool:
    forward = getattr(layer, "forward", None)  # a model used as a layer has none: it takes no mask
    return forward is not None and name in inspect.signature(forward).parameters


def _build(layer: Any, full_shape: tuple) -> None:
    """Build a wrapped layer from a batch-first shape (built-in layers and users' layers alike)."""
    if not layer.built:
        layer._build_once(tuple(full_shape))


class Wrapper(KerasLayer, Layer):
    """Base of the wrappers: holds ``layer``; its weights are this layer's."""

    def __init__(self, layer: Any, **kwargs: Any) -> None:
        model = not isinstance(layer, Layer) and isinstance(getattr(layer, "module", None), torch.nn.Module)
        if not isinstance(layer, Layer) and not model:
            raise ValueError(f"{type(self).__name__} wraps an arignote layer (e.g. Dense(8)) or model, "
                             f"got {layer!r}")
        super().__init__(**kwargs)
        if model:  # a model used as a layer (Keras 2: a Model is a Layer): its module holds the weights
            object.__setattr__(self, "layer", layer)
            self.wrapped_model = layer.module
        else:
            self.layer = layer
        self.trainable = self._trainable  # Keras 2.3.1: the wrapper's flag (default True) is the layer's

    def _inner(self) -> Any:
        return self._modules.get("layer", self.__dict__.get("layer"))

    @property
    def uses_learning_phase(self) -> bool:
        """Keras 2.3.1: the wrapped layer's (a dropout, an RNN with dropout): then every output
        depends on the learning phase unless the call fixes ``training``."""
        return bool(getattr(self._inner(), "uses_learning_phase", False))

    def _keras_children(self) -> list:
        inner = self._inner()
        return [] if inner is None else [inner]

    @property
    def trainable(self) -> bool:
        """Keras 2.3.1's ``Wrapper.trainable``: the wrapped layer's (or model's) flag; setting it sets
        theirs (a wrapped model keeps its layers' own flags, as ``model.trainable`` does)."""
        inner = self._inner()
        return self._trainable if inner is None else bool(inner.trainable)

    @trainable.setter
    def trainable(self, value: bool) -> None:
        self._trainable = bool(value)
        inner = self._inner()
        if inner is not None:
            inner.trainable = bool(value)
            _trainable.apply(self)  # the wrapper holds it: the flags of what holds the wrapper count

    def _keras_split(self) -> tuple[list, list]:
        return _trainable.keras_split(self._inner())

    def _keras_weights(self) -> list[torch.Tensor]:
        return _views(self.layer)

    def _set_keras_weights(self, weights: list[torch.Tensor]) -> None:
        _set_views(self.layer, list(weights))

    def weight_names(self) -> list[str]:
        return _names(self.layer)

    def get_config(self) -> dict:
        cfg = super().get_config()
        cfg["layer"] = {"class_name": type(self.layer).__name__, "config": self.layer.get_config()}
        return cfg

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> Wrapper:
        config = dict(config)
        layer = deserialize(config.pop("layer"), custom_objects)
        with _known(custom_objects):  # Bidirectional rebuilds its backward layer (a user's cell) by name
            return cls(layer, **config)


def _views(layer: Any) -> list[torch.Tensor]:
    """A layer's Keras weights; a model's: its layers', in order (``Model.get_weights``)."""
    if hasattr(layer, "_keras_weights"):
        return list(layer._keras_weights())
    return [v for sub in layer.layers for v in _views(sub)]


def _set_views(layer: Any, weights: list[torch.Tensor]) -> None:
    if hasattr(layer, "_set_keras_weights"):
        layer._set_keras_weights(weights)
        return
    for sub in layer.layers:
        n = len(_views(sub))
        _set_views(sub, weights[:n])
        weights = weights[n:]


def _names(layer: Any) -> list[str]:
    if hasattr(layer, "_keras_weights"):
        return list(getattr(layer, "weight_names", list)())
    return [f"{sub.name}/{name}" for sub in layer.layers for name in _names(sub)]


@contextlib.contextmanager
def _known(custom_objects: dict | None) -> Iterator[None]:
    """``custom_objects`` registered for the duration (the registry restored after)."""
    before = dict(GLOBAL_CUSTOM_OBJECTS)
    GLOBAL_CUSTOM_OBJECTS.update(custom_objects or {})
    try:
        yield
    finally:
        GLOBAL_CUSTOM_OBJECTS.clear()
        GLOBAL_CUSTOM_OBJECTS.update(before)


class TimeDistributed(Wrapper):
    """Applies ``layer`` to every time step of ``(batch, timesteps, ...)`` (one call on the merged
    batch and time axes); masks pass through."""

    supports_masking = True

    def build_keras(self, input_shape: tuple) -> None:
        shape = tuple(input_shape)
        if len(shape) < 3:
            raise ValueError(
                f"TimeDistributed '{self.name}': the input should be at least 3D (batch, timesteps, "
                f"...), got input shape {shape}"
            )
        _build(self.layer, (shape[0], *shape[2:]))

    def output_shape_keras(self, input_shape: tuple) -> tuple:
        shape = tuple(input_shape)
        inner = self.layer.compute_output_shape((shape[0], *shape[2:]))
        return (shape[0], shape[1], *tuple(inner)[1:])

    def call(self, x: torch.Tensor, mask: Any = None, training: Any = None) -> torch.Tensor:
        n, t = x.shape[0], x.shape[1]
        kwargs = {}
        if mask is not None and _takes(self.layer, "mask"):
            kwargs["mask"] = mask.reshape(n * t, *mask.shape[2:])
        call = getattr(self.layer, "call", None)
        if (training is not None and callable(call) and "training" in inspect.signature(call).parameters
                and hasattr(self.layer, "forward")):  # a layer (a nested model takes no training=)
            kwargs["training"] = training  # Keras 2.3.1: TimeDistributed(Dropout)(x, training=True)
        y = self.layer(x.reshape(n * t, *x.shape[2:]), **kwargs)
        return self._activity(y.reshape(n, t, *y.shape[1:]))

    def _after_symbolic_call(self, inputs: Any, kwargs: dict) -> None:
        """Keras 2.3.1 bookkeeping of a symbolic call: ``_input_map`` (the uid of the inputs -> the
        input the wrapped layer sees, ``(batch * timesteps, ...)``) and the wrapped layer's updates
        for it (``TimeDistributed(BatchNormalization()).updates``: its two moving averages)."""
        super()._after_symbolic_call(inputs, kwargs)
        leaves = inputs if isinstance(inputs, (list, tuple)) else [inputs]
        first = leaves[0]
        inner = KerasTensor((None, *first.shape[2:]), first.dtype, name=f"{self.name}/inner_input")
        self.__dict__.setdefault("_input_map", {})[", ".join(str(abs(id(x))) for x in leaves)] = inner
        if isinstance(self.layer, Layer):
            conditional.symbolic_updates(self.layer, inner, kwargs)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """Keras 2.3.1: the wrapped layer's mask of each time step (a ``Masking`` or ``Embedding``
        makes one, an RNN hands one on), as ``(batch, timesteps, ...)``; when the layer gives none,
        the input mask reduced to ``(batch, timesteps)`` (``any`` over the other axes); else None."""
        if isinstance(mask, list):
            mask = mask[0]
        compute = getattr(self.layer, "compute_mask", None)
        n, t = inputs.shape[0], inputs.shape[1]
        inner_mask = None if mask is None else mask.reshape(n * t, *mask.shape[2:])
        inner = None if compute is None else compute(inputs.reshape(n * t, *inputs.shape[2:]), inner_mask)
        if isinstance(inner, list):
            inner = inner[0]
        if inner is None:
            if mask is None:
                return None
            while mask.dim() > 2:
                mask = mask.any(dim=-1)
            return mask
        return inner.reshape(n, t, *inner.shape[1:])


class Bidirectional(Wrapper):
    """Runs a recurrent layer forwards and backwards and merges the two (``merge_mode``: ``'concat'``
    (default), ``'sum'``, ``'mul'``, ``'ave'`` or None for a list); the backward sequence is reversed
    back before merging, as Keras 2. Any RNN layer, as Keras 2.3.1: ``LSTM`` on ``(batch, timesteps,
    features)``, ``ConvLSTM2D`` (or any ``ConvRNN2D``) on image sequences ``(batch, timesteps, rows,
    cols, channels)`` ('concat' joins the last axis, as Keras's). ``initial_state=`` (the forward
    layer's states, then the backward layer's) and ``constants=`` (given to both directions;
    ``num_constants`` in the config) as Keras 2.3.1."""

    supports_masking = True
    _config_keys = ("merge_mode",)

    def __init__(
        self,
        layer: Any,
        merge_mode: str | None = "concat",
        weights: Any = None,
        num_constants: int | None = None,
        **kwargs: Any,
    ) -> None:
        if merge_mode not in ("sum", "mul", "ave", "concat", None):
            raise ValueError(
                f"Invalid merge mode {merge_mode!r}. Merge mode should be one of "
                "{'sum', 'mul', 'ave', 'concat', None}"
            )
        if not hasattr(layer, "go_backwards"):
            raise ValueError(
                f"Bidirectional wraps a recurrent layer (LSTM, GRU, SimpleRNN, RNN...), got {layer!r}"
            )
        super().__init__(layer, **kwargs)
        del self._modules["layer"]  # registered as forward_layer below (one state_dict entry)
        object.__setattr__(self, "layer", layer)
        config = layer.get_config()
        config["go_backwards"] = not config["go_backwards"]
        config["name"] = "backward_" + layer.name
        # a user's cell is rebuilt by its class name: the classes inside the layer are known by theirs
        # (a live layer's own config: any function in it is the user's, not a file's)
        with _known({type(m).__name__: type(m) for m in layer.modules()}), \
                safe_mode_scope(False, "Bidirectional"):
            backward = type(layer).from_config(config)
        layer.name = "forward_" + layer.name
        self.forward_layer, self.backward_layer = layer, backward
        self.trainable = self._trainable  # Keras 2.3.1: both directions take the wrapper's flag
        self.merge_mode = merge_mode
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state
        self._initial_weights = weights
        # how many of a list input's last tensors are constants (both directions get them)
        self._num_constants = None if num_constants is None else int(num_constants)
        self._share_constants()

    @property
    def trainable(self) -> bool:
        """Keras 2.3.1's ``Bidirectional.trainable``: its own flag, set on both directions."""
        return self._trainable

    @trainable.setter
    def trainable(self, value: bool) -> None:
        self._trainable = bool(value)
        for name in ("forward_layer", "backward_layer"):
            if name in self._modules:
                self._modules[name].trainable = bool(value)
        if "forward_layer" in self._modules:
            _trainable.apply(self)

    def _keras_children(self) -> list:
        return [self._modules[n] for n in ("forward_layer", "backward_layer") if n in self._modules]

    def _keras_split(self) -> tuple[list, list]:
        fwd = _trainable.keras_split(self.forward_layer)
        bwd = _trainable.keras_split(self.backward_layer)
        return fwd[0] + bwd[0], fwd[1] + bwd[1]

    def _share_constants(self) -> None:
        for sub in (self.forward_layer, self.backward_layer):
            sub._num_constants = self._num_constants

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        initial_state = kwargs.pop("initial_state", None)
        constants = kwargs.pop("constants", None)
        extra: list = []
        if initial_state is not None:
            states = list(initial_state) if isinstance(initial_state, (list, tuple)) else [initial_state]
            if len(states) % 2:
                raise ValueError(
                    f"Bidirectional '{self.name}': initial_state must hold the forward layer's states "
                    f"then the backward layer's (an even count), got {len(states)}"
                )
            extra += states
        if constants is not None:
            constants = list(constants) if isinstance(constants, (list, tuple)) else [constants]
            self._num_constants = len(constants)
            self._share_constants()
            extra += constants
        return super().__call__(with_extra_inputs(self.name, inputs, extra), *args, **kwargs)

    @property
    def layers(self) -> list:
        return [self.forward_layer, self.backward_layer]

    def build(self, input_shape: Any) -> None:
        # called as [x, *states, *constants]: the sublayers build their cells from the constants' shapes
        if isinstance(input_shape, list) and input_shape and isinstance(input_shape[0], (list, tuple)):
            shapes = [tuple(s) for s in input_shape]
            k = self._num_constants or 0
            if k and not self.built:
                full = [shapes[0], *shapes[len(shapes) - k:]]
                for sub in (self.forward_layer, self.backward_layer):
                    if not sub.built:
                        sub.build(full)
            input_shape = shapes[0]
        super().build(input_shape)

    def build_keras(self, input_shape: tuple) -> None:
        if isinstance(self.forward_layer, ConvRNN2D):
            rank, what = 5, "sequences of images (batch, timesteps, rows, cols, channels)"
        else:
            rank, what = 3, "sequences (batch, timesteps, features)"
        shape = check_rank(tuple(input_shape), rank, f"Bidirectional '{self.name}'", what)
        _build(self.forward_layer, shape)
        _build(self.backward_layer, shape)
        if self._initial_weights is not None:
            self.set_weights(self._initial_weights)
            self._initial_weights = None

    def output_shape_keras(self, input_shape: Any) -> Any:
        out = self.forward_layer.output_shape_keras(input_shape)
        states = []
        if self.return_state:
            out, states = out[0], list(out[1:])
            states = states + states
        if self.merge_mode == "concat":
            out = (*out[:-1], out[-1] * 2)
        outputs = [out, out] if self.merge_mode is None else [out]
        everything = outputs + states
        return everything if len(everything) > 1 else everything[0]

    def call(
        self, x: Any, mask: Any = None, training: Any = None, initial_state: Any = None, constants: Any = None
    ) -> Any:
        if isinstance(x, (list, tuple)):  # [x, *initial_states, *constants]
            x, rest = x[0], list(x[1:])
            k = self._num_constants or 0
            if k:
                rest, constants = rest[: len(rest) - k], rest[len(rest) - k:]
            initial_state = rest or initial_state
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        fwd_state = bwd_state = None
        if initial_state is not None:
            half = len(initial_state) // 2
            fwd_state, bwd_state = list(initial_state[:half]), list(initial_state[half:])
        more = {} if constants is None else {"constants": constants}
        y = self.forward_layer(x, mask=mask, training=training, initial_state=fwd_state, **more)
        y_rev = self.backward_layer(x, mask=mask, training=training, initial_state=bwd_state, **more)
        states: list = []
        if self.return_state:
            states = list(y[1:]) + list(y_rev[1:])
            y, y_rev = y[0], y_rev[0]
        if self.return_sequences:
            y_rev = y_rev.flip(1)
        if self.merge_mode == "concat":
            out: Any = torch.cat([y, y_rev], -1)
        elif self.merge_mode == "sum":
            out = y + y_rev
        elif self.merge_mode == "ave":
            out = (y + y_rev) / 2
        elif self.merge_mode == "mul":
            out = y * y_rev
        else:
            out = [y, y_rev]
        if self.return_state:
            return (out if isinstance(out, list) else [out]) + states
        return out

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        if isinstance(mask, list):
            mask = mask[0]
        out = mask if self.return_sequences else None
        outs = [out, out] if self.merge_mode is None else [out]
        if self.return_state:
            outs = outs + [None] * (2 * len(self.forward_layer.compute_mask(inputs, mask)[1:]))
        return outs if len(outs) > 1 else outs[0]

    def reset_states(self) -> None:
        self.forward_layer.reset_states()
        self.backward_layer.reset_states()

    def _keras_weights(self) -> list[torch.Tensor]:
        return self.forward_layer._keras_weights() + self.backward_layer._keras_weights()

    def _set_keras_weights(self, weights: list[torch.Tensor]) -> None:
        half = len(weights) // 2
        self.forward_layer._set_keras_weights(weights[:half])
        self.backward_layer._set_keras_weights(weights[half:])

    def weight_names(self) -> list[str]:
        return [f"forward_{n}" for n in self.forward_layer.weight_names()] + [
            f"backward_{n}" for n in self.backward_layer.weight_names()
        ]

    def get_config(self) -> dict:
        cfg = super().get_config()
        layer_cfg = dict(cfg["layer"]["config"])
        layer_cfg["name"] = layer_cfg["name"].removeprefix("forward_")
        layer_cfg.pop("num_constants", None)  # Keras 2.3.1 keeps it on the wrapper only
        cfg["layer"] = {"class_name": cfg["layer"]["class_name"], "config": layer_cfg}
        if self._num_constants is not None:
            cfg["num_constants"] = self._num_constants
        return cfg
