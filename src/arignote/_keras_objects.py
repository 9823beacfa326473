"""Keras 2's object (de)serialization rules, shared by activations, initializers, regularizers,
constraints, losses, metrics and optimizers.

An object is stored as its function name (``'relu'``) or as ``{"class_name": ..., "config": ...}``;
unknown names raise one ``ValueError`` naming the kind of object, with a did-you-mean hint.

Example::

    >>> lookup("regularizer", "L1L2", {"L1L2": dict}, None) is dict
    True
"""

from __future__ import annotations

import difflib
from typing import Any

__all__ = ["serialize_object", "deserialize_object", "lookup", "serialize_keras_object",
           "deserialize_keras_object"]


def lookup(kind: str, name: str, module_objects: dict, custom_objects: dict | None) -> Any:
    """``name`` in ``custom_objects`` then ``module_objects``; else a ValueError with a hint."""
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    if name in module_objects and not name.startswith("_"):
        return module_objects[name]
    valid = sorted(k for k in module_objects if not k.startswith("_"))
    close = difflib.get_close_matches(name, valid, n=1, cutoff=0.6)
    hint = f" Did you mean '{close[0]}'?" if close else f" Known: {', '.join(valid)}."
    raise ValueError(f"Unknown {kind}: {name!r}.{hint} For your own, pass custom_objects={{{name!r}: ...}}")


def serialize_object(instance: Any) -> Any:
    """``None`` -> None; an object with ``get_config`` -> the Keras dict; a function -> its name."""
    if instance is None:
        return None
    if hasattr(instance, "get_config"):
        return {"class_name": type(instance).__name__, "config": instance.get_config()}
    if hasattr(instance, "__name__"):
        return instance.__name__
    raise ValueError(f"Cannot serialize {instance!r}: it has neither get_config() nor a __name__")


def deserialize_object(identifier: Any, module_objects: dict, custom_objects: dict | None, kind: str) -> Any:
    """The inverse of :func:`serialize_object`: a dict is instantiated with ``from_config`` (or
    ``cls(**config)``), a string is looked up (a class is instantiated with no arguments)."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        if "class_name" not in identifier:
            raise ValueError(f"Improper {kind} config (needs 'class_name' and 'config'): {identifier!r}")
        cls = lookup(kind, identifier["class_name"], module_objects, custom_objects)
        config = dict(identifier.get("config") or {})
        if hasattr(cls, "from_config"):
            return cls.from_config(config)
        return cls(**config)
    if isinstance(identifier, str):
        obj = lookup(kind, identifier, module_objects, custom_objects)
        return obj() if isinstance(obj, type) else obj
    raise ValueError(f"Could not interpret serialized {kind}: {identifier!r}")


def serialize_keras_object(instance: Any) -> Any:
    """Keras 2 ``generic_utils.serialize_keras_object`` (a name or ``{"class_name", "config"}``)."""
    return serialize_object(instance)


def deserialize_keras_object(
    identifier: Any,
    module_objects: dict | None = None,
    custom_objects: dict | None = None,
    printable_module_name: str = "object",
) -> Any:
    """Keras 2 ``utils.generic_utils.deserialize_keras_object`` (which ``keras.layers`` re-exports):
    ``identifier`` (a name or a config dict) looked up in ``custom_objects`` then ``module_objects``."""
    return deserialize_object(identifier, dict(module_objects or {}), custom_objects, printable_module_name)


# the global custom-object registry (Keras 2 ``get_custom_objects()``); here, in a module without
# imports, so that layers.base can read it without loading arignote.utils
GLOBAL_CUSTOM_OBJECTS: dict[str, Any] = {}
