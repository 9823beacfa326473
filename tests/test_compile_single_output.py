"""A one-output model compiled the many-output way, as Keras 2.3.1 takes it: ``loss={'ctc': fn}``
(Keras's image_ocr example), ``loss=[fn]``, ``loss_weights`` as a number, list or dict (the loss is
scaled), ``metrics={'out': [...]}``; wrong keys and lengths give Keras's errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arignote.layers import Dense, Input, Lambda
from arignote.models import Model, Sequential
from arignote.training import fused_head

RNG = np.random.default_rng(0)
X = RNG.normal(size=(32, 4)).astype("float32")
Y = RNG.normal(size=(32, 2)).astype("float32")


def _graph(name="out"):
    torch.manual_seed(0)
    inp = Input(shape=(4,))
    return Model(inp, Dense(2, name=name)(inp))


def test_the_image_ocr_idiom_a_loss_dict_keyed_by_the_output_layer_trains():
    """image_ocr.py: the CTC cost is computed in a Lambda named 'ctc'; the loss just passes it on."""
    torch.manual_seed(0)
    inp = Input(shape=(4,))
    cost = Lambda(lambda t: (t ** 2).sum(dim=-1, keepdim=True), name="ctc")(Dense(3)(inp))
    model = Model(inp, cost)
    model.compile("sgd", loss={"ctc": lambda y_true, y_pred: y_pred})
    before = model.evaluate(X, np.zeros((32, 1), "float32"), verbose=0)
    np.testing.assert_allclose(before, model.predict(X).mean(), rtol=1e-5)
    history = model.fit(X, np.zeros((32, 1), "float32"), epochs=3, batch_size=8, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


@pytest.mark.parametrize("loss", [{"out": "mse"}, ["mse"], ("mse",)])
def test_a_dict_or_one_entry_list_is_the_loss(loss):
    plain, keyed = _graph(), _graph()
    plain.compile("sgd", "mse")
    keyed.compile("sgd", loss)
    assert keyed.evaluate(X, Y, verbose=0) == pytest.approx(plain.evaluate(X, Y, verbose=0), rel=1e-6)


def test_a_sequential_is_keyed_by_its_last_layer():
    torch.manual_seed(0)
    model = Sequential([Dense(3, input_shape=(4,)), Dense(2, name="scores")])
    model.compile("sgd", loss={"scores": "mae"}, metrics={"scores": ["mse"]})
    history = model.fit(X, Y, epochs=1, verbose=0)
    assert set(history.history) == {"loss", "mse"}


@pytest.mark.parametrize("weights", [0.5, [0.5], {"out": 0.5}])
def test_loss_weights_scale_the_loss_of_the_one_output(weights):
    plain, weighted = _graph(), _graph()
    plain.compile("sgd", "mse", metrics=["mae"])
    weighted.compile("sgd", "mse", metrics=["mae"], loss_weights=weights)
    p_loss, p_mae = plain.evaluate(X, Y, verbose=0)
    w_loss, w_mae = weighted.evaluate(X, Y, verbose=0)
    assert w_loss == pytest.approx(0.5 * p_loss, rel=1e-6) and w_mae == pytest.approx(p_mae, rel=1e-6)


def test_a_weighted_classifier_keeps_the_plain_head():
    torch.manual_seed(0)
    model = Sequential([Dense(3, activation="softmax", input_shape=(4,))])
    model.compile("sgd", "categorical_crossentropy", loss_weights=[0.5])
    assert type(fused_head.for_model(model)) is fused_head.PlainHead
    model.compile("sgd", "categorical_crossentropy")
    assert type(fused_head.for_model(model)) is fused_head.FusedHead


@pytest.mark.parametrize("kwargs, match", [
    ({"loss": {"wrong": "mse"}}, r"Unknown entries in loss dictionary: \['wrong'\]"),
    ({"loss": {"wrong": "mse", "out": "mse"}}, "Unknown entries in loss dictionary"),
    ({"loss": ["mse", "mae"]}, "The model has 1 outputs, but you passed loss="),
    ({"loss": "mse", "loss_weights": [1.0, 2.0]}, "The model has 1 outputs"),
    ({"loss": "mse", "loss_weights": {"out": "heavy"}}, "a weight is a number"),
    ({"loss": "mse", "metrics": {"other": ["mae"]}}, "Unknown entries in metrics dictionary"),
])
def test_wrong_keys_and_lengths_are_keras_s_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _graph().compile("sgd", **kwargs)


def test_a_dict_without_the_output_says_which_key_to_use():
    model = _graph()
    with pytest.raises(ValueError, match=r"no entry for the model's output 'out'.*loss=\{'out': \.\.\.\}"):
        model.compile("sgd", loss={})
