"""Keras 1 argument names, converted to Keras 2 as Keras 2.3.1 did (``keras/legacy/interfaces.py``).

Scripts from 2016-2017 call ``Convolution2D(32, 3, 3, border_mode='same', init='he_normal')``,
``Dense(output_dim=10)``, ``Dropout(p=0.5)``, ``model.fit(x, y, nb_epoch=10)`` or
``fit_generator(gen, samples_per_epoch=..., nb_epoch=...)``. Keras 2.3.1 still ran them: each
constructor or method below renamed the old arguments, converted a few values (``dim_ordering``
``'th'``/``'tf'`` -> ``data_format``, ``consume_less`` -> ``implementation``, ``nb_row, nb_col`` ->
``kernel_size``) and warned ``Update your `Conv2D` call to the Keras 2 API: `Conv2D(32, (3, 3),
padding="same")```; passing an old name and its new name together was a ``TypeError``. This module
holds those conversions as data (:data:`INTERFACES`, and :data:`LAYERS`: which built-in layer uses
which) and applies them once: :class:`arignote.layers.Layer` wraps the constructor of each layer
named in :data:`LAYERS` when the class is created, :class:`arignote.models.Model` its constructor
and generator methods, ``Model.fit`` its ``nb_epoch`` (:func:`fit_kwargs`), and ``Layer.add_weight``
the Keras 1 order ``add_weight(shape, initializer, name, ...)`` (:func:`add_weight_args`).

Example::

    >>> import warnings
    >>> from arignote.layers import Convolution2D
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     conv = Convolution2D(32, 3, 3, border_mode="same", dim_ordering="tf")
    >>> conv.kernel_size, conv.padding, conv.data_format
    ((3, 3), 'same', 'channels_last')
    >>> print(str(caught[0].message).replace("API: ", "API:\\n"))
    Update your `Conv2D` call to the Keras 2 API:
    `Conv2D(32, (3, 3), padding="same", data_format="channels_last")`
"""

from __future__ import annotations

import difflib
import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "Interface",
    "INTERFACES",
    "LAYERS",
    "support",
    "install",
    "fit_kwargs",
    "add_weight_args",
    "get_updates_args",
]

Preprocessor = Callable[[tuple, dict], "tuple[tuple, dict, list]"]


class Interface(NamedTuple):
    """One Keras 2.3.1 ``generate_legacy_interface(...)``: ``positional`` the Keras 2 names that may be
    passed by position (``None``: not checked), ``renames`` (old, new) pairs, ``values`` old name ->
    {old value: new value}, ``pre`` a function of (args, kwargs) -> (args, kwargs, converted) run
    first (args include ``self``)."""

    positional: tuple[str, ...] | None = None
    renames: tuple[tuple[str, str], ...] = ()
    values: dict[str, dict] = {}
    pre: Preprocessor | None = None


_DIM_ORDERING = {"dim_ordering": {"tf": "channels_last", "th": "channels_first", "default": None}}
_WEIGHTS = (
    ("W_regularizer", "kernel_regularizer"),
    ("b_regularizer", "bias_regularizer"),
    ("W_constraint", "kernel_constraint"),
    ("b_constraint", "bias_constraint"),
    ("bias", "use_bias"),
)
_CONV_NAMES = (
    ("nb_filter", "filters"),
    ("subsample", "strides"),
    ("border_mode", "padding"),
    ("dim_ordering", "data_format"),
    ("init", "kernel_initializer"),
    *_WEIGHTS,
)
_POOL = ("pool_size", "strides", "padding")
_AMBIGUOUS_STRIDES = (
    "It seems that you are using the Keras 2 and you are passing both `kernel_size` and "
    "`strides` as integer positional arguments. For safety reasons, this is disallowed. "
    "Pass `strides` as a keyword argument instead."
)
_FORGET_BIAS_IGNORED = (
    "The `forget_bias_init` argument has been ignored. Use `unit_forget_bias=True` "
    "instead to initialize with ones."
)


# ---------------------------------------------------------------- preprocessors (Keras's, in order)


def _embedding(args: tuple, kwargs: dict) -> tuple[tuple, dict, list]:
    if "dropout" in kwargs:
        kwargs.pop("dropout")
        warnings.warn(
            "The `dropout` argument is no longer support in `Embedding`. You can apply a "
            "`keras.layers.SpatialDropout1D` layer right after the `Embedding` layer to get the "
            "same behavior.",
            stacklevel=4,
        )
    return args, kwargs, []


def _forget_bias(kwargs: dict, converted: list) -> None:
    if "forget_bias_init" in kwargs:
        if kwargs.pop("forget_bias_init") == "one":
            kwargs["unit_forget_bias"] = True
            converted.append(("forget_bias_init", "unit_forget_bias"))
        else:
            warnings.warn(_FORGET_BIAS_IGNORED, stacklevel=5)


def _recurrent(args: tuple, kwargs: dict) -> tuple[tuple, dict, list]:
    converted: list = []
    _forget_bias(kwargs, converted)
    if "input_dim" in kwargs:
        length = kwargs.pop("input_length", None)
        kwargs["input_shape"] = (length, kwargs.pop("input_dim"))
        converted.append(("input_dim", "input_shape"))
        warnings.warn(
            "The `input_dim` and `input_length` arguments in recurrent layers are deprecated. "
            "Use `input_shape` instead.",
            stacklevel=4,
        )
    return args, kwargs, converted


def _conv1d(args: tuple, kwargs: dict) -> tuple[tuple, dict, list]:
    if "input_dim" not in kwargs:
        return args, kwargs, []
    length = kwargs.pop("input_length", None)
    kwargs["input_shape"] = (length, kwargs.pop("input_dim"))
    return args, kwargs, [("input_shape", "input_dim")]


def _conv2d(args: tuple, kwargs: dict) -> tuple[tuple, dict, list]:
    """``Conv2D(filters, nb_row, nb_col)`` (positional or keywords) -> ``kernel_size=(nb_row, nb_col)``."""
    converted = [("kernel_size", "nb_row/nb_col")]
    if len(args) > 4:
        raise TypeError("Layer can receive at most 3 positional arguments.")
    if len(args) == 4:
        if isinstance(args[2], int) and isinstance(args[3], int):
            if any(k in kwargs for k in ("padding", "strides", "data_format")):
                raise ValueError(_AMBIGUOUS_STRIDES)
            return (args[0], args[1], (args[2], args[3])), kwargs, converted
    elif len(args) == 3 and isinstance(args[2], int):
        if "nb_col" in kwargs:
            return (args[0], args[1], (args[2], kwargs.pop("nb_col"))), kwargs, converted
    elif len(args) in (1, 2) and "nb_row" in kwargs and "nb_col" in kwargs:
        size = (kwargs.pop("nb_row"), kwargs.pop("nb_col"))
        if len(args) == 2:
            return (*args, size), kwargs, converted
        kwargs["kernel_size"] = size
        return args, kwargs, converted
    return args, kwargs, []


def _separable2d(args: tuple, kwargs: dict) -> tuple[tuple, dict, list]:
    converted = []
    if "init" in kwargs:
        init = kwargs.pop("init")
        kwargs["depthwise_initializer"] = init
        kwargs["pointwise_initializer"] = init
        converted.append(("init", "depthwise_initializer/pointwise_initializer"))
    args, kwargs, more = _conv2d(args, kwargs)
    return args, kwargs, converted + more


def _deconv2d(args: tuple, kwargs: dict) -> tuple[tuple, dict, list]:
    """Keras 1's ``Deconvolution2D(nb_filter, nb_row, nb_col, output_shape, ...)``: the output shape
    is dropped (Keras 2 computes it)."""
    converted = []
    if len(args) == 5 and isinstance(args[4], tuple):
        args = args[:-1]
        converted.append(("output_shape", None))
    if "output_shape" in kwargs:
        kwargs.pop("output_shape")
        converted.append(("output_shape", None))
    args, kwargs, more = _conv2d(args, kwargs)
    return args, kwargs, converted + more


def _conv3d(args: tuple, kwargs: dict) -> tuple[tuple, dict, list]:
    """``Conv3D(filters, kernel_dim1, kernel_dim2, kernel_dim3)`` -> ``kernel_size`` (Keras 2.3.1's cases)."""
    dims = ("kernel_dim1", "kernel_dim2", "kernel_dim3")
    converted = [("kernel_size", "kernel_dim*")]
    if len(args) > 5:
        raise TypeError("Layer can receive at most 4 positional arguments.")
    if len(args) == 5:
        if all(isinstance(x, int) for x in args[2:5]):
            return (args[0], args[1], tuple(args[2:5])), kwargs, converted
    elif len(args) == 4 and isinstance(args[3], int):
        if isinstance(args[2], int) and any(k in kwargs for k in ("padding", "strides", "data_format")):
            raise ValueError(_AMBIGUOUS_STRIDES)
        if "kernel_dim3" in kwargs:
            return (args[0], args[1], (args[2], args[3], kwargs.pop("kernel_dim3"))), kwargs, converted
    elif len(args) == 3:
        if all(x in kwargs for x in dims[1:]):
            size = (args[2], kwargs.pop("kernel_dim2"), kwargs.pop("kernel_dim3"))
            return (args[0], args[1], size), kwargs, converted
    elif len(args) in (1, 2) and all(x in kwargs for x in dims):
        size = tuple(kwargs.pop(x) for x in dims)
        if len(args) == 2:
            return (*args, size), kwargs, converted
        kwargs["kernel_size"] = size
        return args, kwargs, [("kernel_size", "nb_row/nb_col")]
    return args, kwargs, []


def _batchnorm(args: tuple, kwargs: dict) -> tuple[tuple, dict, list]:
    if len(args) > 1:
        raise TypeError(
            "The `BatchNormalization` layer does not accept positional arguments. "
            "Use keyword arguments instead."
        )
    if "mode" not in kwargs:
        return args, kwargs, []
    if kwargs.pop("mode") != 0:
        raise TypeError(
            "The `mode` argument of `BatchNormalization` no longer exists. `mode=1` and "
            "`mode=2` are no longer supported."
        )
    return args, kwargs, [("mode", None)]


def _convlstm2d(args: tuple, kwargs: dict) -> tuple[tuple, dict, list]:
    converted: list = []
    _forget_bias(kwargs, converted)
    args, kwargs, more = _conv2d(args, kwargs)
    return args, kwargs, converted + more


def _pads(spec: dict) -> tuple:
    return (
        (spec.get("top_pad", 0), spec.get("bottom_pad", 0)),
        (spec.get("left_pad", 0), spec.get("right_pad", 0)),
    )


def _zeropadding2d(args: tuple, kwargs: dict) -> tuple[tuple, dict, list]:
    """Keras 1's ``padding={'top_pad': ..., ...}`` -> ``((top, bottom), (left, right))``."""
    keys = {"top_pad", "bottom_pad", "left_pad", "right_pad"}
    if isinstance(kwargs.get("padding"), dict):
        if set(kwargs["padding"]) <= keys:
            kwargs["padding"] = _pads(kwargs["padding"])
            warnings.warn(
                "The `padding` argument in the Keras 2 API no longeraccepts dict types. You can now "
                "input argument as: `padding=(top_pad, bottom_pad, left_pad, right_pad)`.",
                stacklevel=4,
            )
    elif len(args) == 2 and isinstance(args[1], dict) and set(args[1]) <= keys:
        args = (args[0], _pads(args[1]))
        warnings.warn(
            "The `padding` argument in the Keras 2 API no longeraccepts dict types. You can now "
            "input argument as: `padding=((top_pad, bottom_pad), (left_pad, right_pad))`",
            stacklevel=4,
        )
    return args, kwargs, []


def _generator_methods(args: tuple, kwargs: dict) -> tuple[tuple, dict, list]:
    """``samples_per_epoch`` -> ``steps_per_epoch`` (divided by ``generator.batch_size`` when the
    generator has one, else taken as is), and Keras's warning that the counts changed meaning."""
    converted = []
    if len(args) < 3 and "samples_per_epoch" in kwargs:
        samples = kwargs.pop("samples_per_epoch")
        generator = args[1] if len(args) > 1 else kwargs["generator"]
        has_size = hasattr(generator, "batch_size")
        kwargs["steps_per_epoch"] = samples // generator.batch_size if has_size else samples
        converted.append(("samples_per_epoch", "steps_per_epoch"))
    if {"samples_per_epoch", "val_samples", "nb_epoch", "nb_val_samples", "nb_worker"} & kwargs.keys():
        warnings.warn(
            "The semantics of the Keras 2 argument `steps_per_epoch` is not the same as the Keras 1 "
            "argument `samples_per_epoch`. `steps_per_epoch` is the number of batches to draw from "
            "the generator at each epoch. Basically steps_per_epoch = samples_per_epoch/batch_size. "
            "Similarly `nb_val_samples`->`validation_steps` and `val_samples`->`steps` arguments "
            "have changed. Update your method calls accordingly.",
            stacklevel=4,
        )
    return args, kwargs, converted


# ---------------------------------------------------------------- the tables

_RECURRENT_NAMES = (
    ("output_dim", "units"),
    ("init", "kernel_initializer"),
    ("inner_init", "recurrent_initializer"),
    ("inner_activation", "recurrent_activation"),
    ("W_regularizer", "kernel_regularizer"),
    ("b_regularizer", "bias_regularizer"),
    ("U_regularizer", "recurrent_regularizer"),
    ("dropout_W", "dropout"),
    ("dropout_U", "recurrent_dropout"),
    ("consume_less", "implementation"),
)

#: Keras 2.3.1's interfaces (``legacy_<name>_support``), by name
INTERFACES: dict[str, Interface] = {
    "dense": Interface(("units",), (("output_dim", "units"), ("init", "kernel_initializer"), *_WEIGHTS)),
    "dropout": Interface(("rate", "noise_shape", "seed"), (("p", "rate"),)),
    "embedding": Interface(
        ("input_dim", "output_dim"),
        (
            ("init", "embeddings_initializer"),
            ("W_regularizer", "embeddings_regularizer"),
            ("W_constraint", "embeddings_constraint"),
        ),
        pre=_embedding,
    ),
    "pooling1d": Interface(
        _POOL, (("pool_length", "pool_size"), ("stride", "strides"), ("border_mode", "padding"))
    ),
    "prelu": Interface(("alpha_initializer",), (("init", "alpha_initializer"),)),
    "gaussiannoise": Interface(("stddev",), (("sigma", "stddev"),)),
    "recurrent": Interface(
        ("units",), _RECURRENT_NAMES, {"consume_less": {"cpu": 0, "mem": 1, "gpu": 2}}, pre=_recurrent
    ),
    "gaussiandropout": Interface(("rate",), (("p", "rate"),)),
    "pooling2d": Interface(
        _POOL, (("border_mode", "padding"), ("dim_ordering", "data_format")), _DIM_ORDERING
    ),
    "pooling3d": Interface(
        _POOL, (("border_mode", "padding"), ("dim_ordering", "data_format")), _DIM_ORDERING
    ),
    "global_pooling": Interface(None, (("dim_ordering", "data_format"),), _DIM_ORDERING),
    "upsampling1d": Interface(("size",), (("length", "size"),)),
    "upsampling2d": Interface(("size",), (("dim_ordering", "data_format"),), _DIM_ORDERING),
    "upsampling3d": Interface(("size",), (("dim_ordering", "data_format"),), _DIM_ORDERING),
    "conv1d": Interface(
        ("filters", "kernel_size"),
        (
            ("nb_filter", "filters"),
            ("filter_length", "kernel_size"),
            ("subsample_length", "strides"),
            ("border_mode", "padding"),
            ("init", "kernel_initializer"),
            *_WEIGHTS,
        ),
        pre=_conv1d,
    ),
    "conv2d": Interface(("filters", "kernel_size"), _CONV_NAMES, _DIM_ORDERING, _conv2d),
    "separable_conv2d": Interface(
        ("filters", "kernel_size"),
        tuple(p for p in _CONV_NAMES if p[0] not in ("init", "W_regularizer", "W_constraint")),
        _DIM_ORDERING,
        _separable2d,
    ),
    "deconv2d": Interface(("filters", "kernel_size"), _CONV_NAMES, _DIM_ORDERING, _deconv2d),
    "conv3d": Interface(("filters", "kernel_size"), _CONV_NAMES, _DIM_ORDERING, _conv3d),
    "convlstm2d": Interface(
        ("filters", "kernel_size"),
        (
            ("nb_filter", "filters"),
            ("subsample", "strides"),
            ("border_mode", "padding"),
            ("dim_ordering", "data_format"),
            ("init", "kernel_initializer"),
            ("inner_init", "recurrent_initializer"),
            ("W_regularizer", "kernel_regularizer"),
            ("U_regularizer", "recurrent_regularizer"),
            ("b_regularizer", "bias_regularizer"),
            ("inner_activation", "recurrent_activation"),
            ("dropout_W", "dropout"),
            ("dropout_U", "recurrent_dropout"),
            ("bias", "use_bias"),
        ),
        _DIM_ORDERING,
        _convlstm2d,
    ),
    "batchnorm": Interface(
        (), (("beta_init", "beta_initializer"), ("gamma_init", "gamma_initializer")), pre=_batchnorm
    ),
    "zeropadding2d": Interface(
        ("padding",), (("dim_ordering", "data_format"),), _DIM_ORDERING, _zeropadding2d
    ),
    "zeropadding3d": Interface(("padding",), (("dim_ordering", "data_format"),), _DIM_ORDERING),
    "cropping2d": Interface(("cropping",), (("dim_ordering", "data_format"),), _DIM_ORDERING),
    "cropping3d": Interface(("cropping",), (("dim_ordering", "data_format"),), _DIM_ORDERING),
    "spatialdropout1d": Interface(("rate",), (("p", "rate"),)),
    "spatialdropoutNd": Interface(("rate",), (("p", "rate"), ("dim_ordering", "data_format")), _DIM_ORDERING),
    "lambda": Interface(("function", "output_shape")),
    "generator_methods": Interface(
        ("generator", "steps_per_epoch", "epochs"),
        (
            ("samples_per_epoch", "steps_per_epoch"),
            ("val_samples", "steps"),
            ("nb_epoch", "epochs"),
            ("nb_val_samples", "validation_steps"),
            ("nb_worker", "workers"),
            ("pickle_safe", "use_multiprocessing"),
            ("max_q_size", "max_queue_size"),
        ),
        pre=_generator_methods,
    ),
    "model_constructor": Interface(None, (("input", "inputs"), ("output", "outputs"))),
    "input": Interface(None, (("input_dtype", "dtype"),)),
}

#: which built-in layer's constructor takes which interface (where Keras 2.3.1 put each decorator)
LAYERS: dict[str, str] = {
    "Dense": "dense",
    "Dropout": "dropout",
    "SpatialDropout1D": "spatialdropout1d",
    "SpatialDropout2D": "spatialdropoutNd",
    "SpatialDropout3D": "spatialdropoutNd",
    "Lambda": "lambda",
    "Embedding": "embedding",
    "PReLU": "prelu",
    "GaussianNoise": "gaussiannoise",
    "GaussianDropout": "gaussiandropout",
    "BatchNormalization": "batchnorm",
    "SimpleRNN": "recurrent",
    "GRU": "recurrent",
    "LSTM": "recurrent",
    "ConvLSTM2D": "convlstm2d",
    "Conv1D": "conv1d",
    "Conv2D": "conv2d",
    "Conv3D": "conv3d",
    "Conv2DTranspose": "deconv2d",
    "SeparableConv2D": "separable_conv2d",
    "LocallyConnected1D": "conv1d",
    "LocallyConnected2D": "conv2d",
    "MaxPooling1D": "pooling1d",
    "AveragePooling1D": "pooling1d",
    "MaxPooling2D": "pooling2d",
    "AveragePooling2D": "pooling2d",
    "MaxPooling3D": "pooling3d",
    "AveragePooling3D": "pooling3d",
    "GlobalMaxPooling2D": "global_pooling",
    "GlobalAveragePooling2D": "global_pooling",
    "GlobalMaxPooling3D": "global_pooling",
    "GlobalAveragePooling3D": "global_pooling",
    "UpSampling1D": "upsampling1d",
    "UpSampling2D": "upsampling2d",
    "UpSampling3D": "upsampling3d",
    "ZeroPadding2D": "zeropadding2d",
    "ZeroPadding3D": "zeropadding3d",
    "Cropping2D": "cropping2d",
    "Cropping3D": "cropping3d",
    "InputLayer": "input",
}


# ---------------------------------------------------------------- applying them


def _shown(value: Any) -> str:
    """A value as Keras's warning shows it: strings quoted, arrays as ``array``, the rest cut at 10."""
    if isinstance(value, str):
        return '"' + value + '"'
    text = "array" if isinstance(value, np.ndarray) else str(value)
    return text[:10] + "..." if len(text) > 10 else text


def _convert(spec: Interface, name: str, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    converted: list = []
    if spec.pre is not None:
        args, kwargs, converted = spec.pre(args, kwargs)
    if spec.positional is not None and len(args) > len(spec.positional) + 1:
        raise TypeError(
            f"`{name}` can accept only {len(spec.positional)} positional arguments "
            f"{tuple(spec.positional)}, but you passed the following positional arguments: "
            f"{list(args[1:])}"
        )
    for key, table in spec.values.items():
        if key in kwargs:
            try:
                kwargs[key] = table.get(kwargs[key], kwargs[key])
            except TypeError:  # an unhashable value: not one of the old spellings
                pass
    for old, new in spec.renames:
        if old in kwargs:
            value = kwargs.pop(old)
            if new in kwargs:
                raise TypeError(
                    f"For the `{new}` argument, the layer received both the legacy keyword argument "
                    f"`{old}` and the Keras 2 keyword argument `{new}`. Stick to the latter!"
                )
            kwargs[new] = value
            converted.append((new, old))
    if converted:
        shown = [_shown(v) for v in args[1:]] + [f"{k}={_shown(v)}" for k, v in kwargs.items()]
        warnings.warn(
            f"Update your `{name}` call to the Keras 2 API: `{name}({', '.join(shown)})`", stacklevel=3
        )
    return args, kwargs


def support(interface: str | Interface, object_type: str = "class") -> Callable[[Callable], Callable]:
    """Decorator: run ``INTERFACES[interface]`` (or an :class:`Interface`) on a constructor
    (``object_type='class'``: the warning names the class) or method (``'method'``: it names the
    method) before it, as Keras 2.3.1's ``legacy_*_support`` decorators."""
    spec = INTERFACES[interface] if isinstance(interface, str) else interface

    def decorate(func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            name = type(args[0]).__name__ if object_type == "class" else func.__name__
            args, kwargs = _convert(spec, name, args, kwargs)
            return func(*args, **kwargs)

        wrapper._legacy_interface = interface  # type: ignore[attr-defined]
        return wrapper

    return decorate


def install(cls: type) -> None:
    """Wrap ``cls.__init__`` with its :data:`LAYERS` interface (called by ``Layer.__init_subclass__``
    for built-in layers; a class that inherits an already wrapped constructor keeps it)."""
    interface = LAYERS.get(cls.__name__)
    init = cls.__init__  # type: ignore[misc]
    if interface is None or getattr(init, "_legacy_interface", None) == interface:
        return
    cls.__init__ = support(interface)(init)  # type: ignore[misc]


def fit_kwargs(kwargs: dict, epochs: int, method: Callable | None = None) -> int:
    """``Model.fit``'s Keras 1 ``nb_epoch``: the epochs to run (Keras 2.3.1's warning); any other
    leftover keyword is Keras's ``TypeError``, followed by the closest names ``method`` takes."""
    if "nb_epoch" in kwargs:
        warnings.warn("The `nb_epoch` argument in `fit` has been renamed `epochs`.", stacklevel=3)
        epochs = kwargs.pop("nb_epoch")
    if kwargs:
        hint = ""
        if method is not None:
            names = [n for n in inspect.signature(method).parameters if n not in ("self", "kwargs")]
            close = sorted({m for k in kwargs for m in difflib.get_close_matches(k, names, n=1)})
            hint = f" (did you mean {', '.join(map(repr, close))}?)" if close else \
                f" ({method.__name__} takes {', '.join(names)})"
        raise TypeError("Unrecognized keyword arguments: " + str(kwargs) + hint)
    return epochs


def add_weight_args(func: Callable) -> Callable:
    """Decorator of ``Layer.add_weight``: the Keras 1 / 2.0.0-2.0.4 order ``add_weight(shape,
    initializer, name=None, trainable=True, regularizer=None, constraint=None)`` -- recognised by a
    tuple or list first -- becomes keywords of the Keras 2 ``add_weight(name, shape, ...)``, silently
    as Keras 2.0.5-2.2.5 did (Keras 2.3.1 had dropped the conversion; its ``add_weight`` raised)."""
    keras1 = ("shape", "initializer", "name", "trainable", "regularizer", "constraint")

    @functools.wraps(func)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if args and isinstance(args[0], (tuple, list)):
            if len(args) > len(keras1):
                raise TypeError(
                    f"add_weight takes at most {len(keras1)} positional arguments in the Keras 1 "
                    f"order {keras1}, got {len(args)}"
                )
            for key, value in zip(keras1, args, strict=False):
                if key in kwargs:
                    raise TypeError(
                        f"add_weight got multiple values for argument '{key}' (Keras 1 order {keras1})"
                    )
                kwargs[key] = value
            args = ()
        return func(self, *args, **kwargs)

    return wrapper


def get_updates_args(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """Keras 1's ``optimizer.get_updates(params, constraints, loss)`` -> Keras 2's ``(loss, params)``
    keywords (``args`` include the optimizer), as Keras 2.3.1's ``legacy_get_updates_support``."""
    if len(args) > 4:
        raise TypeError("`get_update` call received more arguments than expected.")
    if len(args) == 4:
        kwargs["loss"], kwargs["params"] = args[3], args[1]
        return args[:1], kwargs
    if len(args) == 3 and isinstance(args[1], (list, tuple)):
        if not isinstance(args[2], dict) or "loss" not in kwargs:
            raise TypeError(
                "get_updates(params, constraints, loss=...): constraints must be a dict and the loss given"
            )
        kwargs["params"] = args[1]
        return args[:1], kwargs
    return args, kwargs
