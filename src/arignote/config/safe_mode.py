"""Safe mode: loading a model never runs Python code stored in it unless the user says so.

Keras 2 stores a ``Lambda``'s function as marshalled bytecode; rebuilding it runs whatever the file
holds, as the user who opens it (Keras's CVE-2024-3660). Keras 3 and tf-keras >= 2.13 refuse that by
default (``safe_mode=True``), and so does arignote: every entry that can rebuild a stored function
(``load_model``, ``model_from_json``/``_yaml``/``_config``, ``Sequential``/``Model``/``Lambda``
``.from_config``, ``layers.deserialize``, ``utils.deserialize_keras_object``) takes ``safe_mode``
and opens a :func:`scope` for the layers it rebuilds; :func:`check_code` is the one gate a stored
function passes through (``Lambda.from_config``), and it raises
:class:`~arignote.errors.UnsafeDeserializationError` naming the file, the layer and the two ways in.

Stored code is allowed when the innermost loading call says ``safe_mode=False`` or when the flag
``saving.safe_mode`` is false (:func:`arignote.config.enable_unsafe_deserialization`, rc files,
``ARIGNOTE_FLAGS``): as in Keras 3, the process-wide switch also opens a ``safe_mode=True`` call.

Example::

    >>> with scope(False, "load_model", "model.h5"):
    ...     code_allowed()
    True
    >>> with scope(True, "load_model", "model.h5"):
    ...     check_code("layer 'scaled' (Lambda)", "scaled")
    Traceback (most recent call last):
    ...
    arignote.errors.UnsafeDeserializationError: model.h5: layer 'scaled' (Lambda) ...
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass

from arignote import config
from arignote.errors import UnsafeDeserializationError

__all__ = ["scope", "code_allowed", "check_code", "in_scope"]


@dataclass(frozen=True)
class _Scope:
    safe_mode: bool  # what the innermost call that said something asked for
    entry: str  # the outermost loading call, as the user wrote it ("load_model")
    source: str  # what is being loaded: a file name, "the JSON text"


_SCOPE: contextvars.ContextVar[_Scope | None] = contextvars.ContextVar("arignote_safe_mode", default=None)


@contextlib.contextmanager
def scope(safe_mode: bool | None, entry: str, source: str | None = None) -> Iterator[None]:
    """The layers rebuilt inside obey ``safe_mode`` (None: the enclosing call's, or safe). The outermost
    call's ``entry`` and ``source`` stay, so the error names what the user called and on what."""
    outer = _SCOPE.get()
    if safe_mode is not None and not isinstance(safe_mode, bool):
        raise TypeError(f"{entry}: safe_mode must be True or False, got {safe_mode!r}")
    if outer is None:
        inner = _Scope(True if safe_mode is None else safe_mode, entry, source or "the config")
    else:
        inner = _Scope(outer.safe_mode if safe_mode is None else safe_mode, outer.entry, outer.source)
    token = _SCOPE.set(inner)
    try:
        yield
    finally:
        _SCOPE.reset(token)


def in_scope() -> bool:
    """True inside a loading call (a :func:`scope`)."""
    return _SCOPE.get() is not None


def code_allowed() -> bool:
    """May stored Python code be rebuilt here? Outside any loading call: only if the flag says so."""
    current = _SCOPE.get()
    if current is not None and current.safe_mode is False:
        return True
    return not config.get("saving.safe_mode")


def check_code(what: str, name: str) -> None:
    """Raise :class:`UnsafeDeserializationError` unless :func:`code_allowed`: ``what`` names the stored
    function (``"layer 'scaled' (Lambda)"``), ``name`` is the ``custom_objects`` key that gives it."""
    if code_allowed():
        return
    current = _SCOPE.get() or _Scope(True, "from_config", "the config")
    first = "..." if current.source.startswith("the ") else repr(current.source)  # a file's name
    with_unsafe = f"{current.entry}({first}, safe_mode=False)"
    with_objects = f"{current.entry}({first}, custom_objects={{{name!r}: your_function}})"
    raise UnsafeDeserializationError(
        f"{current.source}: {what} stores its function as Python bytecode, which would run as code on "
        "loading; safe mode refuses it (stored code from elsewhere could run anything as you). "
        f"If you trust where it comes from, call {with_unsafe} (or "
        "arignote.config.enable_unsafe_deserialization() for the whole process). "
        f"Or give the function by name, and the stored code is never read: {with_objects}."
    )
