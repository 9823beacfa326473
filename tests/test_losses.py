"""Every loss against Keras 2's numpy formula; names, torch modules, target checks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arignote import losses

EPS = 1e-7
RNG = np.random.default_rng(1)


def probs(n, c):
    e = np.exp(RNG.standard_normal((n, c)))
    return e / e.sum(-1, keepdims=True)


def onehot(labels, c):
    return np.eye(c)[labels]


def t(a):
    return torch.tensor(np.asarray(a, dtype=np.float64))


def value(fn, y_true, y_pred):
    """The batch mean of a loss's values, which Keras 2.3.1 returns one per sample."""
    y_pred = t(y_pred)
    out = fn(t(y_true), y_pred)
    assert out.shape == y_pred.shape[:-1]
    return float(out.mean())


def test_categorical_crossentropy_keras_formula():
    p = probs(6, 4)
    p[0] = [1.0, 0.0, 0.0, 0.0]  # exact zeros are clipped to eps, not -inf
    y = onehot([1, 0, 3, 2, 2, 1], 4)
    clipped = np.clip(p / p.sum(-1, keepdims=True), EPS, 1 - EPS)
    expected = np.mean(-np.sum(y * np.log(clipped), -1))
    assert value(losses.categorical_crossentropy, y, p) == pytest.approx(expected, rel=1e-12)
    # unnormalized "probabilities" are renormalized as in Keras
    assert value(losses.categorical_crossentropy, y, 3 * p) == pytest.approx(expected, rel=1e-9)
    assert np.isfinite(value(losses.categorical_crossentropy, onehot([1], 4), [[1.0, 0, 0, 0]]))


def test_sparse_categorical_crossentropy_keras_formula_and_label_shapes():
    p = probs(5, 3)
    labels = np.array([0, 2, 1, 1, 0])
    clipped = np.clip(p, EPS, 1 - EPS)
    # TF route: softmax cross-entropy on log(clipped p) == -log(clipped p_y / sum clipped p)
    expected = np.mean(-np.log(clipped[np.arange(5), labels] / clipped.sum(-1)))
    for y in (labels, labels.reshape(-1, 1), labels.astype(np.float32)):
        got = float(losses.sparse_categorical_crossentropy(torch.tensor(y), t(p)).mean())
        assert got == pytest.approx(expected, rel=1e-9)
    assert value(losses.sparse_categorical_crossentropy, labels, p) == pytest.approx(
        value(losses.categorical_crossentropy, onehot(labels, 3), p), rel=1e-9
    )


def test_binary_crossentropy_keras_formula():
    p = RNG.uniform(size=(7, 2))
    p[0, 0], p[1, 1] = 0.0, 1.0
    y = RNG.integers(0, 2, (7, 2)).astype(float)
    c = np.clip(p, EPS, 1 - EPS)
    expected = np.mean(-(y * np.log(c) + (1 - y) * np.log(1 - c)))
    assert value(losses.binary_crossentropy, y, p) == pytest.approx(expected, rel=1e-9)
    # (N,) targets against an (N, 1) sigmoid output
    got = float(losses.binary_crossentropy(t(y[:, 0]), t(p[:, :1])).mean())
    c0 = c[:, 0]
    assert got == pytest.approx(np.mean(-(y[:, 0] * np.log(c0) + (1 - y[:, 0]) * np.log(1 - c0))), rel=1e-9)


@pytest.mark.parametrize(
    "name,ref",
    [
        ("mean_squared_error", lambda y, p: np.mean((p - y) ** 2)),
        ("mse", lambda y, p: np.mean((p - y) ** 2)),
        ("mean_absolute_error", lambda y, p: np.mean(np.abs(p - y))),
        ("mae", lambda y, p: np.mean(np.abs(p - y))),
        ("mape", lambda y, p: 100 * np.mean(np.abs(y - p) / np.maximum(np.abs(y), EPS))),
        (
            "msle",
            lambda y, p: np.mean((np.log(np.maximum(p, EPS) + 1) - np.log(np.maximum(y, EPS) + 1)) ** 2),
        ),
        ("hinge", lambda y, p: np.mean(np.maximum(1 - y * p, 0))),
        ("squared_hinge", lambda y, p: np.mean(np.maximum(1 - y * p, 0) ** 2)),
        ("poisson", lambda y, p: np.mean(p - y * np.log(p + EPS))),
    ],
)
def test_regression_losses(name, ref):
    y = RNG.uniform(0.1, 2, (6, 3))
    p = RNG.uniform(0.1, 2, (6, 3))
    assert value(losses.get(name), y, p) == pytest.approx(ref(y, p), rel=1e-9)


def test_kld():
    y, p = probs(4, 5), probs(4, 5)
    expected = np.mean(np.sum(y * np.log(y / p), -1))
    assert value(losses.get("kld"), y, p) == pytest.approx(expected, rel=1e-9)


def test_mse_reshapes_flat_targets_instead_of_broadcasting():
    # (N,) targets with an (N, 1) output must not broadcast to (N, N)
    y, p = np.arange(4.0), np.arange(4.0).reshape(4, 1) + 1
    assert value(losses.mse, y, p) == pytest.approx(1.0)


def test_get_names_aliases_and_did_you_mean():
    assert losses.get("mse") is losses.mean_squared_error is losses.mse
    assert losses.get("MAE") is losses.mean_absolute_error
    assert losses.get(losses.binary_crossentropy) is losses.binary_crossentropy
    with pytest.raises(ValueError, match="Did you mean 'categorical_crossentropy'") as err:
        losses.get("categorical_crossentropyy")
    assert "Valid losses:" in str(err.value) and "sparse_categorical_crossentropy" in str(err.value)
    with pytest.raises(ValueError, match="unknown loss 'xyz'"):
        losses.get("xyz")
    with pytest.raises(ValueError, match="callable"):
        losses.get(3)
    assert losses.name_of("mse") == "mean_squared_error" == losses.serialize("mse")


def test_torch_loss_module_is_called_in_torch_order():
    fn = losses.get(torch.nn.MSELoss())
    y, p = torch.tensor([1.0, 2.0]), torch.tensor([1.5, 2.0])
    assert float(fn(y, p)) == pytest.approx(0.125)
    ce = losses.get(torch.nn.CrossEntropyLoss())
    logits = torch.tensor([[2.0, 0.0], [0.0, 2.0]])
    labels = torch.tensor([0, 1])
    assert float(ce(labels, logits)) == pytest.approx(
        float(torch.nn.functional.cross_entropy(logits, labels))
    )
    assert fn.__name__ == "MSELoss"


def test_losses_backprop():
    p = torch.tensor([[0.3, 0.7]], requires_grad=True)
    losses.categorical_crossentropy(torch.tensor([[0.0, 1.0]]), p).sum().backward()
    assert torch.isfinite(p.grad).all() and p.grad[0, 1] < 0


# --------------------------------------------------------------------------- check_targets


def test_check_targets_sparse():
    losses.check_targets("sparse_categorical_crossentropy", np.array([0, 9, 3]), (10,))
    losses.check_targets("sparse_categorical_crossentropy", np.array([[0], [9]]), (10,))
    losses.check_targets("sparse_categorical_crossentropy", np.array([0.0, 2.0]), (10,))
    with pytest.raises(ValueError, match=r"expects integer labels in \[0, 10\), got 10"):
        losses.check_targets("sparse_categorical_crossentropy", np.array([0, 10]), (10,))
    with pytest.raises(ValueError, match=r"in \[0, 10\), got -1"):
        losses.check_targets("sparse_categorical_crossentropy", np.array([-1, 3]), (10,))
    with pytest.raises(ValueError, match="got one-hot targets of width 10: use categorical_crossentropy"):
        losses.check_targets("sparse_categorical_crossentropy", np.eye(10)[[1, 2]], (10,))
    with pytest.raises(ValueError, match="non-integer"):
        losses.check_targets("sparse_categorical_crossentropy", np.array([0.5, 1.0]), (10,))


def test_check_targets_categorical():
    losses.check_targets("categorical_crossentropy", np.eye(10)[[1, 2]], (10,))
    with pytest.raises(ValueError) as err:
        losses.check_targets("categorical_crossentropy", np.array([1, 2, 3]), (10,))
    assert str(err.value) == (
        "categorical_crossentropy expects one-hot targets of width 10, got integer labels: "
        "use to_categorical(y, 10) or sparse_categorical_crossentropy"
    )
    with pytest.raises(ValueError, match="width 10, got width 5"):
        losses.check_targets("categorical_crossentropy", np.eye(5)[[1, 2]], (10,))


def test_check_targets_binary_and_regression():
    losses.check_targets("binary_crossentropy", np.array([0, 1, 1]), (1,))
    with pytest.raises(ValueError, match=r"expects targets in \[0, 1\], got 3"):
        losses.check_targets("binary_crossentropy", np.array([0, 3]), (1,))
    losses.check_targets("mse", np.zeros((4, 2)), (2,))
    with pytest.raises(ValueError, match="do not match the model output"):
        losses.check_targets("mse", np.zeros((4, 3)), (2,))
    with pytest.raises(ValueError, match="NaN or Inf"):
        losses.check_targets("mse", np.array([[np.nan, 0.0]]), (2,))
    with pytest.raises(ValueError, match="batch dimension"):
        losses.check_targets("mse", np.float32(1.0), (1,))


# --------------------------------------------------------------------------- fused with the activation


@pytest.mark.parametrize(
    "loss,act,make_y",
    [
        ("categorical_crossentropy", "softmax", lambda lab: torch.eye(5, dtype=torch.float64)[lab]),
        ("sparse_categorical_crossentropy", "softmax", lambda lab: lab),
        ("binary_crossentropy", "sigmoid", lambda lab: (lab % 2).double().reshape(-1, 1).expand(-1, 5)),
    ],
)
def test_from_logits_equals_activation_then_loss_incl_clipping(loss, act, make_y):
    z = torch.tensor(RNG.standard_normal((8, 5)) * 3, requires_grad=True)
    with torch.no_grad():
        z[0, 0] = 40.0  # saturated: probabilities beyond the clip range
        z[1, 1] = -40.0
    lab = torch.tensor(RNG.integers(0, 5, 8))
    lab[0] = 0
    y = make_y(lab)
    fused = losses.from_logits(loss, act)
    ref_z = z.detach().clone().requires_grad_()
    ref = losses.get(loss)(y, torch.softmax(ref_z, -1) if act == "softmax" else torch.sigmoid(ref_z)).mean()
    out = fused(y, z)
    assert float(out.detach()) == pytest.approx(float(ref.detach()), rel=1e-9)
    out.backward()
    ref.backward()
    np.testing.assert_allclose(z.grad.numpy(), ref_z.grad.numpy(), rtol=1e-6, atol=1e-12)


def test_from_logits_only_where_fusable():
    assert losses.from_logits("mse", "softmax") is None
    assert losses.from_logits("categorical_crossentropy", "relu") is None
    assert losses.from_logits("categorical_crossentropy", None) is None
    assert losses.from_logits(losses.binary_crossentropy, "sigmoid") is not None


# ------------------------------------------------------------------ Keras 2.3.1 shapes, compile's forms


@pytest.mark.parametrize("name", sorted(fn.__name__ for fn in losses._FORMS))
def test_every_loss_returns_one_value_per_sample_or_step_and_its_forms_agree(name):
    fn = losses.get(name)
    c = 4
    p = torch.tensor(RNG.uniform(0.05, 0.95, (3, 5, c)))
    labels = torch.tensor(RNG.integers(0, c, (3, 5)))
    y = labels if name.startswith("sparse") else torch.eye(c, dtype=torch.float64)[labels]
    values = fn(y, p)
    assert values.shape == (3, 5)  # Keras 2.3.1: per time step for a sequence output
    assert fn(y[:, 0], p[:, 0]).shape == (3,)  # per sample for a 2-D output
    torch.testing.assert_close(losses.per_sample(name)(y, p), values)
    torch.testing.assert_close(losses.batch_mean(name)(y, p), values.mean())
    torch.testing.assert_close(losses.compiled(name)(y, p), values.mean())


def test_compiled_loss_weighs_and_masks_as_keras_2_3_1():
    from arignote.losses.weighting import Weighted

    y = torch.zeros(2, 3, 1)
    p = torch.tensor([[[1.0], [2.0], [3.0]], [[4.0], [5.0], [6.0]]])
    mask = torch.tensor([[True, True, False], [True, False, False]])
    fn = losses.compiled("mse")
    # the mask multiplies the values, the denominator stays the number of values (2 * 3)
    assert float(fn(Weighted((y, None, mask)), p)) == pytest.approx((1 + 4 + 16) / 6)
    # per-sample weights times the per-step mask
    w = torch.tensor([2.0, 0.5])
    assert float(fn(Weighted((y, w, mask)), p)) == pytest.approx((2 * (1 + 4) + 0.5 * 16) / 6)
    # a custom loss's per-step values are weighed the same way
    custom = losses.compiled(lambda yt, yp: (yp - yt).abs().sum(-1))
    assert float(custom(Weighted((y, w, mask)), p)) == pytest.approx((2 * (1 + 2) + 0.5 * 4) / 6)


def test_the_other_keras_2_3_1_losses_against_numpy():
    y = RNG.uniform(-1, 1, (4, 3))
    p = RNG.uniform(-1, 1, (4, 3))
    hot = np.eye(3)[[0, 2, 1, 1]]
    pos, neg = (hot * p).sum(-1), ((1 - hot) * p).max(-1)
    np.testing.assert_allclose(losses.categorical_hinge(t(hot), t(p)).numpy(), np.maximum(0, neg - pos + 1))
    logcosh = np.mean(np.log(np.cosh(p - y)), -1)
    np.testing.assert_allclose(losses.logcosh(t(y), t(p)).numpy(), logcosh, rtol=1e-9)
    err = np.abs(p - y) * 3
    huber = np.where(err <= 1.0, 0.5 * err ** 2, err - 0.5)  # delta 1: elementwise, as Keras 2.3.1
    np.testing.assert_allclose(losses.huber_loss(t(3 * y), t(3 * p)).numpy(), huber, rtol=1e-9)
    unit = lambda a: a / np.linalg.norm(a, axis=-1, keepdims=True)  # noqa: E731
    cosine = -(unit(y) * unit(p)).sum(-1)
    np.testing.assert_allclose(losses.get("cosine_similarity")(t(y), t(p)).numpy(), cosine, rtol=1e-9)
    assert losses.get("cosine") is losses.cosine_proximity
    # compile trains with the batch mean of their values
    want = float(losses.huber_loss(t(y), t(p)).mean())
    assert float(losses.compiled("huber_loss")(t(y), t(p))) == pytest.approx(want)


def test_hinge_turns_0_1_labels_into_minus_1_1_as_keras_2_3_1():
    p = t([[0.3, -0.2], [0.8, 0.1]])
    binary = t([[0.0, 1.0], [1.0, 0.0]])
    assert losses.hinge(binary, p).tolist() == pytest.approx(losses.hinge(2 * binary - 1, p).tolist())
    other = t([[0.0, 2.0], [1.0, 0.0]])  # not all 0/1: kept as given
    kept = np.maximum(1 - other.numpy() * p.numpy(), 0).mean(-1)
    assert losses.hinge(other, p).tolist() == pytest.approx(kept)


def test_crossentropy_from_logits_and_label_smoothing():
    z = t(RNG.normal(size=(5, 4)))
    y = t(np.eye(4)[[0, 1, 2, 3, 1]])
    probs_ = torch.softmax(z, -1)
    torch.testing.assert_close(losses.categorical_crossentropy(y, z, from_logits=True),
                               losses.categorical_crossentropy(y, probs_))
    torch.testing.assert_close(losses.categorical_crossentropy(y, probs_, label_smoothing=0.2),
                               losses.categorical_crossentropy(y * 0.8 + 0.05, probs_))
    labels = t([0, 1, 2, 3, 1])
    torch.testing.assert_close(losses.sparse_categorical_crossentropy(labels, z, from_logits=True),
                               losses.sparse_categorical_crossentropy(labels, probs_))
    yb = t(RNG.integers(0, 2, (5, 4)))
    torch.testing.assert_close(losses.binary_crossentropy(yb, z, from_logits=True),
                               losses.binary_crossentropy(yb, torch.sigmoid(z)))
    torch.testing.assert_close(losses.binary_crossentropy(yb, torch.sigmoid(z), label_smoothing=0.2),
                               losses.binary_crossentropy(yb * 0.8 + 0.1, torch.sigmoid(z)))


def test_check_targets_leaves_a_user_defined_loss_alone():
    # Keras 2.3.1 (engine/training.py _standardize_user_data): a loss function that is not in
    # keras.losses gets feed_output_shapes None, so the triplet-loss answers' dummy targets
    # np.zeros((n, 1)) for a (n, 24) output train without complaint
    def triplet_loss(y_true, y_pred):
        return torch.zeros(y_pred.shape[0])

    losses.check_targets(triplet_loss, np.zeros((4, 1)), (24,))
    with pytest.raises(ValueError, match="NaN or Inf"):
        losses.check_targets(triplet_loss, np.array([[np.nan]]), (24,))
    with pytest.raises(ValueError, match="do not match the model output"):
        losses.check_targets(losses.mean_squared_error, np.zeros((4, 1)), (24,))  # a built-in is checked
