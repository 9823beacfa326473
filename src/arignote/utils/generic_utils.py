"""Keras 2 ``utils.generic_utils``: the global custom-object registry, ``CustomObjectScope`` and
``Progbar`` (from :mod:`arignote.utils.progbar`).

Classes and functions registered here are found by name wherever a Keras config is read
(``load_model``, ``model_from_json``, ``layers.deserialize``), as if passed in ``custom_objects``.

Example::

    >>> def swish(x): return x
    >>> with CustomObjectScope({"swish": swish}):
    ...     get_custom_objects()["swish"] is swish
    True
    >>> "swish" in get_custom_objects()
    False
"""

from __future__ import annotations

import inspect
from typing import Any

from arignote._keras_objects import GLOBAL_CUSTOM_OBJECTS
from arignote.utils.progbar import Progbar

__all__ = ["get_custom_objects", "CustomObjectScope", "custom_object_scope", "Progbar", "to_list",
           "unpack_singleton", "has_arg", "serialize_keras_object", "deserialize_keras_object"]

_GLOBAL_CUSTOM_OBJECTS = GLOBAL_CUSTOM_OBJECTS  # defined import-free for layers.base


def get_custom_objects() -> dict[str, Any]:
    """The global registry itself (a dict): ``get_custom_objects()["MyLayer"] = MyLayer`` registers."""
    return _GLOBAL_CUSTOM_OBJECTS


class CustomObjectScope:
    """Within ``with CustomObjectScope({...}, ...):`` the given objects are registered; on exit the
    registry is restored as it was (names that existed before get their old values back)."""

    def __init__(self, *args: dict[str, Any]) -> None:
        for arg in args:
            if not isinstance(arg, dict):
                raise TypeError(f"CustomObjectScope takes dicts of name -> object, got {arg!r}")
        self.custom_objects = args
        self.backup: dict[str, Any] | None = None

    def __enter__(self) -> CustomObjectScope:
        self.backup = dict(_GLOBAL_CUSTOM_OBJECTS)
        for objects in self.custom_objects:
            _GLOBAL_CUSTOM_OBJECTS.update(objects)
        return self

    def __exit__(self, *exc: Any) -> None:
        _GLOBAL_CUSTOM_OBJECTS.clear()
        _GLOBAL_CUSTOM_OBJECTS.update(self.backup or {})


def custom_object_scope(*args: dict[str, Any]) -> CustomObjectScope:
    """``CustomObjectScope(*args)`` (Keras's function spelling)."""
    return CustomObjectScope(*args)


def to_list(x: Any, allow_tuple: bool = False) -> list:
    """``x`` as a list (Keras 2 ``to_list``): lists as they are, anything else wrapped."""
    if isinstance(x, list) or (allow_tuple and isinstance(x, tuple)):
        return list(x)
    return [x]


def unpack_singleton(x: Any) -> Any:
    """The only element of a one-element list, else ``x``."""
    return x[0] if isinstance(x, (list, tuple)) and len(x) == 1 else x


def has_arg(fn: Any, name: str, accept_all: bool = False) -> bool:
    """Whether callable ``fn`` takes an argument ``name`` (or any keyword with ``accept_all``)."""
    params = inspect.signature(fn).parameters
    if accept_all and any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return True
    return name in params


def serialize_keras_object(instance: Any) -> Any:
    """``{"class_name", "config"}`` for objects with ``get_config``; a function's name otherwise."""
    if instance is None:
        return None
    if hasattr(instance, "get_config"):
        return {"class_name": type(instance).__name__, "config": instance.get_config()}
    if hasattr(instance, "__name__"):
        return instance.__name__
    raise ValueError(f"Cannot serialize {instance!r}: it has no get_config() and no name")


def deserialize_keras_object(identifier: Any, module_objects: dict | None = None,
                             custom_objects: dict | None = None,
                             printable_module_name: str = "object") -> Any:
    """Rebuild from :func:`serialize_keras_object`'s output, looking names up in ``custom_objects``,
    the global registry and ``module_objects`` (Keras 2)."""
    objects = {**(module_objects or {}), **_GLOBAL_CUSTOM_OBJECTS, **(custom_objects or {})}
    if isinstance(identifier, dict):
        cls = objects.get(identifier.get("class_name"))
        if cls is None:
            raise ValueError(f"Unknown {printable_module_name}: {identifier.get('class_name')}")
        config = identifier.get("config", {})
        return cls.from_config(config) if hasattr(cls, "from_config") else cls(**config)
    if isinstance(identifier, str):
        if identifier not in objects:
            raise ValueError(f"Unknown {printable_module_name}: {identifier}")
        return objects[identifier]
    return identifier
