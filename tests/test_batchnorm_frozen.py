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


def test_batchnorm_in_a_frozen_discriminator_keeps_its_statistics_in_both_steps():
    """The GAN tutorials' order: D compiled, ``D.trainable = False``, the combined model compiled;
    Keras 2.3.1 collects a frozen network's updates as [] (``Network.updates``), so D's
    BatchNormalization statistics stay put in D's own train_on_batch and in the combined one,
    while D's weights still train in its own step (compile collected them)."""
    from arignote.layers import BatchNormalization
    from arignote.models import Sequential

    d = Sequential([Dense(4, input_shape=(3,)), BatchNormalization(momentum=0.5, name="d_bn"),
                    Dense(1, activation="sigmoid")])
    d.compile("sgd", "binary_crossentropy")
    d.trainable = False
    g = Sequential([Dense(3, input_shape=(2,))])
    z = Input((2,))
    combined = Model(z, d(g(z)))
    combined.compile("sgd", "binary_crossentropy")
    bn = d.get_layer("d_bn")
    stats = [w.copy() for w in bn.get_weights()[2:]]
    kernel = d.layers[0].get_weights()[0].copy()
    rng = np.random.RandomState(2)
    d.train_on_batch(rng.randn(8, 3).astype("float32") + 3, np.ones((8, 1), "float32"))
    combined.train_on_batch(rng.randn(8, 2).astype("float32"), np.ones((8, 1), "float32"))
    for a, b in zip(stats, bn.get_weights()[2:]):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(kernel, d.layers[0].get_weights()[0])  # D's own step trained D
    d.trainable = True
    d.train_on_batch(rng.randn(8, 3).astype("float32") + 3, np.ones((8, 1), "float32"))
    assert not np.array_equal(stats[0], bn.get_weights()[2])  # unfrozen: the statistics move again
