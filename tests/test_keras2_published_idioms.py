"""Idioms of published Keras 2 layer packages (graph convolution, positional encodings), written the way
that code writes them with ``keras`` renamed to ``arignote``: each ran on Keras 2.3.1 and failed on
arignote before issue 30 (scripts/run_published_keras2.py runs the packages' own tests)."""

import numpy as np
import pytest

from arignote import backend as K
from arignote import config
from arignote.layers import Dense, Input, Layer
from arignote.models import Model, Sequential


@pytest.fixture(autouse=True)
def _quiet():
    with config.override(print_active_device=False):
        yield


class NeighbourMax(Layer):
    """Pools features over a graph's edges; ``compute_output_shape`` hands back its input shapes
    unchanged (a list of two) while ``call`` returns one tensor: Keras 2 keeps call's structure."""

    def compute_output_shape(self, input_shape):
        return input_shape

    def call(self, inputs, **kwargs):
        features, edges = inputs
        edges = K.cast(edges, K.floatx())
        # out[b, i, f] = max over j with edges[b, i, j] of features[b, j, f]
        spread = K.expand_dims(edges, -1) * K.expand_dims(features, 1) - 1e9 * (1 - K.expand_dims(edges, -1))
        return K.max(spread, axis=2)


def test_declared_input_shapes_list_with_one_call_output_gives_one_output():
    features = Input(shape=(None, 3))
    edges = Input(shape=(None, None), dtype="int32")
    pooled = NeighbourMax()([features, edges])
    assert not isinstance(pooled, list)
    assert tuple(pooled.shape) == (None, None, 3)  # the first declared shape, as Keras 2 gives it
    model = Model([features, edges], pooled)
    model.compile("adam", "mse")
    x = np.array([[[0, 4, 8], [1, 5, 9], [2, 6, 1]]], dtype="float32")
    e = np.array([[[1, 1, 0], [0, 1, 0], [1, 0, 1]]], dtype="int32")
    out = model.predict([x, e])
    np.testing.assert_allclose(out, [[[1, 5, 9], [1, 5, 9], [2, 6, 8]]])
    loss = model.train_on_batch([x, e], np.zeros_like(x))
    assert np.isfinite(loss)


class TwoHeads(Layer):
    """A declared pair of shapes that call does return: still two outputs."""

    def compute_output_shape(self, input_shape):
        return [input_shape, input_shape[:-1] + (1,)]

    def call(self, inputs):
        return [inputs * 2, K.sum(inputs, axis=-1, keepdims=True)]


def test_declared_shapes_matching_call_keep_two_outputs():
    x = Input(shape=(4,))
    doubled, total = TwoHeads()(x)
    assert tuple(doubled.shape) == (None, 4) and tuple(total.shape) == (None, 1)
    model = Model(x, [doubled, total])
    a, b = model.predict(np.ones((2, 4), "float32"))
    np.testing.assert_allclose(a, 2 * np.ones((2, 4)))
    np.testing.assert_allclose(b, 4 * np.ones((2, 1)))


class SinusoidPositions(Layer):
    """A weightless positional encoding (keras-pos-embd's expand mode): positions -> sin/cos features."""

    def __init__(self, output_dim, **kwargs):
        self.output_dim = output_dim
        super().__init__(**kwargs)

    def compute_output_shape(self, input_shape):
        return input_shape + (self.output_dim,)

    def call(self, inputs):
        evens = K.cast(K.arange(0, self.output_dim // 2) * 2, K.floatx())
        rates = 1.0 / K.pow(10000.0, evens / self.output_dim)
        angles = K.dot(K.expand_dims(inputs, -1), K.expand_dims(rates, 0))
        return K.concatenate([K.sin(angles), K.cos(angles)], axis=-1)


def test_summary_of_a_compiled_model_without_weights(capsys):
    model = Sequential()
    model.add(SinusoidPositions(4, input_shape=(3,)))
    model.compile("adam", "mse")
    model.summary()
    printed = capsys.readouterr().out
    assert "Total params: 0" in printed
    assert "Memory plan" in printed
    out = model.predict(np.array([[0.0, 1.0, 2.0]], "float32"))
    angles = np.array([[0.0, 0.0], [1.0, 0.01], [2.0, 0.02]])  # positions times rates 1 and 1/100
    np.testing.assert_allclose(out[0, :, :2], np.sin(angles), rtol=1e-5)
    np.testing.assert_allclose(out[0, :, 2:], np.cos(angles), rtol=1e-5)


def test_dense_after_a_declared_pair_uses_the_first_shape():
    features = Input(shape=(None, 3))
    edges = Input(shape=(None, None), dtype="int32")
    dense = Dense(2)(NeighbourMax()([features, edges]))
    assert tuple(dense.shape) == (None, None, 2)


def test_cast_to_floatx_of_a_scalar_multiplies_a_tensor():
    epsilon = K.cast_to_floatx(0.0025)  # keras-contrib's SineReLU keeps this and multiplies call's input
    assert epsilon.dtype == np.float32
    out = epsilon * K.variable(np.array([2.0, 4.0]))
    np.testing.assert_allclose(K.eval(out), [0.005, 0.01], rtol=1e-6)
    assert K.cast_to_floatx([1.0, 2.0]).shape == (2,)


def test_relu_with_weights_as_alpha_and_max_value():
    # keras-contrib's SReLU: K.relu(x - t_left, a_left, t_right - t_left) with per-unit weights
    x = K.variable(np.array([[-2.0, 0.5, 3.0]]))
    alpha = K.variable(np.array([0.5, 0.5, 0.5]))
    ceiling = K.variable(np.array([1.0, 1.0, 2.0]))
    np.testing.assert_allclose(K.eval(K.relu(x, alpha, ceiling)), [[-1.0, 0.5, 2.0]])
    np.testing.assert_allclose(K.eval(K.relu(x, alpha)), [[-1.0, 0.5, 3.0]])


class Heads(Layer):
    """keras-multi-head's MultiHead: the wrapped layer is stored before super().__init__()."""

    def __init__(self, layer, **kwargs):
        self.layer = layer
        self.copies = []
        super().__init__(**kwargs)

    def build(self, input_shape):
        self.layer.build(input_shape)
        super().build(input_shape)

    def compute_output_shape(self, input_shape):
        return self.layer.compute_output_shape(input_shape)

    def call(self, inputs):
        return self.layer.call(inputs)


def test_sublayer_assigned_before_super_init_is_tracked():
    heads = Heads(Dense(2, kernel_initializer="ones", bias_initializer="zeros"))
    x = Input(shape=(3,))
    model = Model(x, heads(x))
    assert len(heads.trainable_weights) == 2  # the wrapped Dense's kernel and bias
    np.testing.assert_allclose(model.predict(np.array([[1.0, 2.0, 3.0]], "float32")), [[6.0, 6.0]])
