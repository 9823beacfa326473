"""The errors arignote raises on purpose, in one family.

Every one derives from :class:`ArignoteError` (catch that to catch them all) and also from the
builtin a caller would already catch for the same fault, so ``except ValueError`` around a bad flag
or ``except OSError`` around a missing dataset keeps working.

==========================  ==========================  ==============================================
class                       also a                      raised for
==========================  ==========================  ==============================================
ConfigError                 ValueError                  a flag name or value arignote cannot use
DeviceError                 ConfigError                 a device spec that is malformed or not honourable
CheckpointError             ValueError                  a checkpoint that cannot be read or written
ShareError                  RuntimeError                a GPU request that cannot be met now (leases)
DatasetError                OSError                     a dataset missing, damaged or not downloadable
KerasNameMissing            ImportError                 a Keras 2.3.1 public name arignote does not provide
UnsafeDeserializationError  ValueError                  stored Python code in a model file (safe mode)
==========================  ==========================  ==============================================

This module imports nothing of arignote, so every floor may import it.

Example::

    >>> from arignote.errors import ArignoteError, ConfigError
    >>> issubclass(ConfigError, ArignoteError) and issubclass(ConfigError, ValueError)
    True
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["ArignoteError", "ConfigError", "DeviceError", "CheckpointError", "ShareError", "DatasetError",
           "KerasNameMissing", "UnsafeDeserializationError", "keras_names_missing"]


class ArignoteError(Exception):
    """Root of every error arignote raises on purpose; its message names the culprit and the fix."""


class ConfigError(ArignoteError, ValueError):
    """A flag name or value that arignote cannot use; the message names the flag, value and source.

    When the registry knows them, ``flag``, ``value``, ``source`` (``~/.arignoterc:3``,
    ``ARIGNOTE_FLAGS``, ``code``) and ``fix`` are also attributes, for tools that report them::

        >>> err = ConfigError("device=cuda7 (from code): ...", flag="device", value="cuda7", source="code")
        >>> err.flag, err.source, err.fix
        ('device', 'code', None)
    """

    def __init__(self, message: str = "", *, flag: str | None = None, value: object = None,
                 source: str | None = None, fix: str | None = None) -> None:
        super().__init__(message)
        self.flag, self.value, self.source, self.fix = flag, value, source, fix


class DeviceError(ConfigError):
    """A device spec that is malformed or that this machine cannot honour; the message names the fix.

    A :class:`ValueError` (through ConfigError), so the CLI reports it and exits 2.
    """


class CheckpointError(ArignoteError, ValueError):
    """A checkpoint file that cannot be used: missing, truncated, corrupt or not an arignote checkpoint."""


class ShareError(ArignoteError, RuntimeError):
    """A GPU request that cannot be met now (nothing free, lease directory unusable)."""


class DatasetError(ArignoteError, OSError):
    """A dataset that is missing, damaged, or cannot be downloaded; the message says what to do."""


class KerasNameMissing(ArignoteError, ImportError):
    """A public name of a Keras 2.3.1 module that arignote does not provide (yet); the message says
    what to use instead. An ImportError, so ``from arignote.optimizers import Nadam`` shows it."""


class UnsafeDeserializationError(ArignoteError, ValueError):
    """A model file or config holds a Python function as bytecode (a Keras 2 ``Lambda``), which would
    run as code when loaded; safe mode (the default) refuses it. The message names the file, the
    layer, and the two ways in: ``safe_mode=False`` for the call, or the function by name in
    ``custom_objects``. Not a :class:`CheckpointError`: the file is intact, only untrusted."""


def keras_names_missing(module: str, missing: dict[str, str], *, deliberate: bool = False,
                        origin: str | None = None) -> Callable[[str], object]:
    """A module ``__getattr__`` that names what arignote lacks of Keras 2.3.1's ``module``.

    ``missing`` maps each name to what to use instead; any other unknown name is the usual
    AttributeError (so ``hasattr`` keeps working for names Keras never had). ``deliberate`` says the
    name is left out on purpose rather than not provided yet; ``origin`` replaces "Keras 2.3.1's
    keras.<module>.<name>" in the message (``{name}`` is filled in), e.g. for Keras 1 legacy names.

    >>> getattr_ = keras_names_missing("arignote.optimizers", {"TFOptimizer": "Adam"}, deliberate=True)
    >>> try:
    ...     getattr_("TFOptimizer")
    ... except KerasNameMissing as e:
    ...     print(str(e).split(") is ")[1])
    deliberately not provided by arignote; use Adam instead
    """
    keras_module = module.replace("arignote", "keras", 1)
    origin = origin or f"Keras 2.3.1's {keras_module}.{{name}}"
    status = "deliberately not provided by arignote" if deliberate else "not provided by arignote yet"

    def __getattr__(name: str) -> object:
        if name in missing:
            raise KerasNameMissing(f"{module}.{name} ({origin.format(name=name)}) is {status}; "
                                   f"use {missing[name]} instead")
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
