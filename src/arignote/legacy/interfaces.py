"""Keras 2.3.1's ``keras.legacy.interfaces`` names, for custom layers that decorate their constructor
the way Keras's own layers did (``@interfaces.legacy_dense_support``) or build their own converter
(``generate_legacy_interface``). The conversions themselves live in :mod:`arignote.legacy.conversions`.

Example::

    >>> import warnings
    >>> from arignote.layers import Dense
    >>> class Scaled(Dense):
    ...     @legacy_dense_support
    ...     def __init__(self, units, scale=1.0, **kwargs):
    ...         super().__init__(units, **kwargs)
    ...         self.scale = scale
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     layer = Scaled(output_dim=4, scale=2.0)
    >>> layer.units, str(caught[0].message)
    (4, 'Update your `Scaled` call to the Keras 2 API: `Scaled(scale=2.0, units=4)`')
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from arignote.errors import keras_names_missing
from arignote.legacy.conversions import INTERFACES, Interface, add_weight_args, get_updates_args, support

__all__ = ["generate_legacy_interface", "generate_legacy_method_interface", "raise_duplicate_arg_error",
           "legacy_add_weight_support", "legacy_get_updates_support",
           *(f"legacy_{name}_support" for name in INTERFACES)]


def generate_legacy_interface(allowed_positional_args: list | None = None, conversions: list | None = None,
                              preprocessor: Callable | None = None, value_conversions: dict | None = None,
                              object_type: str = "class") -> Callable[[Callable], Callable]:
    """Keras 2.3.1's converter factory: a decorator renaming ``conversions`` (old, new) pairs, after
    ``preprocessor(args, kwargs) -> (args, kwargs, converted)`` and ``value_conversions``."""
    positional = None if allowed_positional_args is None else tuple(allowed_positional_args)
    spec = Interface(positional, tuple(tuple(c) for c in conversions or ()), dict(value_conversions or {}),
                     preprocessor)
    return support(spec, object_type)


generate_legacy_method_interface = functools.partial(generate_legacy_interface, object_type="method")


def raise_duplicate_arg_error(old_arg: str, new_arg: str) -> None:
    """Keras 2.3.1's error for an old argument name given with its new name."""
    raise TypeError(f"For the `{new_arg}` argument, the layer received both the legacy keyword argument "
                    f"`{old_arg}` and the Keras 2 keyword argument `{new_arg}`. Stick to the latter!")


def legacy_get_updates_support(func: Callable) -> Callable:
    """Keras 2.3.1's decorator of ``Optimizer.get_updates``: Keras 1's ``(params, constraints, loss)``
    order becomes ``(loss=, params=)``."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        args, kwargs = get_updates_args(args, kwargs)
        return func(*args, **kwargs)

    return wrapper


legacy_add_weight_support = add_weight_args
for _name in INTERFACES:
    globals()[f"legacy_{_name}_support"] = support(
        _name, "method" if _name == "generator_methods" else "class")

# Keras 2.3.1's argument preprocessors are the insides of its decorators: here each decorator does
# its own preprocessing, so a layer uses the decorator (the names say which)
_PREPROCESSORS = {
    "add_weight_args_preprocessing": "legacy_add_weight_support",
    "get_updates_arg_preprocessing": "legacy_get_updates_support",
    **{f"{kind}_args_preprocessor": f"legacy_{kind}_support" for kind in (
        "batchnorm", "conv1d", "conv2d", "conv3d", "convlstm2d", "deconv2d", "recurrent", "separable_conv2d",
        "zeropadding2d", "generator_methods")},
    "embedding_kwargs_preprocessor": "legacy_embedding_support",
}
__getattr__ = keras_names_missing(
    "arignote.legacy.interfaces",
    {name: f"the decorator {use} (it runs this conversion itself)" for name, use in _PREPROCESSORS.items()},
    deliberate=True)
