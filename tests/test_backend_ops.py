"""arignote.backend as Keras 2's keras.backend: tensor functions on torch tensors (values against numpy)
and on symbolic tensors (an operation node that the compiled model runs), K.function, K.gradients and
the learning phase (issue 13 item 4)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arignote import backend as K
from arignote.layers import Dense, Dropout, Input, Lambda
from arignote.models import Model

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4)).astype(np.float32)


def t(a):
    return torch.tensor(a)


@pytest.mark.parametrize("name,ref", [
    ("sum", lambda a: a.sum(axis=-1)), ("mean", lambda a: a.mean(axis=-1)), ("max", lambda a: a.max(axis=-1)),
    ("min", lambda a: a.min(axis=-1)), ("prod", lambda a: a.prod(axis=-1)), ("var", lambda a: a.var(axis=-1)),
    ("std", lambda a: a.std(axis=-1)), ("logsumexp", lambda a: np.log(np.exp(a).sum(axis=-1))),
])  # fmt: skip
def test_reductions_match_numpy_with_keras_axis_semantics(name, ref):
    fn = getattr(K, name)
    np.testing.assert_allclose(fn(t(X), axis=-1).numpy(), ref(X), rtol=1e-5, atol=1e-6)
    assert fn(t(X), axis=1, keepdims=True).shape == (3, 1)
    assert fn(t(X)).dim() == 0  # axis=None reduces everything


def test_elementwise_shapes_and_linear_algebra():
    a = t(X)
    np.testing.assert_allclose(K.sqrt(K.square(a)).numpy(), np.abs(X), rtol=1e-6)
    np.testing.assert_allclose(K.clip(a, -0.5, 0.5).numpy(), np.clip(X, -0.5, 0.5))
    np.testing.assert_allclose(K.maximum(a, 0.0).numpy(), np.maximum(X, 0))
    np.testing.assert_allclose(K.l2_normalize(a, axis=-1).numpy(),
                               X / np.linalg.norm(X, axis=-1, keepdims=True), rtol=1e-5)
    w = RNG.standard_normal((4, 2)).astype(np.float32)
    np.testing.assert_allclose(K.dot(a, t(w)).numpy(), X @ w, rtol=1e-5)
    np.testing.assert_allclose(K.batch_dot(a, a, axes=1).numpy(), (X * X).sum(1, keepdims=True), rtol=1e-5)
    b = RNG.standard_normal((3, 5, 4)).astype(np.float32)
    c = RNG.standard_normal((3, 4, 6)).astype(np.float32)
    np.testing.assert_allclose(K.batch_dot(t(b), t(c), axes=(2, 1)).numpy(), b @ c, rtol=1e-4)
    assert K.int_shape(K.expand_dims(a, 1)) == (3, 1, 4) and K.ndim(a) == 2
    assert K.int_shape(K.permute_dimensions(t(b), (0, 2, 1))) == (3, 4, 5)
    assert K.int_shape(K.repeat(a, 7)) == (3, 7, 4) and K.int_shape(K.batch_flatten(t(b))) == (3, 20)
    np.testing.assert_allclose(K.switch(a > 0, a, K.zeros_like(a)).numpy(), np.maximum(X, 0))
    np.testing.assert_allclose(K.softmax(a).numpy().sum(-1), 1.0, rtol=1e-6)
    assert K.random_normal((2, 3)).shape == (2, 3) and K.random_uniform((4,), 2.0, 3.0).min() >= 2.0


def test_variables_and_learning_phase():
    v = K.variable(np.ones((2, 2)))
    K.set_value(v, np.full((2, 2), 3.0))
    assert K.get_value(v).tolist() == [[3.0, 3.0], [3.0, 3.0]] and K.eval(K.sum(v)) == 12.0
    assert K.in_train_phase(1, 2, training=True) == 1 and K.in_train_phase(1, 2, training=False) == 2
    K.set_learning_phase(1)
    try:
        assert K.learning_phase() == 1 and K.in_train_phase(lambda: "a", lambda: "b") == "a"
    finally:
        K.set_learning_phase(None)


def test_backend_functions_on_symbolic_tensors_record_nodes_the_model_runs():
    x = Input(shape=(4,))
    y = K.sum(K.square(x), axis=1, keepdims=True) * 2.0 + 1.0  # functions and operators
    assert y.shape == (None, 1) and K.is_keras_tensor(y) and not K.is_keras_tensor(t(X))
    z = x[:, 1:3]
    assert z.shape == (None, 2)
    model = Model(x, [y, z])
    got_y, got_z = model.predict(X)
    np.testing.assert_allclose(got_y, 2 * (X ** 2).sum(1, keepdims=True) + 1, rtol=1e-5)
    np.testing.assert_allclose(got_z, X[:, 1:3])
    with pytest.raises(TypeError, match="truth value"):
        bool(x)


def test_lambda_with_backend_functions_and_in_train_phase():
    x = Input(shape=(4,))
    noisy = Lambda(lambda v: K.in_train_phase(v * 0.0, v))(x)
    model = Model(x, noisy)
    np.testing.assert_allclose(model.predict(X), X)  # predict: the test branch
    model.module.train()
    np.testing.assert_allclose(model.module(t(X)).detach().numpy(), 0.0)


def test_k_function_with_learning_phase_and_k_gradients():
    x = Input(shape=(4,))
    h = Dense(3, name="h")(x)
    out = Dropout(0.5)(h)
    f = K.function([x, K.learning_phase()], [out])
    np.testing.assert_allclose(f([X, 0])[0], Model(x, h).predict(X), rtol=1e-5)  # test phase: no dropout
    trained = f([X, 1])[0]
    assert (trained == 0).any()  # train phase: dropout on
    loss = K.mean(K.square(h))
    dx, = K.gradients(loss, [x])
    kernel = Model(x, h).get_layer("h").weight  # torch (units, in) weight
    dw, = K.gradients(loss, [kernel])
    g = K.function([x], [loss, dx, dw])
    value, grad_x, grad_w = g([X])
    xt = t(X).requires_grad_(True)
    ht = xt @ kernel.t() + Model(x, h).get_layer("h").bias
    ref = (ht ** 2).mean()
    rx, rw = torch.autograd.grad(ref, [xt, kernel])
    assert value == pytest.approx(ref.item(), rel=1e-5)
    np.testing.assert_allclose(grad_x, rx.numpy(), rtol=1e-5)
    np.testing.assert_allclose(grad_w, rw.numpy(), rtol=1e-5)
