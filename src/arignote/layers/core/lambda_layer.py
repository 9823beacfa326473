"""``Lambda``, ``Masking`` and ``ActivityRegularization`` (Keras 2 ``keras.layers.core``). No weights.

``Lambda(function, output_shape=None, mask=None, arguments=None)`` calls
``function(inputs, **arguments)``. Without ``output_shape`` the shape is found by running the
function once on a small zero batch. ``get_config`` stores a named function by name (module and
qualified name) and a lambda as marshalled bytecode (as Keras 2 does, so it loads back only on the
same Python version, and only with ``safe_mode=False``: :mod:`arignote.config.safe_mode`).

Example::

    >>> import torch
    >>> Lambda(lambda x, k: x * k, arguments={"k": 3})(torch.ones(1, 2)).tolist()
    [[3.0, 3.0]]
    >>> Masking().compute_mask(torch.tensor([[[0.0], [1.0]]])).tolist()
    [[False, True]]
"""

from __future__ import annotations

import importlib
import sys
import types
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from arignote import backend, regularizers
from arignote._keras_objects import GLOBAL_CUSTOM_OBJECTS, func_dump, func_load
from arignote.config.safe_mode import check_code, code_allowed
from arignote.config.safe_mode import scope as safe_mode_scope
from arignote.layers import op_layer as ops
from arignote.layers._util import KerasLayer
from arignote.layers.base import Layer
from arignote.layers.value_semantics import augments, keras_value_semantics

__all__ = ["Lambda", "Masking", "ActivityRegularization"]


def _probe(shape: tuple) -> torch.Tensor:
    return torch.zeros(
        tuple(2 if d is None else int(d) for d in shape), dtype=getattr(torch, backend.floatx())
    )


def _dump(fn: Callable) -> tuple[Any, str, str | None]:
    """A function as ``(value, kind, module)`` for ``get_config``."""
    name = getattr(fn, "__name__", "")
    module = getattr(fn, "__module__", None)
    if name != "<lambda>" and module and "<locals>" not in getattr(fn, "__qualname__", "<locals>"):
        return fn.__qualname__, "function", module
    if not isinstance(fn, types.FunctionType):
        raise ValueError(f"Lambda: cannot serialize {fn!r}; pass a function or a lambda")
    return list(func_dump(fn)), "lambda", module


def _load(value: Any, kind: str, module: str | None, custom_objects: dict | None, what: str,
          key: str) -> Callable:
    """The function a Lambda config stores: ``function`` by name (``custom_objects``, the global
    registry, then the module Keras recorded), or ``lambda`` as bytecode, which only passes the safe
    mode gate (:mod:`arignote.config.safe_mode`) or is replaced by ``custom_objects[key]``."""
    if kind == "function":
        return _by_name(value, module, custom_objects, what)
    if kind != "lambda":
        raise ValueError(f"{what}: unknown function type {kind!r} (Keras 2 writes 'function' or 'lambda')")
    objects = {**GLOBAL_CUSTOM_OBJECTS, **(custom_objects or {})}  # (also a CustomObjectScope's)
    if key in objects:  # the user's own function: the bytecode is never read
        return objects[key]
    check_code(what, key)
    return func_load(value, globs=_lambda_globals(module, custom_objects))


def _by_name(value: Any, module: str | None, custom_objects: dict | None, what: str) -> Callable:
    """A function stored by name. In safe mode the recorded module must already be imported (as Keras
    2.3.1, which looks only at loaded modules: importing one runs its code) and the name public."""
    if not isinstance(value, str):
        raise ValueError(f"{what}: a function stored by name needs a name, found {type(value).__name__}")
    objects = {**GLOBAL_CUSTOM_OBJECTS, **(custom_objects or {})}
    if value in objects:
        return objects[value]
    if module is None:
        raise ValueError(f"{what}: cannot find function {value!r}; pass custom_objects={{{value!r}: fn}}")
    if not code_allowed() and (module not in sys.modules or any(p.startswith("_") for p in value.split("."))):
        raise ValueError(f"{what}: function {value!r} of module {module!r} is not among the loaded modules' "
                         f"public names; import {module} before loading, or pass "
                         f"custom_objects={{{value!r}: fn}}")
    obj: Any = sys.modules[module] if module in sys.modules else importlib.import_module(module)
    for part in value.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise ValueError(f"{what}: {module}.{value} is not a function")
    return obj


def _lambda_globals(module: str | None, custom_objects: dict | None) -> dict:
    """What a stored lambda sees as globals, as Keras 2.3.1's ``Lambda.from_config`` gives it: the
    names of Keras's layer module (its backend as ``K``, numpy as ``np``), then those of the module
    that defined the lambda if it is loaded, then ``custom_objects``."""
    scope: dict[str, Any] = {"K": backend, "np": np}
    if module in sys.modules:
        scope.update(vars(sys.modules[module]))
    elif module is not None:
        try:
            scope.update(vars(importlib.import_module(module)))
        except ImportError:
            warnings.warn(f"Lambda: module {module!r}, where the stored lambda was written, cannot be "
                          "imported; names it used from there will be missing (pass them in custom_objects)",
                          stacklevel=4)
    scope.update(custom_objects or {})
    return scope


class Lambda(KerasLayer, Layer):
    """Wraps ``function(inputs, **arguments)`` as a layer (Keras 2 ``Lambda``).

    ``output_shape``: a tuple (without the batch), a function ``input_shape -> output_shape``
    (batch-first shapes, as Keras 2), or None (found by a probe run). ``mask``: a mask tensor or a
    function ``(inputs, mask) -> mask``.
    """

    # written by get_config and read back by from_config (Keras 2.3.1 uses the same keys)
    _config_keys = ("function_type", "module", "output_shape_type", "output_shape_module")
    # its function may close over symbolic tensors of the graph (see graph/network.py's live forward)
    _may_close_over_graph = True

    def __init__(
        self,
        function: Callable,
        output_shape: Any = None,
        mask: Any = None,
        arguments: dict | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not callable(function):
            raise ValueError(f"Lambda '{self.name}': `function` must be callable, got {function!r}")
        self.function = function
        self._augments = augments(function)  # read once: the step (maybe compiled) reads a bool
        self.arguments = dict(arguments or {})
        if output_shape is not None and not callable(output_shape):
            output_shape = tuple(output_shape)
        self._output_shape = output_shape
        self.mask = mask
        self.supports_masking = mask is not None
        if output_shape is None:  # the functional graph finds the shape by running the function
            self._declares_output_shape = False

    def call(self, inputs: Any, mask: Any = None) -> Any:
        if self._augments:  # `x *= 2` in the function rebinds `x`, as on Keras 2's tensors
            with keras_value_semantics():
                out = self.function(inputs, **self.arguments)
        else:  # (the mode costs a Python call per torch operation: only where the code needs it)
            out = self.function(inputs, **self.arguments)
        if isinstance(out, (list, tuple)) and len(out) == 1:  # Keras 2 unpacks a one-tensor list output
            return out[0]
        return out

    def output_shape_keras(self, input_shape: Any) -> Any:
        if self._output_shape is None:
            shapes = input_shape if isinstance(input_shape, list) else None
            probe = [_probe(s) for s in shapes] if shapes else _probe(tuple(input_shape))
            with torch.no_grad():
                out = self.function(probe, **self.arguments)
            if isinstance(out, (list, tuple)) and len(out) == 1:
                out = out[0]
            if isinstance(out, (list, tuple)):
                return [(None, *tuple(o.shape)[1:]) for o in out]
            return (None, *tuple(out.shape)[1:])
        if callable(self._output_shape):
            shape = self._output_shape(input_shape)
            return [tuple(s) for s in shape] if isinstance(shape, list) else tuple(shape)
        batch = (input_shape[0] if isinstance(input_shape, list) else tuple(input_shape))[0]
        return (batch, *self._output_shape)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        if callable(self.mask):
            return self.mask(inputs, mask)
        return self.mask

    def get_config(self) -> dict:
        cfg = super().get_config()
        value, kind, module = _dump(self.function)
        cfg.update(function=value, function_type=kind, module=module, arguments=self.arguments)
        if self._output_shape is None:
            cfg.update(output_shape=None, output_shape_type="raw")
        elif callable(self._output_shape):
            shape_value, shape_kind, shape_module = _dump(self._output_shape)
            cfg.update(
                output_shape=shape_value, output_shape_type=shape_kind, output_shape_module=shape_module
            )
        else:
            cfg.update(output_shape=list(self._output_shape), output_shape_type="raw")
        return cfg

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None,
                    safe_mode: bool | None = None) -> Lambda:
        """Rebuild from :meth:`get_config` (Keras 2's or ours). A function stored as bytecode is refused
        unless ``safe_mode=False`` (None: the loading call's, else the ``saving.safe_mode`` flag) or
        ``custom_objects`` gives it under the layer's name (``'<name>.output_shape'`` for its
        ``output_shape``); see :mod:`arignote.config.safe_mode`."""
        config = dict(config)
        name = config.get("name", "lambda")
        with safe_mode_scope(safe_mode, "Lambda.from_config"):
            fn = _load(config.pop("function"), config.pop("function_type", "function"),
                       config.pop("module", None), custom_objects, f"layer {name!r} (Lambda)", name)
            shape = config.pop("output_shape", None)
            shape_kind = config.pop("output_shape_type", "raw")
            shape_module = config.pop("output_shape_module", None)
            if shape is not None and shape_kind != "raw":
                shape = _load(shape, shape_kind, shape_module, custom_objects,
                              f"the output_shape function of layer {name!r} (Lambda)", f"{name}.output_shape")
        return cls(fn, output_shape=shape, **config)


def _not_all_equal(x: torch.Tensor, value: float) -> torch.Tensor:
    return (x != value).any(dim=-1)


class Masking(KerasLayer, Layer):
    """Masks time steps whose features all equal ``mask_value`` (default 0.): later mask-aware layers
    (RNNs, ``GlobalAveragePooling1D``...) skip them; the output has those steps zeroed."""

    supports_masking = True
    _config_keys = ("mask_value",)

    def __init__(self, mask_value: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.mask_value = mask_value

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        return ops.apply("not_equal_any", _not_all_equal, inputs, self.mask_value)

    def call(self, x: torch.Tensor, mask: Any = None) -> torch.Tensor:
        keep = (x != self.mask_value).any(dim=-1, keepdim=True)
        return x * keep.to(x.dtype)


class ActivityRegularization(KerasLayer, Layer):
    """Identity that adds ``l1 * sum(|x|) + l2 * sum(x ** 2)`` of its input to ``layer.losses``."""

    supports_masking = True
    _config_keys = ("l1", "l2")

    def __init__(self, l1: float = 0.0, l2: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.l1, self.l2 = l1, l2
        self.activity_regularizer = regularizers.L1L2(l1=l1, l2=l2)

    def call(self, x: torch.Tensor) -> torch.Tensor:
        return self._activity(x)
