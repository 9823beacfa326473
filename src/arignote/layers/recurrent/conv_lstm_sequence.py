"""The recurrence of a ConvLSTM2D sequence as one autograd function with a hand-written backward.

``ConvLSTM2DCell.run_sequence`` hands it the input convolution of all steps; it runs the steps
(recurrent convolution, gates, cell state) without recording a graph and, in the backward, walks the
steps in reverse: the gates' derivatives, then one ``convolution_backward`` per step for the
recurrent convolution. The arithmetic is autograd's (the same kernels: ``tanh_backward``,
``sigmoid_backward``, hard_sigmoid's clamp as a 0 / 0.2 slope), so results equal the per-operator
graph's up to summation order; what goes away is the per-operator bookkeeping: the 4-gate split's
``cat`` in the backward, the stack of the outputs (each step writes its output into the Keras-layout
result, and its gate gradients into the gradient of the input convolution), hard_sigmoid's
ge/le/and/where. Only the activations of :data:`ACTIVATIONS`, without masks or recurrent dropout;
``run_sequence`` steps other cases through the graph.

Example::

    >>> import torch
    >>> from arignote import activations
    >>> spec = Recurrence(2, (1, 1), activations.get("tanh"), activations.get("hard_sigmoid"), True, False)
    >>> xc = torch.zeros(3 * 4, 8, 5, 5)  # 3 sequences of 4 steps, 4 gates of 2 filters, 5x5 images
    >>> h, c = run(xc, torch.zeros(3, 2, 5, 5), torch.zeros(3, 2, 5, 5), torch.zeros(8, 2, 3, 3), spec)
    >>> tuple(h.shape), tuple(c.shape)  # first=False: outputs (batch, time, rows, cols, channels)
    ((3, 4, 5, 5, 2), (3, 2, 5, 5))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F

from arignote import activations

__all__ = ["ACTIVATIONS", "Recurrence", "run", "tracing"]

_conv_backward = torch.ops.aten.convolution_backward


def _hard_sigmoid(z: torch.Tensor, keep: bool) -> tuple:
    """``clamp(0.2 * z + 0.5, 0, 1)``, as :func:`arignote.activations.hard_sigmoid`; ``z`` (a slice of
    the step's pre-activations) is overwritten by its slope: clamp's gradient passes where
    ``0 <= u <= 1``, i.e. where clamping left ``u`` unchanged, then times 0.2."""
    u = z.mul_(0.2).add_(0.5)
    a = u.clamp(0.0, 1.0)
    if keep:
        torch.eq(a, u, out=u).mul_(0.2)
    return a, u


def _hard_sigmoid_backward(grad: torch.Tensor, a: torch.Tensor, slope: Any, out: torch.Tensor) -> None:
    torch.mul(grad, slope, out=out)


def _sigmoid(z: torch.Tensor, keep: bool) -> tuple:
    return z.sigmoid_(), None


def _sigmoid_backward(grad: torch.Tensor, a: torch.Tensor, _: Any, out: torch.Tensor) -> None:
    torch.ops.aten.sigmoid_backward.grad_input(grad, a, grad_input=out)


def _tanh(z: torch.Tensor, keep: bool) -> tuple:
    return z.tanh_(), None


def _tanh_backward(grad: torch.Tensor, a: torch.Tensor, _: Any, out: torch.Tensor) -> None:
    torch.ops.aten.tanh_backward.grad_input(grad, a, grad_input=out)


class _Act(NamedTuple):
    forward: Callable  # (z, keep) -> (activation, what the backward needs besides it); may overwrite z
    backward: Callable  # (grad, activation, kept, out): writes the gradient of z into out
    fresh: Callable  # as forward, into new memory (z is kept)


#: the activations the function differentiates by hand (Keras functions -> forward and backward)
ACTIVATIONS = {
    activations.get("hard_sigmoid"): _Act(_hard_sigmoid, _hard_sigmoid_backward,
                                          lambda z, keep: _hard_sigmoid(z.clone(), keep)),
    activations.get("sigmoid"): _Act(_sigmoid, _sigmoid_backward, lambda z, keep: (torch.sigmoid(z), None)),
    activations.get("tanh"): _Act(_tanh, _tanh_backward, lambda z, keep: (torch.tanh(z), None)),
}


class Recurrence(NamedTuple):
    """What the steps need besides tensors: filters, the recurrent convolution's (symmetric) padding,
    the activations, ``fresh`` (the states are zeros: the first step skips the recurrent convolution)
    and ``first`` (channels_first; else torch views of channels-last memory)."""

    filters: int
    padding: tuple
    activation: Callable
    recurrent_activation: Callable
    fresh: bool
    first: bool


def _keras(t: torch.Tensor, first: bool) -> torch.Tensor:
    return t if first else t.movedim(-3, -1)


def _torch(t: torch.Tensor, first: bool) -> torch.Tensor:
    return t if first else t.movedim(-1, -3)


def _frames(t: torch.Tensor, n: int, steps: int, first: bool) -> list:
    """Torch-layout views of the ``steps`` frames of ``(n * steps, C, H, W)`` (its Keras-layout memory)."""
    k = _keras(t, first)
    return [_torch(x, first) for x in k.reshape(n, steps, *k.shape[1:]).unbind(1)]


def _like(t: torch.Tensor, channels: int) -> torch.Tensor:
    """A scratch tensor of ``t``'s size and memory format with ``channels`` channels."""
    n, _, rows, cols = t.shape
    last = t.stride(1) == 1 and t.shape[1] > 1
    fmt = torch.channels_last if last else torch.contiguous_format
    return torch.empty((n, channels, rows, cols), dtype=t.dtype, device=t.device, memory_format=fmt)


class _Sequence(torch.autograd.Function):
    """Forward: per step, the recurrent convolution into ``z`` (plus the step's input convolution),
    the gate activations (in place in ``z`` where the backward needs nothing else), the cell state and
    the output, written into the Keras-layout result. Temporaries live in buffers reused by every
    step (a fresh tensor per operator costs its page faults again at each step)."""

    @staticmethod
    def forward(ctx: Any, xc: torch.Tensor, h: torch.Tensor, c: torch.Tensor, w: torch.Tensor,
                spec: Recurrence, n: int) -> tuple:
        f, first, fresh = spec.filters, spec.first, spec.fresh
        steps = xc.shape[0] // n
        ract, act = ACTIVATIONS[spec.recurrent_activation], ACTIVATIONS[spec.activation]
        keep = any(ctx.needs_input_grad)
        out = _keras(xc, first).new_empty(_sequence_shape(xc, n, f, first))
        outs = [_torch(o, first) for o in out.unbind(1)]
        h0, saved = h, []
        h_buf = None
        for s, x in enumerate(_frames(xc, n, steps, first)):
            conv = not (fresh and s == 0)
            z = F.conv2d(h, w, None, 1, spec.padding).add_(x) if conv else x.clone()
            i_f, k_if = ract.forward(z[:, : 2 * f], keep)
            g, k_g = act.forward(z[:, 2 * f: 3 * f], keep)
            o, k_o = ract.forward(z[:, 3 * f:], keep)
            i, fg = i_f[:, :f], i_f[:, f:]
            if h_buf is None:
                h_buf = _like(z, f)
            c_prev = c
            c = torch.mul(fg, c_prev).addcmul_(i, g) if conv else i * g
            tc, k_tc = act.fresh(c, keep)
            h = torch.mul(o, tc, out=h_buf)
            outs[s].copy_(h)
            if keep:
                saved.append((c_prev, i_f, k_if, g, k_g, o, k_o, tc, k_tc))
        ctx.spec, ctx.saved = spec, saved
        ctx.save_for_backward(w, h0, out)  # the outputs are the next steps' recurrent inputs
        ctx.set_materialize_grads(False)
        return out, c

    @staticmethod
    def backward(ctx: Any, d_out: torch.Tensor | None, d_c: torch.Tensor | None) -> tuple:
        w, h0, out = ctx.saved_tensors
        spec, saved = ctx.spec, ctx.saved
        f, first, fresh, steps = spec.filters, spec.first, spec.fresh, len(saved)
        ract, act = ACTIVATIONS[spec.recurrent_activation], ACTIVATIONS[spec.activation]
        d_k = out.new_empty(_sequence_shape_k(out, 4 * f, first))  # Keras layout, as the forward's frames
        d_frames = [_torch(d, first) for d in d_k.unbind(1)]
        d_outs = None if d_out is None else [_torch(d, first) for d in d_out.unbind(1)]
        dz = _like(h0, 4 * f)
        h_buf, tmp, d_tc, d_cell = (_like(h0, f) for _ in range(4))
        if d_c is not None:
            d_c = d_cell.copy_(d_c)
        d_h = d_w = None
        for s in range(steps - 1, -1, -1):
            c_prev, i_f, k_if, g, k_g, o, k_o, tc, k_tc = saved[s]
            i, fg = i_f[:, :f], i_f[:, f:]
            k_i, k_f = (None, None) if k_if is None else (k_if[:, :f], k_if[:, f:])
            conv = not (fresh and s == 0)
            if d_outs is not None:
                d_h = d_outs[s] if d_h is None else d_h.add_(d_outs[s])
            if d_h is None and d_c is None:  # nothing reaches this step
                d_frames[s].zero_()
                continue
            if d_h is None:
                dz[:, 3 * f:].zero_()
            else:
                ract.backward(torch.mul(d_h, tc, out=tmp), o, k_o, dz[:, 3 * f:])
                act.backward(torch.mul(d_h, o, out=d_tc), tc, k_tc, d_tc)
                d_c = d_cell.copy_(d_tc) if d_c is None else d_c.add_(d_tc)
            ract.backward(torch.mul(d_c, g, out=tmp), i, k_i, dz[:, :f])
            act.backward(torch.mul(d_c, i, out=tmp), g, k_g, dz[:, 2 * f: 3 * f])
            if not conv:
                dz[:, f: 2 * f].zero_()  # f * (zero state): no gradient
                d_frames[s].copy_(dz)
                d_c = d_h = None
                continue
            ract.backward(torch.mul(d_c, c_prev, out=tmp), fg, k_f, dz[:, f: 2 * f])
            d_c = d_c.mul_(fg)
            d_frames[s].copy_(dz)
            # only the input gradient is sequential; h_buf stands for the input's size and layout
            d_h = _conv_backward(dz, h_buf, w, None, [1, 1], list(spec.padding), [1, 1],
                                 False, [0, 0], 1, [True, False, False])[0]
        k = d_k.reshape(-1, *d_k.shape[2:])
        if ctx.needs_input_grad[3]:
            d_w = _weight_gradient(_torch(k, first), h0, out, w, spec)
        return _torch(k, first), d_h, d_c, d_w, None, None


def _weight_gradient(dz: torch.Tensor, h0: torch.Tensor, out: torch.Tensor, w: torch.Tensor,
                     spec: Recurrence) -> torch.Tensor:
    """The recurrent kernel's gradient over all steps as one convolution backward (batch = samples x
    steps): the gate gradients ``dz`` (torch layout ``(n * time, 4f, H, W)``, the backward's Keras-layout
    buffer) against each step's recurrent input, h0 then the outputs shifted by one step. A fresh
    sequence's zero h0 adds exact zeros (its first step had no recurrent convolution)."""
    first = spec.first
    ins = torch.empty_like(out)  # Keras layout (n, time, ...), as out
    ins[:, 1:].copy_(out[:, :-1])
    if spec.fresh:
        ins[:, 0].zero_()
    else:
        ins[:, 0].copy_(_keras(h0, first))
    ins = _torch(ins.reshape(-1, *ins.shape[2:]), first)
    return _conv_backward(dz, ins, w, None, [1, 1], list(spec.padding), [1, 1],
                          False, [0, 0], 1, [False, True, False])[1]


def _sequence_shape(xc: torch.Tensor, n: int, channels: int, first: bool) -> tuple:
    """Keras-layout shape ``(n, time, ...)`` of a sequence of ``channels``-channel images of ``xc``'s size."""
    rows, cols = xc.shape[2:]
    steps = xc.shape[0] // n
    return (n, steps, channels, rows, cols) if first else (n, steps, rows, cols, channels)


def _sequence_shape_k(seq: torch.Tensor, channels: int, first: bool) -> tuple:
    """The Keras-layout shape of ``seq`` with ``channels`` channels."""
    return (*seq.shape[:2], channels, *seq.shape[3:]) if first else (*seq.shape[:-1], channels)


def tracing() -> bool:
    """True under ``torch.export`` / ``torch.compile`` / ``torch.jit.trace`` (ONNX): they record the
    per-operator graph, not this function (its ``out=`` buffers are not traceable)."""
    compiler = torch.compiler
    return compiler.is_compiling() or compiler.is_exporting() or torch.jit.is_tracing()


def run(xc: torch.Tensor, h: torch.Tensor, c: torch.Tensor, w: torch.Tensor, spec: Recurrence) -> tuple:
    """The steps of a ConvLSTM from the input convolution ``xc`` ``(n * time, 4f, H, W)`` (frames of
    sample 0 first), the states ``h``, ``c`` ``(n, f, H, W)`` and the recurrent kernel ``w``: the
    outputs ``(n, time, ...)`` in Keras layout and the last cell state (torch layout)."""
    return _Sequence.apply(xc, h, c, w, spec, h.shape[0])
