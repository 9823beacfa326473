"""The recurrence of an LSTM sequence off torch's fused kernel as one autograd function.

An LSTM whose activations torch's fused kernel does not take (Keras 2's ``hard_sigmoid``, the
recurrent activation of every LSTM saved by Keras <= 2.2; ``relu``; ``linear``) or that trains with
``recurrent_dropout`` runs a loop over its steps. Through the per-operator graph a step of 128 units
costs more in dispatch and autograd bookkeeping than in arithmetic; this function runs the steps from
the input projection of all steps (``cell.project``) without recording a graph: per step one
``addmm`` with the recurrent kernel, the gates' activations into reused buffers, the cell state and
the output written into the result; steps that keep a graph also write the gates' local derivatives
(autograd's own kernels: ``sigmoid_backward``, ``tanh_backward``, ``threshold_backward``,
hard_sigmoid's clamp as a 0 / 0.2 slope) times what they multiply, so that the backward walks the
steps in reverse with four elementwise calls and one ``addmm`` per step for the state gradient, and
the recurrent kernel's gradient in ONE matrix product over all steps after the loop. Results equal
the graph's up to float rounding order. :func:`takes` decides which layers run it; everything else
keeps the graph.

Example::

    >>> import torch
    >>> from arignote import activations
    >>> spec = Spec(activations.get("tanh"), activations.get("hard_sigmoid"))
    >>> xp = torch.zeros(3, 5, 4 * 2)  # 3 sequences of 5 steps, 4 gates of 2 units
    >>> out, c = run(xp, torch.zeros(3, 2), torch.zeros(3, 2), torch.zeros(8, 2), None, spec)
    >>> tuple(out.shape), tuple(c.shape)
    ((3, 5, 2), (3, 2))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import torch
from torch.autograd.function import once_differentiable

from arignote import activations

__all__ = ["ACTIVATIONS", "Spec", "graph", "run", "takes", "tracing"]

_aten = torch.ops.aten


def _hard_sigmoid(z: torch.Tensor, out: torch.Tensor, buf: torch.Tensor, keep: bool) -> None:
    """``clamp(0.2 * z + 0.5, 0, 1)`` into ``out`` (as :func:`arignote.activations.hard_sigmoid`);
    ``buf`` (may be ``z``) then holds where the slope is 0.2 (1.0, else 0.0): clamp passes the
    gradient where ``0 <= u <= 1``, i.e. where clamping left ``u`` unchanged."""
    u = torch.mul(z, 0.2, out=buf).add_(0.5)
    torch.clamp(u, 0.0, 1.0, out=out)
    if keep:
        torch.eq(out, u, out=u)


def _hard_sigmoid_backward(grad: torch.Tensor, a: Any, passed: torch.Tensor, out: torch.Tensor) -> None:
    # 0 + 0.2 * grad * passed (1.0 or 0.0): exactly grad * 0.2 where clamp passed, in one pass
    torch.addcmul(grad.new_zeros(()), grad, passed, value=0.2, out=out)


def _sigmoid(z: torch.Tensor, out: torch.Tensor, buf: Any, keep: bool) -> None:
    torch.sigmoid(z, out=out)


def _sigmoid_backward(grad: torch.Tensor, a: torch.Tensor, _: Any, out: torch.Tensor) -> None:
    _aten.sigmoid_backward.grad_input(grad, a, grad_input=out)


def _tanh(z: torch.Tensor, out: torch.Tensor, buf: Any, keep: bool) -> None:
    torch.tanh(z, out=out)


def _tanh_backward(grad: torch.Tensor, a: torch.Tensor, _: Any, out: torch.Tensor) -> None:
    _aten.tanh_backward.grad_input(grad, a, grad_input=out)


def _relu(z: torch.Tensor, out: torch.Tensor, buf: Any, keep: bool) -> None:
    torch.clamp_min(z, 0.0, out=out)  # torch.relu's own kernel


def _relu_backward(grad: torch.Tensor, a: torch.Tensor, _: Any, out: torch.Tensor) -> None:
    _aten.threshold_backward.grad_input(grad, a, 0, grad_input=out)  # relu's autograd formula


def _linear(z: torch.Tensor, out: torch.Tensor, buf: Any, keep: bool) -> None:
    out.copy_(z)


def _linear_backward(grad: torch.Tensor, a: torch.Tensor, _: Any, out: torch.Tensor) -> None:
    if out.data_ptr() != grad.data_ptr():
        out.copy_(grad)


class _Act(NamedTuple):
    forward: Callable  # (z, out, buf, keep): the activation of z into out; buf: what the backward needs
    backward: Callable  # (grad, activation, buf, out): the gradient of z into out (may be grad itself)
    slope: bool  # whether the backward needs buf (else the activation alone)


#: the Keras activations this function differentiates by hand (the rest keep the per-operator graph)
ACTIVATIONS = {
    activations.get("hard_sigmoid"): _Act(_hard_sigmoid, _hard_sigmoid_backward, True),
    activations.get("sigmoid"): _Act(_sigmoid, _sigmoid_backward, False),
    activations.get("tanh"): _Act(_tanh, _tanh_backward, False),
    activations.get("relu"): _Act(_relu, _relu_backward, False),
    activations.get("linear"): _Act(_linear, _linear_backward, False),
}


class Spec(NamedTuple):
    """The cell's activations (keys of :data:`ACTIVATIONS`)."""

    activation: Callable
    recurrent_activation: Callable


def takes(*, lstm_step: bool, activation: Any, recurrent_activation: Any, recurrent_masks: int,
          steps: int, tracing: bool, autocast: bool = False) -> bool:
    """Whether an LSTM loop runs this function: the built-in LSTM step (``lstm_step``: an
    ``LSTMCell`` whose ``step`` no subclass replaced), both activations in :data:`ACTIVATIONS`, no
    recurrent dropout, or its one mask for all gates (``implementation=2``) or four (``1``), at
    least one step, and not under ``torch.export`` / ``torch.compile`` / ``torch.jit.trace`` (they
    record the per-operator graph), nor under autocast (``autocast``: mixed precision casts each of
    the graph's operators; the function's buffers keep one dtype). The caller checks first that the
    fused kernel does not take the layer; under a Keras mask it runs the function over each row's
    valid steps when it can gather them (:func:`.whole_sequence.gathered`: not for an LSTM whose last
    cell state is returned or carried).

    >>> from arignote import activations as a
    >>> takes(lstm_step=True, activation=a.tanh, recurrent_activation=a.hard_sigmoid,
    ...       recurrent_masks=0, steps=80, tracing=False)
    True
    >>> takes(lstm_step=True, activation=a.tanh, recurrent_activation=a.hard_sigmoid,
    ...       recurrent_masks=0, steps=80, tracing=True)
    False
    """
    return (lstm_step and activation in ACTIVATIONS and recurrent_activation in ACTIVATIONS
            and recurrent_masks in (0, 1, 4) and steps > 0 and not tracing and not autocast)


def tracing() -> bool:
    """True under ``torch.export`` / ``torch.compile`` / ``torch.jit.trace`` (ONNX)."""
    compiler = torch.compiler
    return compiler.is_compiling() or compiler.is_exporting() or torch.jit.is_tracing()


def _steps(t: torch.Tensor, dim: int, start: int | None = None, stop: int | None = None) -> tuple:
    """Per-step views of ``t`` (time along ``dim``), its last axis cut to ``start:stop``: one call
    for all steps instead of a slice per step and block."""
    return (t if start is None else t[..., start:stop]).unbind(dim)


class _Sequence(torch.autograd.Function):
    """Forward: per step ``z = xp_t + (h * mask) @ W^T`` (one addmm), the candidate's activation, the
    recurrent activation over all four gates at once (as ``LSTMCell.step``: the candidate's block is
    computed and left unused), the cell state and the output. Steps that keep a graph also write what
    the backward multiplies by, three calls a step: ``p = [g * i', c_{t-1} * f', i * g', tanh(c) * o']``
    (``i'`` the recurrent activation's derivative at the input gate, ...) and ``q = o * tanh'(c)``; the
    backward is then, per step, ``dc += dh * q``, ``dz = [dc, dc, dc, dh] * p``, ``dc *= f`` and one
    ``addmm`` for the next ``dh`` (the output's gradient added in it): 4 elementwise calls where the
    chain rule taken operator by operator needs 11 (issue 32: the loop's cost is in its calls)."""

    @staticmethod
    def forward(ctx: Any, xp: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor, w: torch.Tensor,
                rec: torch.Tensor | None, spec: Spec, keep: bool) -> tuple:
        n, steps, width = xp.shape
        u = width // 4
        ract, act = ACTIVATIONS[spec.recurrent_activation], ACTIVATIONS[spec.activation]
        gates = xp.new_empty(steps if keep else 1, n, width)
        # [g, c_{t-1}, 0, tanh(c_t)] at step t (two, in turn): what the derivatives in p multiply
        s = xp.new_zeros(2, n, width)
        per_gate = rec is not None and rec.dim() == 3  # implementation=1: one mask per gate
        # z: (n, 4u), or (4, n, u) per gate (one batched product writes it); zv: z as (n, 4u) or (n, 4, u)
        z = xp.new_empty(4, n, u) if per_gate else xp.new_empty(n, width)
        k_g, k_c = xp.new_empty(n, u), xp.new_empty(n, u)  # what act's derivative needs (hard_sigmoid)
        zv, z_g = (z.transpose(0, 1), z[2]) if per_gate else (z, z[:, 2 * u: 3 * u])
        p, q = (xp.new_empty(steps, n, width), xp.new_empty(steps, n, u)) if keep else (None, None)
        out = xp.new_empty(n, steps, u)
        g_all = _steps(gates, 0)
        i_all, f_all, o_all = (_steps(gates, 0, k * u, (k + 1) * u) for k in (0, 1, 3))
        s_all = _steps(s, 0)
        sg, sc, sh = (_steps(s, 0, k * u, (k + 1) * u) for k in (0, 1, 3))
        x_s, out_s = _steps(xp, 1), _steps(out, 1)
        if keep:
            p_all, p_g, q_s = _steps(p, 0), _steps(p, 0, 2 * u, 3 * u), _steps(q, 0)
        hm = None if rec is None else torch.empty_like(rec)
        # W^T contiguous (units, 4 * units): addmm ~1.5x faster than on w.t(); per gate: each W_j^T
        wt = torch.stack([b.t() for b in w.split(u)]) if per_gate else w.t().contiguous()
        if per_gate:  # the gates' full-width buffers seen as (n, 4, u), as z
            g_all, s_all = [a.view(n, 4, u) for a in g_all], [a.view(n, 4, u) for a in s_all]
            p_all = [a.view(n, 4, u) for a in p_all] if keep else None
            x_s = [a.view(n, 4, u).transpose(0, 1) for a in x_s]
        sc[0].copy_(c0)
        h = h0
        for t in range(steps):
            k, j, j1 = t if keep else 0, t % 2, (t + 1) % 2
            if per_gate:  # z_j = xp_j + (h * mask_j) @ W_j^T, LSTMCell.step's four products in one
                torch.baddbmm(x_s[t], torch.mul(h, rec, out=hm), wt, out=z)
            else:
                torch.addmm(x_s[t], h if rec is None else torch.mul(h, rec, out=hm), wt, out=z)
            act.forward(z_g, sg[j], k_g, keep)
            ract.forward(zv, g_all[k], zv, keep)
            c = torch.mul(f_all[k], sc[j], out=sc[j1]).addcmul_(i_all[k], sg[j])
            act.forward(c, sh[j], k_c, keep)
            h = torch.mul(o_all[k], sh[j], out=out_s[t])
            if keep:
                ract.backward(s_all[j], g_all[k], zv, p_all[t])  # the candidate's block: next line
                act.backward(i_all[k], sg[j], k_g, p_g[t])
                act.backward(o_all[k], sh[j], k_c, q_s[t])
        if keep:
            ctx.spec, ctx.buffers = spec, (gates, p, q)
            ctx.save_for_backward(xp, h0, c0, w, rec, out)
        ctx.set_materialize_grads(False)
        return out, sc[steps % 2].clone()  # not a view of the buffers (a stateful layer keeps it)

    @staticmethod
    def backward(ctx: Any, d_out: torch.Tensor | None, d_c: torch.Tensor | None) -> tuple:
        if torch.is_grad_enabled():  # create_graph=True: a gradient that is itself differentiated
            return _graph_backward(ctx, d_out, d_c)
        return _Sequence._backward(ctx, d_out, d_c)

    @staticmethod
    @once_differentiable
    def _backward(ctx: Any, d_out: torch.Tensor | None, d_c: torch.Tensor | None) -> tuple:
        xp, h0, c0, w, rec, out = ctx.saved_tensors
        gates, p, q = ctx.buffers
        n, steps, width = xp.shape
        u = width // 4
        d_xp = xp.new_empty(n, steps, width)
        d_cell, d_hid = xp.new_empty(n, u), xp.new_empty(n, u)
        d_c = None if d_c is None else d_cell.copy_(d_c)
        f_all, q_s, p_o = _steps(gates, 0, u, 2 * u), _steps(q, 0), _steps(p, 0, 3 * u)
        p_3 = [pt.view(n, 4, u)[:, :3] for pt in _steps(p, 0)]  # the blocks i, f, c take dc
        dz_all, dz_o = _steps(d_xp, 1), _steps(d_xp, 1, 3 * u)
        dz_3 = [dz.view(n, 4, u)[:, :3] for dz in dz_all]
        d_outs = None if d_out is None else _steps(d_out, 1)
        per_gate = rec is not None and rec.dim() == 3
        w4, d4 = (w.view(4, u, u), xp.new_empty(4, n, u)) if per_gate else (None, None)
        d_h = None if d_outs is None else d_outs[-1]  # the gradient reaching h_t
        for t in range(steps - 1, -1, -1):
            below = None if d_outs is None or t == 0 else d_outs[t - 1]  # the output gradient at t - 1
            if d_h is None and d_c is None:  # nothing reaches this step
                dz_all[t].zero_()
                d_h = below
                continue
            if d_h is None:
                dz_o[t].zero_()
            else:
                d_c = torch.mul(d_h, q_s[t], out=d_cell) if d_c is None else d_c.addcmul_(d_h, q_s[t])
                torch.mul(d_h, p_o[t], out=dz_o[t])
            torch.mul(d_c.unsqueeze(1), p_3[t], out=dz_3[t])
            d_c = d_c.mul_(f_all[t])
            d_h = _recurrent_grad(dz_all[t], w, rec, below, d_hid, w4, d4)
        d_w = None
        if ctx.needs_input_grad[3]:  # sum over steps of dz_t^T (h_{t-1} * mask): one product
            h_prev = torch.cat([h0.unsqueeze(1), out[:, :-1]], 1)
            if per_gate:  # gate j's rows: dz_j^T (h_{t-1} * mask_j), one batched product
                hm4 = (h_prev.unsqueeze(0) * rec.unsqueeze(2)).reshape(4, n * steps, u)
                d_w = torch.bmm(d_xp.view(n * steps, 4, u).permute(1, 2, 0), hm4).reshape(width, u)
            else:
                if rec is not None:
                    h_prev = h_prev.mul_(rec.unsqueeze(1))
                # as (h^T dz)^T: MKL's product in this orientation is ~20% faster (2560 x 128 x 512)
                d_w = h_prev.reshape(n * steps, u).t().mm(d_xp.reshape(n * steps, width)).t().contiguous()
        d_h0 = d_h if ctx.needs_input_grad[1] else None
        d_c0 = d_c if ctx.needs_input_grad[2] else None
        return d_xp, d_h0, d_c0, d_w, None, None, None


def _recurrent_grad(dz: torch.Tensor, w: torch.Tensor, rec: torch.Tensor | None, below: torch.Tensor | None,
                    out: torch.Tensor, w4: torch.Tensor | None, d4: torch.Tensor | None) -> torch.Tensor:
    """The gradient reaching ``h_{t-1}``: ``(dz @ W) * mask`` (per gate ``j``: the sum of
    ``(dz_j @ W_j) * mask_j``) plus the output gradient ``below`` at ``t - 1`` (or None), into ``out``."""
    if w4 is not None:
        torch.bmm(dz.view(-1, 4, w.shape[1]).transpose(0, 1), w4, out=d4)
        d_h = torch.sum(d4.mul_(rec), 0, out=out)
        return d_h if below is None else d_h.add_(below)
    if rec is None:
        return torch.mm(dz, w, out=out) if below is None else torch.addmm(below, dz, w, out=out)
    d_h = torch.mm(dz, w, out=out)
    return d_h.mul_(rec) if below is None else torch.addcmul(below, d_h, rec, out=d_h)


def graph(xp: torch.Tensor, h: torch.Tensor, c: torch.Tensor, w: torch.Tensor, rec: torch.Tensor | None,
          spec: Spec) -> tuple:
    """:func:`run` through the per-operator graph (``LSTMCell.step``'s operators): what a second
    derivative differentiates.

    >>> spec = Spec(activations.get("tanh"), activations.get("hard_sigmoid"))
    >>> xp, h = torch.randn(2, 3, 8), torch.randn(2, 2)
    >>> a, b = run(xp, h, h, torch.ones(8, 2), None, spec), graph(xp, h, h, torch.ones(8, 2), None, spec)
    >>> all(torch.allclose(x, y, atol=1e-6) for x, y in zip(a, b))
    True
    """
    u, outs = h.shape[1], []
    for xt in xp.unbind(1):
        if rec is not None and rec.dim() == 3:
            z = xt + torch.cat([(h * m) @ b.t() for m, b in zip(rec, w.split(u))], -1)
        else:
            z = torch.addmm(xt, h if rec is None else h * rec, w.t())
        i, f, _, o = spec.recurrent_activation(z).split(u, -1)
        c = f * c + i * spec.activation(z[:, 2 * u: 3 * u])
        h = o * spec.activation(c)
        outs.append(h)
    return torch.stack(outs, 1), c


def _graph_backward(ctx: Any, d_out: torch.Tensor | None, d_c: torch.Tensor | None) -> tuple:
    """The backward as a graph of its own (``create_graph=True``, e.g. a gradient penalty): the
    steps are recomputed through :func:`graph` from the saved inputs, which carry their history."""
    xp, h0, c0, w, rec, _ = ctx.saved_tensors
    inputs = (xp, h0, c0, w)
    wanted = [k for k in range(4) if ctx.needs_input_grad[k]]
    out, c = graph(xp, h0, c0, w, rec, ctx.spec)
    pairs = [(o, g) for o, g in ((out, d_out), (c, d_c)) if g is not None]
    grads = torch.autograd.grad([o for o, _ in pairs], [inputs[k] for k in wanted], [g for _, g in pairs],
                                create_graph=True, allow_unused=True)
    result: list = [None] * 7
    for k, g in zip(wanted, grads):
        result[k] = g
    return tuple(result)


def run(xp: torch.Tensor, h: torch.Tensor, c: torch.Tensor, w: torch.Tensor, rec: torch.Tensor | None,
        spec: Spec) -> tuple:
    """The steps of an LSTM from the input projection ``xp`` ``(n, time, 4 * units)`` (bias included,
    gates ``i, f, c, o``), the states ``h``, ``c`` ``(n, units)``, the recurrent weight ``w``
    ``(4 * units, units)`` (torch layout) and the recurrent dropout mask ``rec`` ``(n, units)``, or
    ``(4, n, units)`` (one per gate, Keras order: ``implementation=1``), or
    None: the outputs ``(n, time, units)`` and the last cell state."""
    keep = torch.is_grad_enabled() and any(t.requires_grad for t in (xp, h, c, w))
    return _Sequence.apply(xp, h, c, w, rec, spec, keep)
