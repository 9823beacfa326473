"""A 3-D convolution with few filters (Conv3D(1, (3, 3, 3)) ending conv_lstm.py's network) as matrix
products: oneDNN runs a one-filter convolution as a matrix-vector product (~9 GFLOP/s on one core);
here one product ``(positions, C) x (C, taps * filters)`` gives every tap's contribution at every
position, and the taps are summed by shifted adds of contiguous planes. The backward is the same
two products the other way (input and kernel gradients) and the shifted copies of the output
gradient. Same arithmetic as the convolution, in another summation order.

Only stride 1, dilation 1, symmetric zero padding, channels-last memory (Keras layout), no groups:
:func:`eligible` says when; ``Conv3D`` calls :func:`conv3d` then.

Example::

    >>> import torch
    >>> x = torch.randn(2, 4, 5, 6, 3).permute(0, 4, 1, 2, 3)  # channels-last view of Keras layout
    >>> w, b = torch.randn(1, 3, 3, 3, 3), torch.zeros(1)
    >>> y = conv3d(x, w, b, (1, 1, 1))
    >>> torch.allclose(y, torch.nn.functional.conv3d(x, w, b, 1, 1), atol=1e-5)
    True
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["conv3d", "eligible", "MAX_TAPS"]

#: taps x filters up to which the matrix form runs (one filter of 3x3x3: 27)
MAX_TAPS = 32


def eligible(x: torch.Tensor, weight: torch.Tensor, strides: tuple, padding: Any, dilation: tuple) -> bool:
    """True when :func:`conv3d` computes this convolution: few filters x taps, stride and dilation 1,
    symmetric integer padding no wider than the kernel's half, channels-last input (Keras layout) on
    the CPU (oneDNN's case), not under tracing."""
    if x.dim() != 5 or x.device.type != "cpu" or not x.is_floating_point() or _tracing():
        return False
    f, _, *kernel = weight.shape
    pads = tuple(padding) if isinstance(padding, (tuple, list)) else (padding,) * 3
    taps = f * kernel[0] * kernel[1] * kernel[2]
    return (
        taps <= MAX_TAPS
        and tuple(strides) == (1, 1, 1)
        and tuple(dilation) == (1, 1, 1)
        and all(isinstance(p, int) and 0 <= 2 * p <= k - 1 for p, k in zip(pads, kernel))
        and x.is_contiguous(memory_format=torch.channels_last_3d)
        and x.shape[1] > 1
    )


def _tracing() -> bool:
    """Under ``torch.export`` / ``torch.compile`` / ``torch.jit.trace`` the graph keeps ``F.conv3d``."""
    return torch.compiler.is_compiling() or torch.compiler.is_exporting() or torch.jit.is_tracing()


def _windows(shape: tuple, kernel: tuple, pads: tuple):
    """Per tap ``(kd, kh, kw)``: the output region it reaches and the input region it reads."""
    d, h, w = shape
    od, oh, ow = (n + 2 * p - k + 1 for n, p, k in zip(shape, pads, kernel))
    for a in range(kernel[0]):
        for b in range(kernel[1]):
            for c in range(kernel[2]):
                out, src = [], []
                for off, p, n, o in ((a, pads[0], d, od), (b, pads[1], h, oh), (c, pads[2], w, ow)):
                    lo = max(0, p - off)  # first output index whose input index off - p + i is >= 0
                    hi = min(o, n + p - off)  # past the last output whose input index is < n
                    out.append(slice(lo, hi))
                    src.append(slice(lo + off - p, hi + off - p))
                yield (a, b, c), tuple(out), tuple(src)


class _Conv3d(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                pads: tuple) -> torch.Tensor:
        n, ch, d, h, w = x.shape
        f, _, *kernel = weight.shape
        xm = x.permute(0, 2, 3, 4, 1).reshape(-1, ch)  # (positions, C): the channels-last memory
        wm = weight.permute(0, 2, 3, 4, 1).reshape(-1, ch)  # (filters x taps, C)
        taps = torch.mm(wm, xm.t()).view(f, -1, n, d, h, w)  # per filter and tap, a contiguous plane
        od, oh, ow = (s + 2 * p - k + 1 for s, p, k in zip((d, h, w), pads, kernel))
        y = x.new_zeros((n, od, oh, ow, f)) if bias is None else bias.expand(n, od, oh, ow, f).clone()
        yt = y.permute(4, 0, 1, 2, 3)  # (filters, n, D, H, W) views of the output
        kk = kernel[1] * kernel[2]
        for (a, b, c), out, src in _windows((d, h, w), tuple(kernel), pads):
            t = a * kk + b * kernel[2] + c
            for i in range(f):
                yt[i][(slice(None), *out)] += taps[i, t][(slice(None), *src)]
        ctx.save_for_backward(x, weight)
        ctx.pads, ctx.has_bias = pads, bias is not None
        return y.permute(0, 4, 1, 2, 3)  # torch layout (n, f, D, H, W), channels-last memory

    @staticmethod
    def backward(ctx: Any, dy: torch.Tensor) -> tuple:
        x, weight = ctx.saved_tensors
        pads = ctx.pads
        n, ch, d, h, w = x.shape
        f, _, *kernel = weight.shape
        dyt = dy.permute(1, 0, 2, 3, 4)  # (filters, n, D', H', W')
        d_taps = x.new_zeros((f, kernel[0] * kernel[1] * kernel[2], n, d, h, w))
        kk = kernel[1] * kernel[2]
        for (a, b, c), out, src in _windows((d, h, w), tuple(kernel), pads):
            t = a * kk + b * kernel[2] + c
            for i in range(f):
                d_taps[i, t][(slice(None), *src)] = dyt[i][(slice(None), *out)]
        dt = d_taps.view(-1, n * d * h * w)  # (filters x taps, positions)
        xm = x.permute(0, 2, 3, 4, 1).reshape(-1, ch)
        dx = dw = db = None
        if ctx.needs_input_grad[0]:
            wm = weight.permute(0, 2, 3, 4, 1).reshape(-1, ch)
            dx = torch.mm(dt.t(), wm).view(n, d, h, w, ch).permute(0, 4, 1, 2, 3)
        if ctx.needs_input_grad[1]:
            dw = torch.mm(dt, xm).view(f, *kernel, ch).permute(0, 4, 1, 2, 3)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            db = dy.sum((0, 2, 3, 4))
        return dx, dw, db, None


def conv3d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, padding: Any) -> torch.Tensor:
    """``F.conv3d(x, weight, bias, 1, padding)`` for the cases :func:`eligible` accepts."""
    pads = tuple(padding) if isinstance(padding, (tuple, list)) else (padding,) * 3
    return _Conv3d.apply(x, weight, bias, pads)
