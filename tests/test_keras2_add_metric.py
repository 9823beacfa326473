"""``add_metric`` on layers and models (Keras 2.3.1 ``Layer.add_metric`` / ``Network.metrics``).

The expected numbers were printed by Keras 2.3.1 (Theano backend, /work/k2venv) on the same
scripts. One deliberate difference: Keras 2.3.1's ``metrics_names`` lists the layers' added
metrics before the model's own while its values come in ``model.metrics`` order (the model's own
first), so its logs mislabel a model that has both; here the names follow the values
(``model.metrics`` order), and the values are Keras's.
"""

from __future__ import annotations

import numpy as np
import pytest

from arignote import backend as K
from arignote import metrics
from arignote.layers import Dense, Input, Layer
from arignote.models import Model


class _SumProbe(Layer):
    def call(self, inputs):
        self.add_metric(K.sum(inputs), name="s")
        return inputs * 2


def _graph_model():
    inp = Input(shape=(2,))
    out = Dense(1, kernel_initializer="ones", bias_initializer="zeros", trainable=False)(_SumProbe()(inp))
    model = Model(inp, out)
    model.add_metric(metrics.Mean(name="mo")(out))
    model.add_metric(K.max(out), name="mx")
    model.compile("sgd", loss="mse", metrics=["mae"])
    return model


def test_layer_and_model_metrics_match_keras_values():
    model = _graph_model()
    x = np.arange(12, dtype="float32").reshape(6, 2)
    y = np.zeros((6, 1))
    hist = model.fit(x, y, batch_size=4, epochs=1, verbose=0, shuffle=False,
                     validation_data=(x[:2], y[:2]))
    # per batch: sums of x 28 and 38 (mean 33); maxima of the output 26 and 42 (mean 34)
    assert hist.history["s"] == [pytest.approx(33.0)]
    assert hist.history["mx"] == [pytest.approx(34.0)]
    assert hist.history["mo"] == [pytest.approx(22.0)]
    assert hist.history["val_s"] == [pytest.approx(6.0)]
    assert hist.history["val_mx"] == [pytest.approx(10.0)]
    # Keras 2.3.1: evaluate(x, y, batch_size=3) -> [670.6666, 22.0, 22.0, 30.0, 33.0]
    np.testing.assert_allclose(model.evaluate(x, y, batch_size=3, verbose=0),
                               [670.6666488647461, 22.0, 22.0, 30.0, 33.0], rtol=1e-6)
    assert [m.name for m in model.metrics] == ["mae", "mo", "mx", "s"]
    assert model.metrics_names == ["loss", "mae", "mo", "mx", "s"]
    assert model._compile_metrics == ["mae"]


def test_subclassed_model_attribute_metric_keeps_its_place():
    class Net(Model):
        def __init__(self):
            super().__init__(name="net")
            self.dense = Dense(2, kernel_initializer="ones")
            self.mean = metrics.Mean(name="m1")  # tracked here: first in the order

        def call(self, x):
            self.add_metric(K.sum(x), name="m2")
            self.add_metric(self.mean(x), name="m1")  # the name is taken: nothing more
            return self.dense(x)

    model = Net()
    model.compile("sgd", "mse")
    x, y = np.ones((10, 1)), np.ones((10, 2))
    hist = model.fit(x, y, epochs=1, batch_size=5, verbose=0)
    assert hist.history["m1"] == [pytest.approx(1.0)] and hist.history["m2"] == [pytest.approx(5.0)]
    assert [m.name for m in model.metrics] == ["m1", "m2"]
    np.testing.assert_allclose(model.evaluate(x * 2, y, batch_size=2, verbose=0)[1:], [2.0, 4.0])


def test_two_metrics_with_one_name_raise():
    class Net(Model):
        def __init__(self):
            super().__init__(name="net")
            self.dense = Dense(2)
            self.a, self.b = metrics.Mean(name="dup"), metrics.Mean(name="dup")

        def call(self, x):
            self.add_metric(self.a(x), name="dup")
            return self.dense(x)

    model = Net()
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match='metrics with the name: "dup"'):
        model.fit(np.ones((4, 1)), np.ones((4, 2)), verbose=0)


def test_nested_layer_metric_and_layer_without_model():
    class Inner(Layer):
        def call(self, x):
            self.add_metric(K.mean(x), name="inner")
            return x

    class Outer(Layer):
        def __init__(self):
            super().__init__()
            self.inner = Inner()

        def call(self, x):
            return self.inner(x)

    outer = Outer()
    import torch

    outer(torch.ones(2, 3))
    outer(torch.full((2, 3), 3.0))
    assert [m.name for m in outer.metrics] == ["inner"]
    assert float(outer.metrics[0].result()) == pytest.approx(2.0)


def test_symbolic_metric_on_a_layer_outside_call_names_the_fix():
    x = Input(shape=(2,))
    with pytest.raises(ValueError, match="functional model"):
        Dense(1).add_metric(K.sum(x), name="s")
