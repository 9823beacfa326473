"""Checks on every batch of an iterable (DataLoader, Sequence, generator, list) before its step runs.

Arrays given to ``fit(x, y)`` are checked once, whole, before training (:mod:`.checks`); an iterable
is only seen batch by batch, so a bad batch in the middle of an epoch would otherwise surface as a raw
torch error (``IndexError: Target 7 is out of bounds.``) that names neither the batch nor the input.
:class:`BatchCheck` runs on the batch as the data source gave it (on the host, before it is moved):
an empty batch, x/y of different lengths, strings or objects, a per-sample shape the model does not
take, NaN/Inf values, targets the loss cannot take: one ``ValueError`` naming the batch index, the
input and the problem. Values are checked only for batches on the host (reading a GPU batch back
would add a device sync per step); shapes and sizes always. With a ``TerminateOnNaN`` among fit's
callbacks (:func:`let_nonfinite_through`) a batch with NaN/Inf values runs with a warning naming it,
so its loss stops training as in Keras 2 (logs, CSV row and checkpoints kept) instead of raising
mid-epoch; arrays given to ``fit`` are still refused before training starts.

Example::

    >>> import numpy as np
    >>> check = BatchCheck("x", input_shape=(3,), loss="sparse_categorical_crossentropy",
    ...                    output_shape=(2,))
    >>> check(np.zeros((4, 3), "float32"), np.array([0, 1, 1, 0]), step=5)
    >>> check(np.zeros((4, 3), "float32"), np.array([0, 1, 7, 0]), step=6)
    Traceback (most recent call last):
    ...
    ValueError: batch 6 of x: y: sparse_categorical_crossentropy expects integer labels in [0, 2), got 7; \
fix that batch in the data source (the step did not run)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from arignote import losses
from arignote.training.checks import check_finite

__all__ = ["BatchCheck", "for_model", "let_nonfinite_through"]


class BatchCheck:
    """Callable ``check(x, y, step)`` raising ``ValueError("batch {step} of {name}: ...")``.

    ``input_shape``: the model's per-sample input shape (None entries match anything; None: not
    checked). ``loss`` and ``output_shape``: targets are checked against them (None: not checked).
    """

    def __init__(self, name: str, input_shape: tuple | None = None, loss: Any = None,
                 output_shape: tuple | None = None) -> None:
        self.name = name
        self.input_shape = None if input_shape is None else tuple(input_shape)
        self.loss = loss
        self.output_shape = None if output_shape is None else tuple(output_shape)
        self.finite = True  # False: NaN/Inf values warn instead of raising (let_nonfinite_through)
        self._warned = False

    def __call__(self, x: Any, y: Any, step: int) -> None:
        try:
            self._check(x, y, step)
        except ValueError as exc:
            raise ValueError(f"batch {step} of {self.name}: {exc}; fix that batch in the data source "
                             "(the step did not run)") from None

    def _check(self, x: Any, y: Any, step: int) -> None:
        xs = _tensors(x, "x")
        n = None
        for label, t in xs:
            if t.dim() == 0:
                raise ValueError(f"{label} is a scalar, not a batch")
            if n is None:
                n = len(t)
            elif len(t) != n:
                raise ValueError(f"the inputs have different numbers of samples ({n} and {len(t)})")
        if n == 0:
            raise ValueError("it is empty (0 samples): a Sequence whose __len__ counts more batches than "
                             "it has, or a sampler that yields an empty batch; every batch needs a sample")
        ys = [] if y is None else _tensors(y, "y")
        for label, t in ys:
            if t.dim() == 0 or len(t) != n:
                got = "a scalar" if t.dim() == 0 else f"{len(t)} samples"
                raise ValueError(f"{label} has {got} but x has {n}: inputs and targets must match one to one")
        if self.input_shape is not None and len(xs) == 1:
            got = tuple(xs[0][1].shape[1:])
            want = self.input_shape
            if len(got) != len(want) or any(w is not None and w != g for g, w in zip(got, want)):
                shown = tuple("?" if w is None else w for w in want)
                raise ValueError(f"x has per-sample shape {got} but the model's input shape is {shown}")
        for label, t in xs + ys:
            if t.device.type == "cpu":
                self._finite(t, label, step)
        if self.loss is not None and self.output_shape is not None and len(ys) == 1 \
                and ys[0][1].device.type == "cpu" and (self.finite or _finite(ys[0][1])):
            try:
                losses.check_targets(self.loss, ys[0][1].numpy(), self.output_shape)
            except ValueError as exc:
                raise ValueError(f"y: {exc}") from None

    def _finite(self, t: torch.Tensor, label: str, step: int) -> None:
        try:
            check_finite(t, label)
        except ValueError as exc:
            if self.finite:
                raise
            if not self._warned:  # the first such batch only (the next are fetched ahead: no repeats)
                self._warned = True
                warnings.warn(f"batch {step} of {self.name}: {exc}; it is trained on, and TerminateOnNaN "
                              "stops training on the loss it makes", stacklevel=2)


def let_nonfinite_through(*datas: Any) -> None:
    """Let NaN/Inf batches of these data sources run (warned): fit does it when a ``TerminateOnNaN``
    is among its callbacks, which then stops training on the loss they make.

    >>> class Data: check = BatchCheck("x")
    >>> let_nonfinite_through(Data, None); Data.check.finite
    False
    """
    for data in datas:
        check = getattr(data, "check", None)
        if isinstance(check, BatchCheck):
            check.finite = False


def _finite(t: torch.Tensor) -> bool:
    return not t.is_floating_point() or bool(torch.isfinite(t).all())


def _tensors(obj: Any, label: str) -> list[tuple[str, torch.Tensor]]:
    """``[(label, tensor)]`` for an array, or one per element of a list/tuple of arrays (multi-input),
    or per entry of a dict keyed by input/output name."""
    if isinstance(obj, dict):
        return [pair for key, o in obj.items() for pair in _tensors(o, f"{label}[{key!r}]")]
    if isinstance(obj, (list, tuple)) and obj and not isinstance(obj[0], (int, float, bool, np.generic)):
        return [pair for i, o in enumerate(obj) for pair in _tensors(o, f"{label}[{i}]")]
    if isinstance(obj, torch.Tensor):
        t = obj.detach()
    else:
        arr = np.asarray(obj)
        if arr.dtype == object:
            raise ValueError(f"{label} has dtype object (ragged lists or mixed types), not numbers")
        if arr.dtype.kind in "USV":
            raise ValueError(f"{label} holds {arr.dtype} values (strings or bytes), not numbers")
        # ascontiguousarray: a reversed view (Keras 2 generators yield samples[:, ::-1]) has negative
        # strides, which torch.from_numpy refuses; contiguous arrays pass through uncopied
        if arr.dtype.isnative and arr.dtype.kind in "biuf":
            t = torch.from_numpy(np.ascontiguousarray(arr))
        else:
            t = torch.as_tensor(arr.astype(np.float64 if arr.dtype.kind in "fc" else np.int64))
    if t.is_complex():
        raise ValueError(f"{label} is complex; arignote trains on real numbers")
    return [(label, t)]


def for_model(model: Any, name: str, targets: bool = True) -> Callable[[Any, Any, int], None]:
    """The :class:`BatchCheck` for ``model``'s input shape, loss and output shape (what it knows)."""
    expected = model.expected_input_shape() if hasattr(model, "expected_input_shape") else None
    output = model._sample_output_shape() if targets and hasattr(model, "_sample_output_shape") else None
    loss = getattr(model, "loss", None) if targets else None
    return BatchCheck(name, expected, loss, output)
