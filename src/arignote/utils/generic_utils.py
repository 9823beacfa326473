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

from typing import Any

from arignote.utils.progbar import Progbar

__all__ = ["get_custom_objects", "CustomObjectScope", "custom_object_scope", "Progbar"]

_GLOBAL_CUSTOM_OBJECTS: dict[str, Any] = {}


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
