"""Package namespaces that load their submodules on first use (PEP 562 ``__getattr__``).

A package whose ``__init__`` imported every submodule made ``from arignote.callbacks.base import
Callback`` pay for all callbacks (and their imports: the lease files, h5py...). With
:func:`lazy_namespace` the package lists which submodule defines each public name; a name is
imported the first time it is read and kept in the package's globals, so ``from package import
Name``, ``package.Name``, ``dir(package)`` and ``__all__`` behave as before.

The Keras faces call :func:`freeze_torch_import` first (``arignote.models`` is ``torch_backed``: at
the first name read; ``arignote.layers`` at its import): it imports torch, then moves the objects
alive at that moment (torch's ~170k modules, functions, classes and dicts, which live as long as the
process) out of the cyclic garbage collector's reach with :func:`gc.freeze`, and hands them back at
exit (:func:`gc.unfreeze` in an ``atexit`` handler) so the interpreter's teardown runs as without
arignote. Why: ``import torch`` leaves a full collection due, which walks all of them (0.06-0.1 s of
CPU on the 2-core VM) at whatever runs next, and every later full collection walks them again;
frozen, a full collection walks only the program's own objects (benchmarks/RESULTS.md, session 13).
The cost: an object alive at the first load that later becomes unreachable *inside a reference
cycle* is freed at exit, not by the collector (plain reference counting still frees the rest at
once), and ``gc.get_objects()`` does not list frozen objects; ``gc.unfreeze()`` hands everything back
at any time. Nothing is frozen when the collector is off (``gc.disable()``) or the program has frozen
objects itself (``gc.get_freeze_count() > 0``).

Example::

    >>> import types
    >>> pkg = types.ModuleType("demo")
    >>> getattr_, dir_ = lazy_namespace("json", {"dumps": "json", "decoder": "json.decoder"}, vars(pkg))
    >>> getattr_("dumps")([1]), "dumps" in vars(pkg), getattr_("decoder").__name__
    ('[1]', True, 'json.decoder')
"""

from __future__ import annotations

import atexit
import gc
import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["freeze_torch_import", "lazy_namespace"]

_frozen = [False]  # freeze_torch_import ran (once per process)


def freeze_torch_import() -> bool:
    """Import torch and freeze the objects alive now out of the cyclic collector until exit, once per
    process (see the module's docstring); True if this call froze them.

    Example::

        >>> import gc
        >>> from arignote.layers import Dense  # the first load of the layers froze torch's objects
        >>> freeze_torch_import(), gc.get_freeze_count() > 0 or not gc.isenabled()
        (False, True)
    """
    if _frozen[0]:
        return False
    _frozen[0] = True
    # why: the faces that need torch import it here, first, so its objects are frozen before the
    # first use's own allocations trigger the full collection torch's import left due
    import torch  # noqa: F401
    if not gc.isenabled() or gc.get_freeze_count():
        return False  # the program manages its collector: leave it alone
    gc.freeze()
    atexit.register(gc.unfreeze)  # the interpreter's teardown collects them as without arignote
    return True


def lazy_namespace(
    package: str, names: dict[str, str], namespace: dict[str, Any],
    fallback: Callable[[str], Any] | None = None, torch_backed: bool = False,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``names`` maps a public name to the module that
    defines it (a submodule's own name maps to that submodule, which is then the value); ``fallback``
    answers any other name (default: AttributeError); ``torch_backed``: the first name read calls
    :func:`freeze_torch_import` before its module loads. The table is kept as the package's
    ``_LAZY_TARGETS`` (tests/test_import_graph.py reads it: a string import is an edge too)."""

    def __getattr__(name: str) -> Any:
        where = names.get(name)
        if where is None:
            if fallback is not None:
                return fallback(name)
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if torch_backed and not _frozen[0]:
            freeze_torch_import()
        module = importlib.import_module(where)
        value = module if where.rpartition(".")[2] == name and not hasattr(module, name) else getattr(
            module, name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names))

    namespace["_LAZY_TARGETS"] = dict(names)  # what the import-graph test reads as this face's edges

    return __getattr__, __dir__
