"""Keras 2.3.1 ``utils.layer_utils``: ``get_source_inputs`` on functional graph tensors, ``convert_kernel``,
``convert_all_kernels_in_model`` and ``convert_dense_weights_data_format``, against hand-made numpy
references (a Theano kernel is a true convolution: the converted kernel's correlation equals it)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from arignote import utils
from arignote.layers import (
    Conv1D,
    Conv2D,
    Conv2DTranspose,
    Conv3D,
    Conv3DTranspose,
    Dense,
    Flatten,
    Input,
    concatenate,
)
from arignote.models import Model, Sequential
from arignote.utils import conv_utils, layer_utils


def test_get_source_inputs_walks_to_the_inputs_once_each():
    a, b = Input((3,), name="a"), Input((3,), name="b")
    shared = Dense(3, name="shared")
    ya, yb = shared(a), shared(b)  # two nodes of one layer
    out = Dense(1)(concatenate([yb, ya, shared(yb)]))
    sources = utils.get_source_inputs(out)
    assert len(sources) == 2 and sources[0] is b and sources[1] is a
    assert utils.get_source_inputs(a) == [a]
    # the layer and node index Keras's recursion passes: node 1 of the shared layer is the call on b
    assert utils.get_source_inputs(yb, shared, 1)[0] is b
    assert utils.get_source_inputs(ya, shared, 0)[0] is a
    assert layer_utils.get_source_inputs is utils.get_source_inputs


def test_get_source_inputs_returns_anything_else_as_it_is():
    """Keras 2.3.1 returns a tensor without ``_keras_history`` itself, not in a list
    (tests/fixtures/keras2/metric_names.json: a numpy array comes back as the same object)."""
    keras = json.loads((Path(__file__).parent / "fixtures" / "keras2" / "metric_names.json").read_text())
    assert keras["get_source_inputs"]["numpy"] == {"type": "ndarray", "is_input": True}
    array, tensor = np.zeros(3), torch.zeros(2)
    assert utils.get_source_inputs(array) is array
    assert utils.get_source_inputs(tensor) is tensor
    assert utils.get_source_inputs(None) is None


def test_convert_kernel_flips_the_spatial_axes_only():
    k = np.arange(2 * 3 * 1 * 2).reshape(2, 3, 1, 2)
    want = np.array([[[[10, 11]], [[8, 9]], [[6, 7]]],
                     [[[4, 5]], [[2, 3]], [[0, 1]]]])
    got = layer_utils.convert_kernel(k)
    np.testing.assert_array_equal(got, want)
    assert got.base is None or not np.shares_memory(got, k)  # a copy
    np.testing.assert_array_equal(conv_utils.convert_kernel(got), k)  # its own inverse
    assert conv_utils.convert_kernel(np.arange(3).reshape(3, 1, 1)).ravel().tolist() == [2, 1, 0]
    with pytest.raises(ValueError, match="3-D to 5-D kernel"):
        conv_utils.convert_kernel(np.zeros((3, 3)))


def test_convert_all_kernels_in_model_makes_a_theano_convolution_a_correlation():
    torch.manual_seed(0)
    inp = Input((5, 6, 2))
    conv = Conv2D(3, (2, 3), name="conv")(inp)
    model = Model(inp, conv)
    theano_kernel = np.random.default_rng(0).normal(size=(2, 3, 2, 3)).astype("float32")
    bias = np.array([0.1, -0.2, 0.3], "float32")
    model.get_layer("conv").set_weights([theano_kernel, bias])
    utils.convert_all_kernels_in_model(model)
    x = np.random.default_rng(1).normal(size=(1, 5, 6, 2)).astype("float32")
    # Theano's conv2d: a true convolution, the kernel's spatial axes reversed
    want = np.zeros((1, 4, 4, 3), "float32")
    for i in range(4):
        for j in range(4):
            patch = x[0, i:i + 2, j:j + 3, :]
            want[0, i, j] = np.einsum("abc,abco->o", patch, theano_kernel[::-1, ::-1]) + bias
    np.testing.assert_allclose(model.predict(x), want, rtol=1e-5, atol=1e-5)


def test_convert_all_kernels_in_model_touches_the_keras_conv_classes_only():
    torch.manual_seed(0)
    model = Sequential([
        Conv3D(2, 2, input_shape=(4, 4, 4, 1), name="c3"),
        Conv3DTranspose(2, 2, name="c3t"),  # not in Keras 2.3.1's list: left alone
    ])
    inp1 = Input((6, 2))
    c1 = Conv1D(2, 3, name="c1")(inp1)
    inp2 = Input((4, 4, 1))
    c2t = Conv2DTranspose(2, (2, 3), name="c2t")(inp2)
    d = Dense(2, name="d")(Flatten()(c2t))
    other = Model([inp1, inp2], [c1, d])
    for m, flipped, kept in ((model, ["c3"], ["c3t"]), (other, ["c1", "c2t"], ["d"])):
        before = {layer.name: layer.get_weights() for layer in m.layers}
        utils.convert_all_kernels_in_model(m)
        for name in flipped:
            w = m.get_layer(name).get_weights()
            k = before[name][0]
            np.testing.assert_array_equal(w[0], k[(slice(None, None, -1),) * (k.ndim - 2)])
            np.testing.assert_array_equal(w[1], before[name][1])  # the bias stays
        for name in kept:
            for w, b in zip(m.get_layer(name).get_weights(), before[name]):
                np.testing.assert_array_equal(w, b)
    with pytest.raises(ValueError, match="model with layers"):
        utils.convert_all_kernels_in_model(object())


def _conv_flatten_dense(data_format, shape):
    torch.manual_seed(0)
    return Sequential([Conv2D(4, 3, data_format=data_format, input_shape=shape, name="conv"),
                       Flatten(), Dense(3, name="dense")])


def test_convert_dense_weights_data_format_between_channels_last_and_first():
    rng = np.random.default_rng(0)
    x_last = rng.normal(size=(5, 6, 7, 2)).astype("float32")  # (N, H, W, C)
    x_first = np.ascontiguousarray(x_last.transpose(0, 3, 1, 2))  # (N, C, H, W)
    last = _conv_flatten_dense("channels_last", (6, 7, 2))
    first = _conv_flatten_dense("channels_first", (2, 6, 7))
    for name in ("conv", "dense"):
        first.get_layer(name).set_weights(last.get_layer(name).get_weights())
    want = last.predict(x_last)
    assert not np.allclose(first.predict(x_first), want)  # the Dense rows are in the wrong order
    # the feature map before Flatten: 4 channels of 4 x 5, given in the target (channels_first) order
    layer_utils.convert_dense_weights_data_format(first.get_layer("dense"), (4, 4, 5), "channels_first")
    np.testing.assert_allclose(first.predict(x_first), want, rtol=1e-5, atol=1e-5)
    # and back: a channels_first model's Dense for a channels_last one
    back = _conv_flatten_dense("channels_last", (6, 7, 2))
    for name in ("conv", "dense"):
        back.get_layer(name).set_weights(first.get_layer(name).get_weights())
    layer_utils.convert_dense_weights_data_format(back.get_layer("dense"), (4, 5, 4), "channels_last")
    np.testing.assert_array_equal(back.get_layer("dense").get_weights()[0],
                                  last.get_layer("dense").get_weights()[0])
    np.testing.assert_array_equal(back.get_layer("dense").get_weights()[1],
                                  last.get_layer("dense").get_weights()[1])


def test_convert_dense_weights_data_format_matches_keras_loop_and_checks_its_arguments():
    """Keras 2.3.1's per-column reshape/transpose loop, written out in numpy, on a hand kernel."""
    kernel = np.arange(24 * 2, dtype="float32").reshape(24, 2)
    want = kernel.copy()
    for i in range(2):
        want[:, i] = kernel[:, i].reshape(3, 4, 2).transpose(2, 0, 1).reshape(24)  # (h, w, c) -> (c, h, w)
    dense = Dense(2, input_shape=(24,))
    Sequential([dense])
    dense.set_weights([kernel, np.zeros(2, "float32")])
    layer_utils.convert_dense_weights_data_format(dense, (2, 3, 4))
    np.testing.assert_array_equal(dense.get_weights()[0], want)
    with pytest.raises(ValueError, match="target_data_format"):
        layer_utils.convert_dense_weights_data_format(dense, (2, 3, 4), "channels_middle")
    with pytest.raises(ValueError, match=r"\(2, 3, 5\).*24 inputs"):
        layer_utils.convert_dense_weights_data_format(dense, (2, 3, 5))
