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

import numpy as np

from arignote import config
from arignote.callbacks.base import History
from arignote.callbacks.device_stats import DeviceStatsMonitor
from arignote.callbacks.progbar import ProgbarLogger
from arignote.devices import fastpaths
from arignote.training.loop import Trainer

__all__ = ["fit_callbacks", "fit_facts", "callback_validation_data"]


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


def callback_validation_data(model: Any, x: Any, y: Any, sample_weight: Any, class_weight: Any,
                             validation_data: Any, validation_split: float) -> list | None:
    """What Keras 2.3.1's ``fit`` hands every callback as ``callback.validation_data``: the validation
    inputs, targets and per-output sample weights as numpy arrays in one flat list (the user's own
    arrays when they are numpy ones; weights of ones when none were given; a trailing ``0.`` for a
    model with dropout-like layers, Keras's learning phase), ``[]`` for array data without validation,
    None (left as it is) for an iterable of batches, as ``fit_generator`` with a validation generator.

    >>> from types import SimpleNamespace
    >>> x_val, y_val = np.zeros((3, 2)), np.ones((3, 1))
    >>> out = callback_validation_data(SimpleNamespace(), None, None, None, None, (x_val, y_val), 0.0)
    >>> out[0] is x_val, out[1] is y_val, out[2].tolist()
    (True, True, [1.0, 1.0, 1.0])
    """
    from arignote.training import sample_weights  # why: the weighting loads with the first fit (issue 32)
    from arignote.training.data import is_array  # why: likewise

    def arrays(obj: Any) -> bool:
        items = obj.values() if isinstance(obj, dict) else obj
        return is_array(obj) or (isinstance(obj, (list, dict)) and bool(obj) and all(map(is_array, items)))

    pair = isinstance(validation_data, (list, tuple)) and len(validation_data) in (2, 3)
    if pair and arrays(validation_data[0]):
        vx, vy = validation_data[0], validation_data[1]
        vw = validation_data[2] if len(validation_data) == 3 else None
        class_weight = None  # Keras 2.3.1 weighs validation_data by its own sample weights only
    elif validation_data is None and validation_split and y is not None and arrays(x):
        cut = int(len(_first(x)) * (1.0 - float(validation_split)))
        vx, vy, vw = (_sliced(v, cut) for v in (x, y, sample_weight))
    else:
        return [] if validation_data is None and arrays(x) else None
    inputs = _listed(vx, getattr(model, "input_names", None))
    names = list(model.output_names) if getattr(model, "_is_graph", False) else ["output"]
    targets = sample_weights.targets_per_output(vy, names)
    given = sample_weights.per_output(vw, names, "sample_weight")
    cws = sample_weights.per_output(class_weight, names, "class_weight")
    modes = getattr(model, "_weight_modes", None) or [None] * len(names)
    weights = []
    for target, sw, cw, mode in zip(targets, given, cws, modes):
        w = sample_weights.standardize_weights(target, sw, cw, mode) if target is not None else None
        if w is None and target is not None:
            shape = (len(target),) if mode != "temporal" else tuple(np.shape(target)[:2])
            w = np.ones(shape, dtype=config.get("floatX"))
        weights.append(w)
    out = inputs + [np.asarray(t) if not isinstance(t, np.ndarray) else t for t in targets if t is not None]
    out += [w for w in weights if w is not None]
    if any(getattr(t, "_uses_learning_phase", False) for t in getattr(model, "outputs", None) or ()):
        out.append(0.0)
    return out


def _first(x: Any) -> Any:
    return next(iter(x.values())) if isinstance(x, dict) else x[0] if isinstance(x, list) else x


def _sliced(obj: Any, cut: int) -> Any:
    if obj is None:
        return None
    if isinstance(obj, dict):
        return {k: _sliced(v, cut) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_sliced(v, cut) for v in obj]
    return obj[cut:]


def _listed(x: Any, names: Any) -> list:
    if isinstance(x, dict):
        return [np.asarray(x[n]) for n in names] if names else [np.asarray(v) for v in x.values()]
    items = x if isinstance(x, list) else [x]
    return [v if isinstance(v, np.ndarray) else np.asarray(v) for v in items]
