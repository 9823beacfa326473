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

import collections
import inspect
from typing import Any

from arignote._keras_objects import (
    GLOBAL_CUSTOM_OBJECTS,
    deserialize_keras_object,
    func_dump,
    func_load,
    serialize_keras_object,
)
from arignote.utils.progbar import Progbar

__all__ = ["get_custom_objects", "CustomObjectScope", "custom_object_scope", "Progbar", "to_list",
           "unpack_singleton", "has_arg", "serialize_keras_object", "deserialize_keras_object", "func_dump",
           "func_load", "getargspec", "object_list_uid", "is_all_none", "slice_arrays", "transpose_shape",
           "check_for_unexpected_keys"]

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


ArgSpec = collections.namedtuple("ArgSpec", ["args", "varargs", "keywords", "defaults"])


def getargspec(fn: Any) -> ArgSpec:
    """Keras 2's ``getargspec``: ``(args, varargs, keywords, defaults)`` of ``fn``, from
    :func:`inspect.getfullargspec` (``keywords`` is its ``varkw``)."""
    spec = inspect.getfullargspec(fn)
    return ArgSpec(spec.args, spec.varargs, spec.varkw, spec.defaults)


def object_list_uid(object_list: Any) -> str:
    """The ``id``s of ``object_list``'s items joined by ``', '`` (Keras 2's cache key)."""
    return ", ".join(str(abs(id(x))) for x in to_list(object_list))


def is_all_none(iterable_or_element: Any) -> bool:
    """Whether ``iterable_or_element`` is None or a list/tuple of Nones only."""
    return all(x is None for x in to_list(iterable_or_element, allow_tuple=True))


def slice_arrays(arrays: Any, start: Any = None, stop: Any = None) -> Any:
    """``arrays[start:stop]`` for one array or each of a list (Keras 2's ``slice_arrays``); ``start``
    may instead be a list or array of indices (then ``stop`` is None).

    >>> import numpy as np
    >>> [a.tolist() for a in slice_arrays([np.arange(4), np.arange(4) * 10], 1, 3)]
    [[1, 2], [10, 20]]
    >>> slice_arrays(np.arange(4), [3, 0]).tolist()
    [3, 0]
    """
    if arrays is None:
        return [None]
    by_index = hasattr(start, "__len__")
    if by_index and hasattr(start, "shape"):
        start = start.tolist()  # HDF5 datasets take lists of indices only
    if isinstance(arrays, list):
        return [None if x is None else (x[start] if by_index else x[start:stop]) for x in arrays]
    if by_index:
        return arrays[start]
    if hasattr(start, "__getitem__"):
        return arrays[start:stop]
    return [None]  # as Keras 2 does for a bare integer start


def transpose_shape(shape: tuple | list, target_format: str, spatial_axes: tuple) -> tuple | list:
    """A channels-last ``shape`` reordered for ``target_format`` (Keras 2's ``transpose_shape``).

    >>> transpose_shape((16, 128, 128, 32), "channels_first", spatial_axes=(1, 2))
    (16, 32, 128, 128)
    """
    if target_format == "channels_last":
        return shape
    if target_format != "channels_first":
        raise ValueError('The `data_format` argument must be one of "channels_first", "channels_last". '
                         f"Received: {target_format}")
    reordered = (*tuple(shape[:spatial_axes[0]]), shape[-1], *(shape[axis] for axis in spatial_axes))
    return list(reordered) if isinstance(shape, list) else reordered


def check_for_unexpected_keys(name: str, input_dict: dict, expected_values: Any) -> None:
    """Raise ``ValueError`` naming the keys of ``input_dict`` not in ``expected_values``."""
    unknown = set(input_dict).difference(expected_values)
    if unknown:
        raise ValueError(f"Unknown entries in {name} dictionary: {sorted(unknown)}. Only expected "
                         f"following keys: {list(expected_values)}")
