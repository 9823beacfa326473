"""A batch's logs as Keras 2 gives them: ``loss`` is that batch's own loss (the keras.io
``LossHistory`` idiom lists one loss per batch), the metrics are running values over the epoch,
and progress displays show the epoch's mean loss so far (``LazyLogs.running``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arignote.callbacks import Callback
from arignote.layers import Dense
from arignote.models import Sequential


class LossHistory(Callback):
    """keras.io's callbacks page, as Keras 2 users copied it."""

    def on_train_begin(self, logs={}):  # noqa: B006 - the idiom
        self.losses, self.running, self.accs = [], [], []

    def on_batch_end(self, batch, logs={}):  # noqa: B006
        self.losses.append(logs.get("loss"))
        self.accs.append(logs.get("acc"))
        self.running.append(logs.running()["loss"])


class EvalLosses(Callback):
    def __init__(self):
        super().__init__()
        self.losses = []

    def on_test_batch_end(self, batch, logs=None):
        self.losses.append(logs["loss"])


def _model(lr):
    torch.manual_seed(0)
    m = Sequential([Dense(8, activation="relu", input_dim=4), Dense(3, activation="softmax")])
    from arignote.optimizers import SGD
    m.compile(SGD(lr=lr), "categorical_crossentropy", metrics=["acc"])
    return m


@pytest.mark.parametrize("accumulate", [1, 3])
def test_each_batch_logs_its_own_loss_and_the_metrics_run_over_the_epoch(accumulate):
    rng = np.random.default_rng(0)
    x = rng.random((44, 4)).astype("float32")
    y = np.eye(3, dtype="float32")[rng.integers(0, 3, 44)]
    m = _model(lr=0.0)  # the weights stay: each batch's loss can be recomputed afterwards
    h = LossHistory()
    hist = m.fit(x, y, batch_size=10, epochs=1, verbose=0, shuffle=False, callbacks=[h],
                 accumulate=accumulate)
    batches = [(x[i:i + 10], y[i:i + 10]) for i in range(0, 44, 10)]  # 10, 10, 10, 10, 4
    own = [m.evaluate(a, b, batch_size=10, verbose=0)[0] for a, b in batches]
    np.testing.assert_allclose(h.losses, own, rtol=1e-6)
    assert len(set(np.round(h.losses, 6))) == 5  # not one running value repeated
    # the running loss (what the progress bar shows) ends at the epoch's mean, History's value
    sizes = np.array([len(a) for a, _ in batches])
    running = np.cumsum(np.array(own) * sizes) / np.cumsum(sizes)
    np.testing.assert_allclose(h.running, running, rtol=1e-6)
    np.testing.assert_allclose(hist.history["loss"][0], running[-1], rtol=1e-6)
    # accuracy: a running value over the epoch (Keras 2.3's metrics are stateful)
    hits = [np.sum(np.argmax(m.predict(a), 1) == np.argmax(b, 1)) for a, b in batches]
    np.testing.assert_allclose(h.accs, np.cumsum(hits) / np.cumsum(sizes), rtol=1e-6)


def test_each_evaluation_batch_logs_its_own_loss():
    rng = np.random.default_rng(1)
    x = rng.random((25, 4)).astype("float32")
    y = np.eye(3, dtype="float32")[rng.integers(0, 3, 25)]
    m = _model(lr=0.1)
    t = EvalLosses()
    total = m.evaluate(x, y, batch_size=10, verbose=0, callbacks=[t])[0]
    own = [m.evaluate(x[i:i + 10], y[i:i + 10], verbose=0)[0] for i in range(0, 25, 10)]
    np.testing.assert_allclose(t.losses, own, rtol=1e-6)
    np.testing.assert_allclose(total, np.dot(own, [10, 10, 5]) / 25, rtol=1e-6)
