"""``Conv1D`` (relu or linear) followed directly by ``GlobalMaxPooling1D`` as one autograd function.

Below a global max over time only one step per (sample, filter) receives a gradient, yet the
unfused backward runs the dense convolution backward over every step (32x398x250 for imdb_cnn).
:class:`ConvMaxPool` runs the same forward kernel (``Conv1D._conv``), then the max over time with
its argmax (the activation after the max: relu and the identity are monotone, so the values are
bit for bit the unfused ones), and a backward that touches only the argmax windows:

- bias: ``sum_b g[b, c]`` (``g`` masked by relu' at the max, as the unfused relu backward masks it),
- kernel: for each (b, c) the ``kernel_size x C_in`` input window at the argmax times ``g[b, c]``
  (a gather and one einsum),
- input: ``g[b, c] * W[c]`` scatter-added into those windows (``index_add_``).

Tied maxima (two steps with the same value, where the gradient is split between them, as torch's
``amax`` splits it) are found in the forward; a batch with a tie that gets a gradient (relu: a
positive tie) runs the dense backward instead, exactly the unfused one (``dense_backwards`` counts).

:func:`fusable` decides which layer pairs fuse (pure, unit-tested); :func:`runs_fused` which calls
(training mode, gradient enabled, not traced/compiled/exported, float32/float64, a 3-D input with contiguous
channels, autocast off): others run the two layers as before.

Example::

    >>> import torch
    >>> from arignote.layers import Conv1D, GlobalMaxPooling1D
    >>> conv, pool = Conv1D(4, 3, activation="relu"), GlobalMaxPooling1D()
    >>> x = torch.randn(2, 9, 5, requires_grad=True)
    >>> fused = ConvMaxPool(conv, pool)
    >>> bool(torch.equal(fused(x), pool(conv(x))))
    True
"""

from __future__ import annotations

from typing import Any

import torch
from torch.nn.modules import module as _torch_module

from arignote import activations
from arignote.graph import state
from arignote.layers.pooling import GlobalMaxPooling1D

__all__ = ["ConvMaxPool", "fusable", "runs_fused"]

_FLOATS = (torch.float32, torch.float64)
_STEPS_LIMIT = torch.iinfo(torch.int16).max  # steps and tie counts are summed in int16


def _hooked(module: torch.nn.Module) -> bool:
    return bool(module._forward_hooks or module._forward_pre_hooks
                or getattr(module, "_forward_hooks_with_kwargs", None))


def fusable(conv: Any, pool: Any) -> bool:
    """Whether ``pool(conv(x))`` may run as :class:`ConvMaxPool`: exactly a built ``Conv1D``
    (channels_last, stride 1, dilation 1, padding 'valid', relu or linear, no activity regularizer,
    no forward hooks) followed by exactly a ``GlobalMaxPooling1D`` (channels_last, no hooks).

    >>> from arignote.layers import Conv1D
    >>> fusable(Conv1D(4, 3, activation="relu"), GlobalMaxPooling1D())
    True
    >>> fusable(Conv1D(4, 3, activation="tanh"), GlobalMaxPooling1D())
    False
    >>> fusable(Conv1D(4, 3, padding="same"), GlobalMaxPooling1D())
    False
    """
    if not _is_conv1d(conv) or type(pool) is not GlobalMaxPooling1D:
        return False
    if (conv.data_format != "channels_last" or pool.data_format != "channels_last"
            or tuple(conv.strides) != (1,) or tuple(conv.dilation_rate) != (1,) or conv.padding != "valid"):
        return False
    if conv.activation not in (activations.relu, activations.linear) or conv.activity_regularizer is not None:
        return False
    if _hooked(conv) or _hooked(pool) or _global_hooks():
        return False
    return not conv._value_semantics and not pool._value_semantics


def _is_conv1d(layer: Any) -> bool:
    # exactly Conv1D (a subclass may change call), named: conv.py imports this module (no circle)
    kind = type(layer)
    return kind.__name__ == "Conv1D" and kind.__module__ == "arignote.layers.convolutional.conv"


def _global_hooks() -> bool:
    return bool(_torch_module._global_forward_hooks or _torch_module._global_forward_pre_hooks)


def _compiling() -> bool:
    exporting = getattr(torch.compiler, "is_exporting", None)
    return torch.compiler.is_compiling() or (exporting is not None and exporting())


def runs_fused(x: torch.Tensor, conv: Any) -> bool:
    """Whether this call takes the fused path: the layer in training mode, gradient enabled and
    needed, float32/float64 input and kernel of one dtype, ``(N, steps, channels)`` with contiguous
    channels, no autocast, not under ``torch.jit`` tracing, ``torch.compile`` or ``torch.export``
    (they see the plain layers).

    >>> from arignote.layers import Conv1D
    >>> conv = Conv1D(2, 3); conv.build((None, 5, 1))
    >>> runs_fused(torch.zeros(1, 5, 1), conv)
    True
    >>> with torch.no_grad():
    ...     runs_fused(torch.zeros(1, 5, 1), conv)
    False
    """
    w = conv.weight
    if not torch.is_grad_enabled() or not (x.requires_grad or w.requires_grad
                                           or (conv.bias is not None and conv.bias.requires_grad)):
        return False
    if x.dtype not in _FLOATS or w.dtype != x.dtype or x.dim() != 3 or x.stride(2) != 1:
        return False
    if not conv.training or torch.is_autocast_enabled() or torch.jit.is_tracing() or _compiling():
        return False
    return conv._pad is None and conv.kernel_size[0] <= x.shape[1] <= _STEPS_LIMIT


class _ConvMax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, conv, relu):  # type: ignore[override]
        # the unfused layer's kernel call; its (N, C, T) result is (N, T, C) in memory: reduce there
        y = conv._conv(x.permute(0, 2, 1)).permute(0, 2, 1)
        # amax, the mask of its maxima, their count and (one maximum) its step: cheaper than max's indices
        top = y.amax(dim=1)
        mask = (y == top.unsqueeze(1)).view(torch.uint8)
        ties = mask.sum(dim=1, dtype=torch.int16) != 1  # 0: a NaN column (the unfused path too)
        steps = torch.arange(y.shape[1], dtype=torch.int16, device=y.device).view(1, -1, 1)
        where = (mask * steps).sum(dim=1, dtype=torch.int16).long()  # the step when there is one
        where = torch.where(ties, 0, where)  # ties that get no gradient (relu at 0): any valid step
        live = top > 0 if relu else torch.ones_like(ties)
        ctx.dense = bool((ties & live).any())
        ctx.relu = relu
        if ctx.dense:  # a tie that gets a gradient: the unfused backward (saves y)
            ctx.save_for_backward(x, weight, bias, y, top)
        else:
            ctx.save_for_backward(x, weight, bias, where, top)
        return torch.relu(top) if relu else top

    @staticmethod
    def backward(ctx, g):  # type: ignore[override]
        x, weight, bias, saved, top = ctx.saved_tensors
        if ctx.relu:
            g = torch.where(top > 0, g, 0.0)
        if ctx.dense:
            return (*_dense_backward(ctx, x, weight, bias, saved, top, g), None, None)
        n, steps, cin = x.shape
        k = weight.shape[2]
        taps = saved.unsqueeze(2) + torch.arange(k, device=x.device)  # (N, C, K) steps of each window
        rows = taps + (torch.arange(n, device=x.device) * steps).view(n, 1, 1)
        gx = gw = gb = None
        if ctx.needs_input_grad[1]:
            windows = x.reshape(n * steps, cin)[rows]  # (N, C, K, C_in)
            gw = (windows * g.view(n, -1, 1, 1)).sum(0).permute(0, 2, 1).contiguous()  # (C, C_in, K)
        if ctx.needs_input_grad[0]:
            parts = g.unsqueeze(2).unsqueeze(3) * weight.permute(0, 2, 1).unsqueeze(0)  # (N, C, K, C_in)
            gx = torch.zeros(n * steps, cin, dtype=x.dtype, device=x.device)
            gx.index_add_(0, rows.reshape(-1), parts.reshape(-1, cin))
            gx = gx.view(n, steps, cin)
        if bias is not None and ctx.needs_input_grad[2]:
            gb = g.sum(0)
        return gx, gw, gb, None, None


def _dense_backward(ctx, x, weight, bias, y, top, g) -> tuple:
    """The unfused backward: ``g`` split between tied maxima as torch's ``amax`` splits it, then the
    convolution's own backward."""
    _COUNTS["dense"] += 1
    mask = y == top.unsqueeze(1)  # y: (N, T, C)
    count = mask.view(torch.uint8).sum(dim=1, keepdim=True, dtype=torch.int16)
    gy = torch.where(mask, g.unsqueeze(1) / count, 0.0)
    if ctx.relu:
        gy = torch.where(y > 0, gy, 0.0)
    xt = x.permute(0, 2, 1).unsqueeze(2)
    gx, gw, gb = torch.ops.aten.convolution_backward(
        gy.permute(0, 2, 1).unsqueeze(2), xt, weight.unsqueeze(2), None if bias is None else [bias.shape[0]],
        [1, 1], [0, 0], [1, 1], False, [0, 0], 1,
        [ctx.needs_input_grad[0], ctx.needs_input_grad[1], bias is not None and ctx.needs_input_grad[2]])
    return (None if gx is None else gx.squeeze(2).permute(0, 2, 1),
            None if gw is None else gw.squeeze(2), gb)


class ConvMaxPool:
    """``pool(conv(x))`` as one step of a layer chain: :class:`_ConvMax` when :func:`fusable` and
    :func:`runs_fused` allow (checked at each call: hooks or an activation set later count),
    else the two layers as before. The weights stay the layers' own."""

    def __init__(self, conv: Any, pool: Any) -> None:
        self.conv, self.pool = conv, pool

    def __call__(self, x: Any) -> torch.Tensor:
        conv = self.conv
        if (isinstance(x, torch.Tensor) and conv.built and self.pool.built and fusable(conv, self.pool)
                and runs_fused(x, conv)):
            state.set_phase(self.pool.training)  # as the two layers' forwards set it
            _COUNTS["fused"] += 1
            return _ConvMax.apply(x, conv.weight, conv.bias, conv, conv.activation is activations.relu)
        return self.pool(conv(x))


def dense_backwards() -> int:
    """How many fused backwards ran the dense (tie) path since import (tests count it)."""
    return _COUNTS["dense"]


def fused_calls() -> int:
    """How many calls took the fused path since import (tests count it)."""
    return _COUNTS["fused"]


_COUNTS = {"dense": 0, "fused": 0}
