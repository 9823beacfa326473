"""Keras 2's object (de)serialization rules, shared by activations, initializers, regularizers,
constraints, losses, metrics and optimizers.

An object is stored as its function name (``'relu'``) or as ``{"class_name": ..., "config": ...}``;
unknown names raise one ``ValueError`` naming the kind of object, with a did-you-mean hint.

Example::

    >>> lookup("regularizer", "L1L2", {"L1L2": dict}, None) is dict
    True
"""

from __future__ import annotations

import base64
import binascii
import difflib
import inspect
import marshal
import types
from collections.abc import Callable
from typing import Any

from arignote.config.safe_mode import check_code, in_scope
from arignote.config.safe_mode import scope as safe_mode_scope

__all__ = ["serialize_object", "deserialize_object", "lookup", "get", "serialize_keras_object",
           "deserialize_keras_object", "func_dump", "func_load"]


def lookup(kind: str, name: str, module_objects: dict, custom_objects: dict | None) -> Any:
    """``name`` in ``custom_objects``, then the global registry (``get_custom_objects()``), then
    ``module_objects`` (Keras 2.3.1's order); else a ValueError with a hint."""
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    if name in GLOBAL_CUSTOM_OBJECTS:
        return GLOBAL_CUSTOM_OBJECTS[name]
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
        name = identifier["class_name"]
        cls = lookup(kind, name, module_objects, custom_objects)
        config = dict(identifier.get("config") or {})
        if not isinstance(cls, type) and not config and cls is not module_objects.get(name):
            return cls  # a user's function registered by name (Keras 2.3.1 called it with no arguments)
        if hasattr(cls, "from_config"):
            return cls.from_config(config)
        return cls(**config)
    if isinstance(identifier, str):
        obj = lookup(kind, identifier, module_objects, custom_objects)
        return obj() if isinstance(obj, type) else obj
    raise ValueError(f"Could not interpret serialized {kind}: {identifier!r}")


def get(identifier: Any, deserialize: Callable[[Any], Any], kind: str, none_passes: bool = True) -> Any:
    """Keras 2's ``get`` of initializers, regularizers and constraints: ``None`` stays None (when
    ``none_passes``; Keras 2's ``initializers.get(None)`` refuses it), a config dict
    ``{"class_name", "config"}`` and a name (a config without arguments) go to ``deserialize``, a
    callable (a function, an instance) passes through; anything else is Keras 2.3.1's
    ``ValueError: Could not interpret <kind> identifier: <identifier>``.

    >>> get("l2", lambda config: config, "regularizer")
    {'class_name': 'l2', 'config': {}}
    >>> get(None, dict, "initializer", none_passes=False)
    Traceback (most recent call last):
    ValueError: Could not interpret initializer identifier: None
    """
    if identifier is None and none_passes:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        return deserialize({"class_name": identifier, "config": {}})
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret {kind} identifier: {identifier}")


def serialize_keras_object(instance: Any) -> Any:
    """Keras 2 ``generic_utils.serialize_keras_object`` (a name or ``{"class_name", "config"}``)."""
    return serialize_object(instance)


def deserialize_keras_object(
    identifier: Any,
    module_objects: dict | None = None,
    custom_objects: dict | None = None,
    printable_module_name: str = "object",
    safe_mode: bool | None = None,
) -> Any:
    """Keras 2 ``utils.generic_utils.deserialize_keras_object`` (which ``keras.layers`` re-exports).

    A config dict ``{"class_name", "config"}`` is rebuilt with the class's ``from_config`` (given
    ``custom_objects`` when it takes them, else with them registered for the call); a name is looked
    up (``custom_objects``, the global registry, ``module_objects``) and returned as it is.
    ``safe_mode`` (None: the enclosing loading call's, else the ``saving.safe_mode`` flag, true by
    default) refuses a function stored as bytecode (:mod:`arignote.config.safe_mode`).

    >>> deserialize_keras_object("relu", {"relu": abs}) is abs
    True
    """
    with safe_mode_scope(safe_mode, "deserialize_keras_object"):
        return _deserialize_keras_object(identifier, dict(module_objects or {}), custom_objects,
                                         printable_module_name)


def _deserialize_keras_object(identifier: Any, module_objects: dict, custom_objects: dict | None,
                              printable_module_name: str) -> Any:
    if isinstance(identifier, dict):
        if "class_name" not in identifier or "config" not in identifier:
            raise ValueError(f"Improper config format for a {printable_module_name}: {identifier!r} "
                             "(needs 'class_name' and 'config')")
        cls = lookup(printable_module_name, identifier["class_name"], module_objects, custom_objects)
        config = identifier["config"]
        if not hasattr(cls, "from_config"):
            return cls(**config)
        try:
            takes_custom = "custom_objects" in inspect.signature(cls.from_config).parameters
        except (TypeError, ValueError):
            takes_custom = False
        if takes_custom:
            return cls.from_config(config, custom_objects={**GLOBAL_CUSTOM_OBJECTS, **(custom_objects or {})})
        saved = dict(GLOBAL_CUSTOM_OBJECTS)
        GLOBAL_CUSTOM_OBJECTS.update(custom_objects or {})
        try:
            return cls.from_config(config)
        finally:
            GLOBAL_CUSTOM_OBJECTS.clear()
            GLOBAL_CUSTOM_OBJECTS.update(saved)
    if isinstance(identifier, str):
        return lookup(printable_module_name, identifier, module_objects, custom_objects)
    raise ValueError(f"Could not interpret serialized {printable_module_name}: {identifier!r}")


# the global custom-object registry (Keras 2 ``get_custom_objects()``); here, on the settings floor (no
# torch), so that layers.base can read it without loading arignote.utils
GLOBAL_CUSTOM_OBJECTS: dict[str, Any] = {}


def func_dump(func: types.FunctionType) -> tuple[str, tuple | None, tuple | None]:
    """Keras 2 ``generic_utils.func_dump``: ``(code, defaults, closure)`` of a Python function, the
    code as base64 of its marshalled bytecode (it loads back only on the same Python version).

    >>> code, defaults, closure = func_dump(lambda x, k=2: x * k)
    >>> func_load(code, defaults, closure)(3)
    6
    """
    if not isinstance(func, types.FunctionType):
        raise ValueError(f"func_dump: cannot serialize {func!r}; pass a Python function or a lambda")
    code = base64.b64encode(marshal.dumps(func.__code__)).decode("ascii")
    closure = tuple(cell.cell_contents for cell in func.__closure__) if func.__closure__ else None
    return code, func.__defaults__, closure


def func_load(code: Any, defaults: Any = None, closure: Any = None,
              globs: dict | None = None) -> types.FunctionType:
    """Keras 2 ``generic_utils.func_load``: the function :func:`func_dump` stored. ``code`` may be the
    whole ``(code, defaults, closure)`` triple (as a Keras 2 ``Lambda`` config keeps it, JSON turning
    tuples into lists), and base64 text (Keras 2.1.2 on) or, as Keras before 2.1.2 wrote it, the
    marshalled bytes as ``raw_unicode_escape`` text; ``globs`` are the globals the function sees
    (default: none but builtins).

    Calling it is asking to run the stored code; inside a loading call (``load_model`` ...) it obeys
    that call's safe mode (:mod:`arignote.config.safe_mode`), which refuses it by default.

    >>> import marshal
    >>> old = marshal.dumps((lambda x: x + 1).__code__).decode("raw_unicode_escape")
    >>> func_load(old)(1)
    2
    """
    if in_scope():
        check_code("a Python function", "<the function's name>")
    if isinstance(code, (tuple, list)):
        code, defaults, closure = code
    try:
        bytecode = _unmarshal(code)
        if not isinstance(bytecode, types.CodeType):
            raise ValueError(f"it holds a {type(bytecode).__name__}, not a function's code")
    except (UnicodeEncodeError, binascii.Error, ValueError, EOFError, TypeError, AttributeError) as err:
        raise ValueError("func_load: the stored function's bytecode cannot be read (it was marshalled by "
                         "another Python version, or is damaged); pass the function itself in "
                         f"custom_objects instead ({err})") from err
    defaults = tuple(defaults) if defaults is not None else None
    cells = tuple(types.CellType(value) for value in closure) if closure is not None else None
    return types.FunctionType(bytecode, globs if globs is not None else {}, bytecode.co_name, defaults, cells)


def _unmarshal(code: str) -> Any:
    """The code object in base64 text, or (Keras < 2.1.2, its fallback) in raw text."""
    try:
        return marshal.loads(base64.b64decode(code.encode("ascii"), validate=False))
    except (UnicodeEncodeError, binascii.Error, ValueError, EOFError):
        return marshal.loads(code.encode("raw_unicode_escape"))
