"""Keras 2 GAN idioms (eriklindernoren/Keras-GAN, scripts/run_published_gans.py) on our own small models.

* the discriminator compiled, then ``trainable = False`` before the combined model is built: the
  combined model leaves it alone, its own ``train_on_batch`` still trains it (gan.py, dcgan.py...);
  ``trainable`` toggled between two compiles (wgan_gp.py);
* a one-output combined model given the discriminator's two-output ``class_weight=[cw1, cw2]``
  (sgan.py): Keras 2.3.1 took the list as that output's weights and, not a dict, ignored it;
* a ``_Merge`` subclass drawing ``K.random_uniform`` and a ``partial`` loss taking ``K.gradients`` of
  the critic's output with respect to that layer's output (wgan_gp.py's gradient penalty).
"""

from functools import partial

import numpy as np
import pytest

from arignote import backend as K
from arignote.layers import Dense, Flatten, Input
from arignote.layers.merge import _Merge
from arignote.models import Model, Sequential
from arignote.optimizers import SGD, Adam


def _moved(before, after):
    return [not np.allclose(a, b) for a, b in zip(before, after)]


def _gan():
    disc = Sequential([Dense(4, input_dim=3, activation="relu"), Dense(1, activation="sigmoid")])
    d_in = Input((3,))
    discriminator = Model(d_in, disc(d_in))
    discriminator.compile(loss="binary_crossentropy", optimizer=Adam(0.01))
    g_in = Input((2,))
    generator = Model(g_in, Dense(3)(g_in))
    z = Input((2,))
    discriminator.trainable = False
    combined = Model(z, discriminator(generator(z)))
    combined.compile(loss="binary_crossentropy", optimizer=Adam(0.01))
    return discriminator, generator, combined


def test_combined_model_leaves_the_frozen_discriminator_alone_and_the_discriminator_still_trains():
    rng = np.random.RandomState(0)
    discriminator, generator, combined = _gan()
    d0, g0 = discriminator.get_weights(), generator.get_weights()
    combined.train_on_batch(rng.randn(8, 2), np.ones((8, 1)))
    assert not any(_moved(d0, discriminator.get_weights()))
    assert all(_moved(g0, generator.get_weights()))
    assert len(combined.trainable_weights) == 2  # the generator's kernel and bias only
    d1 = discriminator.get_weights()
    discriminator.train_on_batch(rng.randn(8, 3), np.ones((8, 1)))  # compiled while trainable
    assert all(_moved(d1, discriminator.get_weights()))


def test_trainable_toggled_between_two_compiles_keeps_what_each_compile_saw():
    """wgan_gp.py: generator frozen while the critic's model compiles, then the critic frozen and the
    generator thawed for the generator's model; each model trains what was trainable at its compile
    (measured the same on Keras 2.3.1)."""
    g_in, c_in = Input((2,)), Input((3,))
    generator, critic = Model(g_in, Dense(3)(g_in)), Model(c_in, Dense(1)(c_in))
    generator.trainable = False
    z, real = Input((2,)), Input((3,))
    critic_model = Model([real, z], [critic(real), critic(generator(z))])
    critic_model.compile(SGD(0.1), ["mse", "mse"])
    critic.trainable, generator.trainable = False, True
    z2 = Input((2,))
    generator_model = Model(z2, critic(generator(z2)))
    generator_model.compile(SGD(0.1), "mse")
    rng = np.random.RandomState(0)
    x, noise, ones = rng.randn(4, 3), rng.randn(4, 2), np.ones((4, 1))
    c0, g0 = critic.get_weights(), generator.get_weights()
    critic_model.train_on_batch([x, noise], [ones, 0 * ones])
    assert all(_moved(c0, critic.get_weights())) and not any(_moved(g0, generator.get_weights()))
    c1, g1 = critic.get_weights(), generator.get_weights()
    generator_model.train_on_batch(noise, ones)
    assert not any(_moved(c1, critic.get_weights())) and all(_moved(g1, generator.get_weights()))


def _one_output():
    x = Input((3,))
    model = Model(x, Dense(1, activation="sigmoid", kernel_initializer="ones", name="valid")(x))
    model.compile(SGD(0.5), "binary_crossentropy")
    return model


def test_two_class_weight_dicts_on_a_one_output_model_weigh_nothing_with_a_warning():
    x = np.random.RandomState(1).rand(8, 3).astype("float32")
    y = np.array([[1], [0], [1], [1], [0], [1], [1], [1]], "float32")
    cw1, cw2 = {0: 1, 1: 1}, {i: 10 / 16 for i in range(10)}
    plain_model = _one_output()
    plain = plain_model.train_on_batch(x, y)
    weighted_model = _one_output()
    with pytest.warns(UserWarning, match="list of 2 dicts but the model has 1 output"):
        weighted = weighted_model.train_on_batch(x, y, class_weight=[cw1, cw2])
    assert weighted == pytest.approx(plain)
    for a, b in zip(plain_model.get_weights(), weighted_model.get_weights()):
        np.testing.assert_allclose(a, b)
    weighed = _one_output().train_on_batch(x, y, class_weight={0: 1.0, 1: 3.0})  # a dict still weighs
    assert weighed != pytest.approx(plain)


class RandomWeightedAverage(_Merge):
    def _merge_function(self, inputs):
        alpha = K.random_uniform((4, 1, 1, 1))
        return (alpha * inputs[0]) + ((1 - alpha) * inputs[1])


def _gradient_penalty(y_true, y_pred, averaged_samples):
    gradients = K.gradients(y_pred, averaged_samples)[0]
    norm = K.sqrt(K.sum(K.square(gradients), axis=np.arange(1, len(gradients.shape))))
    return K.mean(K.square(1 - norm))


def _wasserstein(y_true, y_pred):
    return K.mean(y_true * y_pred)


def test_gradient_penalty_of_a_linear_critic_is_one_minus_the_kernel_norm_squared():
    """A linear critic's gradient with respect to any input is its kernel: all 0.5 over 2x2x1 pixels
    has norm 1 (penalty 0), all 0.25 norm 0.5 (penalty 0.25), whatever alpha the interpolation draws."""
    for value, penalty in ((0.5, 0.0), (0.25, 0.25)):
        critic = Sequential([Flatten(input_shape=(2, 2, 1)),
                             Dense(1, kernel_initializer="constant", use_bias=False)])
        critic.layers[-1].set_weights([np.full((4, 1), value, "float32")])
        real, fake = Input((2, 2, 1)), Input((2, 2, 1))
        mixed = RandomWeightedAverage()([real, fake])
        loss = partial(_gradient_penalty, averaged_samples=mixed)
        loss.__name__ = "gradient_penalty"
        model = Model([real, fake], [critic(real), critic(fake), critic(mixed)])
        model.compile(loss=[_wasserstein, _wasserstein, loss], optimizer=SGD(0.0), loss_weights=[1, 1, 10])
        rng = np.random.RandomState(2)
        a, b = rng.randn(4, 2, 2, 1), rng.randn(4, 2, 2, 1)
        ones = np.ones((4, 1))
        total, real_loss, fake_loss, gp = model.train_on_batch([a, b], [-ones, ones, 0 * ones])
        assert gp == pytest.approx(penalty, abs=1e-6)
        assert real_loss == pytest.approx(-value * a.reshape(4, -1).sum(1).mean(), rel=1e-5)
        assert total == pytest.approx(real_loss + fake_loss + 10 * gp, rel=1e-5, abs=1e-6)


def test_keras1_merge_called_names_its_replacements():
    """aae.py calls Keras 1's ``merge([mu, log_var], mode=f)``; ``from keras.layers import merge`` is
    a module in Keras 2 (its call fails there too): ours says what to write instead."""
    from arignote.layers import merge

    a = Input((3,))
    with pytest.raises(TypeError, match=r"Keras 1's merge function.*Lambda\(function"):
        merge([a, a], mode=lambda p: p[0] + p[1], output_shape=lambda p: p[0])
    assert merge.add is not None and isinstance(merge.Add(), merge._Merge)  # still the module


def test_a_class_index_dict_on_a_two_output_model_weighs_nothing_with_a_warning():
    """Keras 2.3.1 looked each output's name up in {class: weight}, found none and trained unweighted."""
    def two_outputs():
        inp = Input((3,))
        model = Model(inp, [Dense(1, activation="sigmoid", kernel_initializer="ones", name=n)(inp)
                            for n in ("a", "b")])
        model.compile(SGD(0.5), "binary_crossentropy")
        return model

    x = np.random.RandomState(1).rand(8, 3).astype("float32")
    y = np.array([[1], [0], [1], [1], [0], [1], [1], [1]], "float32")
    plain = two_outputs().train_on_batch(x, [y, y])
    with pytest.warns(UserWarning, match=r"class indices as keys, but the model has 2 outputs.*\['a', 'b'\]"):
        ignored = two_outputs().train_on_batch(x, [y, y], class_weight={0: 1.0, 1: 3.0})
    assert ignored == pytest.approx(plain)
    weighed = two_outputs().train_on_batch(x, [y, y], class_weight={"a": {0: 1.0, 1: 3.0}})
    assert weighed != pytest.approx(plain)
    with pytest.raises(ValueError, match="not outputs of the model"):  # a misspelt output name still fails
        two_outputs().train_on_batch(x, [y, y], class_weight={"c": {0: 1.0, 1: 3.0}})
