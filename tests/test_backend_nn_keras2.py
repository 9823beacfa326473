"""arignote.backend's convolutions, pooling, padding, resizing and normalization against real Keras 2.3.1.

tests/fixtures/keras2/backend_nn.npz comes from scripts/make_keras2_backend_fixture.py (Keras 2.3.1,
Theano backend). arignote follows Keras's TensorFlow backend; where Theano's differs (true
convolution instead of cross-correlation, 'same' padding with even kernels or strides), the script
fed Keras's Theano operations so that they compute TensorFlow's result and says how in ``<case>/how``.
What Theano's Keras cannot give (TF-'same' pooling with even windows or strides, TF1 bilinear
resizing) is checked against hand-written numpy references below.
"""

import json
import math
import os

import numpy as np
import pytest
import torch

from arignote import backend as K
from arignote.layers import Input, Lambda
from arignote.models import Model

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "keras2", "backend_nn.npz")
DATA = np.load(FIXTURE)
CASES = sorted({k.split("/")[0] for k in DATA.files})


def case(name):
    arrays = {k.split("/")[1]: DATA[k] for k in DATA.files if k.startswith(name + "/")}
    return json.loads(str(arrays.pop("args"))), str(arrays.pop("how")), arrays


def t(a):
    return torch.from_numpy(np.asarray(a))


def check(got, want, atol=1e-5):
    got = got.detach().numpy() if isinstance(got, torch.Tensor) else np.asarray(got)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, atol=atol, rtol=1e-4)


def run(name):
    """arignote's result for a fixture case: the function is the case name's prefix."""
    args, _, a = case(name)
    fn = getattr(K, next(p for p in PREFIXES if name.startswith(p)))
    if name.startswith("separable"):
        return fn(t(a["x"]), t(a["depthwise_kernel"]), t(a["pointwise_kernel"]), **args)
    if name.startswith("depthwise"):
        return fn(t(a["x"]), t(a["depthwise_kernel"]), **args)
    if name.startswith("local"):
        return fn(t(a["inputs"]), t(a["kernel"]), **args)
    if name.startswith("conv"):
        return fn(t(a["x"]), t(a["kernel"]), **args)
    return fn(t(a["x"]), **args)


PREFIXES = (
    "conv2d_transpose",
    "conv3d_transpose",
    "conv1d",
    "conv2d",
    "conv3d",
    "separable_conv1d",
    "separable_conv2d",
    "depthwise_conv2d",
    "local_conv1d",
    "local_conv2d",
    "pool2d",
    "pool3d",
    "resize_images",
    "resize_volumes",
    "temporal_padding",
    "spatial_2d_padding",
    "spatial_3d_padding",
)
SIMPLE = [c for c in CASES if c.startswith(PREFIXES)]


def test_the_fixture_covers_what_the_brief_asks():
    assert len(SIMPLE) >= 30 and {
        "conv2d_same_even_strided_cf",
        "conv1d_causal_dilated",
        "conv2d_transpose_same_strided_cf",
        "depthwise_conv2d_same_even_cl",
        "local_conv2d_channels_first",
        "pool3d_avg_same_odd_cf",
    } <= set(SIMPLE)
    assert os.path.getsize(FIXTURE) < 200_000


@pytest.mark.parametrize("name", SIMPLE)
def test_matches_keras_2(name):
    check(run(name), case(name)[2]["y"])


def test_kernels_are_cross_correlated_as_tensorflow_not_flipped_as_theano():
    # an asymmetric kernel tells the two apart: [1, 0] picks x[i], its flip x[i + 1]
    x = torch.arange(5.0).reshape(1, 5, 1)
    assert K.conv1d(x, torch.tensor([[[1.0]], [[0.0]]])).flatten().tolist() == [0.0, 1.0, 2.0, 3.0]
    # 'same' with an even kernel: TensorFlow pads the odd one at the end
    assert K.conv1d(x, torch.tensor([[[0.0]], [[1.0]]]), padding="same").flatten().tolist() == [1, 2, 3, 4, 0]


def _tf_pool_numpy(x, size, strides, mode):
    """TensorFlow's 'same' pooling of a channels_last 2-D batch, by hand: windows start at
    i * stride - before, where before = total // 2 (the odd pad goes after); padding never counts."""
    n, h, w, c = x.shape
    out_hw, starts = [], []
    for length, k, s in zip((h, w), size, strides):
        o = math.ceil(length / s)
        total = max((o - 1) * s + k - length, 0)
        out_hw.append(o)
        starts.append([i * s - total // 2 for i in range(o)])
    y = np.zeros((n, out_hw[0], out_hw[1], c), "float32")
    for i, r0 in enumerate(starts[0]):
        for j, c0 in enumerate(starts[1]):
            win = x[:, max(r0, 0) : r0 + size[0], max(c0, 0) : c0 + size[1], :]
            y[:, i, j] = win.max(axis=(1, 2)) if mode == "max" else win.mean(axis=(1, 2))
    return y


@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("size,strides", [((2, 2), (2, 2)), ((2, 3), (1, 2)), ((4, 4), (3, 3))])
def test_pool2d_same_pads_as_tensorflow_where_theano_differs(mode, size, strides):
    x = np.random.RandomState(3).uniform(-1, 1, (2, 5, 7, 3)).astype("float32")
    check(
        K.pool2d(t(x), size, strides, "same", "channels_last", mode), _tf_pool_numpy(x, size, strides, mode)
    )
    cf = K.pool2d(t(x).permute(0, 3, 1, 2), size, strides, "same", "channels_first", mode)
    check(cf.permute(0, 2, 3, 1), _tf_pool_numpy(x, size, strides, mode))


def test_resize_images_bilinear_is_tensorflow_1s():
    # TF1 resize_bilinear(align_corners=False): source = destination / factor, the next row clamped
    x = np.array([[0.0, 1.0], [2.0, 5.0]], "float32").reshape(1, 2, 2, 1)
    rows = np.array([[0.0, 1.0], [1.0, 3.0], [2.0, 5.0], [2.0, 5.0]])  # rows at 0, 0.5, 1, 1.5 -> clamp
    want = np.stack([np.interp([0, 0.5, 1, 1.5], [0, 1], r) for r in rows]).reshape(1, 4, 4, 1)
    check(K.resize_images(t(x), 2, 2, "channels_last", interpolation="bilinear"), want)
    cf = K.resize_images(t(x).permute(0, 3, 1, 2), 2, 2, "channels_first", interpolation="bilinear")
    check(cf.permute(0, 2, 3, 1), want)


def test_normalization_against_keras_2():
    _, _, a = case("batch_normalization")
    check(
        K.batch_normalization(
            t(a["x"]), t(a["mean"]), t(a["var"]), t(a["beta"]), t(a["gamma"]), axis=-1, epsilon=1e-3
        ),
        a["y"],
    )
    _, _, a = case("normalize_batch_in_training")
    normed, mean, var = K.normalize_batch_in_training(
        t(a["x"]), t(a["gamma"]), t(a["beta"]), [0, 1], epsilon=1e-3
    )
    check(normed, a["y0"])
    check(mean, a["y1"].reshape(-1))
    # Theano's Keras returns 1 / stdinv**2 = var + epsilon; TensorFlow's (and arignote's) the variance
    check(var, a["y2"].reshape(-1) - 1e-3)
    _, _, a = case("moving_average_update")
    x = K.variable(a["x"])
    assert K.moving_average_update(x, t(a["value"]), 0.9) is x  # in place
    check(x, a["y"])


def test_batch_normalization_on_another_axis_and_without_beta_gamma():
    x = torch.randn(2, 3, 4, 4)
    mean, var, gamma = torch.randn(3), torch.rand(3) + 0.5, torch.randn(3)
    want = (x - mean.view(1, 3, 1, 1)) / torch.sqrt(var.view(1, 3, 1, 1) + 1e-3) * gamma.view(1, 3, 1, 1)
    check(K.batch_normalization(x, mean, var, None, gamma, axis=1), want.numpy())
    normed, m, v = K.normalize_batch_in_training(x, None, None, [0, 2, 3])
    assert m.shape == (3,) and v.shape == (3,)
    check(m, x.mean(dim=(0, 2, 3)).numpy())
    check(normed.mean(dim=(0, 2, 3)), np.zeros(3, "float32"))


def test_lambda_with_conv2d_runs_inside_a_functional_model():
    kernel = torch.from_numpy(np.random.RandomState(0).uniform(-1, 1, (3, 3, 2, 4)).astype("float32"))
    inp = Input((6, 6, 2))
    out = Lambda(
        lambda x: K.pool2d(
            K.conv2d(x, kernel, strides=(2, 2), padding="same"), (2, 2), strides=(1, 1), padding="same"
        )
    )(inp)
    assert out.shape == (None, 3, 3, 4)
    direct = K.conv2d(inp, kernel, padding="same")  # a backend call on a symbolic tensor records a node
    assert direct.shape == (None, 6, 6, 4)
    model = Model(inp, [out, direct])
    data = np.random.RandomState(1).uniform(-1, 1, (2, 6, 6, 2)).astype("float32")
    got, got_direct = model.predict(data)
    want = K.pool2d(K.conv2d(t(data), kernel, strides=(2, 2), padding="same"), (2, 2), padding="same")
    check(got, want.numpy())
    check(got_direct, K.conv2d(t(data), kernel, padding="same").numpy())


def test_bad_arguments_name_the_culprit():
    x = torch.zeros(1, 5, 5, 3)
    with pytest.raises(ValueError, match=r"K\.conv2d: x has 3 channels \(channels_last\) but the kernel"):
        K.conv2d(x, torch.zeros(3, 3, 2, 4))
    with pytest.raises(ValueError, match=r"K\.conv2d: padding must be one of 'valid', 'same'"):
        K.conv2d(x, torch.zeros(3, 3, 3, 4), padding="causal")
    with pytest.raises(ValueError, match=r"K\.pool2d: Invalid pool_mode: 'min'"):
        K.pool2d(x, (2, 2), pool_mode="min")
    with pytest.raises(
        ValueError,
        match=r"K\.conv2d_transpose: output_shape \(1, 12, 12, 4\) does not fit.*"
        r"one that fits is 10",
    ):
        K.conv2d_transpose(x, torch.zeros(3, 3, 4, 3), (1, 12, 12, 4), strides=(2, 2), padding="same")
    with pytest.raises(ValueError, match=r"K\.resize_images: interpolation"):
        K.resize_images(x, 2, 2, "channels_last", interpolation="bicubic")
    with pytest.raises(ValueError, match=r"K\.conv2d: data_format must be"):
        K.conv2d(x, torch.zeros(3, 3, 3, 4), data_format="NHWC")
    with pytest.raises(ValueError, match=r"K\.spatial_2d_padding: padding must be"):
        K.spatial_2d_padding(x, (1, 1))
