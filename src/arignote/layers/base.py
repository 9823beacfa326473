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
* The helpers live by concern beside this module: :mod:`~arignote.layers.layer_args` (auto names,
  argument checks), :mod:`~arignote.layers.input_spec`, :mod:`~arignote.layers.layer_tensors`
  (inputs as torch tensors, initial weights) and :mod:`~arignote.layers.serialization`.
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
import re
import warnings
from typing import Any

import numpy as np
import torch
from torch import nn

from arignote import config, constraints, regularizers
from arignote.graph import node as _node
from arignote.graph import state
from arignote.graph.node import symbolic_call
from arignote.graph.tensor import KerasTensor, is_symbolic
from arignote.layers import _trainable, conditional, derived_weights
from arignote.layers.activations import name_of
from arignote.layers.bookkeeping import Bookkeeping, is_metric, is_model, track_metric
from arignote.layers.input_spec import InputSpec, _check_spec
from arignote.layers.layer_args import (  # noqa: F401
    _auto_name,
    _shape_tuple,
    auto_name,
    positive_int,
    reset_name_counters,
    unknown_argument_error,
)
from arignote.layers.layer_tensors import _initial_value, as_torch, persistent_buffers, shape_of
from arignote.layers.serialization import (  # noqa: F401
    _REGISTRY,
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


class Layer(Bookkeeping, nn.Module):
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

    def assert_input_compatibility(self, inputs: Any) -> None:
        """Check symbolic ``inputs`` against ``self.input_spec`` (Keras 2 messages)."""
        if not self.input_spec:
            return
        specs = self.input_spec if isinstance(self.input_spec, (list, tuple)) else [self.input_spec]
        xs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if len(xs) != len(specs):
            raise ValueError(f"Layer {self.name} expects {len(specs)} inputs, but it received {len(xs)} "
                             "input "
                             "tensors")
        for i, (x, spec) in enumerate(zip(xs, specs)):
            if spec is not None and isinstance(x, KerasTensor):
                _check_spec(self, i, x, spec)

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

    # ---------------------------------------------------------------- weights

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

    def add_loss(self, losses: Any, inputs: Any = None) -> None:
        """Keras 2 ``add_loss``: a tensor (or list) added to the training loss. Inside ``call`` it counts
        for that call; a callable (or a tensor given outside ``call``) is kept. ``inputs``: what the
        loss depends on (``get_losses_for``)."""
        conditional.record(self._loss_inputs, losses, inputs)
        for loss in losses if isinstance(losses, (list, tuple)) else [losses]:
            if loss is None:
                continue
            if callable(loss) or isinstance(loss, KerasTensor):
                self._added_losses.append(loss)
            else:
                self._call_losses.append(loss)
                self._losses_forward = state.model_forward_id()

    def _add_activity_loss(self, penalty: Any) -> None:
        """Add the activity penalty of this call's output (``activity_regularizer``) to the loss; Keras
        2.3.1 counts it as conditional on the call's inputs (``get_losses_for(inputs)``, not ``None``)."""
        self.add_loss(penalty)
        self.__dict__["_activity_loss"] = penalty  # noted with the inputs when __call__ returns

    def add_metric(self, value: Any, name: str | None = None) -> None:
        """Keras 2.3.1 ``add_metric(value, name=None)``: ``value``'s running mean logged as ``name``
        (created once, fed at every call), or ``metric(x)`` (:mod:`arignote.layers.added_metrics`)."""
        from arignote.layers import added_metrics  # why: loaded by the first add_metric (first-use imports)

        added_metrics.add_metric(self, value, name)

    def _own_losses(self) -> list:
        """This layer's own losses (not its sublayers'): what a model sums over its modules."""
        out = [fn(p) for p, fn in self._regularizers]
        out += [loss() if callable(loss) else loss for loss in self._added_losses
                if not isinstance(loss, KerasTensor)]
        return out + self._call_losses

    @property
    def losses(self) -> list:
        """Regularization penalties of the current weights, added losses, and the last call's losses
        (this layer and the layers inside it)."""
        return [loss for m in self.modules() if isinstance(m, Layer) for loss in m._own_losses()]

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

    # ---------------------------------------------------------------- nodes (functional API)

    def _node_attr(self, node_index: int, attr: str, what: str) -> Any:
        if not self._inbound_nodes:
            raise AttributeError(f"Layer {self.name} is not connected, no input to return."
                                 if what == "input" else f"The layer {self.name} has never been called and "
                                 f"thus has no defined {what}.")
        if len(self._inbound_nodes) <= node_index:
            raise ValueError(f"Asked to get {what} at node {node_index}, but the layer has only "
                             f"{len(self._inbound_nodes)} inbound nodes.")
        values = getattr(self._inbound_nodes[node_index], attr)
        return values[0] if len(values) == 1 else list(values)

    def get_input_at(self, node_index: int) -> Any:
        return self._node_attr(node_index, "input_tensors", "input")

    def get_output_at(self, node_index: int) -> Any:
        return self._node_attr(node_index, "output_tensors", "output")

    def get_input_shape_at(self, node_index: int) -> Any:
        return self._node_attr(node_index, "input_shapes", "input shape")

    def get_output_shape_at(self, node_index: int) -> Any:
        return self._node_attr(node_index, "output_shapes", "output shape")

    def get_input_mask_at(self, node_index: int) -> Any:
        return self._node_attr(node_index, "input_masks", "input mask")

    def get_output_mask_at(self, node_index: int) -> Any:
        return self._node_attr(node_index, "output_masks", "output mask")

    def _single_node(self, what: str) -> None:
        if len(self._inbound_nodes) > 1:
            raise AttributeError(f"Layer {self.name} has multiple inbound nodes, hence the notion of "
                                 f"\"layer {what}\" is ill-defined. Use `get_{what.replace(' ', '_')}_at"
                                 "(node_index)` instead.")

    @property
    def inbound_nodes(self) -> list:
        return self._inbound_nodes

    @property
    def outbound_nodes(self) -> list:
        return self._outbound_nodes

    @property
    def input(self) -> Any:
        self._single_node("input")
        return self.get_input_at(0)

    @property
    def output(self) -> Any:
        self._single_node("output")
        return self.get_output_at(0)

    @property
    def input_mask(self) -> Any:
        self._single_node("input mask")
        return self.get_input_mask_at(0)

    @property
    def output_mask(self) -> Any:
        self._single_node("output mask")
        return self.get_output_mask_at(0)

    @property
    def input_shape(self) -> Any:
        """The input shape with batch dim (from the first call, or the shape the layer was built for)."""
        if self._inbound_nodes:
            shapes = {str(n.input_shapes) for n in self._inbound_nodes}
            if len(shapes) > 1:
                raise AttributeError(f'The layer "{self.name}" has multiple inbound nodes, with different '
                                     "input shapes. Hence the notion of \"input shape\" is ill-defined for "
                                     "the layer. Use `get_input_shape_at(node_index)` instead.")
            return self.get_input_shape_at(0)
        if self._built_input_shape is not None:
            return self._built_input_shape
        if self.batch_input_shape is not None:
            return self.batch_input_shape
        raise AttributeError(f"The layer {self.name} has never been called and thus has no defined input "
                             "shape.")

    @property
    def output_shape(self) -> Any:
        """The output shape with batch dim."""
        if self._inbound_nodes:
            shapes = {str(n.output_shapes) for n in self._inbound_nodes}
            if len(shapes) > 1:
                raise AttributeError(f'The layer "{self.name}" has multiple inbound nodes, with different '
                                     "output shapes. Use `get_output_shape_at(node_index)` instead.")
            return self.get_output_shape_at(0)
        return self.compute_output_shape(self.input_shape)

    # ---------------------------------------------------------------- config

    def get_config(self) -> dict:
        """JSON-able constructor kwargs (Keras 2 ``get_config``)."""
        cfg: dict[str, Any] = {"name": self.name, "trainable": self.trainable}
        if self.batch_input_shape is not None:
            cfg["batch_input_shape"] = list(self.batch_input_shape)
        cfg["dtype"] = self.dtype
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


_node._BASE_COMPUTE_MASK[0] = Layer.compute_mask
