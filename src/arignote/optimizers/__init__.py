"""Keras 2 optimizers (``SGD``, ``RMSprop``, ``Adam``, ``Adadelta``, ``Adagrad``, ``Adamax``, ``Nadam``)
on ``torch.optim``, and Keras 2's ``get`` / ``serialize`` / ``deserialize`` by name.

Each update is numerically Keras 2's rule (:mod:`arignote.optimizers.keras_rules` says how), run by
torch's multi-tensor (``foreach``) or fused kernels (:mod:`arignote.optimizers.implementation`);
:class:`Optimizer` (:mod:`arignote.optimizers.base`) is the facade the training loop drives.
Keras 2 spellings ``lr`` and ``decay`` are accepted, as are ``learning_rate``, ``clipnorm`` and
``clipvalue``. Lowercase aliases (``optimizers.rmsprop``) exist as in Keras 2.

Example::

    >>> import torch
    >>> w = torch.nn.Parameter(torch.ones(2))
    >>> opt = SGD(lr=0.5).build([w])
    >>> w.sum().backward(); opt.step(); w.tolist(), opt.iterations
    ([0.5, 0.5], 1)
"""

from __future__ import annotations

import difflib

import torch

from arignote.backend.variables import HyperParameter
from arignote.errors import keras_names_missing
from arignote.optimizers.base import Optimizer
from arignote.optimizers.keras_rules import SGD, Adadelta, Adagrad, Adam, Adamax, Nadam, RMSprop

__all__ = ["Optimizer", "HyperParameter", "SGD", "RMSprop", "Adam", "Adadelta", "Adagrad", "Adamax", "Nadam",
           "get", "serialize", "deserialize", "sgd", "rmsprop", "adam", "adadelta", "adagrad", "adamax",
           "nadam"]  # fmt: skip


# Keras 2 lowercase aliases
sgd, rmsprop, adam, adadelta, adagrad, adamax, nadam = SGD, RMSprop, Adam, Adadelta, Adagrad, Adamax, Nadam

_CLASSES = {"sgd": SGD, "rmsprop": RMSprop, "adam": Adam, "adadelta": Adadelta, "adagrad": Adagrad,
            "adamax": Adamax, "nadam": Nadam}


def get(identifier: str | Optimizer | dict) -> Optimizer:
    """An :class:`Optimizer` from a name (``'rmsprop'``, defaults), an instance, or a serialized dict.

    Example::

        >>> get("adam").lr
        0.001
    """
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, dict):
        cls = _CLASSES.get(str(identifier.get("class_name", "")).lower())
        if cls is None:
            raise ValueError(f"unknown optimizer class in {identifier!r}; valid: {', '.join(_CLASSES)}")
        return cls.from_config(identifier.get("config", {}))
    if isinstance(identifier, str):
        cls = _CLASSES.get(identifier.lower())
        if cls is None:
            close = difflib.get_close_matches(identifier.lower(), list(_CLASSES), n=1, cutoff=0.5)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            raise ValueError(
                f"unknown optimizer '{identifier}'.{hint} Valid optimizers: {', '.join(_CLASSES)}"
            )
        return cls()
    if isinstance(identifier, torch.optim.Optimizer):
        raise ValueError(
            "a torch.optim optimizer is already bound to parameters; pass an arignote optimizer "
            "(e.g. optimizers.Adam(lr=1e-3)) or its name"
        )
    raise ValueError(f"an optimizer is a name such as 'rmsprop' or an Optimizer, got {identifier!r}")


def serialize(optimizer: Optimizer) -> dict:
    """``{"class_name": "Adam", "config": {...}}`` (Keras format)."""
    return {"class_name": type(optimizer).__name__, "config": optimizer.get_config()}


def deserialize(config: dict, custom_objects: dict | None = None) -> Optimizer:
    """An optimizer from :func:`serialize`'s ``{"class_name", "config"}`` (``custom_objects`` first).
    As Keras 2.3.1's, it lowercases a built-in optimizer's ``class_name`` in the dict it is given
    (``'SGD'`` -> ``'sgd'``, the name of its lowercase alias): code comparing configs after a
    round trip relies on that."""
    name = config.get("class_name") if isinstance(config, dict) else None
    if custom_objects and name in custom_objects:
        return custom_objects[name].from_config(config.get("config", {}))
    if isinstance(name, str) and name.lower() in _CLASSES:
        config["class_name"] = name.lower()
    return get(config)


# Keras 2.3.1 names not provided yet: a clear error instead of a bare AttributeError
__getattr__ = keras_names_missing('arignote.optimizers', {
    'TFOptimizer': 'an arignote optimizer (SGD, RMSprop, Adam, Adadelta, Adagrad, Adamax, Nadam): '
                   'TensorFlow optimizers do not run on PyTorch',
    'clip_norm': "the optimizer's clipnorm= argument",
})
