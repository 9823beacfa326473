"""Idioms of published Keras 2 code with custom layers (GANs, layer packages), written as that code
writes them (``keras`` renamed to ``arignote``): each ran on Keras 2.3.1 and failed on arignote
before issue 29."""

from functools import partial

import numpy as np
import pytest
import torch

from arignote import backend as K
from arignote import config
from arignote.layers import (
    AlphaDropout,
    BatchNormalization,
    Conv2D,
    Dense,
    Dropout,
    Flatten,
    GaussianDropout,
    GaussianNoise,
    Input,
    Layer,
    SpatialDropout1D,
    SpatialDropout2D,
    SpatialDropout3D,
)
from arignote.layers.merge import _Merge
from arignote.models import Model, Sequential


@pytest.fixture(autouse=True)
def _quiet():
    with config.override(print_active_device=False):
        yield


class Scale(Layer):
    """keras-contrib / keras-layer-normalization style: placeholders in __init__, weights in build."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.gamma = None
        self.beta = None

    def build(self, input_shape):
        self.gamma = self.add_weight(name="gamma", shape=(input_shape[-1],), initializer="ones")
        self.beta = self.add_weight(name="beta", shape=(input_shape[-1],), initializer="zeros")
        super().build(input_shape)

    def call(self, x):
        return x * self.gamma + self.beta


def test_placeholder_none_then_add_weight_in_build():
    x = Input((3,))
    layer = Scale(name="scale")
    model = Model(x, layer(x))
    assert [w.shape for w in layer.weights] == [(3,), (3,)]
    assert layer.gamma is layer.weights[0] and layer.beta is layer.weights[1]
    layer.set_weights([np.array([1.0, 2.0, 3.0], "float32"), np.ones(3, "float32")])
    np.testing.assert_allclose(model.predict(np.ones((2, 3), "float32")), [[2, 3, 4]] * 2)


class TwoW(Layer):
    def build(self, input_shape):
        self.w1 = self.add_weight(name="w", shape=(1,), initializer="ones")
        self.w2 = self.add_weight(name="w", shape=(1,), initializer="ones")
        super().build(input_shape)

    def call(self, x):
        return x * self.w1 + self.w2


def test_two_weights_with_the_same_name_are_two_weights():
    layer = TwoW()
    layer.build((None, 2))
    assert len(layer.trainable_weights) == 2 and layer.w1 is not layer.w2
    layer.set_weights([np.array([2.0], "float32"), np.array([5.0], "float32")])
    assert layer(torch.ones(1, 2)).tolist() == [[7.0, 7.0]]


@pytest.mark.parametrize("make, shape", [
    (lambda: Dropout(0.5), (8, 50)),
    (lambda: SpatialDropout1D(0.5), (8, 5, 10)),
    (lambda: SpatialDropout2D(0.5), (8, 4, 4, 6)),
    (lambda: SpatialDropout3D(0.5), (8, 3, 3, 3, 6)),
    (lambda: GaussianNoise(1.0), (8, 50)),
    (lambda: GaussianDropout(0.5), (8, 50)),
    (lambda: AlphaDropout(0.5), (8, 50)),
])
def test_training_true_is_active_in_predict(make, shape):
    """Monte Carlo dropout: `Dropout(0.5)(x, training=True)` drops in predict too; training=False never."""
    x = Input(shape[1:])
    on = Model(x, make()(x, training=True))
    data = np.ones(shape, "float32")
    assert not np.allclose(on.predict(data), data)
    x = Input(shape[1:])
    off = Model(x, make()(x, training=False))
    off.compile("sgd", "mse")
    off.module.train()
    np.testing.assert_array_equal(off.module(torch.ones(shape)).detach().numpy(), data)


def test_batchnorm_training_true_normalizes_with_the_batch_in_predict():
    x = Input((2,))
    bn = BatchNormalization()
    model = Model(x, bn(x, training=True))
    data = np.array([[1.0, 10.0], [3.0, 30.0]], "float32")
    out = model.predict(data)
    np.testing.assert_allclose(out.mean(axis=0), [0, 0], atol=1e-5)
    assert abs(out[0, 0]) > 0.9  # batch statistics, not the moving ones (0 and 1)
    np.testing.assert_array_equal(bn.get_weights()[2], [0, 0])  # predict moved no average
    x = Input((2,))
    frozen_stats = Model(x, BatchNormalization()(x, training=False))
    frozen_stats.module.train()
    out = frozen_stats.module(torch.as_tensor(data)).detach().numpy()
    np.testing.assert_allclose(out, data / np.sqrt(1 + 1e-3), rtol=1e-5)


def test_sequential_build_without_argument():
    model = Sequential()
    model.add(Dense(4, input_shape=(3,)))
    model.add(Dense(2))
    model.build()
    assert model.built and model.output_shape == (None, 2)
    lazy = Sequential([Dense(2)])
    lazy.build((None, 5))
    assert lazy.layers[0].kernel.shape == (5, 2)
    with pytest.raises(ValueError, match="input_shape"):
        Sequential([Dense(2)]).build()


def test_custom_cell_imports_generate_dropout_mask():
    from arignote.layers.recurrent import _generate_dropout_mask

    ones = K.ones_like(torch.zeros(64, 10))
    masks = _generate_dropout_mask(ones, 0.5, training=True, count=4)
    assert len(masks) == 4 and set(torch.unique(masks[0]).tolist()) == {0.0, 2.0}
    assert _generate_dropout_mask(ones, 0.5, training=False) is ones


def test_integer_variable_is_a_counter():
    iterations = K.variable(0, dtype="int64", name="iterations")
    K.update_add(iterations, 1)
    assert K.get_value(iterations) == 1 and iterations.dtype == torch.int64 and not iterations.requires_grad
    assert K.variable(0.5).requires_grad


def test_integer_arrays_are_cast_to_the_float_input():
    x = Input((4, 4, 1))
    model = Model(x, Flatten()(Conv2D(2, 3, kernel_initializer="ones")(x)))
    ints = np.ones((2, 4, 4, 1), dtype="int64")
    np.testing.assert_allclose(model.predict(ints), np.full((2, 8), 9.0))
    seq = Sequential([Conv2D(2, 3, input_shape=(4, 4, 1), kernel_initializer="ones"), Flatten()])
    np.testing.assert_allclose(seq.predict(ints), np.full((2, 8), 9.0))
    seq.compile("sgd", "mse")
    seq.fit(ints, np.zeros((2, 8)), epochs=1, verbose=0)


class RandomWeightedAverage(_Merge):
    """The WGAN-GP idiom (keras-contrib examples/improved_wgan.py and its many copies)."""

    def _merge_function(self, inputs):
        weights = K.random_uniform((4, 1))
        return (weights * inputs[0]) + ((1 - weights) * inputs[1])


def gradient_penalty_loss(y_true, y_pred, averaged_samples, gradient_penalty_weight):
    gradients = K.gradients(y_pred, averaged_samples)[0]
    gradients_sqr = K.square(gradients)
    gradients_sqr_sum = K.sum(gradients_sqr, axis=np.arange(1, len(gradients_sqr.shape)))
    gradient_l2_norm = K.sqrt(gradients_sqr_sum)
    gradient_penalty = gradient_penalty_weight * K.square(1 - gradient_l2_norm)
    return K.mean(gradient_penalty)


def wasserstein_loss(y_true, y_pred):
    return K.mean(y_true * y_pred)


def test_merge_subclass_with_merge_function():
    a, b = Input((3,)), Input((3,))
    model = Model([a, b], RandomWeightedAverage()([a, b]))
    out = model.predict([np.ones((4, 3), "float32"), np.zeros((4, 3), "float32")])
    assert ((out >= 0) & (out <= 1)).all() and np.allclose(out, out[:, :1])


def test_wgan_gp_gradient_penalty_trains():
    """K.gradients(y_pred, averaged_samples) inside the loss: the symbolic tensor the partial holds is
    the value of this forward pass, and the penalty is differentiable (it moves the critic)."""
    np.random.seed(0)  # the data, the critic's weights and the interpolation weights: a fixed run
    torch.manual_seed(0)
    critic = Sequential([Dense(8, activation="tanh", input_shape=(3,)), Dense(1)])
    real, fake = Input((3,)), Input((3,))
    averaged = RandomWeightedAverage()([real, fake])
    gp = partial(gradient_penalty_loss, averaged_samples=averaged, gradient_penalty_weight=10)
    gp.__name__ = "gradient_penalty"
    model = Model([real, fake], [critic(real), critic(fake), critic(averaged)])
    model.compile("adam", loss=[wasserstein_loss, wasserstein_loss, gp])
    data = [np.random.rand(4, 3).astype("float32"), np.random.rand(4, 3).astype("float32")]
    y = [np.ones((4, 1), "float32"), -np.ones((4, 1), "float32"), np.zeros((4, 1), "float32")]
    first = model.train_on_batch(data, y)
    assert len(first) == 4 and first[3] > 0
    # only the penalty trains: it must fall
    model.compile("adam", loss=[None, None, gp])
    # the interpolation weights are drawn anew each step: compare the mean of the first and last 5 steps
    losses = [model.train_on_batch(data, y)[0] for _ in range(40)]
    assert np.mean(losses[-5:]) < np.mean(losses[:5]), losses


def test_loss_taking_k_gradients_evaluates():
    """evaluate / test_on_batch of a model whose loss takes K.gradients with respect to a graph
    tensor (a gradient penalty on the input): the loss is the one computed by hand with torch's
    autograd, and evaluation changes no weight (it raised "autograd did not track" before)."""
    torch.manual_seed(0)
    inp = Input((4,))
    model = Model(inp, Dense(1)(inp))

    def penalised(y_true, y_pred):
        g = K.gradients(y_pred, [inp])[0]
        return K.mean(K.square(y_pred - y_true)) + K.mean(K.square(K.sqrt(K.sum(K.square(g), axis=1)) - 1))

    model.compile("sgd", penalised)
    rng = np.random.RandomState(0)
    x, y = rng.rand(6, 4).astype("float32"), rng.rand(6, 1).astype("float32")
    kernel, bias = model.get_weights()
    xt = torch.tensor(x, requires_grad=True)
    pred = xt @ torch.tensor(kernel) + torch.tensor(bias)
    (g,) = torch.autograd.grad(pred.sum(), xt)
    penalty = ((g.square().sum(1).sqrt() - 1) ** 2).mean()
    expected = float(((pred - torch.tensor(y)) ** 2).mean().detach() + penalty)
    np.testing.assert_allclose(model.evaluate(x, y, verbose=0), expected, rtol=1e-5)
    np.testing.assert_allclose(model.test_on_batch(x, y), expected, rtol=1e-5)
    np.testing.assert_array_equal(model.get_weights()[0], kernel)  # evaluation trained nothing
    assert all(p.grad is None for p in model.module.parameters())  # and left no gradient behind


class ClippedDense(Layer):
    """A weight constrained by an expression written in build (WGAN critics, binarized nets)."""

    def __init__(self, units, clip, **kwargs):
        super().__init__(**kwargs)
        self.units, self.clip = units, clip

    def build(self, input_shape):
        self.kernel = self.add_weight(name="kernel", shape=(input_shape[-1], self.units),
                                      initializer="ones")
        self.kernel = K.clip(self.kernel, -self.clip, self.clip)
        self.kernel_t = K.transpose(self.kernel) * 2  # an expression of an expression
        super().build(input_shape)

    def call(self, x):
        return K.dot(x, self.kernel)


def test_build_expression_of_a_weight_is_evaluated_at_every_call():
    x = Input((3,))
    layer = ClippedDense(2, 0.5)
    model = Model(x, layer(x))
    assert len(layer.trainable_weights) == 1 and layer.trainable_weights[0].shape == (3, 2)
    np.testing.assert_allclose(model.predict(np.ones((1, 3), "float32")), [[1.5, 1.5]])
    layer.set_weights([np.full((3, 2), 0.1, "float32")])  # the expression follows the weight
    np.testing.assert_allclose(model.predict(np.ones((1, 3), "float32")), [[0.3, 0.3]], rtol=1e-6)
    np.testing.assert_allclose(K.get_value(layer.kernel_t), np.full((2, 3), 0.2), rtol=1e-6)
    model.compile("sgd", "mse")
    before = layer.get_weights()[0].copy()
    for _ in range(2):  # differentiable, twice (a tensor computed once in build would fail the 2nd time)
        model.train_on_batch(np.ones((4, 3), "float32"), np.zeros((4, 2), "float32"))
    assert (layer.get_weights()[0] < before).all()


class Positional(Layer):
    """A constant made in build stays a constant (not computed again at every call)."""

    def build(self, input_shape):
        self.table = K.random_normal((input_shape[-1],))
        super().build(input_shape)

    def call(self, x):
        return x + self.table


def test_build_constant_is_computed_once():
    layer = Positional()
    first = layer(torch.zeros(1, 4))
    assert torch.equal(first, layer(torch.zeros(1, 4)))


def _classifier():
    x = Input((3,))
    model = Model(x, Dense(2, activation="softmax", kernel_initializer="ones", name="out")(x))
    model.compile("sgd", "categorical_crossentropy")
    return model


def test_class_weight_list_on_one_output_model():
    """Keras 2.3.1 (measured in /work/k2venv): a list of one dict weighs by that dict; a list or array
    of numbers (sklearn's compute_class_weight passed as is) weighs nothing."""
    x = np.random.RandomState(0).rand(8, 3).astype("float32")
    y = np.eye(2)[[0, 1, 0, 1, 1, 1, 0, 1]]
    plain = _classifier().train_on_batch(x, y)
    by_dict = _classifier().train_on_batch(x, y, class_weight={0: 1.0, 1: 5.0})
    assert _classifier().train_on_batch(x, y, class_weight=[{0: 1.0, 1: 5.0}]) == pytest.approx(by_dict)
    assert by_dict == pytest.approx(2.4260151, rel=1e-5)  # Keras 2.3.1's number for this batch
    for numbers in ([1.0, 5.0], np.array([1.0, 5.0])):
        with pytest.warns(UserWarning, match=r"dict\(enumerate\(weights\)\)"):
            model = _classifier()
            model.fit(x, y, class_weight=numbers, batch_size=8, verbose=0)
        with pytest.warns(UserWarning):
            assert _classifier().train_on_batch(x, y, class_weight=numbers) == pytest.approx(plain)


class WithSubnetwork(Layer):
    """A custom layer holding a Dense, a Sequential and a functional model (Keras 2 tracks all three)."""

    def __init__(self):
        super().__init__()
        self.dense = Dense(3)
        self.sequential = Sequential([Dense(5), Dense(1)], name="seq")
        inputs = Input((1,))
        self.functional = Model(inputs, Dense(1)(inputs), name="func")
        self.w1 = K.variable(0.0)

    def build(self, input_shape):
        self.w3 = self.add_weight("w3", shape=(), trainable=False, initializer="zeros")
        super().build(input_shape)

    def call(self, inputs):
        return self.functional(self.sequential(self.dense(inputs))) + self.w1 + self.w3


def test_layer_holding_models_owns_their_weights_and_trains_them():
    layer = WithSubnetwork()
    assert [type(s).__name__ for s in layer._layers] == ["Dense", "Sequential", "Model"]
    x = Input((2,))
    model = Model(x, layer(x))
    assert len(layer.weights) == 2 + 4 + 2 + 2
    assert layer._trainable_weights == [layer.w1] and layer._non_trainable_weights == [layer.w3]
    model.compile("sgd", "mse")
    before = layer.functional.get_weights()[0].copy()
    model.train_on_batch(np.ones((4, 2), "float32"), np.full((4, 1), 5.0, "float32"))
    assert not np.allclose(layer.functional.get_weights()[0], before)  # the held model trained
