"""Each optimizer's first steps against a numpy implementation of Keras 2's update rule."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch

from arignote import optimizers

STEPS = 6


def grads(seed=0, shape=(3, 4)):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape), [rng.standard_normal(shape) for _ in range(STEPS)]


def run_torch(opt, w0, gs, lr_at=None):
    """Apply ``gs`` with ``opt`` on a float64 parameter; ``lr_at={step: lr}`` changes lr like a callback."""
    p = torch.nn.Parameter(torch.tensor(w0))
    opt.build([p])
    for i, g in enumerate(gs):
        if lr_at and i in lr_at:
            opt.lr = lr_at[i]
        p.grad = torch.tensor(g)
        opt.step()
    assert opt.iterations == len(gs)
    return p.detach().numpy()


# --------------------------------------------------------------------------- Keras 2 rules in numpy


def keras_sgd(w, gs, lr, momentum=0.0, decay=0.0, nesterov=False, lr_at=None):
    v = np.zeros_like(w)
    for i, g in enumerate(gs):
        if lr_at and i in lr_at:
            lr = lr_at[i]
        lr_t = lr / (1 + decay * i)
        v = momentum * v - lr_t * g
        w = w + (momentum * v - lr_t * g if nesterov else v)
    return w


def keras_rmsprop(w, gs, lr, rho=0.9, eps=1e-7, decay=0.0):
    a = np.zeros_like(w)
    for i, g in enumerate(gs):
        lr_t = lr / (1 + decay * i)
        a = rho * a + (1 - rho) * g * g
        w = w - lr_t * g / (np.sqrt(a) + eps)
    return w


def keras_adam(w, gs, lr, b1=0.9, b2=0.999, eps=1e-7, decay=0.0, amsgrad=False):
    m, v, vhat = np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)
    for i, g in enumerate(gs):
        t = i + 1
        lr_t = lr / (1 + decay * i) * np.sqrt(1 - b2**t) / (1 - b1**t)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        vhat = np.maximum(vhat, v)
        w = w - lr_t * m / (np.sqrt(vhat if amsgrad else v) + eps)
    return w


def keras_adagrad(w, gs, lr, eps=1e-7, decay=0.0):
    a = np.zeros_like(w)
    for i, g in enumerate(gs):
        lr_t = lr / (1 + decay * i)
        a = a + g * g
        w = w - lr_t * g / (np.sqrt(a) + eps)
    return w


def keras_adadelta(w, gs, lr=1.0, rho=0.95, eps=1e-7, decay=0.0):
    a, d = np.zeros_like(w), np.zeros_like(w)
    for i, g in enumerate(gs):
        lr_t = lr / (1 + decay * i)
        a = rho * a + (1 - rho) * g * g
        update = g * np.sqrt(d + eps) / np.sqrt(a + eps)
        w = w - lr_t * update
        d = rho * d + (1 - rho) * update * update
    return w


CASES = [
    ("sgd plain", lambda: optimizers.SGD(lr=0.1), lambda w, g: keras_sgd(w, g, 0.1)),
    (
        "sgd momentum decay",
        lambda: optimizers.SGD(lr=0.1, momentum=0.9, decay=0.2),
        lambda w, g: keras_sgd(w, g, 0.1, 0.9, 0.2),
    ),
    (
        "sgd nesterov decay",
        lambda: optimizers.SGD(lr=0.05, momentum=0.8, decay=0.1, nesterov=True),
        lambda w, g: keras_sgd(w, g, 0.05, 0.8, 0.1, True),
    ),
    ("rmsprop", lambda: optimizers.RMSprop(), lambda w, g: keras_rmsprop(w, g, 0.001)),
    (
        "rmsprop decay eps",
        lambda: optimizers.RMSprop(lr=0.01, rho=0.8, epsilon=0.1, decay=0.3),
        lambda w, g: keras_rmsprop(w, g, 0.01, 0.8, 0.1, 0.3),
    ),
    ("adam", lambda: optimizers.Adam(), lambda w, g: keras_adam(w, g, 0.001)),
    # a large epsilon makes the "epsilon hat" difference between Keras and torch visible
    (
        "adam eps hat decay",
        lambda: optimizers.Adam(lr=0.01, beta_1=0.8, beta_2=0.9, epsilon=0.5, decay=0.1),
        lambda w, g: keras_adam(w, g, 0.01, 0.8, 0.9, 0.5, 0.1),
    ),
    (
        "adam amsgrad",
        lambda: optimizers.Adam(lr=0.01, epsilon=0.3, amsgrad=True),
        lambda w, g: keras_adam(w, g, 0.01, eps=0.3, amsgrad=True),
    ),
    ("adagrad", lambda: optimizers.Adagrad(), lambda w, g: keras_adagrad(w, g, 0.01)),
    (
        "adagrad decay",
        lambda: optimizers.Adagrad(lr=0.1, epsilon=0.1, decay=0.5),
        lambda w, g: keras_adagrad(w, g, 0.1, 0.1, 0.5),
    ),
    ("adadelta", lambda: optimizers.Adadelta(), lambda w, g: keras_adadelta(w, g)),
    (
        "adadelta decay",
        lambda: optimizers.Adadelta(lr=0.5, rho=0.9, epsilon=1e-3, decay=0.2),
        lambda w, g: keras_adadelta(w, g, 0.5, 0.9, 1e-3, 0.2),
    ),
]


@pytest.mark.parametrize("label,make,ref", CASES, ids=[c[0] for c in CASES])
def test_matches_keras2_update_rule(label, make, ref):
    w0, gs = grads()
    np.testing.assert_allclose(run_torch(make(), w0, gs), ref(w0, gs), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("nesterov", [False, True])
def test_sgd_momentum_exact_when_lr_changes_midway(nesterov):
    # an LR callback sets opt.lr between steps; Keras's velocity already contains the old lr
    w0, gs = grads(3)
    lr_at = {2: 0.02, 4: 0.05}
    got = run_torch(optimizers.SGD(lr=0.1, momentum=0.9, nesterov=nesterov, decay=0.1), w0, gs, lr_at=lr_at)
    expected = keras_sgd(w0, gs, 0.1, 0.9, decay=0.1, nesterov=nesterov, lr_at=lr_at)
    np.testing.assert_allclose(got, expected, rtol=1e-10)


def test_sgd_state_dict_resume_with_decay_is_exact():
    w0, gs = grads(4)
    full = run_torch(optimizers.SGD(lr=0.1, momentum=0.9, decay=0.5), w0, gs)
    p = torch.nn.Parameter(torch.tensor(w0))
    opt = optimizers.SGD(lr=0.1, momentum=0.9, decay=0.5).build([p])
    for g in gs[:2]:
        p.grad = torch.tensor(g)
        opt.step()
    state = opt.state_dict()
    p2 = torch.nn.Parameter(p.detach().clone())
    opt2 = optimizers.SGD(lr=0.1, momentum=0.9, decay=0.5).build([p2])
    opt2.load_state_dict(state)
    for g in gs[2:]:
        p2.grad = torch.tensor(g)
        opt2.step()
    np.testing.assert_allclose(p2.detach().numpy(), full, rtol=1e-12)


def test_keras_defaults():
    # Keras 2.3.1's get_config: learning_rate, and float32 values for what it keeps in variables
    # (tests/test_keras2_optimizer_configs.py checks every optimizer against real Keras 2.3.1)
    assert optimizers.SGD().get_config() == {"learning_rate": 0.009999999776482582, "decay": 0.0,
                                             "momentum": 0.0, "nesterov": False}
    assert optimizers.RMSprop().get_config() == {"learning_rate": 0.0010000000474974513, "decay": 0.0,
                                                 "rho": 0.8999999761581421, "epsilon": 1e-7}
    assert optimizers.Adam().get_config() == {
        "learning_rate": 0.0010000000474974513,
        "decay": 0.0,
        "beta_1": 0.8999999761581421,
        "beta_2": 0.9990000128746033,
        "epsilon": 1e-7,
        "amsgrad": False,
    }
    assert optimizers.Adadelta().get_config()["learning_rate"] == 1.0 and optimizers.Adadelta().rho == 0.95
    assert optimizers.Adagrad().lr == 0.01


def test_lr_spellings_and_aliases():
    assert optimizers.Adam(learning_rate=0.02).lr == 0.02
    assert optimizers.rmsprop is optimizers.RMSprop and optimizers.sgd(lr=0.3).lr == 0.3
    assert {optimizers.adam, optimizers.adadelta, optimizers.adagrad} == {
        optimizers.Adam,
        optimizers.Adadelta,
        optimizers.Adagrad,
    }
    with pytest.raises(ValueError, match="both lr"):
        optimizers.SGD(lr=0.1, learning_rate=0.2)
    with pytest.raises(ValueError, match="lr must be >= 0"):
        optimizers.SGD(lr=-1)
    with pytest.raises(ValueError, match="nesterov"):
        optimizers.SGD(nesterov=True)
    with pytest.raises(
        TypeError, match="SGD got an unexpected keyword argument 'momentun'. Did you mean 'momentum'"
    ):
        optimizers.SGD(momentun=0.9)


def test_lr_property_sets_torch_groups_with_decay_on_top():
    p = torch.nn.Parameter(torch.zeros(2))
    opt = optimizers.Adam(lr=0.1, decay=1.0).build([p])
    p.grad = torch.ones(2)
    opt.step()
    opt.step()  # iterations = 2 -> next lr_t = lr / 3
    opt.lr = 0.3
    assert opt.lr == 0.3
    assert opt.torch.param_groups[0]["lr"] == pytest.approx(0.1)
    assert opt.learning_rate == 0.3


def test_get_by_name_instance_dict_and_did_you_mean():
    assert isinstance(optimizers.get("rmsprop"), optimizers.RMSprop)
    assert isinstance(optimizers.get("Adam"), optimizers.Adam)
    inst = optimizers.SGD(lr=0.5)
    assert optimizers.get(inst) is inst
    clone = optimizers.get(optimizers.serialize(optimizers.Adam(lr=0.002, amsgrad=True)))
    assert clone.get_config()["learning_rate"] == pytest.approx(0.002) and clone.amsgrad
    with pytest.raises(ValueError, match="Did you mean 'rmsprop'") as err:
        optimizers.get("rmsporp")
    assert "Valid optimizers: sgd, rmsprop, adam, adadelta, adagrad" in str(err.value)
    with pytest.raises(ValueError, match="already bound"):
        optimizers.get(torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1))


def test_state_dict_roundtrip_resumes_identically():
    w0, gs = grads(5)
    full = run_torch(optimizers.Adam(lr=0.01, decay=0.1), w0, gs)

    p = torch.nn.Parameter(torch.tensor(w0))
    opt = optimizers.Adam(lr=0.01, decay=0.1).build([p])
    for g in gs[:3]:
        p.grad = torch.tensor(g)
        opt.step()
    buf = io.BytesIO()
    torch.save({"w": p.detach().clone(), "opt": opt.state_dict()}, buf)
    buf.seek(0)
    saved = torch.load(buf, weights_only=True)
    assert saved["opt"]["iterations"] == 3

    p2 = torch.nn.Parameter(saved["w"].clone())
    opt2 = optimizers.Adam(lr=0.01, decay=0.1).build([p2])
    opt2.load_state_dict(saved["opt"])
    assert opt2.iterations == 3
    for g in gs[3:]:
        p2.grad = torch.tensor(g)
        opt2.step()
    np.testing.assert_allclose(p2.detach().numpy(), full, rtol=1e-12)


def test_clipnorm_and_clipvalue():
    p = torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))
    opt = optimizers.SGD(lr=1.0, clipnorm=1.0).build([p])
    p.grad = torch.tensor([3.0, 4.0], dtype=torch.float64)
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [-0.6, -0.8], rtol=1e-6)  # torch adds 1e-6 to the norm
    q = torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))
    opt = optimizers.SGD(lr=1.0, clipvalue=0.5).build([q])
    q.grad = torch.tensor([3.0, -0.2], dtype=torch.float64)
    opt.step()
    np.testing.assert_allclose(q.detach().numpy(), [-0.5, 0.2])


def test_use_before_build_and_empty_params():
    opt = optimizers.SGD()
    with pytest.raises(RuntimeError, match="build"):
        opt.step()
    opt.zero_grad()  # harmless before build
    opt.build([])  # a model without weights compiles and fits, as in Keras 2.3.1: steps update nothing
    opt.step()
    assert opt.iterations == 1


def test_a_model_without_weights_compiles_fits_and_predicts_as_in_keras():
    from arignote.layers import GlobalAveragePooling1D, Masking
    from arignote.models import Sequential

    model = Sequential([Masking(mask_value=0.0, input_shape=(3, 4)), GlobalAveragePooling1D()])
    model.compile(loss="mae", optimizer="adam")
    x = np.random.default_rng(0).integers(1, 5, size=(2, 3, 4)).astype("float32")
    x[0, 1:, :] = 0
    out = model.predict(x)
    np.testing.assert_array_equal(out[0], x[0, 0])  # the masked steps are left out of the mean
    history = model.fit(x, out, epochs=2, verbose=0)
    assert history.history["loss"] == [0.0, 0.0] and model.optimizer.iterations == 2


def test_zero_grad_and_float32_training_reduces_loss():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    x, y = torch.randn(64, 3), torch.randn(64, 1)
    for make in (
        optimizers.SGD,
        optimizers.RMSprop,
        optimizers.Adam,
        optimizers.Adagrad,
        optimizers.Adadelta,
    ):
        m = torch.nn.Linear(3, 1)
        m.load_state_dict(model.state_dict())
        opt = make().build(m.parameters())
        first = None
        for _ in range(30):
            opt.zero_grad()
            loss = ((m(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            first = float(loss.detach()) if first is None else first
        assert float(((m(x) - y) ** 2).mean().detach()) < first, make.__name__
        opt.zero_grad()
        assert all(p.grad is None for p in m.parameters())


def test_fastest_torch_implementation_is_chosen_on_cpu():
    params = [torch.nn.Parameter(torch.zeros(3))]
    assert optimizers.SGD(momentum=0.9).build(params).torch.defaults["fused"] is True
    assert optimizers.Adam().build(params).torch.defaults["fused"] is True
    assert optimizers.Adagrad().build(params).torch.defaults["fused"] is True
    # no fused kernel: the per-tensor loop, which is faster than foreach on CPU (see _impl_kwargs)
    assert optimizers.RMSprop().build(params).torch.defaults["foreach"] is False
    assert optimizers.Adadelta().build(params).torch.defaults["foreach"] is False
