"""A generative adversarial network trained by hand, in the style of the most-copied 2017-2019 GAN
tutorials ("How to Develop a 1D Generative Adversarial Network From Scratch in Keras", Keras-GAN's
gan.py, the DCGAN blog posts): define_discriminator() compiled on its own, define_generator() not
compiled, define_gan(g_model, d_model) that sets ``d_model.trainable = False`` BEFORE compiling the
combined Sequential, generate_real_samples / generate_latent_points / generate_fake_samples, and a
train loop of d_model.train_on_batch(x_real, y_real), d_model.train_on_batch(x_fake, y_fake),
gan_model.train_on_batch(x_gan, y_gan) with inverted labels; summarize_performance every few epochs
with d_model.evaluate(..., verbose=0). A DCGAN-shaped pair (Dense -> Reshape -> UpSampling2D ->
Conv2D with BatchNormalization and LeakyReLU(alpha=0.2) in the generator, Conv2D(strides=2) +
LeakyReLU + Dropout in the discriminator) is trained the same way for a few steps.

What Keras 2 guarantees and the script asserts: the combined step changes the generator's weights and
leaves every discriminator weight bit-for-bit unchanged (trainable=False was set before compile); the
discriminator's own step, compiled while it was still trainable, still trains it; the generator
learns to put its samples near the target curve y = x ** 2.

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py.
"""
import numpy as np
from numpy import hstack, ones, zeros
from numpy.random import rand, randn

from arignote.layers import (
    BatchNormalization,
    Conv2D,
    Dense,
    Dropout,
    Flatten,
    LeakyReLU,
    Reshape,
    UpSampling2D,
)
from arignote.models import Sequential
from arignote.optimizers import Adam

np.random.seed(1)


# define the standalone discriminator model
def define_discriminator(n_inputs=2):
    model = Sequential()
    model.add(Dense(25, activation='relu', kernel_initializer='he_uniform', input_dim=n_inputs))
    model.add(Dense(1, activation='sigmoid'))
    # compile model
    model.compile(loss='binary_crossentropy', optimizer='adam', metrics=['accuracy'])
    return model


# define the standalone generator model
def define_generator(latent_dim, n_outputs=2):
    model = Sequential()
    model.add(Dense(15, activation='relu', kernel_initializer='he_uniform', input_dim=latent_dim))
    model.add(Dense(n_outputs, activation='linear'))
    return model


# define the combined generator and discriminator model, for updating the generator
def define_gan(generator, discriminator):
    # make weights in the discriminator not trainable
    discriminator.trainable = False
    # connect them
    model = Sequential()
    # add generator
    model.add(generator)
    # add the discriminator
    model.add(discriminator)
    # compile model
    model.compile(loss='binary_crossentropy', optimizer='adam')
    return model


# generate n real samples with class labels
def generate_real_samples(n):
    # generate inputs in [-0.5, 0.5]
    X1 = rand(n) - 0.5
    # generate outputs X^2
    X2 = X1 * X1
    # stack arrays
    X1 = X1.reshape(n, 1)
    X2 = X2.reshape(n, 1)
    X = hstack((X1, X2))
    # generate class labels
    y = ones((n, 1))
    return X, y


# generate points in latent space as input for the generator
def generate_latent_points(latent_dim, n):
    # generate points in the latent space
    x_input = randn(latent_dim * n)
    # reshape into a batch of inputs for the network
    x_input = x_input.reshape(n, latent_dim)
    return x_input


# use the generator to generate n fake examples, with class labels
def generate_fake_samples(generator, latent_dim, n):
    # generate points in latent space
    x_input = generate_latent_points(latent_dim, n)
    # predict outputs
    X = generator.predict(x_input)
    # create class labels
    y = zeros((n, 1))
    return X, y


# evaluate the discriminator and report how far the fakes are from the curve
def summarize_performance(epoch, generator, discriminator, latent_dim, n=100):
    x_real, y_real = generate_real_samples(n)
    _, acc_real = discriminator.evaluate(x_real, y_real, verbose=0)
    x_fake, y_fake = generate_fake_samples(generator, latent_dim, n)
    _, acc_fake = discriminator.evaluate(x_fake, y_fake, verbose=0)
    off_curve = np.abs(x_fake[:, 1] - x_fake[:, 0] ** 2).mean()
    print(epoch, acc_real, acc_fake, off_curve)
    return off_curve


latent_dim = 5
discriminator = define_discriminator()
generator = define_generator(latent_dim)
gan_model = define_gan(generator, discriminator)
gan_model.summary()
assert len(gan_model.layers) == 2 and gan_model.layers[1] is discriminator
assert discriminator.trainable is False and discriminator.trainable_weights == []
assert len(gan_model.trainable_weights) == 4  # the generator's two kernels and two biases

n_batch = 128
half_batch = int(n_batch / 2)
start = summarize_performance(-1, generator, discriminator, latent_dim)
d_losses, g_losses = [], []
for i in range(1500):
    # prepare real samples
    x_real, y_real = generate_real_samples(half_batch)
    # prepare fake examples
    x_fake, y_fake = generate_fake_samples(generator, latent_dim, half_batch)
    # update discriminator
    d_before = [w.copy() for w in discriminator.get_weights()]
    d_loss1, _ = discriminator.train_on_batch(x_real, y_real)
    d_loss2, _ = discriminator.train_on_batch(x_fake, y_fake)
    if i == 0:
        # the discriminator's own step (compiled while it was trainable) still trains it
        assert any(not np.array_equal(a, b) for a, b in zip(d_before, discriminator.get_weights()))
    # prepare points in latent space as input for the generator
    x_gan = generate_latent_points(latent_dim, n_batch)
    # create inverted labels for the fake samples
    y_gan = ones((n_batch, 1))
    # update the generator via the discriminator's error
    d_weights = [w.copy() for w in discriminator.get_weights()]
    g_weights = [w.copy() for w in generator.get_weights()]
    g_loss = gan_model.train_on_batch(x_gan, y_gan)
    if i % 100 == 0:
        for a, b in zip(d_weights, discriminator.get_weights()):
            np.testing.assert_array_equal(a, b)  # frozen in the combined model
        assert any(not np.array_equal(a, b) for a, b in zip(g_weights, generator.get_weights()))
    d_losses.append((d_loss1 + d_loss2) / 2)
    g_losses.append(float(g_loss))
    if (i + 1) % 500 == 0:
        end = summarize_performance(i, generator, discriminator, latent_dim)

assert np.isfinite(d_losses).all() and np.isfinite(g_losses).all()
print('off the curve: %.3f -> %.3f' % (start, end))
assert end < 0.5 * start and end < 0.06, (start, end)
fakes, _ = generate_fake_samples(generator, latent_dim, 200)
assert fakes.shape == (200, 2) and fakes.dtype == np.float32


# a DCGAN-shaped pair on 8x8 one-channel images, a few steps, the same freezing rule
def build_generator(latent_dim):
    model = Sequential()
    model.add(Dense(16 * 4 * 4, input_dim=latent_dim))
    model.add(LeakyReLU(alpha=0.2))
    model.add(Reshape((4, 4, 16)))
    model.add(UpSampling2D())
    model.add(Conv2D(16, kernel_size=3, padding="same"))
    model.add(BatchNormalization(momentum=0.8))
    model.add(LeakyReLU(alpha=0.2))
    model.add(Conv2D(1, kernel_size=3, padding="same", activation='tanh'))
    return model


def build_discriminator(img_shape):
    model = Sequential()
    model.add(Conv2D(16, kernel_size=3, strides=2, input_shape=img_shape, padding="same"))
    model.add(LeakyReLU(alpha=0.2))
    model.add(Dropout(0.25))
    model.add(Flatten())
    model.add(Dense(1, activation='sigmoid'))
    return model


optimizer = Adam(0.0002, 0.5)
d = build_discriminator((8, 8, 1))
d.compile(loss='binary_crossentropy', optimizer=optimizer, metrics=['accuracy'])
g = build_generator(10)
d.trainable = False
combined = Sequential([g, d])
combined.compile(loss='binary_crossentropy', optimizer=optimizer)
imgs = np.tanh(np.random.randn(32, 8, 8, 1)).astype('float32')
for step in range(5):
    noise = np.random.normal(0, 1, (32, 10))
    gen_imgs = g.predict(noise)
    assert gen_imgs.shape == (32, 8, 8, 1) and np.abs(gen_imgs).max() <= 1
    d_loss_real = d.train_on_batch(imgs, np.ones((32, 1)))
    d_loss_fake = d.train_on_batch(gen_imgs, np.zeros((32, 1)))
    d_loss = 0.5 * np.add(d_loss_real, d_loss_fake)
    d_weights = [w.copy() for w in d.get_weights()]
    bn_before = [w.copy() for w in g.layers[4].get_weights()]
    g_loss = combined.train_on_batch(noise, np.ones((32, 1)))
    for a, b in zip(d_weights, d.get_weights()):
        np.testing.assert_array_equal(a, b)
    # the generator's BatchNormalization trains (gamma, beta) and moves its statistics in the combined step
    assert all(not np.array_equal(a, b) for a, b in zip(bn_before, g.layers[4].get_weights()))
    print("%d [D loss: %f, acc.: %.2f%%] [G loss: %f]" % (step, d_loss[0], 100 * d_loss[1], g_loss))
print('OK gan_1d')
