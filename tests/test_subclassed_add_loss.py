"""A subclassed model whose ``call`` adds a loss (``self.add_loss(kl)``: the Keras 2 VAE written as a
Model subclass). Keras 2.3.1: those losses are the call's (the next forward replaces them, nothing
accumulates) and the training loss includes them, also with ``compile(loss=None)``."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import arignote
from arignote import backend as K
from arignote import layers, optimizers


class VAE(arignote.Model):
    def __init__(self) -> None:
        super().__init__()
        self.mean = layers.Dense(2)
        self.log_var = layers.Dense(2)  # only the KL term reaches it
        self.decoder = layers.Dense(3)

    def call(self, inputs):
        mean, log_var = self.mean(inputs), self.log_var(inputs)
        self.add_loss(-0.5 * K.mean(1 + log_var - K.square(mean) - K.exp(log_var)))
        return self.decoder(mean)


def data(n=16):
    rng = np.random.RandomState(0)
    return rng.rand(n, 3).astype("float32"), rng.rand(n, 3).astype("float32")


def by_hand(model, x, y):
    """mse(decoder(mean(x)), y) + KL, from the weights in numpy."""
    (wm, bm), (wv, bv), (wd, bd) = (model.mean.get_weights(), model.log_var.get_weights(),
                                    model.decoder.get_weights())
    mean, log_var = x @ wm + bm, x @ wv + bv
    kl = -0.5 * np.mean(1 + log_var - mean ** 2 - np.exp(log_var))
    return float(np.mean(((mean @ wd + bd) - y) ** 2) + kl)


def test_the_added_loss_is_per_call_and_does_not_grow():
    x, y = data()
    model = VAE()
    model.compile("sgd", "mse")
    model.fit(x, y, batch_size=4, epochs=3, verbose=0)  # 12 forwards
    assert len(model.losses) == 1
    model.predict(x, batch_size=4)
    assert len(model.losses) == 1
    model(x[:2])
    (kl,) = model.losses  # the last call's
    mean, log_var = model.mean(x[:2]), model.log_var(x[:2])
    expected = -0.5 * K.mean(1 + log_var - K.square(mean) - K.exp(log_var))
    assert float(kl.detach()) == pytest.approx(float(expected.detach()), rel=1e-6)


def test_the_training_loss_is_the_data_loss_plus_the_added_term():
    x, y = data()
    model = VAE()
    model.compile(optimizers.SGD(lr=0.0), "mse")  # no add_loss yet when compiled
    model(x[:2])  # built: the weights exist for the hand computation
    expected = by_hand(model, x, y)
    loss = model.fit(x, y, batch_size=len(x), epochs=1, verbose=0).history["loss"][0]
    assert loss == pytest.approx(expected, rel=1e-5)
    assert model.evaluate(x, y, verbose=0) == pytest.approx(expected, rel=1e-5)


def test_the_weights_only_the_added_term_reaches_train():
    x, y = data()
    model = VAE()
    model.compile(optimizers.SGD(lr=0.1), "mse")
    model(x[:2])
    before = [w.copy() for w in model.log_var.get_weights()]
    model.fit(x, y, batch_size=len(x), epochs=1, verbose=0)
    assert all(not np.allclose(a, b) for a, b in zip(before, model.log_var.get_weights()))


def test_compile_without_a_loss_trains_on_the_added_term_alone():
    x, _ = data()
    model = VAE()
    model.compile(optimizers.SGD(lr=0.5), loss=None)
    loss = model.fit(x, batch_size=len(x), epochs=5, verbose=0).history["loss"]
    assert np.isfinite(loss).all() and loss[-1] < loss[0]
    kl_only = by_hand(model, x, model.predict(x))  # the data term is 0 against its own prediction
    assert model.evaluate(x, verbose=0) == pytest.approx(kl_only, rel=1e-4)


class NoLoss(arignote.Model):
    def __init__(self) -> None:
        super().__init__()
        self.dense = layers.Dense(2)

    def call(self, inputs):
        return self.dense(inputs)


def test_compile_without_a_loss_and_nothing_added_says_so():
    x, _ = data()
    model = NoLoss()
    model.compile("sgd", loss=None)
    with pytest.raises(ValueError, match="no loss to optimize"):
        model.fit(x, batch_size=4, epochs=1, verbose=0)


def test_pickle_after_fit_keeps_the_added_term():
    x, y = data()
    model = VAE()
    model.compile("adam", "mse")
    model.fit(x, y, batch_size=4, epochs=2, verbose=0)
    copy = pickle.loads(pickle.dumps(model))
    assert copy.evaluate(x, y, verbose=0) == pytest.approx(model.evaluate(x, y, verbose=0), rel=1e-5)
    copy.fit(x, y, batch_size=4, epochs=1, verbose=0)
    assert len(copy.losses) == 1


class Holder(arignote.Model):
    def __init__(self) -> None:
        super().__init__()
        self.vae = VAE()

    def call(self, inputs):
        return self.vae(inputs)


def test_a_model_holding_the_subclassed_one_trains_on_its_added_term_too():
    x, y = data()
    model = Holder()
    model.compile(optimizers.SGD(lr=0.0), "mse")
    model(x[:2])
    expected = by_hand(model.vae, x, y)
    assert model.fit(x, y, batch_size=len(x), epochs=2, verbose=0).history["loss"] == \
        pytest.approx([expected, expected], rel=1e-5)
    assert len(model.losses) == 1
