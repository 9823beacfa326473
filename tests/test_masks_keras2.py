"""Output masks in the loss and the metrics against real Keras 2.3.1 (issue 13 item 2).

The numbers in tests/fixtures/keras2/masks.json were computed by Keras 2.3.1 (Theano backend) with
scripts/make_keras2_mask_fixture.py: ``Embedding(mask_zero=True)`` and ``Masking`` models whose outputs
carry a mask, with and without sample weights, ``sample_weight_mode='temporal'``, ``class_weight``, a
custom per-timestep loss and two outputs. Each case holds its data and the model's starting weights,
so the same model is rebuilt here and must give the same losses, metrics and weights after SGD.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from arignote import backend as K
from arignote import config
from arignote.layers import GRU, LSTM, Dense, Embedding, Input, Masking, TimeDistributed
from arignote.models import Model, Sequential
from arignote.optimizers import SGD

config.configure(print_active_device=False)

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "keras2" / "masks.json").read_text())
TOL = {"rel": 1e-5, "abs": 1e-6}


def a(values, dtype="float32"):
    return np.asarray(values, dtype=dtype)


def _start(model, case):
    model.set_weights([a(v) for v in case["start"]])


def _assert_weights(model, expected):
    for got, want in zip(model.get_weights(), expected):
        np.testing.assert_allclose(got, a(want), rtol=1e-5, atol=1e-6)


def _check(model, case, x, y, sw=None, cw=None, batch_size=3, fit=False):
    """What scripts/make_keras2_mask_fixture.py's run() recorded, step by step."""
    assert model.metrics_names == case["names"]
    assert model.evaluate(x, y, batch_size=batch_size, verbose=0) == pytest.approx(case["evaluate"], **TOL)
    if sw is not None:
        got = model.evaluate(x, y, sample_weight=sw, batch_size=batch_size, verbose=0)
        assert got == pytest.approx(case["evaluate_weighted"], **TOL)
    got = model.train_on_batch(x, y, sample_weight=sw, class_weight=cw)
    assert got == pytest.approx(case["train_on_batch"], **TOL)
    _assert_weights(model, case["after_step"])
    if fit:
        h = model.fit(x, y, sample_weight=sw, class_weight=cw, batch_size=batch_size, epochs=2, shuffle=False,
                      verbose=0)
        assert set(h.history) == set(case["history"])
        for key, want in case["history"].items():
            assert h.history[key] == pytest.approx(want, **TOL), key
        _assert_weights(model, case["after_fit"])


def test_the_fixture_comes_from_keras_2_3_1():
    assert FIXTURE["meta"]["keras"] == "2.3.1"


def test_embedding_mask_zero_lstm_time_distributed_softmax_with_sample_weights():
    case = FIXTURE["embedding_lstm"]
    m = Sequential([Embedding(6, 3, mask_zero=True, input_length=5), LSTM(4, return_sequences=True),
                    TimeDistributed(Dense(3, activation="softmax"))])
    m.compile(SGD(lr=0.5), "categorical_crossentropy", metrics=["acc", "mae"], weighted_metrics=["acc"])
    _start(m, case)
    _check(m, case, a(case["x"], "int64"), a(case["y"]), a(case["w"]), fit=True)


def test_embedding_mask_zero_gru_with_temporal_sample_weights():
    case = FIXTURE["embedding_gru_temporal"]
    m = Sequential([Embedding(5, 3, mask_zero=True, input_length=4), GRU(3, return_sequences=True),
                    TimeDistributed(Dense(2))])
    m.compile(SGD(lr=0.3), "mse", metrics=["mae"], weighted_metrics=["mae"], sample_weight_mode="temporal")
    _start(m, case)
    _check(m, case, a(case["x"], "int64"), a(case["y"]), a(case["w"]), batch_size=4, fit=True)


def test_masking_lstm_binary_crossentropy_and_accuracy():
    case = FIXTURE["masking_lstm_binary"]
    m = Sequential([Masking(0.0, input_shape=(4, 3)), LSTM(3, return_sequences=True),
                    TimeDistributed(Dense(1, activation="sigmoid"))])
    m.compile(SGD(lr=0.5), "binary_crossentropy", metrics=["acc"])
    _start(m, case)
    _check(m, case, a(case["x"]), a(case["y"]), batch_size=4)


def test_masked_samples_with_class_and_sample_weights():
    case = FIXTURE["masking_dense_class_weight"]
    m = Sequential([Masking(0.0, input_shape=(4,)), Dense(3, activation="softmax")])
    m.compile(SGD(lr=0.2), "categorical_crossentropy", metrics=["acc"], weighted_metrics=["acc"])
    _start(m, case)
    cw = {int(k): v for k, v in case["class_weight"].items()}
    _check(m, case, a(case["x"]), a(case["y"]), a(case["w"]), cw=cw, batch_size=4, fit=True)


def test_custom_loss_returning_one_value_per_timestep():
    case = FIXTURE["custom_per_step_loss"]

    def per_step(y_true, y_pred):
        return K.sum(K.abs(y_pred - y_true), axis=-1) * 0.5

    m = Sequential([Masking(0.0, input_shape=(4, 2)), GRU(3, return_sequences=True),
                    TimeDistributed(Dense(2))])
    m.compile(SGD(lr=0.3), per_step, metrics=["mae"])
    _start(m, case)
    _check(m, case, a(case["x"]), a(case["y"]), a(case["w"]), batch_size=5)


def test_two_outputs_one_masked():
    case = FIXTURE["two_outputs"]
    inp = Input(shape=(4,), name="tokens")
    emb = Embedding(5, 3, mask_zero=True, name="emb")(inp)
    seq = LSTM(3, return_sequences=True, name="lstm")(emb)
    out_a = TimeDistributed(Dense(2), name="a")(seq)
    out_b = Dense(1, activation="sigmoid", name="b")(LSTM(2, name="last")(seq))
    m = Model(inp, [out_a, out_b])
    m.compile(SGD(lr=0.3), ["mae", "binary_crossentropy"], loss_weights=[1.0, 0.5],
              metrics={"a": ["mse"], "b": ["acc"]})
    _start(m, case)
    _check(m, case, a(case["x"], "int64"), [a(case["ya"]), a(case["yb"])], batch_size=3)


def test_a_sequential_encoder_used_as_a_layer_hands_its_output_mask_on():
    case = FIXTURE["nested_encoder"]
    inp = Input(shape=(4,), name="tokens")
    enc = Sequential([Embedding(6, 3, mask_zero=True, input_length=4), LSTM(3, return_sequences=True)],
                     name="encoder")
    m = Model(inp, TimeDistributed(Dense(2), name="out")(enc(inp)))
    assert m.module.out_masked == [True]
    m.compile(SGD(lr=0.3), "mse", metrics=["mae"])
    _start(m, case)
    _check(m, case, a(case["x"], "int64"), a(case["y"]), batch_size=3)


def test_an_outer_mask_reaches_the_layers_of_a_model_used_as_a_layer():
    case = FIXTURE["mask_into_inner_model"]
    inner_in = Input(shape=(4, 3), name="inner_in")
    inner = Model(inner_in, LSTM(3, return_sequences=True, name="inner_lstm")(inner_in), name="inner")
    inp = Input(shape=(4,), name="tokens")
    emb = Embedding(6, 3, mask_zero=True, name="emb")(inp)
    m = Model(inp, TimeDistributed(Dense(2), name="out")(inner(emb)))
    m.compile(SGD(lr=0.3), "mae", metrics=["mse"])
    _start(m, case)
    _check(m, case, a(case["x"], "int64"), a(case["y"]), batch_size=3)
