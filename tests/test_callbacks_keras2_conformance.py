"""Keras 2.3.1 callback behaviours its callbacks_test.py checks: ``callback.validation_data`` (the
validation arrays fit hands every callback), TerminateOnNaN on an infinite loss (logged as inf, not
NaN) and on NaN batches of a generator (they run, warned, and stop training), ReduceLROnPlateau's
``epsilon`` warning (tests/test_callbacks.py)."""

import csv
import warnings

import numpy as np
import pytest

from arignote import callbacks, initializers
from arignote.layers import Dense, Dropout, Input
from arignote.models import Model, Sequential


def _data(n=20, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.rand(n, 2).astype("float32")
    return x, np.eye(2, dtype="float32")[rng.randint(0, 2, n)]


def _model(dropout=False):
    layers = [Dense(4, input_dim=2, activation="relu")] + ([Dropout(0.5)] if dropout else [])
    model = Sequential(layers + [Dense(2, activation="softmax")])
    model.compile(loss="categorical_crossentropy", optimizer="sgd")
    return model


class _Seen(callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.seen = self.validation_data


def test_callback_validation_data_is_keras2s_list_of_arrays():
    x, y = _data()
    xv, yv = _data(10, seed=1)
    cb = _Seen()
    assert cb.validation_data is None
    _model().fit(x, y, batch_size=5, validation_data=(xv, yv), callbacks=[cb], epochs=1, verbose=0)
    assert len(cb.seen) == 3 and cb.seen[0] is xv and cb.seen[1] is yv
    assert cb.seen[2].dtype == np.float32 and cb.seen[2].tolist() == [1.0] * 10
    # fit_generator with a validation tuple hands over the same arrays (Keras 2.3.1's test_CallbackValData)
    cb2 = _Seen()

    def batches():
        while True:
            yield x[:5], y[:5]

    _model().fit_generator(batches(), 4, validation_data=(xv, yv, np.full(10, 2.0)), callbacks=[cb2],
                           verbose=0)
    assert cb2.seen[0] is xv and cb2.seen[1] is yv and cb2.seen[2].tolist() == [2.0] * 10


def test_callback_validation_data_of_a_split_without_and_with_dropout():
    x, y = _data()
    cb = _Seen()
    _model().fit(x, y, batch_size=5, validation_split=0.25, callbacks=[cb], epochs=1, verbose=0)
    np.testing.assert_array_equal(cb.seen[0], x[15:])
    np.testing.assert_array_equal(cb.seen[1], y[15:])
    assert len(cb.seen) == 3
    cb = _Seen()
    _model(dropout=True).fit(x, y, batch_size=5, callbacks=[cb], epochs=1, verbose=0)
    assert cb.seen == []  # no validation
    cb = _Seen()
    _model(dropout=True).fit(x, y, batch_size=5, validation_split=0.25, callbacks=[cb], epochs=1, verbose=0)
    assert len(cb.seen) == 4 and cb.seen[3] == 0.0  # Keras 2.3.1's learning-phase entry


def test_callback_validation_data_of_two_outputs():
    inp = Input((2,))
    model = Model(inp, [Dense(1, name="a")(inp), Dense(1, name="b")(inp)])
    model.compile(loss="mse", optimizer="sgd")
    x, _ = _data()
    cb = _Seen()
    model.fit(x, [x[:, :1], x[:, 1:]], validation_data=(x, {"a": x[:, :1], "b": x[:, 1:]}), callbacks=[cb],
              verbose=0)
    assert len(cb.seen) == 5 and cb.seen[0] is x
    np.testing.assert_array_equal(cb.seen[2], x[:, 1:])
    assert cb.seen[3].shape == cb.seen[4].shape == (20,)


def test_terminate_on_nan_logs_an_infinite_loss_as_inf():
    # Keras 2.3.1's test_TerminateOnNaN: weights of 1e5 overflow the MSE: loss == inf, one epoch
    x, y = _data()
    big = initializers.Constant(1e5)
    model = Sequential([Dense(4, input_dim=2, activation="relu", kernel_initializer=big)]
                       + [Dense(4, activation="relu", kernel_initializer=big) for _ in range(4)] + [Dense(2)])
    model.compile(loss="mean_squared_error", optimizer="rmsprop")
    x = x + 1.0  # every sample positive: the relu chain overflows
    history = model.fit(x, y, batch_size=5, validation_data=(x, y), callbacks=[callbacks.TerminateOnNaN()],
                        epochs=20, verbose=0)
    assert history.history["loss"] == [np.inf]


def test_terminate_on_nan_with_nan_batches_of_a_generator(tmp_path):
    x, y = _data()
    model = _model()
    path = tmp_path / "log.csv"

    def batches():
        for step in range(1000):
            if step < 12:
                yield x[:5], y[:5]
            else:
                yield np.full((5, 2), np.nan, "float32"), np.full((5, 2), np.nan, "float32")

    warned = "batch 0 of x: x contains NaN.*TerminateOnNaN stops training"
    with pytest.warns(UserWarning, match=warned) as caught:
        history = model.fit_generator(batches(), 4, epochs=20, callbacks=[callbacks.TerminateOnNaN(),
                                                                          callbacks.CSVLogger(str(path))],
                                      verbose=0)
    assert sum("contains NaN" in str(w.message) for w in caught) == 1
    loss = history.history["loss"]
    assert len(loss) == 4 and np.isnan(loss[-1]) and np.isfinite(loss[:3]).all()
    rows = list(csv.reader(path.open()))
    assert rows[-1][0] == "3" and "nan" in rows[-1]
    # without TerminateOnNaN the NaN batch is refused, naming it
    with pytest.raises(ValueError, match="batch 0 of x: x contains NaN"):
        _model().fit_generator(batches(), 4, epochs=20, verbose=0)


def test_nan_arrays_are_still_refused_before_training_with_terminate_on_nan():
    x, y = _data()
    x[3, 0] = np.nan
    with warnings.catch_warnings(), pytest.raises(ValueError, match="x contains NaN or Inf values"):
        _model().fit(x, y, callbacks=[callbacks.TerminateOnNaN()], verbose=0)


def test_callback_validation_data_of_a_model_built_by_fit():
    model = Sequential([Dense(1)])  # no input shape: fit builds it
    model.compile("sgd", "mse")
    x = np.ones((4, 3), "float32")
    cb = _Seen()
    model.fit(x, np.ones((4, 1)), validation_data=(x, np.ones((4, 1))), callbacks=[cb], verbose=0)
    assert len(cb.seen) == 3 and cb.seen[0] is x
