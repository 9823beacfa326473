"""The classifier head trained from its logits (training/fused_head.py): which models take it, the
operators it saves (counted), and that training gives the results of Keras's loss on the
probabilities (weights, losses and metrics, also where the clip is active), with the model's own
activation untouched outside the training forward."""

from __future__ import annotations

import math
from collections import Counter
from unittest import mock

import numpy as np
import pytest
import torch

from arignote import activations, losses
from arignote.bench import opcount
from arignote.layers import LSTM, Activation, Dense, Dropout, Embedding, Input
from arignote.models import Model, Sequential
from arignote.regularizers import l2
from arignote.training import fused_head
from arignote.training.fused_head import FusedHead, PlainHead

RNG = np.random.default_rng(0)
X = RNG.random((60, 8), dtype=np.float32)
LABELS = RNG.integers(0, 3, 60)
ONE_HOT = np.eye(3, dtype=np.float32)[LABELS]


def _classifier(activation="softmax", loss="categorical_crossentropy", units=3, seed=0, split=False, **dense):
    torch.manual_seed(seed)
    layers = [Dense(16, activation="relu", input_shape=(8,)), Dropout(0.2)]
    if split:
        layers += [Dense(units, **dense), Activation(activation)]
    else:
        layers += [Dense(units, activation=activation, **dense)]
    m = Sequential(layers)
    m.compile("rmsprop", loss, metrics=["accuracy"])
    return m


def _plain():
    return mock.patch.object(fused_head, "for_model", lambda model: PlainHead())


def _trainer_head(model):
    return model._get_trainer((8,)).head


# ----------------------------------------------------------------------------- which models


@pytest.mark.parametrize("kwargs, fused", [
    ({}, True),
    ({"split": True}, True),  # Dense + Activation('softmax')
    ({"loss": "sparse_categorical_crossentropy"}, True),
    ({"activation": "sigmoid", "loss": "binary_crossentropy", "units": 1}, True),
    ({"loss": "mse"}, False),
    ({"activation": "relu"}, False),
    ({"activation": "sigmoid"}, False),  # sigmoid with a categorical cross-entropy: no fused form
    ({"loss": losses.CategoricalCrossentropy()}, False),  # a Loss object keeps its own options
    ({"activity_regularizer": l2(0.01)}, False),  # the penalty is on the probabilities
])
def test_which_sequential_models_train_from_the_logits(kwargs, fused):
    head = fused_head.for_model(_classifier(**kwargs))
    assert isinstance(head, FusedHead) is fused


def test_graphs_wrapped_modules_model_losses_masks_and_jit_keep_the_plain_head():
    inp = Input(shape=(8,))
    graph = Model(inp, Dense(3, activation="softmax")(inp))
    graph.compile("sgd", "categorical_crossentropy")
    assert type(fused_head.for_model(graph)) is PlainHead

    wrapped = Model(torch.nn.Sequential(torch.nn.Linear(8, 3), torch.nn.Softmax(-1)))
    wrapped.compile("sgd", "categorical_crossentropy")
    assert type(fused_head.for_model(wrapped)) is PlainHead

    with_loss = _classifier()
    with_loss.add_loss(lambda: torch.zeros(()))
    with_loss.compile("rmsprop", "categorical_crossentropy")
    assert type(fused_head.for_model(with_loss)) is PlainHead

    # the output carries a mask (Embedding mask_zero -> a per-timestep softmax): the mask weighs the loss
    masked = Sequential([Embedding(10, 4, mask_zero=True, input_length=5), LSTM(6, return_sequences=True),
                         Dense(3, activation="softmax")])
    masked.compile("sgd", "categorical_crossentropy")
    assert isinstance(fused_head.for_model(masked), FusedHead)  # the layers qualify...
    assert type(masked._get_trainer((5,)).head) is PlainHead  # ...but the trainer sees the mask

    jit = _classifier()
    jit.compile("rmsprop", "categorical_crossentropy", jit_compile=True)
    assert type(_trainer_head(jit)) is PlainHead
    assert isinstance(_trainer_head(_classifier()), FusedHead)


# ----------------------------------------------------------------------------- the mechanism


def test_the_step_drops_the_softmax_backward_and_the_clip_of_the_probabilities():
    fused = opcount.count_fit_step(_classifier(), X, ONE_HOT, batch_size=8)
    with _plain():
        plain = opcount.count_fit_step(_classifier(), X, ONE_HOT, batch_size=8)
    f, p = Counter(op.name for op in fused.ops), Counter(op.name for op in plain.ops)
    assert p["aten._softmax_backward_data.default"] == 1 and f["aten._softmax_backward_data.default"] == 0
    assert f["aten._log_softmax_backward_data.default"] == 1
    assert p["aten.log.default"] == 1 and f["aten.log.default"] == 0  # log(clip(p)) is gone
    # the accuracy reads the logits: no softmax at all, and the hits are counted (no cast, no mean)
    assert f["aten._softmax.default"] == 0 and p["aten._softmax.default"] == 1
    assert f["aten._to_copy.default"] == 0 and f["aten.argmax.default"] == 2
    assert f["aten.hardtanh_backward.default"] == 1 and f["aten.where.self"] == 0  # the clip's backward
    assert len(fused.ops) <= len(plain.ops) - 19, (f - p, p - f)
    assert fused.syncs == 0


def test_a_metric_that_needs_probabilities_gets_them_once():
    model = _classifier()
    model.compile("rmsprop", "categorical_crossentropy",
                  metrics=["accuracy", "mse", "categorical_crossentropy"])
    fused = opcount.count_fit_step(model, X, ONE_HOT, batch_size=8)
    f = Counter(op.name for op in fused.ops)
    assert f["aten._softmax.default"] == 1  # shared by mse and the cross-entropy metric


# ----------------------------------------------------------------------------- the same results


@pytest.mark.parametrize("kwargs, y", [
    ({}, ONE_HOT),
    ({"split": True}, ONE_HOT),
    ({"loss": "sparse_categorical_crossentropy"}, LABELS),
    ({"activation": "sigmoid", "loss": "binary_crossentropy", "units": 1}, (LABELS == 1).astype("float32")),
])
def test_training_from_the_logits_gives_keras_results(kwargs, y):
    fused = _classifier(**kwargs)
    torch.manual_seed(3)
    h_fused = fused.fit(X, y, batch_size=16, epochs=4, verbose=0, validation_split=0.2)
    with _plain():
        plain = _classifier(**kwargs)
        torch.manual_seed(3)
        h_plain = plain.fit(X, y, batch_size=16, epochs=4, verbose=0, validation_split=0.2)
    for a, b in zip(fused.get_weights(), plain.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    for key in h_plain.history:
        np.testing.assert_allclose(h_fused.history[key], h_plain.history[key], rtol=1e-5, atol=1e-6,
                                   err_msg=key)
    # outside training the model is what it was: probabilities out
    out = fused.predict(X[:5])
    if kwargs.get("activation", "softmax") == "softmax":
        np.testing.assert_allclose(out.sum(axis=-1), 1.0, rtol=1e-6)
    assert fused.layers[-1].activation is getattr(activations, kwargs.get("activation", "softmax"))
    assert np.all((out >= 0) & (out <= 1))


def test_where_the_clip_bites_the_loss_and_gradients_are_keras_s():
    """Logits so large that softmax gives probabilities under eps = 1e-7: Keras's clip zeroes their
    gradient; the clamp of log_softmax does the same, and the values agree."""
    logits = torch.tensor([[30.0, 0.0, -30.0], [0.5, 0.2, -0.1], [-40.0, 40.0, 0.0]], requires_grad=True)
    y = torch.tensor([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    fused = losses.from_logits("categorical_crossentropy", "softmax")(y, logits)
    (g_fused,) = torch.autograd.grad(fused, logits)
    keras = losses.categorical_crossentropy(y, torch.softmax(logits, dim=-1)).mean()
    (g_keras,) = torch.autograd.grad(keras, logits)
    assert fused.item() == pytest.approx(keras.item(), rel=1e-6)
    assert fused.item() == pytest.approx((2 * -math.log(1e-7) + -math.log(torch.softmax(
        torch.tensor([0.5, 0.2, -0.1]), 0)[0].item())) / 3, rel=1e-5)
    np.testing.assert_allclose(g_fused.numpy(), g_keras.numpy(), atol=1e-6)
    assert torch.all(g_fused[0] == 0) and torch.all(g_fused[2] == 0)  # clipped rows: no gradient


def test_sample_weights_take_keras_s_weighted_route():
    calls = []
    original = FusedHead.loss_and_pred

    def spy(self, net, xb, yb, loss_fn):
        calls.append(type(yb).__name__)
        return original(self, net, xb, yb, loss_fn)

    w = RNG.random(60).astype("float32")
    with mock.patch.object(FusedHead, "loss_and_pred", spy), \
            mock.patch.object(FusedHead, "__init__", _tracking_init(calls)):
        fused = _classifier()
        torch.manual_seed(1)
        fused.fit(X, ONE_HOT, sample_weight=w, batch_size=20, epochs=1, verbose=0, shuffle=False)
    assert calls.count("Weighted") == 3 and "fused" not in calls  # every batch weighted, none fused
    with _plain():
        plain = _classifier()
        torch.manual_seed(1)
        plain.fit(X, ONE_HOT, sample_weight=w, batch_size=20, epochs=1, verbose=0, shuffle=False)
    for a, b in zip(fused.get_weights(), plain.get_weights()):
        np.testing.assert_array_equal(a, b)


def _tracking_init(calls):
    original = FusedHead.__init__

    def init(self, layer, fused, kind="softmax"):
        def counted(y, logits):
            calls.append("fused")
            return fused(y, logits)

        original(self, layer, counted, kind)

    return init


def test_the_activation_is_restored_when_the_forward_fails():
    model = _classifier()
    head = fused_head.for_model(model)
    softmax = model.layers[-1].activation
    with pytest.raises(RuntimeError):
        head.loss_and_pred(model.module, torch.ones(2, 5), torch.eye(3)[:2], model.loss_fn)  # 5 != 8 features
    assert model.layers[-1].activation is softmax
