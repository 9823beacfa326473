"""The Keras 2 ``Layer`` contract on a ``torch.nn.Module`` (what custom layers and models rely on).

* Tensors between layers are in Keras layout: images ``(batch, height, width, channels)``
  (channels_last; image layers view them as NCHW for torch's kernels, a free permute of a
  channels-last tensor), sequences ``(batch, steps, features)``.
* ``build(input_shape)`` gets the full input shape with the batch dimension (``None`` when unknown),
  e.g. ``(None, 32, 32, 3)``; a list of shapes for layers called on a list. It creates the weights
  (``add_weight`` or plain ``nn.Parameter``) and ends with ``super().build(input_shape)``
  (``self.built = True``). A layer is built on its first call, from a torch tensor, a numpy array or
  a symbolic tensor of the functional API.
* ``call(inputs, **kwargs)`` computes; it may take ``mask=None`` (the mask of the input, travelling
  beside it as in Keras 2) and ``training=None`` (filled with the module's ``training`` flag).
  ``forward`` runs ``call``; ``layer(x)`` goes through ``nn.Module.__call__`` (hooks work).
* ``compute_output_shape(input_shape)`` and ``compute_mask(inputs, mask)`` with batch dims, as Keras 2.
  A custom layer without ``compute_output_shape`` gets its output shape from one run on zeros;
  one with it still runs its call once (on zeros) when it holds sublayers not built yet, as Keras 2.
* ``add_weight(name, shape, dtype, initializer, regularizer, trainable, constraint)``,
  ``add_loss``, ``losses`` (regularization penalties of the current weights + losses added by the
  last ``call``), ``weights`` / ``trainable_weights`` / ``non_trainable_weights``,
  ``get_weights`` / ``set_weights`` (Keras layouts), ``count_params``; ``add_metric(value, name)``
  and ``metrics`` (:mod:`~arignote.layers.added_metrics`).
* ``get_config()`` returns JSON-able constructor kwargs (Keras 2 keys: ``name``, ``trainable``,
  ``batch_input_shape``, ``dtype`` + the layer's own); ``from_config(cfg)`` rebuilds;
  :func:`serialize` / :func:`deserialize` speak Keras's ``{"class_name", "config"}`` form.
* The rest of ``Layer`` comes from one mixin per concern: :mod:`~arignote.layers.layer_weights`
  (``add_weight``, weight lists, ``get_weights``), :mod:`~arignote.layers.bookkeeping` (losses,
  updates), :mod:`~arignote.layers.layer_nodes` (``input``, ``output_shape``, ``get_output_at``),
  :mod:`~arignote.layers.serialization` (``get_config``, ``from_config``, the registry) and
  :mod:`~arignote.layers.input_spec` (``assert_input_compatibility``); helpers:
  :mod:`~arignote.layers.layer_args` (auto names, argument checks) and
  :mod:`~arignote.layers.layer_tensors` (inputs as torch tensors, initial weights).
* ``name`` is a Keras auto name (``conv2d_1``, ``dense_2``) unless given; ``input``, ``output``,
  ``input_shape``, ``output_shape``, ``get_output_at(i)`` ... read the nodes of functional calls.

Example::

    >>> import torch
    >>> from arignote.layers import Dense
    >>> d = Dense(10, input_dim=784)
    >>> d.batch_input_shape, d.compute_output_shape((None, 784))
    ((None, 784), (None, 10))
    >>> d(torch.zeros(2, 784)).shape   # built on first call
    torch.Size([2, 10])
"""

from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any

import torch
from torch import nn

from arignote import config
from arignote.graph import node as _node
from arignote.graph import state
from arignote.graph.node import symbolic_call
from arignote.graph.tensor import is_symbolic
from arignote.layers import _trainable, conditional, derived_weights
from arignote.layers.bookkeeping import Bookkeeping, is_metric, is_model, track_metric
from arignote.layers.input_spec import InputChecks, InputSpec
from arignote.layers.layer_args import (  # noqa: F401
    _auto_name,
    _shape_tuple,
    auto_name,
    positive_int,
    reset_name_counters,
    unknown_argument_error,
)
from arignote.layers.layer_nodes import NodeAccess
from arignote.layers.layer_tensors import as_torch, shape_of
from arignote.layers.layer_weights import LayerWeights
from arignote.layers.serialization import (  # noqa: F401
    _REGISTRY,
    LayerConfig,
    builtin_class,
    deserialize,
    is_builtin,
    register_model_class,
    serialize,
)
from arignote.layers.value_semantics import is_user_layer, keras_value_semantics, layer_augments
from arignote.legacy import conversions as legacy_interfaces

# (noqa F401) auto_name, positive_int and register_model_class stay importable from here: the layers,
# the graph and the models import them from this module
__all__ = [
    "Layer",
    "InputSpec",
    "serialize",
    "deserialize",
    "reset_name_counters",
    "unknown_argument_error",
]

# kwargs every layer accepts (Keras 2 ``Layer.__init__``; input_dim as the layers that take it)
_BASE_KWARGS = ("name", "input_shape", "input_dim", "batch_input_shape", "batch_size", "dtype", "trainable",
                "weights", "input_dtype")


def _accepts(fn: Any, name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _mask_of_symbolic(compute_mask: Any) -> Any:
    """``compute_mask`` (written for torch tensors) that records a graph node when it is given
    symbolic tensors (:func:`arignote.graph.node.symbolic_mask`)."""
    if getattr(compute_mask, "_takes_symbolic", False):
        return compute_mask

    @functools.wraps(compute_mask)
    def wrapper(self: Any, inputs: Any, mask: Any = None, *args: Any, **kwargs: Any) -> Any:
        # a mask given as values (not symbolic) keeps the plain call: a merge's masks need no graph
        if not args and not kwargs and (is_symbolic(mask) or (mask is None and is_symbolic(inputs))):
            return _node.symbolic_mask(self, compute_mask, inputs, mask)
        return compute_mask(self, inputs, mask, *args, **kwargs)

    wrapper._takes_symbolic = True  # type: ignore[attr-defined]
    return wrapper


class _FrozenNames(frozenset):
    """``Layer._frozen`` while pickled: parameter names instead of ids."""


class Layer(Bookkeeping, LayerWeights, NodeAccess, LayerConfig, InputChecks, nn.Module):
    """Base of every arignote layer (the Keras 2 contract above).

    Built-in layers list their constructor arguments in ``_config_keys`` for ``get_config``.
    """

    device_context = None  # set by the placement engineer (arignote.parallel.placement)
    _keras_layer = True  # what arignote.layers._trainable tells layers by
    supports_masking = False
    _config_keys: tuple[str, ...] = ()
    _output_dtype: str | None = None  # dtype of symbolic outputs (default floatX)
    _call_takes_mask = False
    _call_takes_training = False
    _declares_output_shape = False
    _value_semantics = False
    _user_layer = False

    def __init__(self, **kwargs: Any) -> None:
        early = self.__dict__.pop("_early_modules", {})
        super().__init__()
        for name, module in early.items():
            setattr(self, name, module)
        for key in kwargs:
            if key not in _BASE_KWARGS:
                raise unknown_argument_error(type(self).__name__, key, [*self._config_keys, *_BASE_KWARGS])
        self.name = kwargs.get("name") or _auto_name(type(self))
        self._frozen: set[int] = set()  # ids of weights added with trainable=False
        self._regularizers: list[tuple[Any, Any]] = []
        self.constraints: dict[str, Any] = {}  # weight name -> constraint (applied after each update)
        self._added_losses: list[Any] = []
        self._updates: list[tuple] = []  # (update, inputs key): Keras's bookkeeping (layers.conditional)
        self._loss_inputs: list[tuple] = []  # (loss, inputs key) of add_loss, for get_losses_for
        self._call_losses: list[Any] = []
        self._losses_forward: int | None = None  # the model forward that made _call_losses
        self.trainable = bool(kwargs.get("trainable", True))
        self.dtype_name = kwargs.get("dtype") or kwargs.get("input_dtype")
        self.built = False
        self.input_spec: Any = None
        self._inbound_nodes: list[Any] = []
        self._outbound_nodes: list[Any] = []
        self._built_input_shape: Any = None
        self._initial_weights = kwargs.get("weights")
        self.batch_input_shape: tuple | None = None
        if kwargs.get("batch_input_shape") is not None:
            self.batch_input_shape = _shape_tuple(kwargs["batch_input_shape"], "batch_input_shape")
        elif kwargs.get("input_shape") is not None:
            shape = _shape_tuple(kwargs["input_shape"], "input_shape")
            self.batch_input_shape = (kwargs.get("batch_size"), *shape)
        elif kwargs.get("input_dim") is not None:
            shape = _shape_tuple(kwargs["input_dim"], "input_dim")
            self.batch_input_shape = (kwargs.get("batch_size"), *shape)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # built-in layers only (listed in serialization.BUILTIN_LAYERS): a user's class (even one
        # named Dense) needs custom_objects, as in Keras
        if is_builtin(cls):
            _REGISTRY[cls.__name__] = cls
            legacy_interfaces.install(cls)  # Keras 1 argument names, as Keras 2.3.1 converted them
        # built-in layers may define forward(x, mask=None) directly instead of call
        entry = cls.call if cls.forward is Layer.forward else cls.forward
        cls._call_takes_mask = _accepts(entry, "mask")
        cls._call_takes_training = "training" in inspect.signature(cls.call).parameters
        cls._declares_output_shape = cls.compute_output_shape is not Layer.compute_output_shape
        if "compute_mask" in cls.__dict__:  # asked on symbolic tensors: a mask tensor of the graph
            cls.compute_mask = _mask_of_symbolic(cls.__dict__["compute_mask"])
        # a custom layer whose code has an augmented assignment runs under Keras's value semantics
        # (decided here, once: a plain class attribute that torch.compile reads as a constant)
        cls._user_layer = is_user_layer(cls)
        cls._value_semantics = layer_augments(cls) if cls._user_layer else False

    def __getstate__(self) -> dict:
        # the weights created with trainable=False by name: a copy (pickle, deepcopy) has new ids
        state = self.__dict__.copy()
        state.pop("_activity_call", None)  # the last call's penalty and weak references to its inputs
        state.pop("_activity_loss", None)
        # the last call's losses are tensors of its autograd graph (deepcopy refuses them): a copy has
        # none until it is called, as a fresh layer
        state["_call_losses"], state["_losses_forward"] = [], None
        state["_frozen"] = _FrozenNames(n for n, p in self._parameters.items() if p is not None and id(p)
                                        in self._frozen)
        return state

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        if isinstance(self._frozen, _FrozenNames):
            self._frozen = {id(self._parameters[n]) for n in self._frozen if n in self._parameters}

    def __setattr__(self, name: str, value: Any) -> None:
        if is_metric(value):  # Keras 2.3.1 tracks a metric attribute (its place in order)
            track_metric(self, value)
        if isinstance(value, nn.Module) and "_modules" not in self.__dict__:
            # a sublayer set before super().__init__() (keras-multi-head's MultiHead wrapper): held
            # until Layer.__init__ has made the module, then registered there
            self.__dict__.setdefault("_early_modules", {})[name] = value
            object.__setattr__(self, name, value)
            return
        if isinstance(value, Layer) or is_model(value):
            self.__dict__.setdefault("_sublayer_names", {})[name] = None  # Keras's _layers, in order
            if not isinstance(value, nn.Module) and "_modules" in self.__dict__:
                # a model held by a custom layer: its weights are the layer's (Keras 2 tracks it)
                self._modules[f"_model_{name}"] = value.module
                object.__setattr__(self, name, value)
                return
        derived = self.__dict__.get("_derived")
        if derived is not None and name in derived:
            del derived[name]
        if (isinstance(value, torch.Tensor) and not isinstance(value, nn.Parameter)
                and "_parameters" in self.__dict__ and name not in self._buffers):
            recipe = derived_weights.recipe_of(value, derived_weights.current_tape())
            if name in self._parameters or recipe.reads_weights():
                self._derive(name, recipe)
                return
        super().__setattr__(name, value)

    def _derive(self, name: str, recipe: Any) -> None:
        """``self.kernel = K.clip(self.kernel, -c, c)`` in ``build`` (or any tensor stored over a weight's
        name): the attribute is computed again from the weights at each read, as Keras 2's graph does
        (:mod:`arignote.layers.derived_weights`); the weight stays a weight."""
        param = self._parameters.get(name)
        if param is not None and any(p is param for n, p in self._parameters.items() if n != name):
            del self._parameters[name]  # only an alias of a weight registered under its add_weight name
        self.__dict__.setdefault("_derived", {})[name] = recipe

    def __getattr__(self, name: str) -> Any:
        derived = self.__dict__.get("_derived")
        if derived is not None and name in derived:
            return derived[name].value()
        try:
            return super().__getattr__(name)
        except AttributeError:
            prop = getattr(type(self), name, None)
            if isinstance(prop, property):  # a property raised AttributeError: show its own message
                return prop.fget(self)
            raise

    # ---------------------------------------------------------------- shapes and flags

    @property
    def input_shape_hint(self) -> tuple | None:
        """The per-sample input shape declared with ``input_shape=``/``input_dim=`` (or None)."""
        return None if self.batch_input_shape is None else tuple(self.batch_input_shape[1:])

    @property
    def dtype(self) -> str:
        """Keras ``layer.dtype``: the weights' float type name (``floatX`` unless given)."""
        return self.dtype_name or config.get("floatX")

    @property
    def trainable(self) -> bool:
        """Keras ``layer.trainable``: setting it (before compile) freezes or unfreezes the weights.
        A weight trains while its own layer and every layer (and model) holding it are trainable:
        unfreezing a layer leaves a sublayer the user froze frozen, and a layer inside a frozen one
        stays frozen (:mod:`arignote.layers._trainable`)."""
        return self._trainable

    @trainable.setter
    def trainable(self, value: bool) -> None:
        self._trainable = bool(value)
        _trainable.apply(self)

    # ---------------------------------------------------------------- calling

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(inputs, torch.Tensor):
            if is_symbolic(inputs):
                if args:
                    raise TypeError(f"layer '{self.name}': pass extra call arguments by keyword on "
                                    "symbolic tensors, e.g. layer(x, training=True)")
                return symbolic_call(self, inputs, kwargs)
            inputs = as_torch(inputs)
        if not self.built:
            self._build_once(shape_of(inputs))
        out = super().__call__(inputs, *args, **kwargs)
        if "_activity_loss" in self.__dict__:  # get_losses_for(inputs) finds this call's activity penalty
            conditional.note_activity_call(self, inputs)
        return out

    def forward(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        state.set_phase(self.training)
        if self._call_takes_training and kwargs.get("training") is None:
            # K.set_learning_phase(0|1) pins it for fit and predict alike, as in Keras 2 (a BatchNormalization
            # then normalizes with the batch's statistics in predict, or with its averages in fit)
            forced = state.forced_phase()
            kwargs["training"] = self.training if forced is None else bool(forced)
        if self._call_losses:  # a new forward: the losses of the last one go (not those of this one,
            forward_id = state.model_forward_id()  # when the layer is shared)
            if forward_id is None or forward_id != self._losses_forward:
                self._call_losses = []
        if self._value_semantics:  # a custom layer's `a *= mask` rebinds `a`, as on Keras 2's tensors
            with keras_value_semantics():  # (only a class whose code has one pays the mode)
                return self.call(inputs, *args, **kwargs)
        return self.call(inputs, *args, **kwargs)

    def call(self, inputs: Any, **kwargs: Any) -> Any:
        """The computation (Keras 2 ``call``); the base layer returns its input unchanged."""
        return inputs

    def add_metric(self, value: Any, name: str | None = None) -> None:
        """Keras 2.3.1 ``add_metric(value, name=None)``: ``value``'s running mean logged as ``name``
        (created once, fed at every call), or ``metric(x)`` (:mod:`arignote.layers.added_metrics`)."""
        from arignote.layers import added_metrics  # why: loaded by the first add_metric (first-use imports)

        added_metrics.add_metric(self, value, name)

    # ---------------------------------------------------------------- building

    def build(self, input_shape: Any) -> None:
        """Create the weights for ``input_shape`` (with the batch dim); subclasses end with
        ``super().build(input_shape)``."""
        self._built_input_shape = input_shape
        self.built = True

    def _build_once(self, input_shape: Any) -> None:
        """Build from the first input (what ``__call__`` and the models do); applies ``trainable``
        and the ``weights=`` given to the constructor."""
        if self.batch_input_shape is not None and isinstance(input_shape, tuple):
            declared = self.batch_input_shape[1:]
            if len(declared) == len(input_shape) - 1 and any(
                    d is not None and s is not None and d != s for d, s in zip(declared, input_shape[1:])):
                # Keras 2 feeds a layer what it is called on and ignores its input_shape: so do we
                warnings.warn(f"layer '{self.name}' declares input_shape={declared} but is called on input "
                              f"of shape {input_shape}: the input_shape is ignored, as in Keras 2 "
                              "(remove it)", stacklevel=3)
        if self._user_layer:  # a tensor `build` derives from the weights stays an expression of them
            with derived_weights.recording():
                self.build(input_shape)
        else:
            self.build(input_shape)
        self.built = True
        if self._built_input_shape is None:
            self._built_input_shape = input_shape
        _trainable.apply(self)  # its flags, and those of a model frozen before it was built
        if self._initial_weights is not None:
            weights, self._initial_weights = self._initial_weights, None
            self.set_weights(weights)

    def compute_output_shape(self, input_shape: Any) -> Any:
        """Output shape(s) for ``input_shape`` (with the batch dim). Base: unchanged."""
        return input_shape

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The output mask (Keras 2): ``mask`` passed on when ``supports_masking``, else None (and an
        error when a mask arrives at a layer that cannot use it)."""
        if not self.supports_masking:
            masks = mask if isinstance(mask, (list, tuple)) else [mask]
            if any(m is not None for m in masks):
                raise TypeError(f"Layer {self.name} does not support masking, but was passed an input_mask; "
                                "remove mask_zero=True / the Masking layer before it, or put a layer that "
                                "consumes the mask (an RNN, GlobalAveragePooling1D) in between")
            return None
        return mask

    def extra_repr(self) -> str:
        return f"name={self.name!r}"


_node._BASE_COMPUTE_MASK[0] = Layer.compute_mask
