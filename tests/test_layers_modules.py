"""``activations``, ``initializers``, ``regularizers``, ``constraints`` and the get/serialize/deserialize
of ``losses``, ``metrics``, ``optimizers``, checked against hand-computed values."""

from __future__ import annotations

import math

import pytest
import torch

from arignote import activations, constraints, initializers, losses, metrics, optimizers, regularizers


def test_activations_values_and_keras_arguments():
    x = torch.tensor([[-2.0, 0.5, 3.0, 7.0]])
    assert activations.relu(x).tolist() == [[0.0, 0.5, 3.0, 7.0]]
    # threshold=1: x<=1 -> alpha*(x-1); max_value clips
    got = activations.relu(x, alpha=0.1, max_value=6.0, threshold=1.0)
    assert torch.allclose(got, torch.tensor([[-0.3, -0.05, 3.0, 6.0]]))
    assert torch.allclose(activations.hard_sigmoid(x), torch.tensor([[0.1, 0.6, 1.0, 1.0]]))
    assert torch.allclose(activations.elu(x, alpha=2.0)[0, 0], torch.tensor(2.0 * (math.exp(-2) - 1)))
    s = activations.softmax(torch.tensor([[1.0, 2.0], [3.0, 5.0]]), axis=0)
    assert torch.allclose(s.sum(0), torch.ones(2))
    with pytest.raises(ValueError, match="1D"):
        activations.softmax(torch.ones(3))
    assert activations.get(None) is activations.linear
    assert activations.get("tanh") is activations.tanh
    assert activations.serialize(activations.get("softmax")) == "softmax"
    assert activations.deserialize("swishy", custom_objects={"swishy": torch.sin}) is torch.sin
    with pytest.raises(ValueError, match="Did you mean 'relu'"):
        activations.get("reluu")


def test_initializer_statistics_use_keras_fans():
    torch.manual_seed(0)
    # Conv2D kernel (3, 3, 16, 32): fan_in = 144, fan_out = 288
    w = initializers.get("glorot_uniform")((3, 3, 16, 32))
    limit = math.sqrt(6.0 / (144 + 288))
    assert w.abs().max() <= limit and w.abs().max() > 0.95 * limit
    w = initializers.he_normal()((400, 300))
    # truncated normal corrected to the requested std sqrt(2 / fan_in)
    assert abs(w.std().item() - math.sqrt(2 / 400)) < 0.003
    assert w.abs().max() <= 2 * math.sqrt(2 / 400) / 0.8796 + 1e-6
    assert torch.equal(initializers.Constant(3)((2, 2)), torch.full((2, 2), 3.0))
    assert torch.equal(initializers.Identity(gain=2.0)((2, 3)), 2 * torch.eye(2, 3))
    q = initializers.Orthogonal()((5, 20))
    assert torch.allclose(q @ q.t(), torch.eye(5), atol=1e-5)
    u = initializers.RandomUniform(minval=1.0, maxval=2.0)((1000,))
    assert 1.0 <= u.min() and u.max() < 2.0


def test_initializer_seed_is_reproducible_and_advances():
    a, b = initializers.RandomNormal(seed=3), initializers.RandomNormal(seed=3)
    assert torch.equal(a((4,)), b((4,)))
    assert a.seed == 4
    assert not torch.equal(a((4,)), initializers.RandomNormal(seed=3)((4,)))


def test_initializer_get_serialize_deserialize():
    g = initializers.get("glorot_uniform")
    assert isinstance(g, initializers.VarianceScaling) and g.mode == "fan_avg" and g.distribution == "uniform"
    cfg = initializers.serialize(initializers.VarianceScaling(scale=2.0, mode="fan_out"))
    assert cfg == {
        "class_name": "VarianceScaling",
        "config": {"scale": 2.0, "mode": "fan_out", "distribution": "normal", "seed": None},
    }
    again = initializers.deserialize(cfg)
    assert (again.scale, again.mode) == (2.0, "fan_out")
    assert isinstance(initializers.get("uniform"), initializers.RandomUniform)
    assert isinstance(initializers.get({"class_name": "Zeros", "config": {}}), initializers.Zeros)
    with pytest.raises(
        ValueError, match="Unknown initializer: 'glorot_unifrom'. Did you mean 'glorot_uniform'"
    ):
        initializers.get("glorot_unifrom")
    with pytest.raises(ValueError, match="mode"):
        initializers.VarianceScaling(mode="fan_x")


def test_regularizers_penalties_and_serialization():
    x = torch.tensor([1.0, -2.0])
    assert regularizers.l1(0.1)(x).item() == pytest.approx(0.3)
    assert regularizers.l2(0.1)(x).item() == pytest.approx(0.5)
    assert regularizers.l1_l2(0.1, 0.1)(x).item() == pytest.approx(0.8)
    r = regularizers.get("l2")
    assert (r.l1, r.l2) == (0.0, 0.01)
    cfg = regularizers.serialize(regularizers.L1L2(l1=0.5))
    assert cfg == {"class_name": "L1L2", "config": {"l1": 0.5, "l2": 0.0}}
    assert regularizers.deserialize(cfg).l1 == 0.5
    assert regularizers.get(None) is None
    with pytest.raises(ValueError, match=">= 0"):
        regularizers.L1L2(l1=-1)


def test_constraints_project_along_keras_axis():
    w = torch.tensor([[3.0, 0.3], [4.0, 0.4]])  # column norms 5 and 0.5
    got = constraints.MaxNorm(1.0)(w)
    assert torch.allclose(got[:, 0], torch.tensor([0.6, 0.8]), atol=1e-6)
    assert torch.allclose(got[:, 1], w[:, 1], atol=1e-6)
    assert torch.allclose(constraints.UnitNorm(axis=1)(w).norm(dim=1), torch.ones(2), atol=1e-6)
    assert constraints.NonNeg()(torch.tensor([-1.0, 2.0])).tolist() == [0.0, 2.0]
    mm = constraints.MinMaxNorm(min_value=1.0, max_value=2.0, rate=0.5)(w)
    # column 1 norm 0.5 -> 0.5*1 + 0.5*0.5 = 0.75
    assert mm[:, 1].norm().item() == pytest.approx(0.75, rel=1e-5)
    assert isinstance(constraints.get("max_norm"), constraints.MaxNorm)
    cfg = constraints.serialize(constraints.MaxNorm(3, axis=[0, 1, 2]))
    assert constraints.deserialize(cfg).axis == [0, 1, 2]
    with pytest.raises(ValueError, match="Unknown constraint"):
        constraints.get("max_nrom")


def test_losses_metrics_optimizers_serialization():
    assert losses.deserialize(losses.serialize("mse")) is losses.mean_squared_error

    def my_loss(y_true, y_pred):
        return (y_true - y_pred).abs()

    assert losses.deserialize("my_loss", custom_objects={"my_loss": my_loss}) is my_loss
    assert metrics.serialize(metrics.binary_accuracy) == "binary_accuracy"
    assert metrics.deserialize("binary_accuracy") is metrics.binary_accuracy
    assert metrics.deserialize("mae") is losses.mean_absolute_error
    assert metrics.serialize(metrics.get("acc", loss="categorical_crossentropy")) == "acc"
    opt = optimizers.deserialize(optimizers.serialize(optimizers.Adam(lr=0.01)))
    assert isinstance(opt, optimizers.Adam) and opt.get_config()["learning_rate"] == pytest.approx(0.01)
    with pytest.raises(ValueError, match="unknown optimizer"):
        optimizers.deserialize({"class_name": "Adamm", "config": {}})


def test_fit_and_evaluate_add_regularization_and_apply_constraints():
    import numpy as np

    from arignote import config
    from arignote.layers import ActivityRegularization, Dense
    from arignote.models import Sequential

    x = np.array([[1.0, 2.0], [0.5, -1.0]], dtype=np.float32)
    with config.override(device="cpu", print_active_device=False):
        model = Sequential([Dense(1, use_bias=False, kernel_initializer="ones", input_shape=(2,),
                                  kernel_regularizer=regularizers.l2(0.1))])
        model.compile("sgd", "mse")
        # predictions equal the targets: the loss is the penalty alone, 0.1 * (1 + 1)
        assert model.evaluate(x, x.sum(1, keepdims=True), verbose=0) == pytest.approx(0.2, rel=1e-5)
        act = Sequential([Dense(1, use_bias=False, kernel_initializer="ones", input_shape=(2,)),
                          ActivityRegularization(l1=1.0)])
        act.compile("sgd", "mse")
        # the activity penalty of the batch: sum |y| = 3 + 0.5
        got = act.evaluate(x, x.sum(1, keepdims=True), verbose=0, batch_size=2)
        assert got == pytest.approx(3.5, rel=1e-5)
        hist = model.fit(x, x.sum(1, keepdims=True), epochs=1, verbose=0, batch_size=2)
        assert hist.history["loss"][0] == pytest.approx(0.2, rel=1e-5)  # logged with the penalty, as Keras 2
        positive = np.abs(x)  # with positive inputs the gradient pushes every weight below zero
        kernels = []
        for constraint in (None, constraints.NonNeg()):
            m = Sequential([Dense(3, input_shape=(2,), use_bias=False, kernel_initializer="ones",
                                  kernel_constraint=constraint)])
            m.compile(optimizers.SGD(lr=1.0), "mse")
            m.fit(positive, -10 * np.ones((2, 3), dtype=np.float32), epochs=1, verbose=0, batch_size=2)
            kernels.append(m.layers[0].get_weights()[0])
        assert (kernels[0] < 0).all()  # the update alone goes negative
        np.testing.assert_array_equal(kernels[1], 0.0)  # NonNeg projects it back after the step
