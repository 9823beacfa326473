"""A ConvLSTM2D sequence with the input and recurrent convolutions joined: one convolution a step.

When the input convolution has the recurrent one's geometry (stride 1, 'same' margins, no dilation,
no input dropout), a step's pre-activations are one convolution of the step's input frame and the
previous output side by side (``C + f`` channels) with the kernel and recurrent kernel side by side,
plus the bias. :func:`run` keeps those joined inputs of all steps in one time-major buffer (the
output of each step is written into the next step's slot as it is made): the forward has no
separate input convolution of all frames (``n * time * 4f`` pre-activations written, then read back
a step at a time), the backward's one convolution backward a step gives the input frame's gradient
and the previous output's at once, and the kernels' and bias's gradients are one convolution
backward over the whole buffer. The gate arithmetic, its chunks and its hand-written derivatives
are :mod:`conv_lstm_sequence`'s.

Example::

    >>> import torch
    >>> from arignote import activations
    >>> from arignote.layers.recurrent.conv_lstm_sequence import Recurrence
    >>> spec = Recurrence(2, (1, 1), activations.get("tanh"), activations.get("sigmoid"), True, True)
    >>> x = torch.zeros(3, 4, 1, 5, 5)  # 3 sequences of 4 frames of 1 channel, channels_first
    >>> w = torch.zeros(8, 1 + 2, 3, 3)  # kernel (8, 1, 3, 3) and recurrent kernel (8, 2, 3, 3)
    >>> h, c = run(x, torch.zeros(3, 2, 5, 5), torch.zeros(3, 2, 5, 5), w, None, spec)
    >>> tuple(h.shape), tuple(c.shape)
    ((3, 4, 2, 5, 5), (3, 2, 5, 5))
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from arignote.layers.recurrent.conv_lstm_sequence import (
    ACTIVATIONS,
    Recurrence,
    _by_samples,
    _gate_gradients,
    _gates,
    _keras,
    _like,
    _new_step,
    _torch,
)

__all__ = ["run"]

_conv_backward = torch.ops.aten.convolution_backward


def _buffer(like: torch.Tensor, lead: tuple, channels: int, first: bool) -> torch.Tensor:
    """A new ``(*lead, channels, H, W)`` torch-layout view of Keras-layout memory (channels last
    unless ``first``), of ``like``'s images' size."""
    rows, cols = like.shape[-2:]
    if first:
        return like.new_empty((*lead, channels, rows, cols))
    return _torch(like.new_empty((*lead, rows, cols, channels)), first)


class _Joined(torch.autograd.Function):
    """Forward: per step, the joined convolution into the pre-activations, then the gate arithmetic
    in chunks of samples, which writes the output into the result and the next step's slot of the
    joined buffer. Backward: per step in reverse, the gates' derivatives into the time-major
    pre-activation gradients, then one convolution backward for the frame's and previous output's
    gradients; after the loop, one for the kernels and bias."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor, w: torch.Tensor, b: Any,
                spec: Recurrence) -> tuple:
        f, first, fresh, pads = spec.filters, spec.first, spec.fresh, spec.padding
        n, steps, inputs = x.shape[:3]
        ract, act = ACTIVATIONS[spec.recurrent_activation], ACTIVATIONS[spec.activation]
        keep = any(ctx.needs_input_grad)
        joined = _buffer(x, (steps, n), inputs + f, first)  # step s: (frame s, output s - 1)
        joined[:, :, :inputs].copy_(x.transpose(0, 1))
        if fresh:  # the first step convolves its frame alone; its slot stays zeros for the kernel's gradient
            joined[0, :, inputs:].zero_()
        else:
            joined[0, :, inputs:].copy_(h)
        out, saved = None, []
        for s in range(steps):
            conv = not (fresh and s == 0)
            if conv:
                z = F.conv2d(joined[s], w, b, 1, pads)
            else:
                z = F.conv2d(joined[0, :, :inputs], w[:, :inputs], b, 1, pads)
            if out is None:  # in the pre-activations' dtype (under autocast, autocast's), as the graph's
                out = _buffer(z, (n, steps), f, first)
            st = _new_step(z, c, ract, act, f)
            nxt = joined[s + 1, :, inputs:] if s + 1 < steps else None
            per_sample = z[0].numel() * z.element_size()
            _by_samples(_gates, n, per_sample, (st, None, out[:, s], nxt), ract, act, keep, conv)
            c = st.c
            if keep:  # without z and c: the last c is an output (see conv_lstm_sequence._Step)
                saved.append(st._replace(z=None, c=None))
        ctx.spec, ctx.saved, ctx.joined, ctx.has_bias = spec, saved, joined, b is not None
        ctx.save_for_backward(w)
        ctx.set_materialize_grads(False)
        return _keras(out, first), c

    @staticmethod
    def backward(ctx: Any, d_out: torch.Tensor | None, d_c: torch.Tensor | None) -> tuple:
        (w,) = ctx.saved_tensors
        spec, saved, joined = ctx.spec, ctx.saved, ctx.joined
        f, first, fresh, pads = spec.filters, spec.first, spec.fresh, list(spec.padding)
        ract, act = ACTIVATIONS[spec.recurrent_activation], ACTIVATIONS[spec.activation]
        steps, n, width = joined.shape[:3]
        inputs = width - f
        need_x, need_h = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        dz_all = _buffer(joined, (steps, n), 4 * f, first)  # time-major, as joined
        d_x = _buffer(joined, (n, steps), inputs, first) if need_x else None
        d_outs = None if d_out is None else _torch(d_out, first)
        d_sum, tmp, d_tc, d_cell = (_like(joined[0, :, inputs:], f) for _ in range(4))
        per_sample = dz_all[0, 0].numel() * dz_all.element_size()
        if d_c is not None:
            d_c = d_cell.copy_(d_c)
        d_h = None
        for s in range(steps - 1, -1, -1):
            conv = not (fresh and s == 0)
            d_in = None if d_outs is None else d_outs[:, s]
            if d_h is None and d_in is None and d_c is None:  # nothing reaches this step
                dz_all[s].zero_()
                if need_x:
                    d_x[:, s].zero_()
                continue
            if d_h is None:  # the output's gradient alone (a view of d_out: read, not added to)
                d_h, d_in = d_in, None
            rows = (saved[s], dz_all[s], None, d_h, d_in, d_sum, d_cell, tmp, d_tc)
            _by_samples(_gate_gradients, n, per_sample, rows, ract, act, d_c is None, conv)
            d_c = d_cell
            if not conv:  # the frame alone was convolved; the zero state gets no gradient
                if need_x:
                    d_x[:, 0].copy_(_conv_backward(dz_all[0], joined[0, :, :inputs], w[:, :inputs], None,
                                                   [1, 1], pads, [1, 1], False, [0, 0], 1,
                                                   [True, False, False])[0])
                d_c = d_h = None
                continue
            d_joined = _conv_backward(dz_all[s], joined[s], w, None, [1, 1], pads, [1, 1], False, [0, 0], 1,
                                      [True, False, False])[0]
            if need_x:
                d_x[:, s].copy_(d_joined[:, :inputs])
            d_h = d_joined[:, inputs:]
        need_w, need_b = ctx.needs_input_grad[3], ctx.needs_input_grad[4]
        d_w = d_b = None
        if need_w or need_b:
            _, d_w, d_b = _conv_backward(dz_all.flatten(0, 1), joined.flatten(0, 1), w,
                                         [4 * f] if ctx.has_bias else None, [1, 1], pads, [1, 1], False,
                                         [0, 0], 1, [False, need_w, need_b and ctx.has_bias])
        return d_x, (d_h if need_h else None), d_c, d_w, d_b, None


def run(x: torch.Tensor, h: torch.Tensor, c: torch.Tensor, w: torch.Tensor, b: Any,
        spec: Recurrence) -> tuple:
    """The steps of a ConvLSTM from its input frames ``x`` (torch-layout views ``(n, time, C, H, W)``
    of Keras-layout memory), the states ``h``, ``c`` ``(n, f, H, W)``, the joined kernel ``w``
    ``(4f, C + f, k, k)`` (the kernel's input channels, then the recurrent kernel's) and the bias
    ``b`` (or None): the outputs ``(n, time, ...)`` in Keras layout and the last cell state (torch
    layout)."""
    return _Joined.apply(x, h, c, w, b, spec)
