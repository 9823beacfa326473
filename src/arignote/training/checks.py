"""Checks run before the first step, so bad input fails with one clear message instead of mid-epoch.

Each function raises ``ValueError`` (``TypeError`` for a wrong kind of object) naming the culprit
and the fix.

Example::

    >>> import numpy as np
    >>> check_input_shape(np.zeros((4, 3, 32, 32)), (32, 32, 3))
    Traceback (most recent call last):
    ...
    ValueError: x has per-sample shape (3, 32, 32) (channels first) but the model expects (32, 32, 3) \
(channels last, as in Keras); pass x.transpose(0, 2, 3, 1)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

__all__ = [
    "check_batch_size",
    "check_steps",
    "check_lengths",
    "check_finite",
    "check_input_shape",
    "shape_of",
]

# finiteness is checked in chunks of this many elements so a huge array needs no huge bool mask
_CHUNK = 1 << 22


def shape_of(a: Any) -> tuple[int, ...]:
    return tuple(int(d) for d in (a.shape if hasattr(a, "shape") else np.shape(a)))


def check_batch_size(batch_size: Any, name: str = "batch_size") -> int:
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size <= 0:
        raise ValueError(f"{name} must be a positive whole number, got {batch_size!r}")
    return int(batch_size)


def check_steps(steps: Any, name: str = "steps") -> int | None:
    """A Keras 2 step count (``steps_per_epoch``, ``validation_steps``, ``steps``) as a whole number.

    Keras 2.3.1 loops ``while steps_done < steps``, so a float such as ``len(x_train) / 32`` (the
    keras.io ImageDataGenerator example) runs ``ceil(steps)`` batches; None stays None.

    Example::

        >>> check_steps(312.5, "steps_per_epoch"), check_steps(10.0), check_steps(None)
        (313, 10, None)
    """
    if steps is None:
        return None
    if isinstance(steps, (float, np.floating)) and np.isfinite(steps) and steps > 0:
        return int(np.ceil(steps))
    return check_batch_size(steps, name)


def check_lengths(x: Any, y: Any, what: str = "x and y") -> int:
    """Number of samples; raises when ``x`` is empty or ``x``/``y`` lengths differ."""
    n = len(x)
    if n == 0:
        raise ValueError(f"{what.split(' ')[0]} is empty (0 samples): nothing to train or evaluate on")
    if y is not None and len(y) != n:
        raise ValueError(
            f"{what} have different numbers of samples: {n} inputs but {len(y)} targets; "
            "they must match one to one")
    return n


def _first_bad(t: torch.Tensor) -> int:
    flat = t.reshape(len(t), -1)
    rows = max(1, _CHUNK // max(1, flat.shape[1]))
    for start in range(0, len(flat), rows):
        bad = (~torch.isfinite(flat[start:start + rows])).any(dim=1).nonzero()
        if len(bad):
            return start + int(bad[0])
    return -1


def check_finite(t: torch.Tensor, name: str = "x") -> None:
    """Raise if a float tensor holds NaN or Inf, naming the first bad sample.

    One sum in the tensor's own dtype decides (no temporary mask, no float64 copy of the data: a
    ``dtype=`` argument would cast the whole tensor first); only a non-finite sum scans for the culprit.
    """
    if not t.is_floating_point() or t.numel() == 0:
        return
    if bool(torch.isfinite(t.sum())):
        return
    index = _first_bad(t)
    if index < 0:
        return  # the sum overflowed: values are large but finite
    raise ValueError(
        f"{name} contains NaN or Inf values (first at sample {index}); clean or impute them before "
        f"training, e.g. {name} = np.nan_to_num({name})")


def _channels_last_fixes(got: tuple, expected: tuple) -> list[tuple[int, ...]]:
    """The transposes (batch axis included) that move one axis of ``got`` last to give ``expected``:
    images ``(C, H, W)`` -> ``(0, 2, 3, 1)``; a sequence of images ``(T, C, H, W)`` -> ``(0, 1, 3, 4, 2)``."""
    fixes = []
    for i in range(len(got) - 1):
        moved = (*got[:i], *got[i + 1:], got[i])
        if all(e is None or e == g for g, e in zip(moved, expected)):
            fixes.append((0, *(a + 1 for a in range(len(got)) if a != i), i + 1))
    return fixes


def check_input_shape(x: Any, expected: tuple | None, name: str = "x") -> None:
    """Compare the per-sample shape of ``x`` with what the model expects (None dims match anything).

    Channels-first images given to a channels-last model get the transpose that fixes them.
    """
    if expected is None:
        return
    got = shape_of(x)[1:]
    expected = tuple(expected)
    if len(got) == len(expected) and all(e is None or e == g for g, e in zip(got, expected)):
        return
    fixes = _channels_last_fixes(got, expected) if len(got) == len(expected) >= 2 else []
    if fixes:
        raise ValueError(
            f"{name} has per-sample shape {got} (channels first) but the model expects {expected} "
            f"(channels last, as in Keras); pass " + " or ".join(f"{name}.transpose{p}" for p in fixes))
    shown = tuple("?" if e is None else e for e in expected)
    raise ValueError(
        f"{name} has per-sample shape {got} but the model's input shape is {shown}; "
        "reshape the data or change input_shape= on the first layer")
