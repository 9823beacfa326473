"""Keras 2 ``K.get_value`` / ``K.set_value`` on ``model.optimizer.lr`` and on tensors."""

from __future__ import annotations

import copy
import json
import pickle

import numpy as np
import pytest
import torch

from arignote import backend as K
from arignote.callbacks import Callback
from arignote.layers import Dense
from arignote.models import Sequential
from arignote.optimizers import SGD, Adam, HyperParameter


def _model(opt):
    m = Sequential([Dense(3, input_shape=(4,), activation="softmax")])
    m.compile(optimizer=opt, loss="categorical_crossentropy")
    return m


def _data(n=32):
    rng = np.random.default_rng(0)
    return rng.random((n, 4), dtype=np.float32), np.eye(3, dtype=np.float32)[rng.integers(0, 3, n)]


def test_set_value_on_lr_reaches_the_torch_optimizer():
    m = _model(SGD(lr=0.1))
    x, y = _data()
    m.fit(x, y, epochs=1, verbose=0)
    K.set_value(m.optimizer.lr, 0.025)
    assert K.get_value(m.optimizer.lr) == 0.025
    assert [g["lr"] for g in m.optimizer.torch.param_groups] == [0.025]
    # and the next step uses it: one SGD step moves the weights by exactly lr * grad
    w0 = [w.copy() for w in m.get_weights()]
    m.train_on_batch(x, y)
    m2 = _model(SGD(lr=0.025))
    m2.set_weights(w0)
    m2.train_on_batch(x, y)
    for a, b in zip(m.get_weights(), m2.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_a_keras2_lr_callback_runs_unchanged():
    class Halve(Callback):
        def on_epoch_begin(self, epoch, logs=None):
            if epoch:
                K.set_value(self.model.optimizer.lr, K.get_value(self.model.optimizer.lr) * 0.5)

    m = _model(Adam(lr=0.008))
    x, y = _data()
    m.fit(x, y, epochs=4, verbose=0, callbacks=[Halve()])
    assert K.get_value(m.optimizer.lr) == pytest.approx(0.001)
    assert m.optimizer.torch.param_groups[0]["lr"] == pytest.approx(0.001)


def test_lr_reads_live_and_stays_a_float():
    opt = SGD(lr=0.1)
    lr = opt.lr
    assert isinstance(lr, float) and isinstance(lr, HyperParameter)
    K.set_value(lr, 0.5)
    assert K.get_value(lr) == 0.5 and opt.lr == 0.5  # the old handle reads the new value
    assert opt.lr * 2 == 1.0 and f"{opt.lr:.2f}" == "0.50" and json.loads(json.dumps(opt.lr)) == 0.5
    for clone in (pickle.loads(pickle.dumps(opt.lr)), copy.deepcopy(opt.lr)):
        assert type(clone) is float and clone == 0.5
    opt.lr.assign(0.2)
    assert opt.learning_rate == 0.2
    with pytest.raises(ValueError, match="lr must be >= 0"):
        K.set_value(opt.lr, -1.0)
    with pytest.raises(ValueError, match="lr must be a number"):
        K.set_value(opt.lr, "fast")
    assert opt.lr == 0.2  # nothing changed by the bad values


def test_get_and_set_value_on_tensors_and_numbers():
    w = torch.nn.Parameter(torch.zeros(2, 3))
    K.set_value(w, np.ones((2, 3)))
    np.testing.assert_array_equal(K.get_value(w), np.ones((2, 3), np.float32))
    assert isinstance(K.get_value(w), np.ndarray)
    with pytest.raises(ValueError, match=r"shape \(3,\).*\(2, 3\)"):
        K.set_value(w, np.ones(3))
    assert K.get_value(3) == 3 and K.batch_get_value([SGD(lr=0.3).lr, 2.0]) == [0.3, 2.0]
    opt = SGD(lr=0.1)
    K.batch_set_value([(opt.lr, 0.7), (w, np.zeros((2, 3)))])
    assert opt.lr == 0.7 and float(w.detach().sum()) == 0.0
    with pytest.raises(TypeError, match="decay = 1e-6"):
        K.set_value(opt.decay, 0.1)
