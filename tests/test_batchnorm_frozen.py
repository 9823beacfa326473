"""A frozen BatchNormalization (``layer.trainable = False``) trains as in Keras 2.3.1: the training
batch is normalized with its own statistics (``K.normalize_batch_in_training``), but the layer's
updates are not collected (``Layer.get_updates_for`` returns [] when not trainable), so the moving
mean and variance stay put: fine-tuning a frozen pretrained base leaves all its weights unchanged."""

from __future__ import annotations

import numpy as np

from arignote.layers import BatchNormalization, Dense, Input
from arignote.models import Model


def _model(trainable):
    inp = Input((3,))
    bn = BatchNormalization(momentum=0.5, name="bn")
    bn.trainable = trainable
    out = Dense(1, kernel_initializer="ones", name="head")(bn(inp))
    model = Model(inp, out)
    model.compile("sgd", "mse")
    return model, bn


def test_frozen_batchnorm_keeps_moving_statistics_and_uses_batch_statistics():
    x = np.random.RandomState(0).randn(8, 3).astype("float32") * 2 + 1
    y = np.zeros((8, 1), "float32")
    model, bn = _model(trainable=False)
    before = [w.copy() for w in bn.get_weights()]
    # the training loss is that of the batch-normalized input (gamma 1, beta 0, moving stats 0 / 1)
    z = (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3)
    head_b = model.get_layer("head").get_weights()[1]
    expected = np.mean((z.sum(1) + head_b) ** 2)
    loss = model.train_on_batch(x, y)
    np.testing.assert_allclose(loss, expected, rtol=1e-4)
    for a, b in zip(before, bn.get_weights()):
        np.testing.assert_array_equal(a, b)  # moving_mean / moving_variance unchanged
    # inference uses the (untouched) moving statistics: mean 0, variance 1
    kernel, bias = model.get_layer("head").get_weights()
    np.testing.assert_allclose(model.predict(x), (x / np.sqrt(1 + 1e-3)) @ kernel + bias, rtol=1e-4)


def test_trainable_batchnorm_still_updates_its_moving_statistics():
    x = np.random.RandomState(1).randn(8, 3).astype("float32") + 2
    model, bn = _model(trainable=True)
    model.train_on_batch(x, np.zeros((8, 1), "float32"))
    moving_mean = bn.get_weights()[2]
    np.testing.assert_allclose(moving_mean, 0.5 * x.mean(0), rtol=1e-5)  # momentum 0.5 from 0
