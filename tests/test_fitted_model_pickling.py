"""``pickle`` of a model after ``fit`` / ``predict`` (Keras 2.3.1's tests/test_model_pickling.py pickles
models): a subclassed model drops its per-run trainer state (closures) and rebuilds its compiled loss;
Sequential and functional models go through HDF5 bytes. The copy predicts the same and fit continues."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import arignote
from arignote import layers


class Sub(arignote.Model):
    def __init__(self) -> None:
        super().__init__()
        self.hidden = layers.Dense(4, activation="relu")
        self.out = layers.Dense(2)

    def call(self, inputs):
        return self.out(self.hidden(inputs))


class SubRegularized(Sub):
    def __init__(self) -> None:
        super().__init__()
        self.out = layers.Dense(2, kernel_regularizer="l2", activity_regularizer="l2")


def subclassed():
    return Sub()


def subclassed_regularized():
    return SubRegularized()


def sequential():
    return arignote.Sequential([layers.Dense(4, activation="relu", input_shape=(3,)), layers.Dense(2)])


def functional():
    inputs = arignote.Input((3,))
    return arignote.Model(inputs, layers.Dense(2)(layers.Dense(4, activation="relu")(inputs)))


@pytest.mark.parametrize("make", [subclassed, subclassed_regularized, sequential, functional])
def test_pickle_after_fit_predicts_the_same_and_fit_continues(make):
    rng = np.random.RandomState(0)
    x, y = rng.rand(16, 3).astype("float32"), rng.rand(16, 2).astype("float32")
    model = make()
    model.compile("adam", "mse")
    model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    expected = model.predict(x)
    copy = pickle.loads(pickle.dumps(model))
    np.testing.assert_allclose(copy.predict(x), expected, rtol=1e-6, atol=1e-7)
    assert copy.evaluate(x, y, verbose=0) == pytest.approx(model.evaluate(x, y, verbose=0), rel=1e-5)
    assert pickle.loads(pickle.dumps(copy)) is not None  # after its own predict too
    before = [w.copy() for w in copy.get_weights()]
    loss = copy.fit(x, y, epochs=3, batch_size=8, verbose=0).history["loss"]
    assert len(loss) == 3 and np.isfinite(loss).all() and loss[-1] < loss[0]
    assert any(not np.array_equal(a, b) for a, b in zip(before, copy.get_weights()))
    np.testing.assert_allclose(model.predict(x), expected, rtol=1e-6)  # the original is untouched
