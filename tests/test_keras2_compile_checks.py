"""Keras 2.3.1's compile checks of a model with several outputs: ``loss_weights`` is a list (one per
output) or a dict by output name; anything else is a TypeError ("Could not interpret loss_weights
argument")."""

from __future__ import annotations

import numpy as np
import pytest

from arignote import backend as K
from arignote.layers import Dense, Input
from arignote.models import Model


def _two_outputs():
    a = Input(shape=(3,))
    return Model(a, [Dense(2, name="p")(a), Dense(1, name="q")(a)])


@pytest.mark.parametrize("bad", [(0.5, 0.5), 0.5, "1"])
def test_loss_weights_of_another_type_raise_type_error(bad):
    with pytest.raises(TypeError, match="Could not interpret loss_weights argument"):
        _two_outputs().compile("sgd", loss="mse", loss_weights=bad)


def test_list_and_dict_loss_weights_weigh_the_outputs():
    x = np.ones((4, 3), dtype="float32")
    y = [np.zeros((4, 2)), np.zeros((4, 1))]
    for weights in ([0.5, 2.0], {"p": 0.5, "q": 2.0}):
        model = _two_outputs()
        model.compile("sgd", loss="mse", loss_weights=weights)
        total, p, q = model.evaluate(x, y, verbose=0)
        assert total == pytest.approx(0.5 * p + 2.0 * q, rel=1e-5)
    with pytest.raises(ValueError):
        _two_outputs().compile("sgd", loss="mse", loss_weights=[0.5])


def test_loss_none_for_every_output_trains_on_the_penalties_and_skips_the_metrics():
    a = Input(shape=(3,))
    hidden = Dense(4, kernel_regularizer="l1", bias_regularizer="l2", kernel_initializer="ones")(a)
    model = Model(a, [hidden, Dense(2)(hidden)])
    model.compile("rmsprop", None, metrics=["mae"])
    assert model.metrics_names == ["loss"]  # Keras 2.3.1: no targets, so no metrics
    x = np.random.RandomState(0).random_sample((10, 3))
    # Keras 2.3.1 prints 0.12 for test_on_batch and evaluate: l1 0.01 * 12 ones, l2 of a zero bias
    assert model.test_on_batch(x, None) == pytest.approx(0.12, rel=1e-6)
    assert model.evaluate(x, None, verbose=0) == pytest.approx(0.12, rel=1e-6)
    assert np.isfinite(model.train_on_batch(x, None))
    b = Input(shape=(3,))
    out1, out2 = Dense(4, kernel_initializer="ones")(b), Dense(4, kernel_initializer="zeros")(b)
    model = Model(b, [out1, out2])
    model.add_loss(K.mean(out1 + out2))
    model.compile("rmsprop", None, metrics=["mae"])
    ones = np.ones((4, 3), dtype="float32")
    assert model.evaluate(ones, None, verbose=0) == pytest.approx(3.0)  # mean of 3 + 0
    assert len(model.fit(ones, None, verbose=0).history["loss"]) == 1


def test_target_tensors_is_refused_naming_the_replacement():
    a = Input(shape=(3,))
    model = Model(a, Dense(1)(a))
    with pytest.raises(TypeError, match="deliberately not supported.*pass the targets as y"):
        model.compile("sgd", "mse", target_tensors=[K.variable(np.zeros((2, 1)))])
    model.compile("sgd", "mse", target_tensors=None)  # None: Keras's default, nothing to refuse


def test_trainable_changed_after_compile_warns_on_summary_and_fit():
    import warnings

    a = Input(shape=(3,))
    inner = Model(a, Dense(1)(a))
    inner.trainable = False
    b = Input(shape=(3,))
    outer = Model(b, Dense(1)(inner(b)))
    outer.compile("adam", "mse")
    inner.trainable = True  # not recompiled: 2 weights trained at compile, 4 trainable now
    quiet = lambda *args, **kwargs: None  # noqa: E731
    with pytest.warns(UserWarning, match="Discrepancy between trainable weights and collected"):
        outer.summary(print_fn=quiet)
    with pytest.warns(UserWarning, match="Discrepancy between trainable weights and collected"):
        outer.fit(np.zeros((5, 3)), np.zeros((5, 1)), verbose=0)
    outer.compile("adam", "mse")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        outer.summary(print_fn=quiet)
