"""Every layer against numpy/torch references, in Keras (channels-last) terms."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from arignote import backend, layers
from arignote.layers import (
    GRU,
    LSTM,
    Activation,
    AveragePooling1D,
    AveragePooling2D,
    BatchNormalization,
    Conv1D,
    Conv2D,
    Dense,
    Dropout,
    Embedding,
    Flatten,
    GlobalAveragePooling1D,
    GlobalAveragePooling2D,
    GlobalMaxPooling1D,
    GlobalMaxPooling2D,
    Input,
    InputLayer,  # noqa: E402
    LeakyReLU,
    MaxPooling1D,
    MaxPooling2D,
    Reshape,
    ZeroPadding2D,
)

RNG = np.random.default_rng(0)


def run(layer, x_keras: np.ndarray, training: bool = False) -> np.ndarray:
    """Run ``layer`` on a Keras-layout batch (built on first call, batch dim None), return numpy."""
    layer.train(training)
    with torch.no_grad():
        y = layer(torch.tensor(x_keras))
    assert layer.built
    return y.numpy()


def check_shape(layer, x_keras: np.ndarray, y: np.ndarray) -> None:
    assert layer.compute_output_shape((None, *x_keras.shape[1:])) == (None, *y.shape[1:])


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()
    yield


# --------------------------------------------------------------------------- internal layout


def test_conv2d_sees_a_channels_last_memory_view_without_copy():
    # Keras-layout NHWC tensors travel between layers; the NCHW view given to torch is channels-last memory
    x = torch.randn(2, 5, 6, 3)
    c = Conv2D(4, 3, padding="same")
    c.build((None, 5, 6, 3))
    seen = {}
    orig = F.conv2d

    def spy(inp, *args, **kwargs):
        seen["ptr"], seen["cl"] = inp.data_ptr(), inp.is_contiguous(memory_format=torch.channels_last)
        return orig(inp, *args, **kwargs)

    import arignote.layers.convolutional.conv as conv_mod
    conv_mod._CONV[2] = spy
    try:
        y = c(x)
    finally:
        conv_mod._CONV[2] = orig
    assert seen == {"ptr": x.data_ptr(), "cl": True}
    assert y.shape == (2, 5, 6, 4) and y.is_contiguous()


# --------------------------------------------------------------------------- Dense


def test_dense_matches_numpy_with_keras_layout_weights():
    d = Dense(3, activation="relu", input_dim=4)
    assert d.input_shape_hint == (4,)
    x = RNG.standard_normal((5, 4)).astype(np.float32)
    d.build((None, 4,))
    kernel = RNG.standard_normal((4, 3)).astype(np.float32)
    bias = RNG.standard_normal(3).astype(np.float32)
    d.set_weights([kernel, bias])
    y = run(d, x)
    np.testing.assert_allclose(y, np.maximum(x @ kernel + bias, 0), rtol=1e-5, atol=1e-6)
    w = d.get_weights()
    assert w[0].shape == (4, 3) and np.array_equal(w[0], kernel)
    check_shape(d, x, y)


def test_dense_default_init_is_glorot_uniform_and_zero_bias():
    d = Dense(300)
    d.build((None, 200,))
    limit = math.sqrt(6 / (200 + 300))
    w = d.weight.detach().numpy()
    assert np.abs(w).max() <= limit
    assert abs(w.std() - limit / math.sqrt(3)) < 0.05 * limit  # uniform std = limit / sqrt(3)
    assert np.all(d.bias.detach().numpy() == 0)
    assert d.count_params() == 200 * 300 + 300


def test_dense_no_bias_and_sequence_input():
    d = Dense(2, use_bias=False)
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    y = run(d, x)
    assert len(d.get_weights()) == 1 and y.shape == (3, 4, 2)
    np.testing.assert_allclose(y, x @ d.get_weights()[0], rtol=1e-5, atol=1e-6)
    check_shape(d, x, y)


def test_dense_on_images_applies_to_channels():
    d = Dense(2)
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    y = run(d, x)
    k, b = d.get_weights()
    np.testing.assert_allclose(y, x @ k + b, rtol=1e-5, atol=1e-5)


def test_build_is_idempotent_and_trainable_false_freezes():
    d = Dense(4)
    d.build((None, 3,))
    w = d.weight
    d.build((None, 3,))
    assert d.weight is w
    frozen = Dense(4, trainable=False)
    frozen.build((None, 3,))
    assert not any(p.requires_grad for p in frozen.parameters())


# --------------------------------------------------------------------------- Conv2D


def numpy_conv(x, k, b, stride=(1, 1)):
    """Direct channels-last 'valid' convolution: y[n,i,j,o] = sum x[n,i*s+a,j*s+b,c] K[a,b,c,o] + b[o]."""
    n, h, w, _ = x.shape
    kh, kw, _, o = k.shape
    ho, wo = (h - kh) // stride[0] + 1, (w - kw) // stride[1] + 1
    y = np.zeros((n, ho, wo, o), dtype=np.float64)
    for i in range(ho):
        for j in range(wo):
            patch = x[:, i * stride[0]:i * stride[0] + kh, j * stride[1]:j * stride[1] + kw, :]
            y[:, i, j, :] = np.tensordot(patch, k, axes=([1, 2, 3], [0, 1, 2]))
    return y + b


def tf_same_pad(x, k, s):
    """Pad NHWC ``x`` the way TensorFlow's 'same' does (extra pixel at the bottom/right)."""
    pads = []
    for n, kk, ss in zip(x.shape[1:3], k, s):
        total = max((math.ceil(n / ss) - 1) * ss + kk - n, 0)
        pads.append((total // 2, total - total // 2))
    return np.pad(x, ((0, 0), pads[0], pads[1], (0, 0)))


@pytest.mark.parametrize(
    "kwargs,shape",
    [
        ({"kernel_size": (3, 3)}, (2, 7, 6, 3)),
        ({"kernel_size": 3, "padding": "same"}, (2, 7, 6, 3)),
        ({"kernel_size": (3, 2), "strides": 2, "padding": "same"}, (2, 8, 7, 3)),  # asymmetric pad
        ({"kernel_size": (2, 2), "strides": (2, 1)}, (1, 5, 5, 2)),
    ],
)
def test_conv2d_matches_numpy(kwargs, shape):
    c = Conv2D(4, activation="linear", **kwargs)
    x = RNG.standard_normal(shape).astype(np.float32)
    c.build((None, *shape[1:]))
    k = RNG.standard_normal((*c.kernel_size, shape[-1], 4)).astype(np.float32)
    b = RNG.standard_normal(4).astype(np.float32)
    c.set_weights([k, b])
    y = run(c, x)
    xp = tf_same_pad(x, c.kernel_size, c.strides) if c.padding == "same" else x
    np.testing.assert_allclose(y, numpy_conv(xp, k, b, c.strides), rtol=1e-4, atol=1e-4)
    check_shape(c, x, y)


def test_conv2d_keeps_channels_last_and_activation():
    c = Conv2D(8, (3, 3), padding="same", activation="relu", input_shape=(6, 6, 3))
    c.build((None, 6, 6, 3))
    x = torch.randn(2, 6, 6, 3)
    y = c(x)
    assert y.shape == (2, 6, 6, 8) and (y >= 0).all()
    ref = F.relu(F.conv2d(x.permute(0, 3, 1, 2).contiguous(), c.weight, c.bias, padding=1))
    ref = ref.permute(0, 2, 3, 1)
    torch.testing.assert_close(y, ref)


def test_conv2d_init_and_weight_layout():
    c = Conv2D(32, (3, 3))
    c.build((None, 8, 8, 16))
    k, b = c.get_weights()
    assert k.shape == (3, 3, 16, 32) and b.shape == (32,)
    limit = math.sqrt(6 / (16 * 9 + 32 * 9))
    assert np.abs(k).max() <= limit and np.all(b == 0)
    assert c.count_params() == 3 * 3 * 16 * 32 + 32


def test_conv2d_bad_input():
    with pytest.raises(ValueError, match="expects 2-D inputs with channels"):
        Conv2D(4, 3).build((None, 784,))
    with pytest.raises(ValueError, match="data_format must be 'channels_first' or 'channels_last'"):
        Conv2D(4, 3, data_format="nchw")
    with pytest.raises(ValueError, match="padding must be one of 'valid', 'same'"):
        Conv2D(4, 3, padding="full")
    with pytest.raises(ValueError, match="filters"):
        Conv2D(0, 3)


# --------------------------------------------------------------------------- pooling, padding, flatten


def numpy_pool(x, k, s, op):
    n, h, w, c = x.shape
    ho, wo = (h - k[0]) // s[0] + 1, (w - k[1]) // s[1] + 1
    out = np.zeros((n, ho, wo, c), dtype=x.dtype)
    for i in range(ho):
        for j in range(wo):
            out[:, i, j] = op(x[:, i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1]], axis=(1, 2))
    return out


@pytest.mark.parametrize("cls,op", [(MaxPooling2D, np.max), (AveragePooling2D, np.mean)])
def test_pooling_valid(cls, op):
    x = RNG.standard_normal((2, 6, 7, 3)).astype(np.float32)
    p = cls(pool_size=(2, 2))
    y = run(p, x)
    np.testing.assert_allclose(y, numpy_pool(x, (2, 2), (2, 2), op), rtol=1e-5, atol=1e-6)
    check_shape(p, x, y)
    p3 = cls(pool_size=3, strides=(1, 2))
    y3 = run(p3, x)
    np.testing.assert_allclose(y3, numpy_pool(x, (3, 3), (1, 2), op), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls,op", [(MaxPooling2D, np.max), (AveragePooling2D, np.mean)])
def test_pooling_same_counts_only_real_pixels(cls, op):
    x = RNG.standard_normal((1, 5, 5, 2)).astype(np.float32)
    p = cls(pool_size=2, padding="same")
    y = run(p, x)
    assert y.shape == (1, 3, 3, 2)
    check_shape(p, x, y)
    # windows at rows/cols 0-1, 2-3, 4 (the last one partial)
    for i, rows in enumerate([(0, 2), (2, 4), (4, 5)]):
        for j, cols in enumerate([(0, 2), (2, 4), (4, 5)]):
            ref = op(x[0, rows[0]:rows[1], cols[0]:cols[1]], axis=(0, 1))
            np.testing.assert_allclose(y[0, i, j], ref, rtol=1e-5, atol=1e-6)


def test_global_pooling():
    x = RNG.standard_normal((3, 4, 5, 6)).astype(np.float32)
    g = GlobalAveragePooling2D()
    y = run(g, x)
    np.testing.assert_allclose(y, x.mean(axis=(1, 2)), rtol=1e-5, atol=1e-6)
    check_shape(g, x, y)
    np.testing.assert_allclose(run(GlobalMaxPooling2D(), x), x.max(axis=(1, 2)))


def test_zero_padding():
    x = RNG.standard_normal((2, 3, 4, 2)).astype(np.float32)
    z = ZeroPadding2D(((1, 2), (0, 3)))
    y = run(z, x)
    np.testing.assert_array_equal(y, np.pad(x, ((0, 0), (1, 2), (0, 3), (0, 0))))
    check_shape(z, x, y)
    assert ZeroPadding2D(1).compute_output_shape((None, 3, 4, 2)) == (None, 5, 6, 2)
    with pytest.raises(ValueError, match="padding"):
        ZeroPadding2D("x")


def test_flatten_uses_keras_hwc_order():
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    f = Flatten()
    y = run(f, x)
    np.testing.assert_array_equal(y, x.reshape(2, -1))
    check_shape(f, x, y)
    v = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    f2 = Flatten()
    np.testing.assert_array_equal(run(f2, v), v.reshape(2, -1))
    # channels_first images flatten in channels-last order (Keras 2)
    cf = Flatten(data_format="channels_first")
    np.testing.assert_array_equal(run(cf, x), x.transpose(0, 2, 3, 1).reshape(2, -1))


def test_reshape_to_image_and_back():
    x = RNG.standard_normal((2, 24)).astype(np.float32)
    r = Reshape((2, 3, 4))
    y = run(r, x)
    np.testing.assert_array_equal(y, x.reshape(2, 2, 3, 4))
    assert Reshape((-1, 4)).compute_output_shape((None, 24)) == (None, 6, 4)
    with pytest.raises(ValueError, match="cannot reshape"):
        Reshape((5, 5)).compute_output_shape((None, 24))


# --------------------------------------------------------------------------- activation, dropout


@pytest.mark.parametrize(
    "name,ref",
    [
        ("relu", lambda x: np.maximum(x, 0)),
        ("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
        ("tanh", np.tanh),
        ("linear", lambda x: x),
        ("softmax", lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True)),
        ("hard_sigmoid", lambda x: np.clip(0.2 * x + 0.5, 0, 1)),
    ],
)
def test_activations(name, ref):
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    np.testing.assert_allclose(run(Activation(name), x), ref(x), rtol=1e-5, atol=1e-6)
    d = Dense(6, activation=name)
    y = run(d, x)
    k, b = d.get_weights()
    np.testing.assert_allclose(y, ref(x @ k + b), rtol=1e-4, atol=1e-5)


def test_softmax_on_images_is_over_channels():
    x = RNG.standard_normal((2, 3, 3, 4)).astype(np.float32)
    y = run(Activation("softmax"), x)
    np.testing.assert_allclose(y.sum(-1), 1.0, rtol=1e-5)
    c = Conv2D(5, 1, activation="softmax")
    np.testing.assert_allclose(run(c, x).sum(-1), 1.0, rtol=1e-5)


def test_unknown_activation_did_you_mean():
    with pytest.raises(ValueError, match="Did you mean 'relu'"):
        Activation("relu6x")
    with pytest.raises(ValueError, match="Did you mean 'softmax'"):
        Dense(3, activation="softmx")


def test_dropout_train_and_eval():
    torch.manual_seed(0)
    x = np.ones((200, 100), dtype=np.float32)
    d = Dropout(0.25)
    y = run(d, x, training=True)
    zero = (y == 0).mean()
    assert 0.22 < zero < 0.28
    np.testing.assert_allclose(y[y != 0], 1 / 0.75, rtol=1e-6)
    np.testing.assert_array_equal(run(d, x, training=False), x)
    assert Dropout(1.5).rate == 1.0  # Keras 2 clips the rate
    with pytest.raises(ValueError, match="rate"):
        Dropout("half")


# --------------------------------------------------------------------------- batch norm


def test_batchnorm_images_matches_torch_batchnorm2d():
    bn = BatchNormalization(input_shape=(4, 5, 3))
    x = RNG.standard_normal((8, 4, 5, 3)).astype(np.float32) * 3 + 1
    bn.build((None, 4, 5, 3))
    ref = torch.nn.BatchNorm2d(3, eps=1e-3, momentum=0.01)
    with torch.no_grad():
        bn.gamma.uniform_(0.5, 1.5)
        bn.beta.uniform_(-1, 1)
        ref.weight.copy_(bn.gamma)
        ref.bias.copy_(bn.beta)
    xt = torch.tensor(x)
    y = run(bn, x, training=True)
    ref.train()
    y_ref = ref(xt.permute(0, 3, 1, 2).contiguous()).permute(0, 2, 3, 1).detach().numpy()
    np.testing.assert_allclose(y, y_ref, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(bn.moving_mean, ref.running_mean)
    torch.testing.assert_close(bn.moving_variance, ref.running_var)
    # eval: (x - moving_mean) / sqrt(moving_var + eps) * gamma + beta (Keras formula)
    gamma, beta, mm, mv = bn.get_weights()
    y_eval = run(bn, x, training=False)
    np.testing.assert_allclose(y_eval, (x - mm) / np.sqrt(mv + 1e-3) * gamma + beta, rtol=1e-4, atol=1e-5)
    check_shape(bn, x, y)


def test_batchnorm_vectors_and_sequences_keras_momentum():
    x = RNG.standard_normal((16, 4)).astype(np.float32)
    bn = BatchNormalization(momentum=0.9)
    y = run(bn, x, training=True)
    np.testing.assert_allclose(y, (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3), rtol=1e-4, atol=1e-5)
    # Keras: moving = momentum * moving + (1 - momentum) * batch
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.1 * x.mean(0), rtol=1e-5, atol=1e-6)
    s = RNG.standard_normal((4, 6, 3)).astype(np.float32)
    ys = run(BatchNormalization(center=False, scale=False), s, training=True)
    mean, var = s.mean((0, 1)), s.var((0, 1))
    np.testing.assert_allclose(ys, (s - mean) / np.sqrt(var + 1e-3), rtol=1e-4, atol=1e-5)
    # channels_first images: axis=1 normalizes dim 1
    xc = RNG.standard_normal((8, 3, 4, 5)).astype(np.float32)
    yc = run(BatchNormalization(axis=1), xc, training=True)
    mean, var = xc.mean((0, 2, 3), keepdims=True), xc.var((0, 2, 3), keepdims=True)
    np.testing.assert_allclose(yc, (xc - mean) / np.sqrt(var + 1e-3), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="out of range"):
        BatchNormalization(axis=4).build((None, 4, 4, 3))


# --------------------------------------------------------------------------- embedding, RNNs


def test_embedding_lookup_and_init():
    e = Embedding(input_dim=20, output_dim=4, input_length=3)
    assert e.input_shape_hint == (3,)
    idx = np.array([[0, 5, 19], [3, 3, 1]])
    y = run(e, idx.astype(np.float32))  # Keras users often pass float indices
    w = e.get_weights()[0]
    assert w.shape == (20, 4) and np.abs(w).max() <= 0.05
    np.testing.assert_array_equal(y, w[idx])
    check_shape(e, idx, y)
    m = Embedding(10, 2, mask_zero=True)
    assert m.compute_mask(torch.tensor([[0, 3]])).tolist() == [[False, True]]


# --------------------------------------------------------------------------- names, config, errors


def test_keras_auto_names_and_clear_session():
    assert [Conv2D(2, 3).name, Conv2D(2, 3).name, Dense(1).name] == ["conv2d_1", "conv2d_2", "dense_1"]
    assert MaxPooling2D().name == "max_pooling2d_1"
    assert BatchNormalization().name == "batch_normalization_1"
    assert GlobalAveragePooling2D().name == "global_average_pooling2d_1"
    assert LSTM(2).name == "lstm_1"
    assert Input(shape=(2,)).name == "input_1"
    assert LeakyReLU().name == "leaky_re_lu_1"  # Keras 2's own spelling
    assert Dense(1, name="out").name == "out"
    backend.clear_session()
    assert Dense(1).name == "dense_1"


ALL_LAYERS = [
    (lambda: Dense(3, activation="tanh", input_shape=(4,)), (4,)),
    (lambda: Conv2D(2, (3, 3), strides=2, padding="same", activation="relu"), (6, 6, 3)),
    (lambda: MaxPooling2D((2, 2), padding="same"), (5, 5, 2)),
    (lambda: AveragePooling2D(3, strides=1), (5, 5, 2)),
    (lambda: GlobalAveragePooling2D(), (4, 4, 2)),
    (lambda: ZeroPadding2D(2), (3, 3, 1)),
    (lambda: Dropout(0.3), (5,)),
    (lambda: Flatten(), (2, 2, 2)),
    (lambda: Activation("softmax"), (5,)),
    (lambda: BatchNormalization(momentum=0.9, epsilon=1e-4), (2, 2, 3)),
    (lambda: Embedding(10, 3, input_length=4), (4,)),
    (lambda: LSTM(3, return_sequences=True), (4, 2)),
    (lambda: GRU(3), (4, 2)),
    (lambda: Reshape((2, 2)), (4,)),
    (lambda: InputLayer(input_shape=(3, 3, 1)), (3, 3, 1)),
    (lambda: Conv1D(3, 2, padding="causal", dilation_rate=2, activation="relu"), (6, 2)),
    (lambda: MaxPooling1D(2, padding="same"), (5, 2)),
    (lambda: AveragePooling1D(3, strides=1), (5, 2)),
    (lambda: GlobalMaxPooling1D(), (5, 2)),
    (lambda: LeakyReLU(0.1), (4,)),
]


@pytest.mark.parametrize("make,shape", ALL_LAYERS)
def test_serialize_roundtrip_same_outputs(make, shape):
    layer = make()
    cfg = layers.serialize(layer)
    json.dumps(cfg)  # JSON-able
    clone = layers.deserialize(json.loads(json.dumps(cfg)))
    assert type(clone) is type(layer) and clone.get_config() == layer.get_config()
    assert clone.input_shape_hint == layer.input_shape_hint
    layer.build((None, *shape))
    clone.build((None, *shape))
    clone.set_weights(layer.get_weights())
    x = RNG.integers(0, 10, (2, *shape)).astype(np.float32)
    np.testing.assert_allclose(run(clone, x), run(layer, x), rtol=1e-6)
    assert layer.compute_output_shape((None, *shape)) == (None, *run(layer, x).shape[1:])
    assert layer.device_context is None


def test_bad_arguments_name_the_fix():
    with pytest.raises(TypeError, match="Did you mean 'activation'"):
        Dense(10, activaton="relu")
    with pytest.raises(TypeError, match="Conv2D.*'kernel_sizes'"):
        Conv2D(3, 3, kernel_sizes=3)
    with pytest.raises(ValueError, match="Did you mean 'Conv2D'"):
        layers.deserialize({"class_name": "Conv2d", "config": {}})
    with pytest.raises(ValueError, match="units must be a positive integer"):
        Dense(0)
    with pytest.raises(ValueError, match="input_shape"):
        Dense(3, input_shape="abc")
    with pytest.raises(ValueError, match="Input needs shape"):
        Input()


def test_set_weights_checks_shapes():
    d = Dense(3)
    d.build((None, 2,))
    with pytest.raises(ValueError, match=r"weight 0 has shape \(2, 3\)"):
        d.set_weights([np.zeros((3, 2)), np.zeros(3)])
    with pytest.raises(ValueError, match="expects 2 weight arrays"):
        d.set_weights([np.zeros((2, 3))])


def test_floatx_float64_parameters():
    from arignote import config

    with config.override(floatX="float64"):
        d = Dense(2)
        d.build((None, 3,))
    assert d.weight.dtype == torch.float64


def test_numpy_integers_are_accepted():
    classes = np.int64(10)
    d = Dense(classes, input_shape=np.array([784])[0:1].shape)
    assert d.units == 10 and type(d.units) is int
    c = Conv2D(np.int32(8), (np.int64(3), 3), strides=np.int64(1))
    assert c.filters == 8 and c.kernel_size == (3, 3)
    json.dumps(layers.serialize(c))
    assert Dropout(np.float32(0.5)).rate == 0.5
    assert LSTM(np.int64(4)).units == 4


def test_keras_style_custom_layer():
    class Scale(layers.Layer):
        def build(self, input_shape):
            self.gamma = self.add_weight("gamma", (input_shape[-1],), initializer="ones")
            self.kernel = self.add_weight("kernel", (input_shape[-1], 2))
            super().build(input_shape)

        def call(self, x):
            return (x * self.gamma) @ self.kernel

        def compute_output_shape(self, input_shape):
            return (2,)

    s = Scale()
    assert s.name == "scale_1"
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    y = run(s, x)
    k = s.kernel.detach().numpy()
    assert k.shape == (4, 2) and np.abs(k).max() <= math.sqrt(6 / 6)
    np.testing.assert_allclose(y, x @ k, rtol=1e-5)
    assert {n for n, _ in s.named_parameters()} == {"gamma", "kernel"}
    clone = layers.deserialize(layers.serialize(s), custom_objects={"Scale": Scale})
    assert type(clone) is Scale
    with pytest.raises(ValueError, match="custom_objects"):
        layers.deserialize(layers.serialize(s))

    class Dense(layers.Layer):  # a user's class must not shadow the built-in one
        pass

    assert type(layers.deserialize({"class_name": "Dense", "config": {"units": 2}})) is layers.Dense
    x = torch.ones(2, 3)
    assert layers.Layer()(x) is x  # Keras 2's base call is the identity


def test_trainable_can_be_toggled_after_build():
    d = Dense(3)
    d.build((None, 2,))
    d.trainable = False
    assert not any(p.requires_grad for p in d.parameters()) and d.get_config()["trainable"] is False
    d.trainable = True
    assert all(p.requires_grad for p in d.parameters())


# --------------------------------------------------------------------------- 1-D layers


def numpy_conv1d(x, k, b, stride=1, dilation=1):
    """Channels-last valid temporal convolution: y[n,t,o] = sum x[n,t*s+j*d,c] K[j,c,o] + b[o]."""
    n, steps, _ = x.shape
    kk = k.shape[0]
    out = (steps - dilation * (kk - 1) - 1) // stride + 1
    y = np.zeros((n, out, k.shape[2]))
    for t in range(out):
        for j in range(kk):
            y[:, t] += x[:, t * stride + j * dilation] @ k[j]
    return y + b


@pytest.mark.parametrize(
    "kwargs,pad",
    [
        ({"kernel_size": 3}, (0, 0)),
        ({"kernel_size": 3, "padding": "same", "strides": 2}, None),
        ({"kernel_size": 2, "padding": "causal", "dilation_rate": 2}, (2, 0)),
    ],
)
def test_conv1d_matches_numpy(kwargs, pad):
    x = RNG.standard_normal((2, 9, 3)).astype(np.float32)
    c = Conv1D(4, **kwargs)
    c.build((None, 9, 3))
    k = RNG.standard_normal((c.kernel_size[0], 3, 4)).astype(np.float32)
    bias = RNG.standard_normal(4).astype(np.float32)
    c.set_weights([k, bias])
    y = run(c, x)
    if pad is None:  # TF 'same': total = (ceil(9/2) - 1) * 2 + 3 - 9 = 2
        pad = (1, 1)
    xp = np.pad(x, ((0, 0), pad, (0, 0)))
    np.testing.assert_allclose(y, numpy_conv1d(xp, k, bias, c.strides[0], c.dilation_rate[0]), rtol=1e-4,
                               atol=1e-4)
    check_shape(c, x, y)


def test_pooling_1d_and_global():
    x = RNG.standard_normal((2, 7, 3)).astype(np.float32)
    y = run(MaxPooling1D(2), x)
    np.testing.assert_allclose(y, np.maximum(x[:, 0:6:2], x[:, 1:7:2]))
    ya = run(AveragePooling1D(2, padding="same"), x)
    assert ya.shape == (2, 4, 3)
    np.testing.assert_allclose(ya[:, :3], (x[:, 0:6:2] + x[:, 1:7:2]) / 2, rtol=1e-5)
    np.testing.assert_allclose(ya[:, 3], x[:, 6], rtol=1e-5)  # the last window holds one real step
    np.testing.assert_allclose(run(GlobalMaxPooling1D(), x), x.max(1))
    np.testing.assert_allclose(run(GlobalAveragePooling1D(), x), x.mean(1), rtol=1e-6)
    with pytest.raises(ValueError, match="expects 1-D inputs with channels"):
        MaxPooling1D().build((None, 4, 4, 3))


def test_leaky_relu():
    x = np.array([[-2.0, 0.0, 3.0]], dtype=np.float32)
    np.testing.assert_allclose(run(LeakyReLU(), x), [[-0.6, 0.0, 3.0]], rtol=1e-6)
    np.testing.assert_allclose(run(LeakyReLU(alpha=0.5), x), [[-1.0, 0.0, 3.0]], rtol=1e-6)


def test_layers_build_on_first_call_from_torch_numpy_and_symbolic():
    d = Dense(8)
    assert d(torch.zeros(2, 32)).shape == (2, 8)  # issue 20: used to be "'Dense' has no attribute 'weight'"
    assert d.built and d.input_shape == (None, 32) and d.get_weights()[0].shape == (32, 8)
    c = Conv2D(4, 3)
    y = c(np.zeros((1, 6, 6, 2)))  # numpy in (float64 -> floatX), torch out
    assert isinstance(y, torch.Tensor) and y.shape == (1, 4, 4, 4) and y.dtype == torch.float32
    e = Dense(3)
    out = e(Input(shape=(5,)))
    assert e.built and out.shape == (None, 3) and e.get_weights()[0].shape == (5, 3)


def test_custom_layer_gets_the_batch_dim_like_keras2():
    seen = []

    class MyLayer(layers.Layer):
        def __init__(self, output_dim, **kwargs):
            self.output_dim = output_dim  # before super().__init__, as Keras 2 examples do
            super().__init__(**kwargs)

        def build(self, input_shape):
            seen.append(input_shape)
            assert len(input_shape) == 2  # the Keras 2 custom-layer idiom
            self.kernel = self.add_weight(name="kernel", shape=(input_shape[1], self.output_dim),
                                          initializer="ones", trainable=True)
            super().build(input_shape)

        def call(self, x):
            return x @ self.kernel

        def compute_output_shape(self, input_shape):
            return (input_shape[0], self.output_dim)

    layer = MyLayer(2)
    y = layer(torch.ones(3, 4))
    assert seen == [(None, 4)] and torch.equal(y, torch.full((3, 2), 4.0))
    assert layer(Input(shape=(4,))).shape == (None, 2)
