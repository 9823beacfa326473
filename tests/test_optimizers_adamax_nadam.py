"""Adamax and Nadam against real Keras 2.3.1 (tests/fixtures/keras2/optimizers_adamax_nadam.json and
opt_*.h5, from scripts/make_keras2_optimizer_fixture.py): weights after each step, the state Keras
saved in its .h5 restored so that training continues as Keras continued, and our own files read
back (issue 13 items 5 and 7)."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

from arignote import config, optimizers
from arignote.layers import Dense
from arignote.models import Sequential, load_model
from arignote.optimizers.kernels import KerasAdamax

HERE = Path(__file__).parent / "fixtures" / "keras2"
CASES = json.loads((HERE / "optimizers_adamax_nadam.json").read_text())


@pytest.fixture(autouse=True)
def cpu():
    with config.override(device="cpu", print_active_device=False):
        yield


def _model(case):
    model = Sequential([Dense(4, activation="tanh", input_shape=(3,)), Dense(2)])
    model.compile(getattr(optimizers, case["class"])(**case["kwargs"]), "mse")
    model.set_weights([np.asarray(w, "float32") for w in case["start"]])
    return model


def _close(model, expected):
    for got, want in zip(model.get_weights(), expected):
        np.testing.assert_allclose(got, np.asarray(want, "float32"), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_step_matches_keras_2_3_1(name):
    case = CASES[name]
    model = _model(case)
    x, y = np.asarray(case["x"], "float32"), np.asarray(case["y"], "float32")
    for expected in case["steps"]:
        model.train_on_batch(x, y)
        _close(model, expected)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_keras_file_resumes_as_keras_did(name):
    case = CASES[name]
    model = load_model(str(HERE / f"opt_{name}.h5"))
    assert type(model.optimizer).__name__ == case["class"] and model.optimizer.iterations == 3
    _close(model, case["steps"][-1])
    x, y = np.asarray(case["x"], "float32"), np.asarray(case["y"], "float32")
    for expected in case["resumed"]:
        model.train_on_batch(x, y)
        _close(model, expected)


@pytest.mark.parametrize("name", ["adamax", "nadam_schedule"])
def test_our_file_has_keras_layout_and_resumes(name, tmp_path):
    case = CASES[name]
    model = _model(case)
    x, y = np.asarray(case["x"], "float32"), np.asarray(case["y"], "float32")
    for _ in range(3):
        model.train_on_batch(x, y)
    path = tmp_path / "ours.h5"
    model.save(str(path))
    with h5py.File(path) as ours, h5py.File(HERE / f"opt_{name}.h5") as keras:
        ours_names = [n.decode() if isinstance(n, bytes) else n
                      for n in ours["optimizer_weights"].attrs["weight_names"]]
        keras_names = [n.decode() for n in keras["optimizer_weights"].attrs["weight_names"]]
        assert [n.removesuffix(":0") for n in ours_names] == keras_names  # Theano writes no ':0'
        for n_ours, n_keras in zip(ours_names, keras_names):
            np.testing.assert_allclose(np.asarray(ours["optimizer_weights"][n_ours]),
                                       np.asarray(keras["optimizer_weights"][n_keras]), rtol=2e-5, atol=2e-6)
    again = load_model(str(path))
    for expected in case["resumed"]:
        again.train_on_batch(x, y)
        _close(again, expected)


def test_names_defaults_and_config_as_keras():
    assert optimizers.get("nadam").__class__ is optimizers.Nadam is optimizers.nadam
    assert optimizers.get("adamax").__class__ is optimizers.Adamax
    nadam, adamax = optimizers.Nadam(), optimizers.Adamax()
    assert float(nadam.lr) == 0.002 == float(adamax.lr) and nadam.schedule_decay == 0.004
    assert nadam.epsilon == 1e-7 == adamax.epsilon
    keras_cfg = CASES["nadam_schedule"]["config"]
    again = optimizers.deserialize({"class_name": "Nadam", "config": keras_cfg})
    assert (again.beta_1, again.schedule_decay, again.epsilon) == pytest.approx((0.8, 0.05, 1e-4))
    assert abs(float(again.lr) - 0.01) < 1e-7
    assert optimizers.deserialize(optimizers.serialize(again)).get_config() == again.get_config()
    with pytest.raises(TypeError, match="Nadam.*'decay'.*schedule_decay"):
        optimizers.Nadam(decay=0.1)
    with pytest.raises(ValueError, match="Adamax: beta_2 must be in"):
        optimizers.Adamax(beta_2=1.0)


def _keras_adamax_numpy(grads, lr=1e-3, b1=0.9, b2=0.999, eps=1e-7):
    """Keras 2.3.1's Adamax.get_updates written out in float64 numpy."""
    p, m, u = np.zeros_like(grads[0]), np.zeros_like(grads[0]), np.zeros_like(grads[0])
    for t, g in enumerate(grads, start=1):
        m = b1 * m + (1 - b1) * g
        u = np.maximum(b2 * u, np.abs(g))
        p = p - lr / (1 - b1**t) * m / (u + eps)
    return p


def test_keras_adamax_rule_where_torchs_adamax_differs():
    """The mechanism: Keras divides by (u + eps) with u = max(b2 u, |g|); torch.optim.Adamax puts eps
    inside the max. With gradients near or below eps they part ways; ours follows Keras's formula."""
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal(200) * np.logspace(-10, -3, 200) for _ in range(30)]
    keras = _keras_adamax_numpy(grads)
    for foreach in (False, True):
        w = torch.nn.Parameter(torch.zeros(200, dtype=torch.float64))
        opt = KerasAdamax([w], lr=1e-3, eps=1e-7, foreach=foreach)
        for g in grads:
            w.grad = torch.from_numpy(g)
            opt.step()
        np.testing.assert_allclose(w.detach().numpy(), keras, rtol=1e-9, atol=1e-15)
    w = torch.nn.Parameter(torch.zeros(200, dtype=torch.float64))
    theirs = torch.optim.Adamax([w], lr=1e-3, eps=1e-7)
    for g in grads:
        w.grad = torch.from_numpy(g)
        theirs.step()
    assert np.max(np.abs(w.detach().numpy() - keras) / np.abs(keras)) > 0.5  # torch's rule is not Keras's
