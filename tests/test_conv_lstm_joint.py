"""ConvLSTM2D with its input and recurrent convolutions joined (arignote.layers.recurrent.conv_lstm_joint):
the backward against finite differences (float64 gradcheck), the joined steps against the separate
input convolution (conv_lstm_sequence) and against the per-operator graph, which layers take it, and
its mechanism: one convolution a step forward, one convolution backward a step and one for the kernels."""

import contextlib

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from arignote import activations
from arignote.layers import ConvLSTM2D
from arignote.layers.convolutional_recurrent import ConvLSTM2DCell
from arignote.layers.recurrent import conv_lstm_joint as joined
from arignote.layers.recurrent import conv_lstm_sequence as recurrence


def _inputs(first, fresh, n=2, t=3, inputs=2, f=2, rows=3, cols=4, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)

    def keras(shape):  # Keras-layout memory seen as torch layout
        x = torch.randn(*shape, generator=g, dtype=dtype)
        return x if first else x.movedim(-1, -3)

    x = keras((n, t, inputs, rows, cols) if first else (n, t, rows, cols, inputs))
    h = keras((n, f, rows, cols) if first else (n, rows, cols, f))
    c = keras((n, f, rows, cols) if first else (n, rows, cols, f))
    if fresh:
        h, c = h.zero_(), c.zero_()
    w = torch.randn(4 * f, inputs + f, 3, 3, generator=g, dtype=dtype) * 0.5
    b = torch.randn(4 * f, generator=g, dtype=dtype)
    return x, h, c, w, b


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("first, fresh, ract", [
    (False, False, "hard_sigmoid"), (True, True, "hard_sigmoid"),
    (False, True, "sigmoid"), (True, False, "sigmoid"),
])
def test_backward_equals_finite_differences(first, fresh, ract):
    spec = recurrence.Recurrence(2, (1, 1), activations.get("tanh"), activations.get(ract), fresh, first)
    x, h, c, w, b = _inputs(first, fresh)
    x = (x * 2).requires_grad_()
    w, b = w.requires_grad_(), b.requires_grad_()
    if not fresh:
        h, c = h.requires_grad_(), c.requires_grad_()
    assert torch.autograd.gradcheck(lambda *a: joined.run(*a, spec), (x, h, c, w, b), atol=1e-6)
    if not fresh:  # through the last cell state alone (no output gradient reaches a step)
        assert torch.autograd.gradcheck(lambda *a: joined.run(*a, spec)[1], (x, h, c, w, b), atol=1e-6)


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("first", [False, True])
@pytest.mark.parametrize("fresh", [True, False])
@pytest.mark.parametrize("bias", [True, False])
def test_joined_steps_equal_the_separate_input_convolution(first, fresh, bias):
    """Same outputs, states and gradients (x, h, c, kernel, recurrent kernel, bias) as
    conv_lstm_sequence.run on the input convolution of all frames, at zoo-like proportions."""
    spec = recurrence.Recurrence(3, (1, 1), activations.get("tanh"), recurrence.clamp01, fresh, first)
    x, h, c, w, b = _inputs(first, fresh, n=3, t=4, inputs=2, f=3, rows=5, cols=6, seed=3)
    b = b if bias else None
    n, t = x.shape[:2]
    frame = (3, 5, 6) if first else (5, 6, 3)
    proj = torch.randn(n, t, *frame, generator=torch.Generator().manual_seed(5), dtype=x.dtype)
    results = []
    for joint in (True, False):
        xs, hs, cs, ws = (a.detach().clone().requires_grad_() for a in (x, h, c, w))
        bs = None if b is None else b.detach().clone().requires_grad_()
        if joint:
            out, last = joined.run(xs, hs, cs, ws, bs, spec)
        else:
            keras = xs if first else xs.movedim(-3, -1)  # (n, t, ...) Keras-layout memory
            frames = keras.reshape(n * t, *keras.shape[2:])
            frames = frames if first else frames.movedim(-1, -3)
            xc = torch.nn.functional.conv2d(frames, ws[:, :2], bs, 1, 1)
            out, last = recurrence.run(xc, hs, cs, ws[:, 2:], spec)
        wrt = [t_ for t_ in (xs, ws, bs) if t_ is not None] + ([] if fresh else [hs, cs])
        grads = torch.autograd.grad((out * proj).sum() + (last * 0.5).sum(), wrt)
        results.append([out.detach(), last.detach(), *grads])
    for a, b_ in zip(*results):
        torch.testing.assert_close(a, b_, rtol=1e-10, atol=1e-10)
    assert results[0][0].abs().max() > 0.1 and results[0][2].abs().max() > 0.01


@contextlib.contextmanager
def _joining(joint):
    """ConvLSTM2D layers take the joined steps (``joint``) or the separate input convolution."""
    saved = ConvLSTM2DCell._joins_convolutions
    if not joint:
        ConvLSTM2DCell._joins_convolutions = lambda self: False
    try:
        yield
    finally:
        ConvLSTM2DCell._joins_convolutions = saved


def _layer_paths(layer, x, loss, call=None):
    """Outputs and gradients of ``layer`` (built) on the joined steps, the separate input convolution
    and the per-operator graph."""
    results = []
    for path in ("joined", "separate", "graph"):
        layer.zero_grad()
        xg = x.clone().requires_grad_()
        saved = ConvLSTM2DCell._joins_convolutions, ConvLSTM2DCell._recurrence
        if path != "joined":
            ConvLSTM2DCell._joins_convolutions = lambda self: False
        if path == "graph":
            ConvLSTM2DCell._recurrence = lambda *a: None
        try:
            out = layer(xg, **(call or {}))
        finally:
            ConvLSTM2DCell._joins_convolutions, ConvLSTM2DCell._recurrence = saved
        outs = out if isinstance(out, list) else [out]
        loss(outs).backward()
        results.append([o.detach().numpy() for o in outs] + [xg.grad.numpy()]
                       + [p.grad.numpy() for p in layer.parameters()])
    return results


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("recurrent_activation", ["hard_sigmoid", "sigmoid"])
def test_conv_lstm2d_on_joined_steps_equals_the_other_paths(data_format, recurrent_activation):
    rng = np.random.RandomState(7)
    layer = ConvLSTM2D(3, 3, padding="same", return_sequences=True, return_state=True,
                       data_format=data_format, recurrent_activation=recurrent_activation)
    shape = (2, 4, 2, 5, 6) if data_format == "channels_first" else (2, 4, 5, 6, 2)
    x = torch.tensor(rng.uniform(-1, 1, shape).astype("float32"))
    layer.build(tuple(x.shape))
    layer.set_weights([rng.uniform(-0.5, 0.5, w.shape).astype("float32") for w in layer.get_weights()])
    out_shapes = [(2, 4, 3, 5, 6), (2, 3, 5, 6), (2, 3, 5, 6)] if data_format == "channels_first" else [
        (2, 4, 5, 6, 3), (2, 5, 6, 3), (2, 5, 6, 3)]
    proj = [torch.tensor(rng.uniform(-1, 1, s).astype("float32")) for s in out_shapes]

    def loss(outs):
        return sum((o * p).sum() for o, p in zip(outs, proj))

    joint, separate, graph = _layer_paths(layer, x, loss)
    for a, b, c in zip(joint, separate, graph):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)
        np.testing.assert_allclose(a, c, rtol=2e-5, atol=2e-6)
    assert np.abs(joint[3]).max() > 0  # the input's gradient is not trivially zero


@pytest.mark.usefixtures("one_thread")
def test_initial_state_takes_the_joined_steps_and_gets_gradients():
    rng = np.random.RandomState(8)
    layer = ConvLSTM2D(2, 3, padding="same", return_sequences=True)
    x = torch.tensor(rng.uniform(-1, 1, (2, 3, 4, 4, 1)).astype("float32"))
    layer.build(tuple(x.shape))
    states = [torch.tensor(rng.uniform(-1, 1, (2, 4, 4, 2)).astype("float32")).requires_grad_()
              for _ in range(2)]
    grads = []
    for joint in (True, False):
        with _joining(joint):
            out = layer(x, initial_state=states)
        grads.append([out.detach().numpy(), *(g.numpy() for g in torch.autograd.grad(out.sum(), states))])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)
    assert np.abs(grads[0][1]).max() > 0 and np.abs(grads[0][2]).max() > 0


@pytest.mark.parametrize("kwargs, joins", [
    (dict(padding="same"), True),
    (dict(padding="valid"), False),
    (dict(padding="same", strides=2), False),
    (dict(padding="same", dilation_rate=2), False),
])
def test_which_layers_join_their_convolutions(kwargs, joins):
    assert ConvLSTM2DCell(2, 3, **kwargs)._joins_convolutions() is joins


@pytest.mark.usefixtures("one_thread")
def test_input_dropout_keeps_the_separate_input_convolution(monkeypatch):
    calls = []
    monkeypatch.setattr(joined, "run", lambda *a: calls.append(a))
    layer = ConvLSTM2D(2, 3, padding="same", dropout=0.5)
    x = torch.ones(2, 3, 4, 4, 1)
    layer(x, training=True)
    assert calls == []
    with pytest.raises(TypeError):  # and without dropout it is taken (the stub returns None)
        layer(x, training=False)
    assert len(calls) == 1


class _Count(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        if name in ("convolution", "convolution_backward"):
            self.ops.append((name, tuple(args[0].shape)))
        return func(*args, **(kwargs or {}))


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("fresh", [True, False])
def test_one_convolution_a_step_and_one_for_the_kernels(fresh):
    n, t, f = 2, 5, 3
    spec = recurrence.Recurrence(f, (1, 1), activations.get("tanh"), recurrence.clamp01, fresh, False)
    x, h, c, w, b = _inputs(False, fresh, n=n, t=t, inputs=2, f=f, rows=4, cols=4, dtype=torch.float32)
    x, w, b = x.requires_grad_(), w.requires_grad_(), b.requires_grad_()
    with _Count() as forward:
        out, last = joined.run(x, h, c, w, b, spec)
    assert forward.ops == [("convolution", (n, 2 + f * (not (fresh and s == 0)), 4, 4)) for s in range(t)]
    with _Count() as backward:
        (out.sum() + last.sum()).backward()
    assert [op for op, _ in backward.ops] == ["convolution_backward"] * (t + 1)
    assert backward.ops[-1][1] == (n * t, 4 * f, 4, 4)  # the kernels' and bias's gradient, all steps at once
    assert x.grad.abs().max() > 0 and w.grad.abs().max() > 0 and b.grad.abs().max() > 0


def _seeded_layer(seed, samples):
    """A built ConvLSTM2D(3, 3x3, 'same') and a batch of ``samples`` sequences of 4 frames of 6x6x2."""
    torch.manual_seed(seed)
    layer = ConvLSTM2D(3, 3, padding="same", return_sequences=True)
    x = torch.randn(samples, 4, 6, 6, 2)
    layer.build(tuple(x.shape))
    return layer, x


@pytest.mark.usefixtures("one_thread")
def test_under_bfloat16_autocast_the_joined_steps_give_the_separate_paths_dtype_and_values():
    layer, x = _seeded_layer(2, 2)
    results = []
    for joint in (True, False):
        xg = x.clone().requires_grad_()
        with _joining(joint), torch.autocast("cpu", dtype=torch.bfloat16):
            out = layer(xg)
        out.float().sum().backward()
        results.append((out.dtype, out.detach().float(), xg.grad))
    assert results[0][0] == results[1][0] == torch.bfloat16
    torch.testing.assert_close(results[0][1], results[1][1], rtol=0.05, atol=0.05)
    torch.testing.assert_close(results[0][2], results[1][2], rtol=0.1, atol=0.05)


@pytest.mark.gpu
def test_joined_steps_on_a_gpu_equal_the_cpu():
    """cuDNN's convolutions under the joined steps (channels_last buffers, one chunk of samples)."""
    layer, x = _seeded_layer(4, 3)
    results = []
    for device in ("cpu", "cuda"):
        layer.to(device)
        layer.zero_grad()
        xg = x.to(device).requires_grad_()
        out = layer(xg)
        (out * torch.linspace(-1, 1, out.numel(), device=device).view_as(out)).sum().backward()
        results.append([out.detach().cpu(), xg.grad.cpu(), *(p.grad.cpu() for p in layer.parameters())])
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
