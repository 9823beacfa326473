"""A loss on only some outputs (Keras 2.3.1's test_model_with_partial_loss): targets are given for
those outputs only (a list in their order, a single array, or a dict), the other outputs get no
loss and no metrics, and the logged names are Keras's."""

import numpy as np
import pytest

from arignote.layers import Dense, Input
from arignote.models import Model

RNG = np.random.default_rng(0)
X = RNG.random((10, 3)).astype("float32")
Y = RNG.random((10, 4)).astype("float32")


def _model():
    a = Input(shape=(3,), name="input_a")
    a_2 = Dense(4, name="dense_1")(a)
    return Model(a, [a_2, Dense(4, name="dense_2")(a_2)])


@pytest.mark.parametrize("y", [Y, [Y], {"dense_2": Y}])
def test_targets_only_for_the_output_with_a_loss(y):
    model = _model()
    model.compile("rmsprop", {"dense_2": "mse"}, metrics={"dense_1": "mae", "dense_2": "mae"})
    assert model.metrics_names == ["loss", "dense_2_loss", "dense_2_mae"]
    loss, out_loss, mae = model.evaluate(X, y, verbose=0)
    pred = model.predict(X)[1]
    np.testing.assert_allclose(loss, np.mean((pred - Y) ** 2), rtol=1e-5)
    np.testing.assert_allclose(out_loss, loss, rtol=1e-6)
    np.testing.assert_allclose(mae, np.mean(np.abs(pred - Y)), rtol=1e-5)
    model.train_on_batch(X, y)
    history = model.fit(X, y, epochs=1, verbose=0)
    assert sorted(history.history) == ["dense_2_loss", "dense_2_mae", "loss"]


def test_a_target_for_every_output_is_still_taken_and_a_missing_one_named():
    model = _model()
    model.compile("sgd", {"dense_2": "mse"})
    model.train_on_batch(X, [np.zeros((10, 4)), Y])  # a full list too (Keras 2.3.1 refuses it)
    with pytest.raises(ValueError, match="no data for"):
        model.fit(X, {"dense_1": Y}, verbose=0)
