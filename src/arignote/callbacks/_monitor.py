"""Shared helpers of the monitoring callbacks: mode resolution, log look-up, rank and LR access.

Example::

    >>> better = improvement("val_acc", "auto")
    >>> better(0.9, 0.8), better(0.7, 0.8)
    (True, False)
"""

from __future__ import annotations

import math
import operator
import sys
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from arignote.metrics.names import spellings

_MODES = ("auto", "min", "max")
# metric classes whose larger value is better but whose logged name Keras 2.3.1's auto rule does not
# recognise (it looks for "acc" only): AUC, Precision, Recall, the counts of right answers, MeanIoU
_HIGHER_IS_BETTER = ("auc", "precision", "recall", "true_positives", "true_negatives", "mean_io_u",
                     "mean_iou", "sensitivity_at_specificity", "specificity_at_sensitivity")


def check_mode(mode: str, owner: str) -> str:
    """Return ``mode`` or raise a ValueError naming the callback and the accepted values."""
    if mode not in _MODES:
        raise ValueError(f"{owner}: mode={mode!r} is not one of 'auto', 'min', 'max'")
    return mode


def maximizes(monitor: str, mode: str) -> bool:
    """Whether a larger value of ``monitor`` is better.

    In auto mode, Keras 2.3.1's rule: names holding ``acc`` or starting with ``fmeasure`` are
    maximised, everything else minimised; and, where that rule is wrong, what Keras 3 and tf.keras
    do instead: the logged names of AUC, Precision, Recall, TruePositives/TrueNegatives and MeanIoU
    (``val_auc``, ``precision_1``) are maximised too. Keras 2.3.1 minimised them, so an
    ``EarlyStopping(monitor='val_auc')`` stopped when AUC rose.

    >>> maximizes("val_auc", "auto"), maximizes("val_loss", "auto"), maximizes("val_auc", "min")
    (True, False, False)
    """
    if mode == "max":
        return True
    if mode == "min":
        return False
    if "acc" in monitor or monitor.startswith("fmeasure"):
        return True
    base = monitor[len("val_"):] if monitor.startswith("val_") else monitor
    return any(base == name or (base.startswith(name + "_") and base[len(name) + 1:].isdigit())
               for name in _HIGHER_IS_BETTER)


def improvement(monitor: str, mode: str) -> Callable[[float, float], bool]:
    """``np.greater`` or ``np.less`` as Keras picks it for ``monitor`` in ``mode``."""
    return operator.gt if maximizes(monitor, check_mode(mode, "monitor")) else operator.lt


def monitor_value(logs: Mapping[str, Any] | None, monitor: str, owner: str) -> float | None:
    """The value of ``monitor`` in ``logs`` as a float, or None with a warning naming the keys
    that are available (Keras warns and skips the epoch in the same situation)."""
    logs = logs or {}
    # Keras 2.0-2.2 logged ``acc``/``mean_absolute_error``, Keras 2.3 ``accuracy``/``mae``: any
    # spelling of ``monitor`` finds the logged one, so scripts from both eras work.
    for key in (monitor, *spellings(monitor)):
        if key in logs:
            return float(logs[key])
    available = ", ".join(sorted(logs)) or "none"
    hint = ""
    if monitor.startswith("val_"):
        hint = " (val_* values need validation_data or validation_split in fit)"
    warnings.warn(
        f"{owner} monitors '{monitor}', which is not in the epoch logs (available: {available}){hint}; "
        "pass monitor= one of the available names",
        RuntimeWarning,
        stacklevel=3,
    )
    return None


def whole_number(value: Any, name: str, owner: str, minimum: int, meaning: str = "") -> int:
    """``value`` if it is an int >= ``minimum``, else a ValueError naming the argument."""
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        extra = f" ({meaning})" if meaning else ""
        raise ValueError(f"{owner}: {name}={value!r} must be a whole number >= {minimum}{extra}")
    return value


def is_main(model: Any) -> bool:
    """True on the process that writes files: rank 0 of the model's strategy (True without one)."""
    strategy = getattr(model, "strategy", None)
    if strategy is None:  # arignote's Model keeps its strategy on the trainer that fit builds
        strategy = getattr(getattr(model, "_trainer", None), "strategy", None)
    if strategy is not None and hasattr(strategy, "is_main"):
        return bool(strategy.is_main)
    return bool(getattr(model, "is_main", True))


def optimizer_of(model: Any, owner: str) -> Any:
    """The model's optimizer, or a clear error when ``fit`` runs before ``compile``."""
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None or not hasattr(optimizer, "lr"):
        raise ValueError(
            f"{owner} needs model.optimizer with an 'lr' attribute (an arignote.optimizers optimizer); "
            "call model.compile(optimizer=...) first"
        )
    return optimizer


def get_lr(model: Any, owner: str) -> float:
    return float(optimizer_of(model, owner).lr)


def set_lr(model: Any, value: float, owner: str) -> None:
    value = float(value)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{owner}: learning rate must be a finite number >= 0, got {value!r}")
    optimizer_of(model, owner).lr = value


def say(message: str) -> None:
    """Print a callback's verbose message on stdout (Keras prints these too)."""
    print(message, file=sys.stdout, flush=True)


def notice(message: str) -> None:
    """A one-line notice on stderr (e.g. a corrupt backup skipped)."""
    print(message, file=sys.stderr, flush=True)
