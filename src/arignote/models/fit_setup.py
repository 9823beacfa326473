"""What ``Model.fit`` sets up around its trainer's loop: the callbacks it adds to the user's (a
device-stats monitor, the progress bar, ``History``, the run status for ``arignote dash``), and the
facts the fast-path decisions read (:mod:`arignote.devices.fastpaths`).

Example::

    >>> from types import SimpleNamespace
    >>> from arignote.callbacks.base import History
    >>> model = SimpleNamespace(history=None)
    >>> trainer = SimpleNamespace(strategy=SimpleNamespace(is_main=False))  # a rank other than 0
    >>> mine = History()
    >>> cbs = fit_callbacks(model, [mine], 0, SimpleNamespace(samples=64), trainer)
    >>> [type(cb).__name__ for cb in cbs], model.history is mine
    (['DeviceStatsMonitor', 'History'], True)
"""

from __future__ import annotations

from typing import Any

from arignote import config
from arignote.callbacks.base import History
from arignote.callbacks.device_stats import DeviceStatsMonitor
from arignote.callbacks.progbar import ProgbarLogger
from arignote.devices import fastpaths
from arignote.training.loop import Trainer

__all__ = ["fit_callbacks", "fit_facts"]


def fit_facts(model: Any, trainer: Trainer, train: Any) -> fastpaths.FitFacts:
    """What the fast-path decisions need to know about this fit of ``model`` (devices/fastpaths.py)."""
    opt = getattr(model.optimizer, "torch", None)
    impl = None
    if opt is not None:
        defaults = opt.defaults
        impl = "fused" if defaults.get("fused") else "foreach" if defaults.get("foreach") else "loop"
    on_device = getattr(train, "on_device", None)
    return fastpaths.FitFacts(device=str(trainer.device), has_conv=bool(model._conv_modules()),
                              fixed_shapes=on_device is not None,
                              optimizer=type(opt).__name__ if opt else None, optimizer_impl=impl,
                              arrays_on_device=on_device,
                              loader_pins=getattr(getattr(train, "data", None), "pin_memory", None))


def fit_callbacks(model: Any, callbacks: list | None, verbose: int, plan: Any, trainer: Trainer) -> list:
    """The user's callbacks with fit's defaults around them, each default only when the user did
    not pass one of its kind: a device-stats monitor first (``model.device_stats`` and the
    progress line, not the logs),
    a ``ProgbarLogger`` (``verbose``, rank 0), a ``History`` (last, as Keras 2) and, with the
    ``share.status`` flag, a ``RunStatus`` (rank 0) after it. Sets ``model.history`` to the
    ``History`` of this fit (the user's own when they passed one)."""
    user = list(callbacks or [])
    # device figures for the progress line and model.device_stats, never in History/CSV logs
    # (the user's own DeviceStatsMonitor puts them in the logs on purpose)
    cbs: list = ([] if any(isinstance(cb, DeviceStatsMonitor) for cb in user)
                 else [DeviceStatsMonitor(into_logs=False, utilization=False)])
    if verbose and trainer.strategy.is_main and not any(isinstance(cb, ProgbarLogger) for cb in user):
        cbs.append(ProgbarLogger("samples" if plan.samples else "steps", verbose=verbose))
    history = next((cb for cb in user if isinstance(cb, History)), None)
    model.history = history if history is not None else History()
    cbs += user + ([] if history is not None else [model.history])
    # import time: the run-status file (and the lease directory it lives in) loads with the first fit
    from arignote.callbacks.status import RunStatus

    status_wanted = config.get("share.status") and not any(isinstance(cb, RunStatus) for cb in user)
    if trainer.strategy.is_main and status_wanted:  # issue 19: `arignote dash` shows the run
        cbs.append(RunStatus())
    return cbs
