"""A custom layer that defines ``compute_output_shape`` and holds sublayers built in its ``call``:
Keras 2.3.1 runs ``call`` symbolically when the graph is built, so right after ``Model(...)`` /
``Sequential([...])`` the sublayers' weights exist (``model.weights``, ``summary()``,
``load_weights``) and their activity penalties are in ``model.losses`` (checked on /work/k2venv:
2 weights, 16 params, 1 loss for the models below). A layer that needs nothing is not run."""

from __future__ import annotations

import numpy as np
import pytest

import arignote
from arignote import backend as K
from arignote import layers, regularizers


class Block(layers.Layer):
    """Declares its output shape; its Dense is built by the first call."""

    calls = 0

    def __init__(self, penalty: bool = True, **kwargs) -> None:
        super().__init__(**kwargs)
        self.dense = layers.Dense(4, activity_regularizer=regularizers.l2(0.01) if penalty else None)

    def call(self, inputs):
        type(self).calls += 1
        return self.dense(inputs)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], 4)


def functional():
    inputs = arignote.Input((3,))
    return arignote.Model(inputs, Block()(inputs)), inputs


def sequential():
    model = arignote.Sequential([Block(input_shape=(3,))])
    return model, model.inputs[0]


@pytest.mark.parametrize("make", [functional, sequential])
def test_sublayer_weights_and_penalty_exist_once_the_graph_is_built(make):
    model, inputs = make()
    assert [tuple(w.shape) for w in model.weights] == [(3, 4), (4,)]
    assert model.count_params() == 16
    lines = []
    model.summary(print_fn=lines.append)
    assert "Total params: 16" in "\n".join(lines)
    (penalty,) = model.losses
    x = np.arange(6, dtype="float32").reshape(2, 3)
    (value,) = K.function([inputs], [penalty])([x])
    y = model.predict(x)
    assert float(value) == pytest.approx(0.01 * float(np.sum(y ** 2)), rel=1e-5)


@pytest.mark.parametrize("make", [functional, sequential])
def test_load_weights_right_after_building(make, tmp_path):
    saved, _ = make()
    path = str(tmp_path / "twin.h5")
    saved.save_weights(path)  # before any fit or predict
    model, _ = make()
    model.load_weights(path)
    for a, b in zip(saved.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)
    x = np.random.RandomState(0).rand(5, 3).astype("float32")
    np.testing.assert_allclose(model.predict(x), saved.predict(x), rtol=1e-6)


class Shapeless(layers.Layer):
    """Declares its output shape, has no sublayer: its call (which fails on zeros) is not run."""

    def call(self, inputs):
        raise AssertionError("call ran while the graph was built")

    def compute_output_shape(self, input_shape):
        return input_shape


def test_a_layer_that_needs_nothing_is_not_run_while_the_graph_is_built():
    inputs = arignote.Input((3,))
    assert Shapeless()(inputs).shape == (None, 3)
    block = Block(penalty=False)
    Block.calls = 0
    y = block(inputs)
    assert Block.calls == 1  # one run builds its Dense
    assert y.shape == (None, 4)
    assert block(arignote.Input((3,))).shape == (None, 4)
    assert Block.calls == 1  # built, no penalty to record: its second symbolic call does not run it
    penalized = Block()
    other = arignote.Input((3,))
    penalized(inputs), penalized(other)
    assert Block.calls == 3  # each call records its Dense's activity penalty, as Keras 2.3.1
    assert len(penalized.dense.get_losses_for(inputs)) == len(penalized.dense.get_losses_for(other)) == 1


class Broken(Block):
    def call(self, inputs):
        return self.dense(inputs[:, :, 0])  # two dims only


def test_a_failing_build_run_names_the_layer_and_no_compute_output_shape_advice():
    expected = r"'broken_1' \(Broken\).*build them in build\(input_shape\)"
    with pytest.raises(ValueError, match=expected) as info:
        Broken(name="broken_1")(arignote.Input((3,)))
    assert "Define compute_output_shape" not in str(info.value)
