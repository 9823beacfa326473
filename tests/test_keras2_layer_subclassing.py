"""Keras 2.3.1 behaviours of custom (subclassed) layers and models: a sublayer's activity penalty
inside a custom layer called on symbolic tensors (Keras's layer_subclassing_tests.py::test_loss_tracking),
a subclassed model's summary with weights of its own, deepcopy / pickle of a called layer."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
import torch

import arignote
from arignote import backend as K
from arignote import layers


class Wrapping(layers.Layer):
    """A custom layer calling a regularized Dense on the tensor it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.dense = layers.Dense(3, kernel_regularizer="l2", activity_regularizer="l2")

    def call(self, inputs):
        return self.dense(inputs)


def test_sublayer_activity_penalty_counts_for_the_model_inputs():
    inputs = arignote.Input((2,))
    outputs = Wrapping()(inputs)
    model = arignote.Model(inputs, outputs)
    assert len(model.layers) == 2 and len(model.weights) == 2
    assert len(model.losses) == 2  # the kernel penalty, the activity penalty of the call
    assert len(model.get_losses_for(None)) == 1
    (penalty,) = model.get_losses_for(inputs)
    x = np.arange(4, dtype="float32").reshape(2, 2)
    y = model.predict(x)
    (value,) = K.function([inputs], [penalty])([x])
    np.testing.assert_allclose(value, 0.01 * np.sum(y ** 2), rtol=1e-5)


class Chained(layers.Layer):
    """A custom layer whose second Dense is called on an intermediate tensor."""

    def __init__(self) -> None:
        super().__init__()
        self.first = layers.Dense(3)
        self.second = layers.Dense(2, activity_regularizer="l1")

    def call(self, inputs):
        return self.second(self.first(inputs))


def test_penalty_of_a_call_on_an_intermediate_tensor_stays_out_of_the_model():
    # Keras 2.3.1 keys it to a tensor that is not an input of the model: model.losses leaves it out
    inputs = arignote.Input((2,))
    model = arignote.Model(inputs, Chained()(inputs))
    assert model.get_losses_for(inputs) == []
    assert model.losses == []


class Scaled(arignote.models.Model):
    """A subclassed model with weights of its own (add_weight) besides its Dense's."""

    def __init__(self) -> None:
        super().__init__()
        self.dense = layers.Dense(3)
        self.scale = self.add_weight("scale", (3,), initializer="ones")
        self.shift = self.add_weight("shift", (3,), initializer="zeros", trainable=False)

    def call(self, x):
        return self.dense(x) * self.scale + self.shift


def test_summary_of_a_subclassed_model_counts_its_own_weights_without_a_row():
    model = Scaled()
    model.predict(np.zeros((2, 4), "float32"))
    lines: list[str] = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    rows = [line.split()[:2] for line in text.splitlines() if "multiple" in line]
    assert rows == [[model.dense.name, "(Dense)"]]  # Keras 2.3.1: its layers by name, no holder row
    assert "OwnWeights" not in text and "_own_weights" not in text
    assert "Total params: 21" in text  # 4*3+3 (Dense) + 3 + 3 (its own)
    assert "Trainable params: 18" in text and "Non-trainable params: 3" in text
    assert model.count_params() == 21


class AddsLoss(layers.Layer):
    """A custom layer adding a loss of its input at each call."""

    def call(self, x):
        self.add_loss(torch.mean(x ** 2))
        return 2 * x


def _values(losses):
    return sorted(float(v.detach()) for v in losses)


def _pickled(obj):
    return pickle.loads(pickle.dumps(obj))


@pytest.mark.parametrize("clone", [copy.deepcopy, _pickled], ids=["deepcopy", "pickle"])
def test_copy_of_a_layer_called_on_torch_tensors(clone):
    x = torch.arange(8, dtype=torch.float32).reshape(2, 4)
    dense = layers.Dense(3, kernel_regularizer="l2", activity_regularizer="l2")
    y = dense(x)
    assert len(dense.losses) == 2  # the kernel penalty, this call's activity penalty
    twin = clone(dense)
    for a, b in zip(twin.get_weights(), dense.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert not any(a is b for a in twin.parameters() for b in dense.parameters())
    # the copy has no per-call loss (not called yet); its weight penalty is the original's
    (kernel_penalty,) = twin.losses
    assert float(kernel_penalty.detach()) == pytest.approx(float(0.01 * dense.kernel.detach().pow(2).sum()))
    assert len(dense.losses) == 2  # the original keeps its call's penalty
    torch.testing.assert_close(twin(x), y)
    assert _values(twin.losses) == pytest.approx(_values(dense.losses))
    with torch.no_grad():
        twin.kernel.add_(1.0)  # the weights are copies
    assert not np.allclose(twin.get_weights()[0], dense.get_weights()[0])

    custom = AddsLoss()
    custom(x)
    copied = clone(custom)
    assert copied.losses == []
    copied(torch.ones(1, 2))
    assert [float(v.detach()) for v in copied.losses] == [1.0]


class HoldsAModel(arignote.models.Model):
    """A subclassed model holding a Sequential as an attribute (Keras 2.3.1 tracks it as a layer)."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = arignote.models.Sequential([layers.Dense(2, input_shape=(4,))], name="inner_seq")
        self.head = layers.Dense(1)

    def call(self, x):
        return self.head(self.inner(x))


def test_subclassed_model_trains_and_lists_a_model_it_holds():
    model = HoldsAModel()
    x = np.random.RandomState(0).rand(8, 4).astype("float32")
    before = model.inner.get_weights()[0].copy()
    model.compile("sgd", "mse")
    model.fit(x, np.ones((8, 1), "float32"), epochs=2, verbose=0)
    assert not np.allclose(model.inner.get_weights()[0], before)  # its weights train with the model
    assert model.layers == [model.inner, model.head]
    assert model.count_params() == 4 * 2 + 2 + 2 + 1
    assert len(model.trainable_weights) == 4
    lines: list[str] = []
    model.summary(print_fn=lines.append)
    rows = [line.split()[:3] for line in "\n".join(lines).splitlines() if "multiple" in line]
    assert rows == [["inner_seq", "(Sequential)", "multiple"], [model.head.name, "(Dense)", "multiple"]]
    assert "Total params: 13" in "\n".join(lines)


@pytest.mark.parametrize("clone", [copy.deepcopy, _pickled], ids=["deepcopy", "pickle"])
def test_copy_of_a_subclassed_model_trains_the_model_it_holds(clone):
    model = HoldsAModel()
    x = np.random.RandomState(1).rand(8, 4).astype("float32")
    with torch.no_grad():
        expected = model(torch.from_numpy(x)).numpy()  # builds it (a predict's trainer does not pickle yet)
    twin = clone(model)
    np.testing.assert_allclose(twin.predict(x), expected, rtol=1e-6)
    assert [layer.name for layer in twin.layers] == ["inner_seq", model.head.name]
    before = twin.inner.get_weights()[0].copy()
    twin.compile("sgd", "mse")
    twin.fit(x, np.ones((8, 1), "float32"), epochs=2, verbose=0)
    assert not np.allclose(twin.inner.get_weights()[0], before)  # the copy's held model trains
    np.testing.assert_allclose(model.predict(x), expected, rtol=1e-6)  # the original does not move
