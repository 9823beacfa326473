"""The custom-layer idioms of issue 29 against the numbers real Keras 2.3.1 (Theano) computed for them
(tests/fixtures/keras2/layer_idioms.json, made by scripts/make_keras2_layer_idioms_fixture.py)."""

import contextlib
import json
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from arignote import backend as K
from arignote import config
from arignote.layers import BatchNormalization, Dense, Input, Layer, add
from arignote.layers.merge import _Merge
from arignote.models import Model, Sequential
from arignote.optimizers import SGD

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "keras2" / "layer_idioms.json").read_text())


@pytest.fixture(autouse=True)
def _quiet():
    with config.override(print_active_device=False):
        yield


def arrays(values):
    return [np.asarray(v, "float32") for v in values]


class HalfAverage(_Merge):
    def _merge_function(self, inputs):
        return 0.5 * inputs[0] + 0.5 * inputs[1]


def gradient_penalty_loss(y_true, y_pred, averaged_samples, gradient_penalty_weight):
    gradients = K.gradients(K.sum(y_pred), averaged_samples)[0]
    gradients_sqr_sum = K.sum(K.square(gradients), axis=np.arange(1, K.ndim(gradients)))
    return K.mean(gradient_penalty_weight * K.square(1 - K.sqrt(gradients_sqr_sum)))


def _critic_graph(case):
    critic = Sequential([Dense(4, activation="tanh", input_shape=(3,)), Dense(1)])
    critic.set_weights(arrays(case["start"]))
    real, fake = Input((3,)), Input((3,))
    averaged = HalfAverage()([real, fake])
    return critic, averaged, Model([real, fake], [critic(real), critic(fake), critic(averaged)])


def test_wgan_gp_graph_matches_keras_and_its_penalty_finite_differences():
    case = FIXTURE["wgan_gp"]
    critic, averaged, model = _critic_graph(case)
    x = arrays(case["x"])
    for ours, theirs in zip(model.predict(x), case["outputs"]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    gp = partial(gradient_penalty_loss, averaged_samples=averaged, gradient_penalty_weight=10.0)
    gp.__name__ = "gradient_penalty"
    model.compile(SGD(lr=0.0), loss=[None, None, gp])
    penalty = model.train_on_batch(x, [np.zeros((4, 1), "float32")] * 3)[0]

    def critic_out(points):  # the critic on (4, 3) points, float64
        w = [a.astype("float64") for a in critic.get_weights()]
        return np.tanh(points @ w[0] + w[1]) @ w[2] + w[3]

    avg = (0.5 * x[0] + 0.5 * x[1]).astype("float64")
    eps, grads = 1e-6, np.zeros_like(avg)
    for j in range(3):
        step = np.zeros_like(avg)
        step[:, j] = eps
        grads[:, j] = (critic_out(avg + step) - critic_out(avg - step))[:, 0] / (2 * eps)
    expected = np.mean(10.0 * (1 - np.sqrt((grads ** 2).sum(axis=1))) ** 2)
    assert penalty == pytest.approx(expected, rel=1e-4)


class ClippedDense(Layer):
    def __init__(self, units, clip, **kwargs):
        super().__init__(**kwargs)
        self.units, self.clip = units, clip

    def build(self, input_shape):
        self.kernel = self.add_weight(name="kernel", shape=(input_shape[-1], self.units), initializer="ones")
        self.kernel = K.clip(self.kernel, -self.clip, self.clip)
        super().build(input_shape)

    def call(self, x):
        return K.dot(x, self.kernel)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.units)


def test_clip_expression_of_a_weight_matches_keras():
    case = FIXTURE["clip_expression"]
    x = Input((3,))
    layer = ClippedDense(2, 0.5)
    model = Model(x, layer(x))
    layer.set_weights([np.asarray(case["start"], "float32")])
    model.compile(SGD(lr=0.1), "mse")
    data, target = np.asarray(case["x"], "float32"), np.asarray(case["y"], "float32")
    np.testing.assert_allclose(model.predict(data), case["before"], rtol=1e-5)
    model.train_on_batch(data, target)
    np.testing.assert_allclose(layer.get_weights()[0], case["after_weights"][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.predict(data), case["after"], rtol=1e-5, atol=1e-6)


def test_batchnorm_training_true_in_predict_matches_keras():
    case = FIXTURE["batchnorm_training_true"]
    x = Input((3,))
    bn = BatchNormalization()
    model = Model(x, bn(x, training=True))
    out = model.predict(np.asarray(case["x"], "float32"))
    np.testing.assert_allclose(out, case["out"], rtol=1e-4, atol=1e-5)
    for ours, theirs in zip(bn.get_weights(), case["weights"]):
        np.testing.assert_array_equal(ours, theirs)


def test_class_weight_forms_match_keras():
    case = FIXTURE["class_weight"]
    forms = {"none": None, "list_of_numbers": [1.0, 5.0], "array": np.array([1.0, 5.0]),
             "list_of_dict": [{0: 1.0, 1: 5.0}], "dict": {0: 1.0, 1: 5.0}}
    for name, expected in case["cases"]:
        i = Input((3,))
        model = Model(i, Dense(2, activation="softmax", kernel_initializer="ones")(i))
        model.compile("sgd", "categorical_crossentropy")
        with pytest.warns(UserWarning) if name in ("list_of_numbers", "array") else contextlib.nullcontext():
            loss = model.train_on_batch(np.asarray(case["x"], "float32"), np.asarray(case["y"], "float32"),
                                        class_weight=forms[name])
        assert loss == pytest.approx(expected, rel=1e-5), name


def test_shared_activity_penalty_matches_keras():
    case = FIXTURE["shared_activity"]
    a, b = Input((2,)), Input((2,))
    dense = Dense(2, kernel_initializer="ones", use_bias=False, activity_regularizer=lambda t: K.sum(t))
    model = Model([a, b], add([dense(a), dense(b)]))
    model.compile("sgd", loss=None)
    assert model.evaluate(arrays(case["x"]), verbose=0) == pytest.approx(case["loss"])


def test_integer_input_matches_keras():
    case = FIXTURE["integer_input"]
    x = Input((3,))
    model = Model(x, Dense(1, kernel_initializer="ones", bias_initializer="ones")(x))
    np.testing.assert_allclose(model.predict(np.asarray(case["x"], "int64")), case["out"])
