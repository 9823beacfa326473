"""Augmented assignments in user code behave as on Keras 2's immutable tensors (layers/value_semantics.py):
``a *= b`` in a custom layer's ``call`` or a Lambda's function rebinds ``a`` instead of writing into a
tensor autograd saved (the Kaggle ``Attention`` layer's ``a = K.exp(eij); a *= mask``) or into the
caller's batch."""

from __future__ import annotations

import numpy as np
import torch

from arignote import backend as K
from arignote.layers import Dense, Input, Lambda
from arignote.layers.base import Layer
from arignote.layers.value_semantics import is_user_layer, keras_value_semantics
from arignote.models import Model


class MaskedSoftPool(Layer):
    """The Kaggle attention's normalization on its own: exp, *= mask, /= sum, weighted sum."""

    def build(self, input_shape):
        self.w = self.add_weight(name="w", shape=(input_shape[-1],), initializer="ones")
        super().build(input_shape)

    def call(self, x):
        a = K.exp(K.sum(x * self.w, axis=-1))
        a *= K.cast(K.greater(K.sum(K.abs(x), axis=-1), 0), K.floatx())
        a /= K.sum(a, axis=1, keepdims=True) + K.epsilon()
        return K.sum(x * K.expand_dims(a), axis=1)


class Doubler(Layer):
    def call(self, x):
        x *= 2.0
        x += 1.0
        return x


def test_custom_layer_augmented_assignment_trains_and_matches_torch():
    inp = Input((3, 2))
    pool = MaskedSoftPool()
    out = Dense(1)(pool(inp))
    model = Model(inp, out)
    model.compile("sgd", "mse")
    x = np.random.RandomState(0).randn(4, 3, 2).astype("float32")
    x[:, 0] = 0  # a masked time step
    y = np.ones((4, 1), "float32")
    model.train_on_batch(x, y)  # raised "modified by an inplace operation" before
    # forward value against a plain-torch reference written without augmented assignments
    w = torch.tensor(pool.get_weights()[0])
    xt = torch.tensor(x)
    a = torch.exp((xt * w).sum(-1)) * ((xt.abs().sum(-1) > 0).float())
    a = a / (a.sum(1, keepdim=True) + 1e-7)
    ref = (xt * a[..., None]).sum(1)
    got = Model(inp, pool.output).predict(x)
    np.testing.assert_allclose(got, ref.numpy(), rtol=1e-5, atol=1e-7)


def test_custom_layer_does_not_write_into_its_input():
    inp = Input((2,))
    model = Model(inp, Doubler()(inp))
    x = np.array([[1.0, 2.0]], "float32")
    xt = torch.tensor(x)
    layer = model.layers[-1]
    out = layer(xt)
    np.testing.assert_array_equal(xt.numpy(), x)  # Keras 2: x *= 2 made a new tensor
    np.testing.assert_array_equal(out.numpy(), [[3.0, 5.0]])
    np.testing.assert_array_equal(model.predict(x), [[3.0, 5.0]])


def test_lambda_augmented_assignment_rebinds():
    def scale(t):
        t *= 3.0
        return t

    inp = Input((2,))
    lam = Lambda(scale)
    model = Model(inp, Dense(1, kernel_initializer="ones")(lam(inp)))
    model.compile("sgd", "mse")
    x = np.ones((2, 2), "float32")
    model.train_on_batch(x, np.zeros((2, 1), "float32"))
    xt = torch.ones(1, 2)
    np.testing.assert_array_equal(lam(xt).numpy(), [[3.0, 3.0]])
    np.testing.assert_array_equal(xt.numpy(), [[1.0, 1.0]])


def test_weights_and_explicit_in_place_calls_keep_their_meaning():
    v = K.variable(np.zeros(2))
    buf = torch.zeros(2)
    with keras_value_semantics():
        with torch.no_grad():
            v += 1.0  # a weight: in place, as K.update_add would
        buf.add_(2.0)  # an explicit in-place call
        K.moving_average_update(buf, torch.ones(2) * 4, 0.5)
    np.testing.assert_array_equal(K.eval(v), [1.0, 1.0])
    np.testing.assert_array_equal(buf.numpy(), [3.0, 3.0])


def test_only_user_layers_run_under_the_mode():
    assert is_user_layer(Doubler()) and not is_user_layer(Dense(1))


def test_custom_loss_augmented_assignment_trains_and_keeps_the_output():
    # the widely copied weighted categorical cross-entropy gist: `y_pred /= K.sum(y_pred, ...)`
    weights = K.variable(np.array([1.0, 2.0, 1.0]))

    def loss(y_true, y_pred):
        y_pred /= K.sum(y_pred, axis=-1, keepdims=True)
        y_pred = K.clip(y_pred, K.epsilon(), 1 - K.epsilon())
        return -K.sum(y_true * K.log(y_pred) * weights, -1)

    rng = np.random.RandomState(2)
    x = rng.rand(16, 4).astype("float32")
    y = np.eye(3, dtype="float32")[rng.randint(0, 3, 16)]
    inp = Input((4,))
    model = Model(inp, Dense(3, activation="softmax")(inp))
    model.compile("sgd", loss)
    model.train_on_batch(x, y)  # raised "modified by an inplace operation" before
    p = model.predict(x)
    ref = -(y * np.log(np.clip(p / p.sum(-1, keepdims=True), 1e-7, 1 - 1e-7)) * [1.0, 2.0, 1.0]).sum(-1)
    np.testing.assert_allclose(model.evaluate(x, y, verbose=0), ref.mean(), rtol=1e-5)


def test_the_mode_runs_only_around_code_with_an_augmented_assignment(monkeypatch):
    """The mode makes every torch operation a Python call (about 2 us): layers, Lambdas and losses
    whose code has no augmented assignment run without it (read once per code object or class)."""
    import arignote.layers.base as layer_base
    import arignote.layers.core.lambda_layer as core_extra
    from arignote.layers import value_semantics
    from arignote.layers.value_semantics import augments, layer_augments

    class Plain(Layer):
        def call(self, x):
            return x * 2.0 + 1.0

    class Helper(Layer):
        def call(self, x):
            return self._scaled(x)

        def _scaled(self, x):
            x *= 2.0
            return x

    def nested(x):
        def inner(y):
            y += 1
            return y
        return inner(x)

    assert (layer_augments(Plain), layer_augments(Helper), layer_augments(Doubler)) == (False, True, True)
    assert (augments(lambda x: x + 1), augments(nested)) == (False, True)
    entered = []

    def counting():
        entered.append(1)
        return value_semantics.keras_value_semantics()

    monkeypatch.setattr(layer_base, "keras_value_semantics", counting)
    monkeypatch.setattr(core_extra, "keras_value_semantics", counting)
    x = torch.ones(2, 2)
    Plain()(x)
    Lambda(lambda t: t * 3)(x)
    assert entered == []
    assert torch.equal(Helper()(x), x * 2) and torch.equal(Lambda(nested)(x), x + 1)
    assert entered == [1, 1] and torch.equal(x, torch.ones(2, 2))  # the caller's tensor untouched
