"""Losses by name: :func:`get` resolves a Keras 2 name (did-you-mean on typos), a Keras-order
callable or a torch loss module (``nn.CrossEntropyLoss()``, called as ``module(y_pred, y_true)``);
:func:`name_of` gives the canonical name; :func:`serialize` and :func:`deserialize` store a loss as
Keras 2.3.1 does (a name, or ``{'class_name': ..., 'config': ...}`` for a :class:`Loss` object).

Example::

    >>> from arignote.losses.functions import kullback_leibler_divergence
    >>> name_of("mse"), get("kld") is kullback_leibler_divergence
    ('mean_squared_error', True)
"""

from __future__ import annotations

import difflib
from collections.abc import Callable

import torch

from arignote._keras_objects import GLOBAL_CUSTOM_OBJECTS
from arignote.losses.classes import _LOSS_CLASSES, Loss, LossFunctionWrapper
from arignote.losses.functions import _CANONICAL

__all__ = ["get", "name_of", "serialize", "deserialize"]

_ALIASES = {
    "mse": "mean_squared_error",
    "mae": "mean_absolute_error",
    "mape": "mean_absolute_percentage_error",
    "msle": "mean_squared_logarithmic_error",
    "kld": "kullback_leibler_divergence",
    "kl_divergence": "kullback_leibler_divergence",
    "cosine": "cosine_proximity",
    "cosine_similarity": "cosine_proximity",
}
_NAMES = {**_CANONICAL, **{a: _CANONICAL[c] for a, c in _ALIASES.items()}}


def get(identifier: str | Callable) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """A loss function from a Keras name (``'mse'``, ``'categorical_crossentropy'``) or a callable.

    Callables are Keras order ``fn(y_true, y_pred)``; a torch loss module (``nn.MSELoss()``) is
    wrapped so that it is called as ``module(y_pred, y_true)``.

    Example::

        >>> from arignote.losses.functions import mean_squared_error
        >>> get("mse") is mean_squared_error
        True
    """
    if isinstance(identifier, str):
        if identifier in GLOBAL_CUSTOM_OBJECTS:  # get_custom_objects(), looked at first as in Keras 2.3.1
            return get(GLOBAL_CUSTOM_OBJECTS[identifier])
        fn = _NAMES.get(identifier) or _NAMES.get(identifier.lower())
        if fn is None:
            close = difflib.get_close_matches(identifier, list(_NAMES), n=1, cutoff=0.5)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            raise ValueError(f"unknown loss '{identifier}'.{hint} Valid losses: {', '.join(_NAMES)}")
        return fn
    if isinstance(identifier, dict):  # Keras 2.3.1's stored Loss object
        return deserialize(identifier)
    if isinstance(identifier, torch.nn.Module):
        module = identifier

        def torch_loss(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
            return module(y_pred, y_true)

        torch_loss.__name__ = type(module).__name__
        return torch_loss
    if callable(identifier):
        return identifier
    raise ValueError(f"a loss is a name such as 'categorical_crossentropy' or a callable, got {identifier!r}")


def name_of(loss: str | Callable) -> str:
    """Canonical name of a loss (``'mse'`` -> ``'mean_squared_error'``); a callable's ``__name__``; a
    :class:`LossFunctionWrapper`'s function's name (``CategoricalCrossentropy()`` ->
    ``'categorical_crossentropy'``, what picks the accuracy and checks targets as in Keras 2.3.1)."""
    if isinstance(loss, dict):
        loss = deserialize(loss)
    if isinstance(loss, LossFunctionWrapper):
        loss = loss.fn
    fn = get(loss)
    return getattr(fn, "__name__", type(fn).__name__)


def serialize(loss: str | Callable) -> str:
    """The name to store in a saved model (Keras stores the loss by name); a :class:`Loss` object as
    Keras 2.3.1 stores it, ``{'class_name': ..., 'config': get_config()}``."""
    if isinstance(loss, Loss) or (callable(getattr(loss, "get_config", None)) and not isinstance(loss, type)):
        # a Loss, or a user's loss object with state (Keras 2.3.1's serialize_keras_object)
        return {"class_name": type(loss).__name__, "config": loss.get_config()}
    return name_of(loss)


def deserialize(name: str | Callable, custom_objects: dict | None = None) -> Callable:
    """The loss function stored as ``name`` (``custom_objects`` first, as in Keras 2).

    Example::

        >>> from arignote.losses.functions import mean_squared_error
        >>> deserialize("mse") is mean_squared_error
        True
    """
    if isinstance(name, str) and custom_objects and name in custom_objects:
        return custom_objects[name]
    if isinstance(name, dict):  # Keras 2.3.1 {'class_name': 'CategoricalCrossentropy', 'config': {...}}
        classes = {**_LOSS_CLASSES, **GLOBAL_CUSTOM_OBJECTS, **(custom_objects or {})}
        cls = classes.get(name.get("class_name"))
        if cls is None:
            raise ValueError(f"unknown loss class {name.get('class_name')!r}; known: "
                             f"{', '.join(_LOSS_CLASSES)} (pass your own in custom_objects)")
        config = name.get("config", {})
        return cls.from_config(config) if hasattr(cls, "from_config") else cls(**config)
    return get(name)
