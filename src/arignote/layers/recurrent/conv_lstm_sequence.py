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
``run_sequence`` steps other cases through the graph. The gate arithmetic of a step runs in chunks of
samples that stay in cache (:data:`WORKING_SET`); ``run_sequence`` folds hard_sigmoid's affine part
into the convolutions (:func:`fold`), so its steps only clamp.

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

__all__ = ["ACTIVATIONS", "Recurrence", "clamp01", "fold", "run", "tracing"]

_conv_backward = torch.ops.aten.convolution_backward


#: bytes of gate pre-activations (4 * filters channels of a step) that one chunk of samples holds: the
#: steps' elementwise gate passes (add, activations, cell state, output; their derivatives) each stream
#: their tensors, so each pass over the whole batch reads from and writes to memory; in chunks of
#: samples whose pre-activations fit about one core's L2 cache (2 MiB here), the passes of a chunk
#: revisit cache instead (benchmarks/conv_lstm_ab.py: the zoo's conv_lstm, 1 MB a sample, runs in
#: chunks of 2). Per element the arithmetic is the same, in the same order. CPU only: off the CPU the
#: whole batch is one chunk (on a GPU every chunk would cost each pass another kernel launch, and its
#: caches are not one core's L2; reasoned on paper, not measured).
WORKING_SET = 2 << 20


def _by_samples(body: Callable, n: int, per_sample: int, rows: tuple, *args: Any) -> None:
    """``body(*chunk, *args)`` for each chunk of samples: ``chunk`` is ``rows`` (tensors whose first
    dimension is the ``n`` samples, :class:`_Step`, None) cut to the chunk's samples; on the CPU a
    chunk holds about :data:`WORKING_SET` bytes at ``per_sample`` bytes a sample (at least one
    sample), elsewhere all ``n``.

        >>> calls = []
        >>> _by_samples(lambda t: calls.append(len(t)), 5, WORKING_SET // 2, (torch.zeros(5, 3),))
        >>> calls
        [2, 2, 1]
    """
    k = max(1, WORKING_SET // per_sample) if _on_cpu(rows) else n
    for a in range(0, n, k):
        body(*(_cut(t, slice(a, a + k)) for t in rows), *args)


def _on_cpu(rows: tuple) -> bool:
    """True when the first tensor of ``rows`` (or of a :class:`_Step` in it) is on the CPU."""
    for t in rows:
        t = t.c_prev if isinstance(t, _Step) else t
        if isinstance(t, torch.Tensor):
            return t.device.type == "cpu"
    return True


def _cut(t: Any, samples: slice) -> Any:
    """``t``'s rows ``samples``: a tensor's, each of a :class:`_Step`'s; None stays None."""
    if isinstance(t, _Step):
        return _Step(*(_cut(u, samples) for u in t))
    return None if t is None else t[samples]


def _hard_sigmoid(z: torch.Tensor, a: torch.Tensor, k: Any, keep: bool) -> None:
    """``clamp(0.2 * z + 0.5, 0, 1)`` into ``a``, as :func:`arignote.activations.hard_sigmoid`, and its
    slope into ``k`` (its scratch too): clamp's gradient passes where ``0 <= u <= 1``, i.e. where
    clamping left ``u`` unchanged, then times 0.2."""
    u = torch.mul(z, 0.2, out=k).add_(0.5)
    torch.clamp(u, 0.0, 1.0, out=a)
    if keep:
        torch.eq(a, u, out=k).mul_(0.2)


def _hard_sigmoid_backward(grad: torch.Tensor, a: torch.Tensor, slope: Any, out: torch.Tensor) -> None:
    torch.mul(grad, slope, out=out)


def _sigmoid(z: torch.Tensor, a: torch.Tensor, k: Any, keep: bool) -> None:
    torch.sigmoid(z, out=a)


def _sigmoid_backward(grad: torch.Tensor, a: torch.Tensor, _: Any, out: torch.Tensor) -> None:
    torch.ops.aten.sigmoid_backward.grad_input(grad, a, grad_input=out)


def _tanh(z: torch.Tensor, a: torch.Tensor, k: Any, keep: bool) -> None:
    torch.tanh(z, out=a)


def _tanh_backward(grad: torch.Tensor, a: torch.Tensor, _: Any, out: torch.Tensor) -> None:
    torch.ops.aten.tanh_backward.grad_input(grad, a, grad_input=out)


def _clamp01(z: torch.Tensor, a: torch.Tensor, k: Any, keep: bool) -> None:
    """hard_sigmoid after its affine ``0.2 * z + 0.5`` (folded into the convolutions, :func:`fold`):
    ``clamp(z, 0, 1)`` into ``a`` and clamp's gradient into ``k`` (1 where unclamped, else 0)."""
    torch.clamp(z, 0.0, 1.0, out=a)
    if keep:
        torch.eq(a, z, out=k)


def clamp01(x: torch.Tensor) -> torch.Tensor:
    """The recurrent activation of a :func:`fold` ed hard_sigmoid (its key in :data:`ACTIVATIONS`)."""
    return x.clamp(0.0, 1.0)


class _Act(NamedTuple):
    forward: Callable  # (z, a, k, keep): the activation of z into a, what its backward needs besides into k
    backward: Callable  # (grad, activation, k, out): writes the gradient of z into out
    slope: bool  # the backward needs k (else k is None)


#: the activations the function differentiates by hand (Keras functions -> forward and backward)
ACTIVATIONS = {
    activations.get("hard_sigmoid"): _Act(_hard_sigmoid, _hard_sigmoid_backward, True),
    activations.get("sigmoid"): _Act(_sigmoid, _sigmoid_backward, False),
    activations.get("tanh"): _Act(_tanh, _tanh_backward, False),
    clamp01: _Act(_clamp01, _hard_sigmoid_backward, True),
}


def fold(spec: Recurrence, kernel: torch.Tensor, bias: Any, recurrent: torch.Tensor) -> tuple:
    """hard_sigmoid's affine ``0.2 * z + 0.5`` of the input, forget and output gates folded into the
    kernels and bias (small autograd operators on the weights), so the steps' gate activation is a
    clamp: ``(spec, kernel, bias, recurrent)`` to run with; other activations unchanged. Rounding
    differs from the unfolded steps (``conv(x, 0.2 w)`` for ``0.2 conv(x, w)``), within float32's.

        >>> hard = activations.get("hard_sigmoid")
        >>> spec = Recurrence(2, (1, 1), activations.get("tanh"), hard, True, False)
        >>> folded, k, b, r = fold(spec, torch.ones(8, 1, 3, 3), None, torch.ones(8, 2, 3, 3))
        >>> folded.recurrent_activation is clamp01, b.tolist()
        (True, [0.5, 0.5, 0.5, 0.5, 0.0, 0.0, 0.5, 0.5])
    """
    if spec.recurrent_activation is not activations.get("hard_sigmoid"):
        return spec, kernel, bias, recurrent
    f = spec.filters
    scale = kernel.new_full((4 * f,), 0.2)
    scale[2 * f: 3 * f] = 1.0  # the cell gate keeps its own activation
    shift = (scale != 1.0) * 0.5
    rows = scale.view(-1, 1, 1, 1)
    bias = shift if bias is None else bias * scale + shift
    return spec._replace(recurrent_activation=clamp01), kernel * rows, bias, recurrent * rows


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


class _Step(NamedTuple):
    """One step's tensors (first dimension the samples, so a chunk of samples slices them all): the
    pre-activations ``z`` (4 gates), the cell state before and after, each gate's activation and what
    its backward keeps (``k_*``: hard_sigmoid's slope, else None), ``tanh(c)`` (the activation of
    the cell state) and what its backward keeps. Each gate has its own tensor: a gate's channels of
    ``z`` are a strided slice in channels_last (``f`` of every ``4f`` floats), and an elementwise pass
    over such a slice costs about 3x one over contiguous memory, so ``z`` is read once per gate and
    every later pass (the cell state, the output, all of the backward's) runs on contiguous tensors.
    The steps kept for the backward drop ``z`` and ``c`` (the backward reads ``c_prev``, the step
    before's ``c``): the last ``c`` is the function's output, and an output kept on ``ctx`` is a
    reference cycle through its ``grad_fn`` that would hold the whole graph (hundreds of MB a step)
    until the garbage collector's next pass (tests/test_no_reference_cycles.py)."""

    z: Any
    c_prev: torch.Tensor
    c: Any
    i: torch.Tensor  # input gate
    k_i: Any
    fg: torch.Tensor  # forget gate
    k_f: Any
    g: torch.Tensor  # cell gate
    k_g: Any
    o: torch.Tensor  # output gate
    k_o: Any
    tc: torch.Tensor
    k_tc: Any


def _new_step(z: torch.Tensor, c_prev: torch.Tensor, ract: _Act, act: _Act, f: int) -> _Step:
    """The step's tensors, each gate's (and its kept slope's) new contiguous memory."""

    def gate(a: _Act) -> tuple:
        return _like(z, f), (_like(z, f) if a.slope else None)

    return _Step(z, c_prev, _like(z, f), *gate(ract), *gate(ract), *gate(act), *gate(ract), *gate(act))


def _gates(st: _Step, x: Any, h: torch.Tensor, out: Any, ract: _Act, act: _Act, keep: bool,
           conv: bool) -> None:
    """A chunk's gate arithmetic after the recurrent convolution (in ``st.z`` if ``conv``, which also
    says the cell state before is not zeros): plus the step's input convolution ``x`` (None: ``st.z``
    holds it already), the activations, the cell state, the output ``h``, copied to ``out`` (if any)."""
    f = h.shape[1]
    if x is None:
        pass
    elif conv:
        st.z.add_(x)
    else:
        st.z.copy_(x)
    z = st.z
    ract.forward(z[:, :f], st.i, st.k_i, keep)
    act.forward(z[:, 2 * f: 3 * f], st.g, st.k_g, keep)
    ract.forward(z[:, 3 * f:], st.o, st.k_o, keep)
    if conv:
        ract.forward(z[:, f: 2 * f], st.fg, st.k_f, keep)
        torch.mul(st.fg, st.c_prev, out=st.c).addcmul_(st.i, st.g)
    else:  # the cell state before is zeros: the forget gate is not needed
        torch.mul(st.i, st.g, out=st.c)
    act.forward(st.c, st.tc, st.k_tc, keep)
    torch.mul(st.o, st.tc, out=h)
    if out is not None:
        out.copy_(h)


def _gate_gradients(st: _Step, dz: torch.Tensor, d_frame: Any, d_h: Any, d_in: Any, d_sum: torch.Tensor,
                    d_cell: torch.Tensor, tmp: torch.Tensor, d_tc: torch.Tensor, ract: _Act, act: _Act,
                    seed: bool, conv: bool) -> None:
    """A chunk's gate derivatives: ``d_h`` (the output's gradient, or None) plus ``d_in`` (if not None;
    the sum into ``d_sum``), and the cell state's ``d_cell`` (``seed``: none yet, it starts from the
    output's) give the pre-activations' ``dz``, copied to ``d_frame`` (if any), and ``d_cell`` the
    previous cell state's."""
    f = d_cell.shape[1]
    i, fg = st.i, st.fg
    if d_in is not None:
        d_h = torch.add(d_h, d_in, out=d_sum)
    if d_h is None:
        dz[:, 3 * f:].zero_()
    else:
        ract.backward(torch.mul(d_h, st.tc, out=tmp), st.o, st.k_o, dz[:, 3 * f:])
        act.backward(torch.mul(d_h, st.o, out=d_tc), st.tc, st.k_tc, d_tc)
        if seed:
            d_cell.copy_(d_tc)
        else:
            d_cell.add_(d_tc)
    ract.backward(torch.mul(d_cell, st.g, out=tmp), i, st.k_i, dz[:, :f])
    act.backward(torch.mul(d_cell, i, out=tmp), st.g, st.k_g, dz[:, 2 * f: 3 * f])
    if conv:
        ract.backward(torch.mul(d_cell, st.c_prev, out=tmp), fg, st.k_f, dz[:, f: 2 * f])
        d_cell.mul_(fg)
    else:
        dz[:, f: 2 * f].zero_()  # f * (zero state): no gradient
    if d_frame is not None:
        d_frame.copy_(dz)


class _Sequence(torch.autograd.Function):
    """Forward: per step, the recurrent convolution into ``z``, then the gate arithmetic (plus the
    step's input convolution, each gate's activation into its own tensor, the cell state and the
    output, written into the Keras-layout result) in chunks of samples
    (:data:`WORKING_SET`). Temporaries live in buffers reused by every step (a fresh tensor per
    operator costs its page faults again at each step)."""

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
            z = F.conv2d(h, w, None, 1, spec.padding) if conv else _like(x, 4 * f)
            if h_buf is None:
                h_buf = _like(z, f)
            st = _new_step(z, c, ract, act, f)
            per_sample = z[0].numel() * z.element_size()
            _by_samples(_gates, n, per_sample, (st, x, h_buf, outs[s]), ract, act, keep, conv)
            h, c = h_buf, st.c
            if keep:  # without z and c (see _Step)
                saved.append(st._replace(z=None, c=None))
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
        h_buf, d_sum, tmp, d_tc, d_cell = (_like(h0, f) for _ in range(5))
        n, per_sample = dz.shape[0], dz[0].numel() * dz.element_size()
        if d_c is not None:
            d_c = d_cell.copy_(d_c)
        d_h = d_w = None
        for s in range(steps - 1, -1, -1):
            conv = not (fresh and s == 0)
            d_in = None if d_outs is None else d_outs[s]
            if d_h is None and d_in is None and d_c is None:  # nothing reaches this step
                d_frames[s].zero_()
                continue
            if d_h is None:  # the output's gradient alone (a view of d_out: read, not added to)
                d_h, d_in = d_in, None
            rows = (saved[s], dz, d_frames[s], d_h, d_in, d_sum, d_cell, tmp, d_tc)
            _by_samples(_gate_gradients, n, per_sample, rows, ract, act, d_c is None, conv)
            if not conv:
                d_c = d_h = None
                continue
            d_c = d_cell
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
