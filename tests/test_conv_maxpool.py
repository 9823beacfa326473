"""Conv1D + GlobalMaxPooling1D fused (issue 32 item 2): the same outputs bit for bit and the same
gradients (float32 summation order aside) as the two layers, ties included; which pairs fuse."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arignote import regularizers
from arignote.layers import Conv1D, Dense, Embedding, GlobalAveragePooling1D, GlobalMaxPooling1D, Input
from arignote.layers.convolutional import conv_maxpool as cm
from arignote.layers.convolutional.conv_maxpool import ConvMaxPool, fusable, runs_fused
from arignote.models import Model, Sequential

# weight gradients sum ~12 700 terms: near-zero entries differ by ~2e-6 with one thread
TOL = {"rtol": 2e-5, "atol": 1e-5}


def _pair(filters=7, k=3, steps=11, cin=5, dtype=torch.float32, **kw):
    conv, pool = Conv1D(filters, k, **kw), GlobalMaxPooling1D()
    conv.build((None, steps, cin))
    if dtype == torch.float64:
        conv.double()
    return conv, pool


def _grads(f, x, conv, g):
    params = [x, conv.weight] + ([conv.bias] if conv.bias is not None else [])
    y = f(x)
    return y, torch.autograd.grad((y * g).sum(), params)


@pytest.mark.parametrize("activation", ["relu", None])
@pytest.mark.parametrize("use_bias", [True, False])
def test_fused_equals_the_two_layers(activation, use_bias):
    torch.manual_seed(0)
    conv, pool = _pair(250, 3, 398, 50, activation=activation, use_bias=use_bias)
    x = torch.randn(32, 398, 50, requires_grad=True)
    g = torch.randn(32, 250)
    before = cm.dense_backwards()
    y0, ref = _grads(lambda t: pool(conv(t)), x, conv, g)
    fused = ConvMaxPool(conv, pool)
    y1, got = _grads(fused, x, conv, g)
    assert y1.grad_fn is not None and type(y1.grad_fn).__name__ == "_ConvMaxBackward"
    assert torch.equal(y0, y1)  # the same kernel: bit for bit
    for a, b in zip(ref, got):
        torch.testing.assert_close(b, a, **TOL)
    assert cm.dense_backwards() == before  # random data: no tie took the dense path


def test_gradcheck_float64():
    torch.manual_seed(1)
    for activation in ("relu", None):
        conv, _ = _pair(4, 3, 9, 3, dtype=torch.float64, activation=activation,
                        bias_initializer="ones")
        x = torch.randn(2, 9, 3, dtype=torch.float64, requires_grad=True)
        relu = activation == "relu"
        def fused(t, w, b, conv=conv, relu=relu):
            return cm._ConvMax.apply(t, w, b, conv, relu)

        assert torch.autograd.gradcheck(fused, (x, conv.weight, conv.bias))


def test_positive_ties_take_the_unfused_backward_and_match_it():
    conv, pool = _pair(6, 2, 8, 3, activation="relu", bias_initializer="ones")
    x = torch.ones(3, 8, 3).mul_(0.1).requires_grad_()  # every window equal: every step ties
    x.data[2].normal_()  # sample 2 without ties
    g = torch.randn(3, 6)
    y0, ref = _grads(lambda t: pool(conv(t)), x, conv, g)
    before = cm.dense_backwards()
    y1, got = _grads(ConvMaxPool(conv, pool), x, conv, g)
    assert cm.dense_backwards() == before + 1
    assert torch.equal(y0, y1)
    assert float(ref[1].abs().sum()) > 0 and float(ref[0][0].abs().sum()) > 0
    for a, b in zip(ref, got):
        torch.testing.assert_close(b, a, **TOL)
    # the gradient is split between the 7 tied steps (as torch's amax splits it): interior steps equal
    torch.testing.assert_close(got[0][0, 1], got[0][0, 3], **TOL)


def test_ties_at_zero_after_relu_stay_sparse_and_get_no_gradient():
    conv, pool = _pair(4, 2, 6, 2, activation="relu", use_bias=False)
    x = torch.zeros(2, 6, 2, requires_grad=True)  # every step 0: tied, but relu'(0) = 0
    g = torch.ones(2, 4)
    y0, ref = _grads(lambda t: pool(conv(t)), x, conv, g)
    before = cm.dense_backwards()
    y1, got = _grads(ConvMaxPool(conv, pool), x, conv, g)
    assert cm.dense_backwards() == before and torch.equal(y0, y1)
    for a, b in zip(ref, got):
        assert float(b.abs().sum()) == 0.0
        torch.testing.assert_close(b, a, **TOL)


def test_which_pairs_fuse():
    def conv(**kw):
        return Conv1D(4, 3, **kw)

    pool = GlobalMaxPooling1D()
    assert fusable(conv(activation="relu"), pool) and fusable(conv(), pool)
    assert not fusable(conv(activation="tanh"), pool)
    assert not fusable(conv(padding="same"), pool) and not fusable(conv(padding="causal"), pool)
    assert not fusable(conv(strides=2), pool) and not fusable(conv(dilation_rate=2), pool)
    assert not fusable(conv(activity_regularizer=regularizers.l2(0.1)), pool)
    assert not fusable(conv(data_format="channels_first"), pool)
    assert not fusable(conv(), GlobalMaxPooling1D(data_format="channels_first"))
    assert not fusable(conv(), GlobalAveragePooling1D()) and not fusable(Dense(3), pool)

    class MyConv(Conv1D):
        pass

    assert not fusable(MyConv(4, 3), pool)
    hooked = conv()
    handle = hooked.register_forward_hook(lambda *a: None)
    assert not fusable(hooked, pool)
    handle.remove()
    assert fusable(hooked, pool)
    pre = GlobalMaxPooling1D()
    pre.register_forward_pre_hook(lambda *a: None)
    assert not fusable(conv(), pre)


def test_which_calls_run_fused():
    conv, _ = _pair(4, 3, 9, 3)
    x = torch.randn(2, 9, 3)
    assert runs_fused(x, conv)
    with torch.no_grad():
        assert not runs_fused(x, conv)
    conv.eval()  # predict/evaluate/export: the plain layers (what torch.export and ONNX trace)
    assert not runs_fused(x, conv)
    conv.train()
    assert not runs_fused(x.double(), conv)  # the kernel is float32
    assert not runs_fused(torch.randn(2, 3, 9).transpose(1, 2), conv)  # channels not contiguous
    assert not runs_fused(torch.randn(2, 2, 3), conv)  # shorter than the kernel: the layer's error
    assert not runs_fused(torch.randn(1, 32768, 3), conv)  # steps counted in int16
    assert runs_fused(torch.randn(1, 32767, 3), conv)
    for p in conv.parameters():
        p.requires_grad_(False)
    assert not runs_fused(x, conv)  # nothing needs a gradient
    assert runs_fused(x.requires_grad_(), conv)


def _imdb(seed=0):
    torch.manual_seed(seed)
    model = Sequential([Embedding(50, 8, input_shape=(20,)), Conv1D(16, 3, activation="relu"),
                        GlobalMaxPooling1D(), Dense(1, activation="sigmoid")])
    model.compile("adam", "binary_crossentropy")
    return model


def _stack(model):
    from arignote.graph.node import runtime_module

    return runtime_module(model)


def test_sequential_trains_fused_as_unfused():
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 50, (16, 20)), rng.integers(0, 2, (16, 1)).astype("float32")
    fused, plain = _imdb(), _imdb()
    plain.set_weights(fused.get_weights())
    plain.layers[2].register_forward_hook(lambda *a: None)  # a hook: that pair does not fuse
    calls = cm.fused_calls()
    for _ in range(3):
        a, b = fused.train_on_batch(x, y), plain.train_on_batch(x, y)
        np.testing.assert_allclose(a, b, rtol=1e-5)
    assert cm.fused_calls() == calls + 3  # the hooked model's pair and predict run unfused
    assert any(isinstance(m, ConvMaxPool) for m in _stack(fused)._fused())
    for w0, w1 in zip(fused.get_weights(), plain.get_weights()):
        np.testing.assert_allclose(w0, w1, rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(fused.predict(x), plain.predict(x))
    assert cm.fused_calls() == calls + 3
    assert [w.shape for w in fused.layers[1].get_weights()] == [(3, 8, 16), (16,)]  # on the layer


def test_functional_chain_fuses_and_a_popped_sequential_does_not():
    inp = Input((20,))
    out = Dense(1)(GlobalMaxPooling1D()(Conv1D(4, 3)(Embedding(50, 8)(inp))))
    model = Model(inp, out)
    assert any(isinstance(m, ConvMaxPool) for m in _stack(model)._chain)
    seq = _imdb()
    seq.pop()
    seq.pop()  # Conv1D last: nothing to fuse
    assert not any(isinstance(m, ConvMaxPool) for m in _stack(seq)._fused())
    assert seq.predict(np.zeros((2, 20), "int64")).shape == (2, 18, 16)


def test_a_compiled_step_traces_the_plain_layers_and_matches_eager():
    from arignote import config

    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 50, (16, 20)), rng.integers(0, 2, (16, 1)).astype("float32")
    with config.override(print_active_device=False, jit_backend="aot_eager"):
        eager, jit = _imdb(), _imdb()
        jit.compile("adam", "binary_crossentropy", jit_compile=True)
        jit.set_weights(eager.get_weights())
        calls = cm.fused_calls()
        eager.fit(x, y, epochs=2, verbose=0, shuffle=False, batch_size=8)
        assert cm.fused_calls() == calls + 4
        jit.fit(x, y, epochs=2, verbose=0, shuffle=False, batch_size=8)
        assert cm.fused_calls() == calls + 4  # Dynamo traced the two layers, not the fused function
    for a, b in zip(eager.get_weights(), jit.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
