"""Convolution family against hand-written numpy references, channels_last and channels_first:
Conv1D/2D/3D, Conv2DTranspose/Conv3DTranspose (TensorFlow output sizes), SeparableConv1D/2D,
DepthwiseConv2D, LocallyConnected1D/2D, plus kernel regularizers/constraints and the Keras weight table."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import torch

from arignote import backend, constraints, layers, regularizers
from arignote.layers import (
    Conv1D,
    Conv2D,
    Conv2DTranspose,
    Conv3D,
    Conv3DTranspose,
    DepthwiseConv2D,
    LocallyConnected1D,
    LocallyConnected2D,
    SeparableConv1D,
    SeparableConv2D,
)
from arignote.models import Sequential

RNG = np.random.default_rng(1)


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def run(layer, x: np.ndarray, training: bool = False) -> np.ndarray:
    if not layer.built:
        layer.build((None, *x.shape[1:]))
    layer.train(training)
    with torch.no_grad():
        y = layer(torch.tensor(x))
    assert tuple(layer.compute_output_shape((None, *x.shape[1:]))) == (None, *y.shape[1:])
    return y.numpy()


def randomize(layer) -> list[np.ndarray]:
    ws = [RNG.standard_normal(w.shape).astype(np.float32) for w in layer.get_weights()]
    layer.set_weights(ws)
    return ws


def np_conv(x, k, b, strides, dilation=None):
    """Valid N-d convolution, channels-last: x (N, *S, C), k (*K, C, F)."""
    rank = k.ndim - 2
    dilation = dilation or (1,) * rank
    span = [(k.shape[i] - 1) * dilation[i] + 1 for i in range(rank)]
    out_sizes = [(x.shape[1 + i] - span[i]) // strides[i] + 1 for i in range(rank)]
    y = np.zeros((x.shape[0], *out_sizes, k.shape[-1]), dtype=np.float64)
    for pos in itertools.product(*(range(n) for n in out_sizes)):
        for kpos in itertools.product(*(range(n) for n in k.shape[:rank])):
            src = tuple(pos[i] * strides[i] + kpos[i] * dilation[i] for i in range(rank))
            y[(slice(None), *pos)] += x[(slice(None), *src)] @ k[kpos]
    return y + b


def tf_same_pad(x, k_shape, strides, dilation=None):
    rank = len(k_shape)
    dilation = dilation or (1,) * rank
    pads = [(0, 0)]
    for i in range(rank):
        n, kk, s = x.shape[1 + i], (k_shape[i] - 1) * dilation[i] + 1, strides[i]
        total = max((-(-n // s) - 1) * s + kk - n, 0)
        pads.append((total // 2, total - total // 2))
    return np.pad(x, [*pads, (0, 0)])


@pytest.mark.parametrize(
    "cls,shape,kwargs",
    [
        (Conv1D, (9, 3), {"kernel_size": 3}),
        (Conv1D, (9, 3), {"kernel_size": 2, "strides": 2, "padding": "same"}),
        (Conv2D, (7, 6, 3), {"kernel_size": (3, 2), "strides": (2, 1), "padding": "same"}),
        (Conv2D, (7, 7, 2), {"kernel_size": 3, "dilation_rate": 2}),
        (Conv3D, (5, 4, 6, 2), {"kernel_size": (2, 3, 2), "padding": "same"}),
        (Conv3D, (5, 5, 5, 2), {"kernel_size": 2, "strides": 2}),
    ],
)
def test_conv_matches_numpy_channels_last(cls, shape, kwargs):
    x = RNG.standard_normal((2, *shape)).astype(np.float32)
    c = cls(4, **kwargs)
    c.build((None, *shape))
    k, b = randomize(c)
    assert k.shape == (*c.kernel_size, shape[-1], 4) and c.weight_names() == ["kernel", "bias"]
    y = run(c, x)
    xp = tf_same_pad(x, c.kernel_size, c.strides, c.dilation_rate) if c.padding == "same" else x
    np.testing.assert_allclose(y, np_conv(xp, k, b, c.strides, c.dilation_rate), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("cls,shape", [(Conv2D, (3, 7, 6)), (Conv3D, (2, 4, 5, 3))])
def test_conv_channels_first_equals_transposed_channels_last(cls, shape):
    x = RNG.standard_normal((2, *shape)).astype(np.float32)
    cf = cls(3, 3, padding="same", strides=2, data_format="channels_first")
    cl = cls(3, 3, padding="same", strides=2)
    cf.build((None, *shape))
    cl.build((None, *shape[1:], shape[0]))
    cl.set_weights(randomize(cf))  # the same Keras weights in both layouts
    last = (0, *range(2, x.ndim), 1)
    y_cf = run(cf, x)
    y_cl = run(cl, np.ascontiguousarray(x.transpose(last)))
    np.testing.assert_allclose(y_cf.transpose(last), y_cl, rtol=1e-5, atol=1e-5)
    assert y_cf.shape[1] == 3


def test_data_format_default_comes_from_backend_and_keras_json(tmp_path, monkeypatch):
    from arignote import config

    backend.set_image_data_format("channels_first")
    assert Conv2D(2, 3).data_format == "channels_first"
    assert Conv1D(2, 3).data_format == "channels_last"  # Keras 2: Conv1D defaults to channels_last
    config.reload()
    keras_json = {"image_data_format": "channels_first", "floatx": "float32"}
    (tmp_path / "keras.json").write_text(json.dumps(keras_json))
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    config.reload()
    assert backend.image_data_format() == "channels_first"
    assert config.source("image_data_format").endswith("keras.json")
    assert layers.MaxPooling2D().data_format == "channels_first"
    (tmp_path / "keras.json").write_text(json.dumps({"image_data_format": "nhwc"}))
    config.reload()
    with pytest.raises(config.ConfigError, match="image_data_format"):
        backend.image_data_format()


def test_conv1d_causal_and_bad_arguments():
    x = RNG.standard_normal((2, 6, 2)).astype(np.float32)
    c = Conv1D(3, 3, padding="causal", dilation_rate=2)
    c.build((None, 6, 2))
    k, b = randomize(c)
    xp = np.pad(x, ((0, 0), (4, 0), (0, 0)))
    np.testing.assert_allclose(run(c, x), np_conv(xp, k, b, (1,), (2,)), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="causal"):
        Conv1D(3, 3, padding="causal", data_format="channels_first")
    # strides with a dilation_rate: Keras 2.3.1 builds the layer (its Theano backend runs it)
    both = Conv1D(3, 3, strides=2, dilation_rate=2)
    both.build((None, 6, 2))
    k, b = randomize(both)
    np.testing.assert_allclose(run(both, x), np_conv(x, k, b, (2,), (2,)), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="kernel_size"):
        Conv3D(3, (3, 3))
    with pytest.raises(ValueError, match="channel dimension"):
        Conv2D(2, 3).build((None, None, None, None))


def np_conv_transpose(x, k, b, strides, out_sizes, pad_before):
    """TensorFlow conv2d_transpose: scatter each input pixel times the kernel, then crop/pad.
    x (N, *S, C), k (*K, F, C) (Keras transposed-kernel layout)."""
    rank = k.ndim - 2
    full = [(x.shape[1 + i] - 1) * strides[i] + k.shape[i] for i in range(rank)]
    y = np.zeros((x.shape[0], *[max(f, o + p) for f, o, p in zip(full, out_sizes, pad_before)], k.shape[-2]))
    for pos in itertools.product(*(range(n) for n in x.shape[1 : 1 + rank])):
        for kpos in itertools.product(*(range(n) for n in k.shape[:rank])):
            dst = tuple(pos[i] * strides[i] + kpos[i] for i in range(rank))
            y[(slice(None), *dst)] += x[(slice(None), *pos)] @ k[kpos].T
    index = (slice(None), *(slice(p, p + o) for p, o in zip(pad_before, out_sizes)))
    return y[index] + b


@pytest.mark.parametrize(
    "kwargs,expect",
    [
        ({"kernel_size": 3, "strides": 2, "padding": "same"}, ((10, 8), (0, 0))),  # TF pads (k-s)//2 = 0
        ({"kernel_size": 3, "strides": 2, "padding": "valid"}, ((11, 9), (0, 0))),
        ({"kernel_size": 4, "strides": 2, "padding": "same"}, ((10, 8), (1, 1))),
        ({"kernel_size": 2, "strides": 3, "padding": "valid"}, ((15, 12), (0, 0))),  # k < s: zero rows
        ({"kernel_size": 3, "strides": 2, "padding": "valid", "output_padding": 1}, ((12, 10), (0, 0))),
    ],
)
def test_conv2d_transpose_matches_tensorflow_semantics(kwargs, expect):
    x = RNG.standard_normal((2, 5, 4, 3)).astype(np.float32)
    c = Conv2DTranspose(2, **kwargs)
    c.build((None, 5, 4, 3))
    k, b = randomize(c)
    assert k.shape == (*c.kernel_size, 2, 3)  # Keras: (kh, kw, filters, in)
    y = run(c, x)
    sizes, pads = expect
    assert y.shape == (2, *sizes, 2)
    np.testing.assert_allclose(y, np_conv_transpose(x, k, b, c.strides, sizes, pads), rtol=1e-4, atol=1e-4)


def test_conv3d_transpose_and_channels_first():
    x = RNG.standard_normal((1, 3, 2, 3, 2)).astype(np.float32)
    c = Conv3DTranspose(2, 2, strides=2, padding="same")
    c.build((None, *x.shape[1:]))
    k, b = randomize(c)
    y = run(c, x)
    assert y.shape == (1, 6, 4, 6, 2)
    np.testing.assert_allclose(
        y, np_conv_transpose(x, k, b, (2, 2, 2), (6, 4, 6), (0, 0, 0)), rtol=1e-4, atol=1e-4
    )
    cf = Conv3DTranspose(2, 2, strides=2, padding="same", data_format="channels_first")
    xf = np.ascontiguousarray(x.transpose(0, 4, 1, 2, 3))
    cf.build((None, *xf.shape[1:]))
    cf.set_weights([k, b])
    np.testing.assert_allclose(run(cf, xf).transpose(0, 2, 3, 4, 1), y, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="output padding"):
        Conv2DTranspose(2, 3, strides=2, output_padding=2)


def np_depthwise(x, dk, strides=(1, 1)):
    """x (N, H, W, C), dk (kh, kw, C, M) -> (N, H', W', C*M), channel c*M+m."""
    n, c, m = x.shape[0], x.shape[-1], dk.shape[-1]
    outs = []
    for ch in range(c):
        for j in range(m):
            k = dk[:, :, ch : ch + 1, j : j + 1]
            outs.append(np_conv(x[..., ch : ch + 1], k, 0.0, strides))
    y = np.concatenate(outs, axis=-1)
    assert y.shape[0] == n and y.shape[-1] == c * m
    return y


def test_depthwise_conv2d_matches_numpy():
    x = RNG.standard_normal((2, 6, 5, 3)).astype(np.float32)
    d = DepthwiseConv2D((3, 2), depth_multiplier=2)
    d.build((None, *x.shape[1:]))
    dk, b = randomize(d)
    assert dk.shape == (3, 2, 3, 2) and b.shape == (6,) and d.weight_names() == ["depthwise_kernel", "bias"]
    np.testing.assert_allclose(run(d, x), np_depthwise(x, dk) + b, rtol=1e-4, atol=1e-4)
    assert d.get_config()["depth_multiplier"] == 2 and "filters" not in d.get_config()


def test_separable_conv2d_and_1d_match_depthwise_then_pointwise():
    x = RNG.standard_normal((2, 7, 6, 3)).astype(np.float32)
    s = SeparableConv2D(4, 3, strides=2, depth_multiplier=2, activation="relu")
    s.build((None, *x.shape[1:]))
    dk, pk, b = randomize(s)
    assert s.weight_names() == ["depthwise_kernel", "pointwise_kernel", "bias"] and pk.shape == (1, 1, 6, 4)
    ref = np.maximum(np_depthwise(x, dk, (2, 2)) @ pk[0, 0] + b, 0)
    np.testing.assert_allclose(run(s, x), ref, rtol=1e-4, atol=1e-4)
    xs = RNG.standard_normal((2, 8, 3)).astype(np.float32)
    s1 = SeparableConv1D(2, 3, padding="same")
    s1.build((None, *xs.shape[1:]))
    dk, pk, b = randomize(s1)
    xp = tf_same_pad(xs, (3,), (1,))
    dw = np.concatenate(
        [np_conv(xp[..., c : c + 1], dk[:, c : c + 1, :], 0.0, (1,)) for c in range(3)], axis=-1
    )
    np.testing.assert_allclose(run(s1, xs), dw @ pk[0] + b, rtol=1e-4, atol=1e-4)


def test_locally_connected_1d_and_2d_match_numpy():
    x = RNG.standard_normal((2, 7, 3)).astype(np.float32)
    lc = LocallyConnected1D(4, 3, strides=2)
    lc.build((None, *x.shape[1:]))
    k, b = randomize(lc)
    assert k.shape == (3, 9, 4) and b.shape == (3, 4)
    ref = np.stack([x[:, 2 * i : 2 * i + 3].reshape(2, -1) @ k[i] for i in range(3)], axis=1) + b
    np.testing.assert_allclose(run(lc, x), ref, rtol=1e-4, atol=1e-4)
    xi = RNG.standard_normal((2, 4, 5, 2)).astype(np.float32)
    for fmt in ("channels_last", "channels_first"):
        data = xi if fmt == "channels_last" else np.ascontiguousarray(xi.transpose(0, 3, 1, 2))
        l2 = LocallyConnected2D(3, (2, 3), data_format=fmt)
        l2.build((None, *data.shape[1:]))
        k, b = randomize(l2)
        assert k.shape == (3 * 3, 2 * 3 * 2, 3) and b.shape == (3, 3, 3)
        ref = np.zeros((2, 3, 3, 3))
        for r, c in itertools.product(range(3), range(3)):
            patch = xi[:, r : r + 2, c : c + 3, :]  # (kh, kw, C) flattening for channels_last
            if fmt == "channels_first":
                patch = patch.transpose(0, 3, 1, 2)  # (C, kh, kw)
            ref[:, r, c] = patch.reshape(2, -1) @ k[r * 3 + c]
        y = run(l2, data)
        y = y if fmt == "channels_last" else y.transpose(0, 2, 3, 1)
        if fmt == "channels_first":  # Keras 2's bias_add reshapes (rows, cols, filters) to (filters, ...)
            b = b.reshape(3, 3, 3).transpose(1, 2, 0)
        np.testing.assert_allclose(y, ref + b, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match='only "valid"'):
        LocallyConnected1D(2, 3, padding="same")


def test_regularizers_and_constraints_on_conv_weights():
    c = Conv2D(
        2,
        3,
        kernel_regularizer=regularizers.l2(0.1),
        bias_regularizer="l1",
        kernel_constraint=constraints.MaxNorm(0.5, axis=[0, 1, 2]),
        activity_regularizer=regularizers.l1(1.0),
    )
    c.build((None, 5, 5, 3))
    k, b = randomize(c)
    penalties = c.losses
    assert len(penalties) == 2
    assert penalties[0].item() == pytest.approx(0.1 * float((k.astype(np.float64) ** 2).sum()), rel=1e-5)
    assert penalties[1].item() == pytest.approx(0.01 * float(np.abs(b).sum()), rel=1e-5)
    y = c(torch.tensor(RNG.standard_normal((1, 5, 5, 3)).astype(np.float32)))
    assert len(c.losses) == 3 and c.losses[2].item() == pytest.approx(y.abs().sum().item(), rel=1e-5)
    c.apply_constraints()
    norms = np.sqrt((c.get_weights()[0] ** 2).sum(axis=(0, 1, 2)))  # per output filter, Keras axes
    assert np.all(norms <= 0.5 + 1e-5)
    cfg = c.get_config()
    assert cfg["kernel_regularizer"] == {"class_name": "L1L2", "config": {"l1": 0.0, "l2": 0.1}}
    assert cfg["kernel_constraint"]["class_name"] == "MaxNorm"
    clone = layers.deserialize(json.loads(json.dumps(layers.serialize(c))))
    assert clone.kernel_regularizer.l2 == pytest.approx(0.1) and clone.kernel_constraint.max_value == 0.5


def test_conv_kernel_property_is_the_keras_layout_view():
    c = Conv2D(5, (3, 2))
    c.build((None, 6, 6, 4))
    assert tuple(c.kernel.shape) == (3, 2, 4, 5) and tuple(c.weight.shape) == (5, 4, 3, 2)
    assert c.kernel.data_ptr() == c.weight.data_ptr()


@pytest.mark.parametrize("cls, args, kwargs, shape", [
    (SeparableConv2D, (2, (5, 5)), {}, (3, 3, 2)),
    (SeparableConv2D, (2, (3, 3)), {"dilation_rate": 2}, (4, 4, 2)),
    (DepthwiseConv2D, ((5, 5),), {}, (3, 3, 2)),
    (Conv3D, (2, (3, 3, 3)), {"dilation_rate": 2}, (4, 4, 4, 2)),
    (Conv2D, (2, (3, 3)), {"dilation_rate": 2, "data_format": "channels_first"}, (2, 4, 8)),
])
def test_a_valid_kernel_larger_than_its_input_is_a_clear_error(cls, args, kwargs, shape):
    """Keras 2.3.1 gives no output there; torch's RuntimeError at predict named no layer: the layer
    says so when the model is built, with the spans it needs."""
    with pytest.raises(ValueError, match=r"it spans \(5, 5.*is larger than the input .* padding='valid'"):
        Sequential([cls(*args, input_shape=shape, **kwargs)])
    same = Sequential([cls(*args, input_shape=shape, padding="same", **kwargs)])
    assert same.predict(np.ones((1, *shape), "float32")).shape[:-1] == (1, *shape[:-1])


@pytest.mark.parametrize("theano_same", [False, True])
def test_same_padding_with_strides_on_unknown_sizes_when_the_pads_do_not_depend_on_them(theano_same):
    """A 1x1 kernel with strides 2 and padding='same' (Xception's shortcuts) pads nothing whatever
    the size, so a model of unknown spatial size builds (Keras 2.3.1's applications_test builds
    Xception(include_top=False) so) and runs each size as a model of that known size; a 3x3 kernel
    with strides 2 pads by the size: still one error naming the layer and the fix."""
    import numpy as np

    from arignote.layers import Conv2D, Input
    from arignote.models import Model

    def model(shape):
        inp = Input(shape)
        conv = Conv2D(4, 1, strides=2, padding="same", kernel_initializer="ones", use_bias=False)
        out = conv(inp)
        if theano_same:
            conv.pad_as_theano()
        return Model(inp, out)

    open_model = model((None, None, 3))
    assert open_model.output_shape == (None, None, None, 4)
    for size in (5, 6, 7):
        x = np.arange(size * size * 3, dtype="float32").reshape(1, size, size, 3)
        known = model((size, size, 3))
        got = open_model.predict(x)
        assert got.shape == (1, -(-size // 2), -(-size // 2), 4)
        np.testing.assert_array_equal(got, known.predict(x))
        np.testing.assert_array_equal(got[0, :, :, 0], x[0, ::2, ::2, :].sum(-1))
    with pytest.raises(ValueError, match="conv2d.*needs known spatial sizes.*kernel 3, strides 2"):
        Conv2D(2, 3, strides=2, padding="same")(Input((None, None, 3)))
