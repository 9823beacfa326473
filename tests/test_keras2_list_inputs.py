"""Keras 2.3.1 takes a list of one array (or a dict) for a one-input model and pandas DataFrames
anywhere an array goes (``standardize_input_data``: ``x.values`` of each DataFrame)."""

from __future__ import annotations

import numpy as np
import pytest

from arignote.layers import Dense, Input
from arignote.models import Model, Sequential


def _seq():
    model = Sequential([Dense(2, input_shape=(3,), kernel_initializer="ones", bias_initializer="zeros")])
    model.compile("sgd", "mse")
    return model


def test_a_list_of_one_array_is_the_input_of_a_sequential():
    model = _seq()
    x = np.arange(12, dtype="float32").reshape(4, 3)
    y = np.zeros((4, 2), dtype="float32")
    np.testing.assert_allclose(model.predict([x]), [[3, 3], [12, 12], [21, 21], [30, 30]])
    np.testing.assert_allclose(model.predict_on_batch([x]), model.predict(x))
    assert model.evaluate([x], [y], verbose=0) == pytest.approx(model.evaluate(x, y, verbose=0))
    hist = model.fit([x], [y], epochs=1, batch_size=4, verbose=0)
    assert len(hist.history["loss"]) == 1


def test_a_list_of_one_array_is_the_input_of_a_one_input_graph():
    inp = Input(shape=(3,), name="a")
    model = Model(inp, Dense(1, kernel_initializer="ones", bias_initializer="zeros")(inp))
    model.compile("sgd", "mse")
    x = np.ones((5, 3), dtype="float32")
    np.testing.assert_allclose(model.predict([x]), np.full((5, 1), 3.0))
    assert model.evaluate([x], [np.zeros((5, 1))], verbose=0) == pytest.approx(9.0)


def test_dataframes_in_lists_and_dicts():
    pd = pytest.importorskip("pandas")
    a, b = Input(shape=(3,), name="input_a"), Input(shape=(2,), name="input_b")
    out_a = Dense(1, kernel_initializer="ones", bias_initializer="zeros")(a)
    out_b = Dense(1, kernel_initializer="ones", bias_initializer="zeros")(b)
    one, two = Model(a, out_a), Model([a, b], [out_a, out_b])
    one.compile("sgd", "mse")
    two.compile("sgd", "mse")
    xa = pd.DataFrame(np.ones((4, 3)))
    xb = pd.DataFrame(np.full((4, 2), 2.0))
    ya, yb = pd.DataFrame(np.zeros((4, 1))), pd.DataFrame(np.zeros((4, 1)))
    for x in (xa, [xa], {"input_a": xa}):
        np.testing.assert_allclose(one.predict(x), np.full((4, 1), 3.0))
        assert one.evaluate(x, [ya], verbose=0) == pytest.approx(9.0)
    for x in ([xa, xb], {"input_a": xa, "input_b": xb}):
        pa, pb = two.predict(x)
        np.testing.assert_allclose(pb, np.full((4, 1), 4.0))
        loss = two.evaluate(x, [ya, yb], verbose=0)
        np.testing.assert_allclose(loss, [25.0, 9.0, 16.0])


def test_predict_on_a_sequence_ignores_the_batches_targets():
    from arignote.utils import Sequence

    class TwoTargets(Sequence):  # targets for two outputs; the model has one
        def __len__(self):
            return 2

        def __getitem__(self, idx):
            x = np.full((5, 3), float(idx + 1), dtype="float32")
            return [x, x], [np.zeros((5, 4)), np.zeros((5, 3))]

    a, b = Input(shape=(3,), name="input_a"), Input(shape=(3,), name="input_b")
    model = Model([a, b], Dense(1, kernel_initializer="ones", bias_initializer="zeros")(a))
    model.compile("rmsprop", "mse", metrics=[], sample_weight_mode=None)
    for out in (model.predict(TwoTargets()), model.predict_generator(TwoTargets())):
        np.testing.assert_allclose(out, np.repeat([[3.0], [6.0]], 5, axis=0))
