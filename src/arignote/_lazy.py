"""Package namespaces that load their submodules on first use (PEP 562 ``__getattr__``).

A package whose ``__init__`` imported every submodule made ``from arignote.callbacks.base import
Callback`` pay for all callbacks (and their imports: the lease files, h5py...). With
:func:`lazy_namespace` the package lists which submodule defines each public name; a name is
imported the first time it is read and kept in the package's globals, so ``from package import
Name``, ``package.Name``, ``dir(package)`` and ``__all__`` behave as before.

Example::

    >>> import types
    >>> pkg = types.ModuleType("demo")
    >>> getattr_, dir_ = lazy_namespace("json", {"dumps": "json", "decoder": "json.decoder"}, vars(pkg))
    >>> getattr_("dumps")([1]), "dumps" in vars(pkg), getattr_("decoder").__name__
    ('[1]', True, 'json.decoder')
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["lazy_namespace"]


def lazy_namespace(
    package: str, names: dict[str, str], namespace: dict[str, Any],
    fallback: Callable[[str], Any] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``names`` maps a public name to the module that
    defines it (a submodule's own name maps to that submodule, which is then the value); ``fallback``
    answers any other name (default: AttributeError). The table is kept as the package's
    ``_LAZY_TARGETS`` (tests/test_import_graph.py reads it: a string import is an edge too)."""

    def __getattr__(name: str) -> Any:
        where = names.get(name)
        if where is None:
            if fallback is not None:
                return fallback(name)
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(where)
        value = module if where.rpartition(".")[2] == name and not hasattr(module, name) else getattr(
            module, name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names))

    namespace["_LAZY_TARGETS"] = dict(names)  # what the import-graph test reads as this face's edges

    return __getattr__, __dir__
