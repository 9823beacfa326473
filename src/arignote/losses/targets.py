"""Targets checked against a loss before training starts (numpy only, no device work):
:func:`check_targets` rejects targets of the wrong kind with one error naming the fix.

Example::

    >>> check_targets("categorical_crossentropy", np.array([[0, 1], [1, 0]]), (2,)) is None
    True
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from arignote.losses.names import _NAMES, name_of

__all__ = ["check_targets"]


def _integral(y: np.ndarray) -> bool:
    if np.issubdtype(y.dtype, np.integer) or y.dtype == bool:
        return True
    return np.issubdtype(y.dtype, np.floating) and bool(np.all(y == np.round(y)))


def check_targets(loss: str | Callable, y, output_shape: tuple) -> None:
    """Raise ``ValueError`` when targets ``y`` (numpy-like, batch first) cannot go with ``loss``.

    ``output_shape`` is the model's per-sample output shape (Keras order), e.g. ``(10,)``.

    Example::

        >>> check_targets("sparse_categorical_crossentropy", np.array([0, 10]), (10,))
        Traceback (most recent call last):
        ...
        ValueError: sparse_categorical_crossentropy expects integer labels in [0, 10), got 10
    """
    name = name_of(loss)
    y = np.asarray(y)
    output_shape = tuple(output_shape)
    if y.ndim == 0:
        raise ValueError(f"{name}: targets must have a batch dimension, got a scalar")
    if np.issubdtype(y.dtype, np.floating) and not np.all(np.isfinite(y)):
        raise ValueError(f"{name}: targets contain NaN or Inf; clean them before fit")
    if name not in _NAMES:
        # a user-defined loss (a triplet loss reading thirds of y_pred, given dummy zeros as targets):
        # Keras 2.3.1 makes no assumption about its targets' shape (feed_output_shapes None)
        return
    n = y.shape[0]
    per_sample = y.shape[1:]
    width = output_shape[-1] if output_shape else 1

    if name == "sparse_categorical_crossentropy":
        expected = output_shape[:-1]
        if per_sample not in (expected, (*expected, 1)):
            if per_sample == output_shape and width > 1:
                raise ValueError(
                    f"{name} expects integer labels, got one-hot targets of width {width}: "
                    "use categorical_crossentropy, or y.argmax(-1) as labels"
                )
            raise ValueError(f"{name} expects integer labels of shape {(n, *expected)}, got {y.shape}")
        if not _integral(y):
            raise ValueError(f"{name} expects integer labels, got non-integer values of dtype {y.dtype}")
        if y.size and (y.min() < 0 or y.max() >= width):
            bad = y.min() if y.min() < 0 else y.max()
            raise ValueError(f"{name} expects integer labels in [0, {width}), got {int(bad)}")
        return

    if name == "categorical_crossentropy":
        if per_sample != output_shape:
            if per_sample in (output_shape[:-1], (*output_shape[:-1], 1)) and _integral(y):
                raise ValueError(
                    f"{name} expects one-hot targets of width {width}, got integer labels: "
                    f"use to_categorical(y, {width}) or sparse_categorical_crossentropy"
                )
            got = f"width {per_sample[-1]}" if per_sample else f"shape {y.shape}"
            raise ValueError(
                f"{name} expects one-hot targets of width {width}, got {got} (targets {y.shape})"
            )
        if y.size and y.min() < 0:
            raise ValueError(f"{name} expects one-hot (or probability) targets >= 0, got {y.min()}")
        return

    if y.size != n * int(np.prod(output_shape, dtype=np.int64)):
        raise ValueError(
            f"{name}: targets of shape {y.shape} do not match the model output {(n, *output_shape)}"
        )
    # Whole numbers outside {0, 1} are class ids given to a binary loss (a mistake worth an error);
    # real targets slightly outside [0, 1] are soft or noisy labels (the Keras 2 GAN adds noise to
    # its 0/1 labels), which Keras 2 computes without complaint, so they pass.
    if name == "binary_crossentropy" and y.size and (y.min() < 0 or y.max() > 1) and _integral(y):
        bad = y.min() if y.min() < 0 else y.max()
        raise ValueError(
            f"{name} expects targets in [0, 1], got {bad}; for more than 2 classes use a softmax output "
            "with sparse_categorical_crossentropy"
        )
