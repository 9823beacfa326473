"""Keras 2 ``keras.utils.generic_utils`` names custom-layer code imports: ``to_list``, ``has_arg``,
``get_custom_objects``, ``custom_object_scope`` / ``CustomObjectScope``, ``serialize_keras_object``,
``deserialize_keras_object``.

Example::

    >>> to_list(3), has_arg(lambda x, mask=None: x, "mask")
    ([3], True)
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["to_list", "unpack_singleton", "has_arg", "get_custom_objects", "custom_object_scope",
           "CustomObjectScope", "serialize_keras_object", "deserialize_keras_object"]

_CUSTOM_OBJECTS: dict[str, Any] = {}


def to_list(x: Any, allow_tuple: bool = False) -> list:
    if isinstance(x, list) or (allow_tuple and isinstance(x, tuple)):
        return list(x)
    return [x]


def unpack_singleton(x: Any) -> Any:
    return x[0] if isinstance(x, (list, tuple)) and len(x) == 1 else x


def has_arg(fn: Any, name: str, accept_all: bool = False) -> bool:
    params = inspect.signature(fn).parameters
    if accept_all and any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return True
    return name in params


def get_custom_objects() -> dict:
    """The global ``{name: object}`` registry Keras 2 deserialization also searches."""
    return _CUSTOM_OBJECTS


@contextmanager
def custom_object_scope(*scopes: dict) -> Iterator[None]:
    backup = dict(_CUSTOM_OBJECTS)
    for scope in scopes:
        _CUSTOM_OBJECTS.update(scope)
    try:
        yield
    finally:
        _CUSTOM_OBJECTS.clear()
        _CUSTOM_OBJECTS.update(backup)


class CustomObjectScope:
    """``with CustomObjectScope({'MyLayer': MyLayer}):`` (Keras 2)."""

    def __init__(self, *scopes: dict) -> None:
        self._cm = custom_object_scope(*scopes)

    def __enter__(self) -> None:
        self._cm.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self._cm.__exit__(*exc)


def serialize_keras_object(instance: Any) -> Any:
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
    objects = {**(module_objects or {}), **_CUSTOM_OBJECTS, **(custom_objects or {})}
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
