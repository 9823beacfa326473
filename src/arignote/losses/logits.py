"""Keras 2's clipped cross-entropies computed from the logits, in few operators (forward + backward).

Keras 2 computes its cross-entropies on probabilities clipped to ``[eps, 1 - eps]`` (``eps =
backend.epsilon()``, 1e-7), whose gradient is zero where the clip is active. From the logits the
same is ``log_softmax`` (or ``logsigmoid``) clamped to ``[log eps, log(1 - eps)]``, with a zero
gradient where clamped (:mod:`arignote.losses`, :func:`~arignote.losses.from_logits`). Written with
autograd, each clamp's backward is five operators (``scalar_tensor``, ``ge``, ``le``,
``logical_and_``, ``where``) and the categorical loss's reduction three more; here:

* :func:`clip` is the clamp with a one-operator backward (``hardtanh_backward``, given bounds one
  float step outside Keras's so that a value exactly on a bound keeps its gradient, as Keras's
  ``clip`` does: zero only where the clip changes the value);
* :func:`categorical` is the whole categorical cross-entropy as one ``autograd.Function``:
  forward ``log_softmax``, ``clamp``, the targets times ``-1/N``, one ``dot``; backward the
  incoming gradient times those, ``hardtanh_backward``, ``_log_softmax_backward_data``. 8
  operators a step with the backward's ``ones_like``, against 16 written with autograd (and 5 for
  ``F.cross_entropy``, which has no clip);
* :func:`binary` is the binary cross-entropy of a sigmoid the same way: 18 operators, against 22
  with :func:`clip` and autograd (30 with autograd's clamps).

The values are those of the autograd formulas up to float rounding (the sum is a ``dot``), the
gradients the same up to rounding, zero where the clip is active.

Example::

    >>> z = torch.tensor([[2.0, 0.5, -1.0], [0.0, 40.0, -40.0]], requires_grad=True)
    >>> y = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    >>> loss = categorical(y, z)
    >>> ref = -(y * torch.log_softmax(z, -1).clamp(math.log(1e-7), math.log1p(-1e-7))).sum(-1).mean()
    >>> bool(torch.isclose(loss, ref))
    True
    >>> loss.backward(); z.grad[1].tolist()   # the clipped row: no gradient
    [0.0, 0.0, 0.0]
"""

from __future__ import annotations

import functools
import math

import torch

from arignote import backend

__all__ = ["log_bounds", "clip", "categorical", "binary"]


def log_bounds() -> tuple[float, float]:
    """``(log eps, log(1 - eps))``: Keras's clip of probabilities, on log-probabilities."""
    eps = backend.epsilon()
    return math.log(eps), math.log1p(-eps)


@functools.lru_cache(maxsize=32)
def _outside(dtype: torch.dtype, lo: float, hi: float) -> tuple[float, float]:
    """``lo`` and ``hi`` as ``dtype`` rounds them, each moved one step of ``dtype`` outwards:
    ``hardtanh_backward`` zeroes the gradient where ``x <= lo'`` or ``x >= hi'``, i.e. exactly where
    ``x < lo`` or ``x > hi`` (a clamp of ``dtype`` values changes them there and nowhere else)."""
    bounds = torch.tensor([lo, hi], dtype=dtype)
    away = torch.tensor([-math.inf, math.inf], dtype=dtype)
    try:
        out = torch.nextafter(bounds, away)
    except RuntimeError:  # no nextafter for this dtype on the CPU: float32's steps (finer)
        out = torch.nextafter(bounds.float(), away.float())
    return float(out[0]), float(out[1])


class _Clip(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, lo: float, hi: float) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.bounds = (lo, hi)
        return x.clamp(lo, hi)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple:
        (x,) = ctx.saved_tensors
        lo, hi = _outside(x.dtype, *ctx.bounds)
        return torch.ops.aten.hardtanh_backward(grad, x, lo, hi), None, None


def clip(log_p: torch.Tensor) -> torch.Tensor:
    """``log_p`` clamped to :func:`log_bounds`, zero gradient where that changes it (one operator
    each way).

    >>> x = torch.tensor([-20.0, -1.0, 0.0], requires_grad=True)
    >>> clip(x).sum().backward(); x.grad.tolist()
    [0.0, 1.0, 0.0]
    """
    lo, hi = log_bounds()
    return _Clip.apply(log_p, lo, hi)


class _Categorical(torch.autograd.Function):
    """``-mean over samples of sum(y * clamp(log_softmax(z)))``; the mean's ``1/N`` is folded into
    the targets (``w = -y / N``), so the loss is ``dot(w, clamped)`` and its gradient with respect
    to the clamped log-probabilities is ``w`` times the incoming gradient."""

    @staticmethod
    def forward(ctx, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        lo, hi = log_bounds()
        log_p = torch.log_softmax(logits, dim=-1)
        samples = log_p.numel() // max(log_p.shape[-1], 1)
        w = y.reshape(log_p.shape).mul(-1.0 / samples if samples else math.nan)
        clamped = log_p.clamp(lo, hi)
        if w.dtype != log_p.dtype:  # the loss in the wider of the two (as y * log_p promotes)
            dtype = torch.promote_types(w.dtype, log_p.dtype)
            w, clamped = w.to(dtype), clamped.to(dtype)
        ctx.save_for_backward(log_p, w)
        ctx.bounds, ctx.logits_dtype = (lo, hi), logits.dtype
        return torch.dot(w.reshape(-1), clamped.reshape(-1))

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple:
        log_p, w = ctx.saved_tensors
        lo, hi = _outside(log_p.dtype, *ctx.bounds)
        g = w * grad
        if g.dtype != log_p.dtype:
            g = g.to(log_p.dtype)
        g = torch.ops.aten.hardtanh_backward(g, log_p, lo, hi)
        return torch._log_softmax_backward_data(g, log_p, -1, ctx.logits_dtype), None


def categorical(y_true: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """Keras's ``categorical_crossentropy`` of ``softmax(logits)``, averaged over the samples (and
    time steps), from the logits (see the module docstring)."""
    return _Categorical.apply(logits, y_true)


_log_sigmoid = torch.ops.aten.log_sigmoid_forward  # (log sigmoid(x), the buffer its backward reads)
_log_sigmoid_backward = torch.ops.aten.log_sigmoid_backward


class _Binary(torch.autograd.Function):
    """``-mean(y clamp(log sigmoid(z)) + (1 - y) clamp(log sigmoid(-z)))``: the mean's ``1/M`` folded
    into the weights ``w1 = -y / M`` and ``w0 = -(1 - y) / M``, the sums two ``dot``."""

    @staticmethod
    def forward(ctx, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        lo, hi = log_bounds()
        neg = logits.neg()
        log_p, buf_p = _log_sigmoid(logits)
        log_q, buf_q = _log_sigmoid(neg)
        count = log_p.numel()
        w1 = y.reshape(log_p.shape).mul(-1.0 / count if count else math.nan)
        w0 = torch.rsub(w1, -1.0 / count if count else math.nan)  # -1/M - w1 = -(1 - y) / M
        c_p, c_q = log_p.clamp(lo, hi), log_q.clamp(lo, hi)
        if w1.dtype != log_p.dtype:  # the loss in the wider of the two (as y * log_p promotes)
            dtype = torch.promote_types(w1.dtype, log_p.dtype)
            w1, w0, c_p, c_q = w1.to(dtype), w0.to(dtype), c_p.to(dtype), c_q.to(dtype)
        ctx.save_for_backward(logits, neg, log_p, buf_p, log_q, buf_q, w1, w0)
        ctx.bounds = (lo, hi)
        return torch.dot(w1.reshape(-1), c_p.reshape(-1)) + torch.dot(w0.reshape(-1), c_q.reshape(-1))

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple:
        logits, neg, log_p, buf_p, log_q, buf_q, w1, w0 = ctx.saved_tensors
        lo, hi = _outside(log_p.dtype, *ctx.bounds)

        def through(w: torch.Tensor, log_s: torch.Tensor, x: torch.Tensor, buf: torch.Tensor) -> torch.Tensor:
            g = w * grad
            if g.dtype != log_s.dtype:
                g = g.to(log_s.dtype)
            return _log_sigmoid_backward(torch.ops.aten.hardtanh_backward(g, log_s, lo, hi), x, buf)

        return through(w1, log_p, logits, buf_p) - through(w0, log_q, neg, buf_q), None


def binary(y_true: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """Keras's ``binary_crossentropy`` of ``sigmoid(logits)``, averaged over every output, from the
    logits (see the module docstring).

    >>> z = torch.tensor([[3.0], [-20.0]], requires_grad=True)
    >>> y = torch.tensor([[1.0], [1.0]])
    >>> loss = binary(y, z); loss.backward()
    >>> round(loss.item(), 4), z.grad[1].item()   # the second: p under eps, clipped, no gradient
    (8.0833, 0.0)
    """
    return _Binary.apply(logits, y_true)
