"""Keras's ``{"class_name", "config"}`` form of layers: the registry of the built-in layer classes
(the names in :data:`BUILTIN_LAYERS`, registered as they are defined by
:class:`~arignote.layers.base.Layer`'s ``__init_subclass__``, wherever their file is) and of
the model classes (:func:`register_model_class`), :func:`serialize` and :func:`deserialize`
(``custom_objects`` and ``get_custom_objects()`` for a user's own classes).

Example::

    >>> from arignote.layers import Dense
    >>> spec = serialize(Dense(3, name="d"))
    >>> spec["class_name"], deserialize(spec).units
    ('Dense', 3)
"""

from __future__ import annotations

import difflib
import importlib
import inspect
from typing import Any

from arignote._keras_objects import GLOBAL_CUSTOM_OBJECTS
from arignote.config.safe_mode import scope as safe_mode_scope
from arignote.layers.activations import name_of

__all__ = ["LayerConfig", "serialize", "deserialize", "register_model_class", "builtin_class",
           "defer_builtin_modules"]

_REGISTRY: dict[str, type] = {}
# the built-in layer modules not imported yet: arignote.layers loads its families on first use (its
# table _NAMES names them, issue 32); a class name the registry does not know imports them all first,
# so a config finds every built-in class as when the package imported them all
_DEFERRED: list[str] = []


def defer_builtin_modules(modules: list[str]) -> None:
    """Register the modules (from ``arignote.layers``'s table) whose layer classes
    :func:`builtin_class` and :func:`deserialize` import before calling a class name unknown."""
    _DEFERRED.extend(m for m in modules if m not in _DEFERRED)


def builtin_class(name: str) -> type | None:
    """The registered layer or model class ``name`` (None when there is none), importing the
    deferred built-in layer modules when it is not registered yet.

    >>> builtin_class("GRU").__module__, builtin_class("NoSuchLayer") is None
    ('arignote.layers.recurrent', True)
    """
    while name not in _REGISTRY and _DEFERRED:
        importlib.import_module(_DEFERRED.pop(0))
    return _REGISTRY.get(name)

# The built-in layers that deserialize by name and take Keras 1 argument names (Keras 3 marks them
# with @keras_export): listed here, so a file can move without changing what registers, and a layer
# class that is not Keras's (OpLayer, a private base) stays out. Grouped by Keras 2 module.
BUILTIN_LAYERS = frozenset({
    # core, core.dropout, core.lambda_layer
    "Activation", "Dense", "Flatten", "Permute", "RepeatVector", "Reshape", "Dropout", "SpatialDropout1D",
    "SpatialDropout2D", "SpatialDropout3D", "ActivityRegularization", "Lambda", "Masking", "InputLayer",
    # convolutional
    "Conv1D", "Conv2D", "Conv2DTranspose", "Conv3D", "Conv3DTranspose", "DepthwiseConv2D",
    "SeparableConv1D", "SeparableConv2D", "Cropping1D", "Cropping2D", "Cropping3D", "UpSampling1D",
    "UpSampling2D", "UpSampling3D", "ZeroPadding1D", "ZeroPadding2D", "ZeroPadding3D",
    # recurrent, convolutional_recurrent, cudnn_recurrent
    "RNN", "StackedRNNCells", "SimpleRNN", "GRU", "LSTM", "SimpleRNNCell", "GRUCell", "LSTMCell",
    "ConvRNN2D", "ConvLSTM2D", "ConvLSTM2DCell", "CuDNNGRU", "CuDNNLSTM",
    # pooling
    "AveragePooling1D", "AveragePooling2D", "AveragePooling3D", "MaxPooling1D", "MaxPooling2D",
    "MaxPooling3D", "GlobalAveragePooling1D", "GlobalAveragePooling2D", "GlobalAveragePooling3D",
    "GlobalMaxPooling1D", "GlobalMaxPooling2D", "GlobalMaxPooling3D",
    # merge, advanced_activations, embeddings, local, noise, normalization, wrappers, legacy
    "Add", "Average", "Concatenate", "Dot", "Maximum", "Minimum", "Multiply", "Subtract",
    "ELU", "LeakyReLU", "PReLU", "ReLU", "Softmax", "ThresholdedReLU", "Embedding",
    "LocallyConnected1D", "LocallyConnected2D", "AlphaDropout", "GaussianDropout", "GaussianNoise",
    "BatchNormalization", "Bidirectional", "TimeDistributed", "Wrapper", "Highway", "MaxoutDense",
})


def is_builtin(cls: type) -> bool:
    """A class of :data:`BUILTIN_LAYERS` defined by arignote (a user's own ``Dense`` is not)."""
    return cls.__name__ in BUILTIN_LAYERS and cls.__module__.split(".")[0] == "arignote"


def serialize(layer: Any) -> dict:
    """``{"class_name": "Dense", "config": {...}}`` (Keras's layer serialization format)."""
    return {"class_name": type(layer).__name__, "config": layer.get_config()}


def register_model_class(cls: type) -> type:
    """Let :func:`deserialize` rebuild a model class (``Model``, ``Sequential``) met as a layer, e.g.
    inside ``TimeDistributed``: the models register themselves here, so this floor imports nothing
    from theirs.

    >>> class Net:
    ...     @classmethod
    ...     def from_config(cls, config, custom_objects=None): return "built"
    >>> register_model_class(Net) is Net and deserialize({"class_name": "Net", "config": {}})
    'built'
    >>> del _REGISTRY["Net"]
    """
    _REGISTRY[cls.__name__] = cls
    return cls


def deserialize(spec: dict, custom_objects: dict | None = None, safe_mode: bool | None = None) -> Any:
    """Rebuild a layer from :func:`serialize`'s output. ``safe_mode`` (None: the enclosing loading
    call's, else the ``saving.safe_mode`` flag) refuses a function stored as bytecode
    (:mod:`arignote.config.safe_mode`).

    Example::

        >>> deserialize({"class_name": "Dropout", "config": {"rate": 0.5}}).rate
        0.5
    """
    if not isinstance(spec, dict) or "class_name" not in spec:
        raise ValueError(f"a serialized layer is a dict with 'class_name' and 'config', got {spec!r}")
    name = spec["class_name"]
    builtin_class(name)  # a built-in layer's module is imported when first met by name
    classes = {**_REGISTRY, **GLOBAL_CUSTOM_OBJECTS, **(custom_objects or {})}
    cls = classes.get(name)
    if cls is None or name.startswith("_"):
        close = difflib.get_close_matches(name, list(classes), n=1, cutoff=0.6)
        hint = (
            f" Did you mean '{close[0]}'?"
            if close
            else " Pass custom_objects={'Name': cls} for your own layers."
        )
        raise ValueError(f"unknown layer class '{name}'.{hint}")
    config = dict(spec.get("config", {}))
    with safe_mode_scope(safe_mode, "deserialize"):
        if "custom_objects" in inspect.signature(cls.from_config).parameters:  # wrappers, Lambda, RNN cells
            return cls.from_config(config, custom_objects=custom_objects)
        return cls.from_config(config)


class LayerConfig:
    """A layer's config (a mixin of :class:`~arignote.layers.base.Layer`: ``self`` is the layer;
    built-in layers list their constructor arguments in ``_config_keys``)."""

    def _base_config(self) -> dict:
        """The fields every Keras 2 layer config starts with: name, trainable, batch_input_shape (when
        the layer has one), dtype."""
        cfg: dict[str, Any] = {"name": self.name, "trainable": self.trainable}
        if self.batch_input_shape is not None:
            cfg["batch_input_shape"] = list(self.batch_input_shape)
        cfg["dtype"] = self.dtype
        return cfg

    def get_config(self) -> dict:
        """JSON-able constructor kwargs (Keras 2 ``get_config``)."""
        cfg = self._base_config()
        for key in self._config_keys:
            value = getattr(self, key)
            if callable(value):  # an activation function given as a callable
                value = name_of(value)
            cfg[key] = list(value) if isinstance(value, tuple) else value
        return cfg

    @classmethod
    def from_config(cls, config: dict) -> Any:
        """Rebuild a layer from :meth:`get_config`'s output."""
        return cls(**config)
