"""Variational autoencoder in the style of Keras 2.0's examples/variational_autoencoder.py: a custom
loss that closes over the encoder's symbolic tensors (z_mean, z_log_var), and the sampling Lambda.

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py.
"""
import numpy as np

from arignote import backend as K
from arignote import metrics
from arignote.layers import Dense, Input, Lambda
from arignote.models import Model

np.random.seed(0)
batch_size = 50
original_dim = 20
latent_dim = 2
intermediate_dim = 16
epochs = 50
epsilon_std = 1.0

x = Input(shape=(original_dim,))
h = Dense(intermediate_dim, activation='relu')(x)
z_mean = Dense(latent_dim)(h)
z_log_var = Dense(latent_dim)(h)


def sampling(args):
    z_mean, z_log_var = args
    epsilon = K.random_normal(shape=(K.shape(z_mean)[0], latent_dim), mean=0., stddev=epsilon_std)
    return z_mean + K.exp(z_log_var / 2) * epsilon


z = Lambda(sampling, output_shape=(latent_dim,))([z_mean, z_log_var])

decoder_h = Dense(intermediate_dim, activation='relu')
decoder_mean = Dense(original_dim, activation='sigmoid')
h_decoded = decoder_h(z)
x_decoded_mean = decoder_mean(h_decoded)


def vae_loss(x, x_decoded_mean):
    xent_loss = original_dim * metrics.binary_crossentropy(x, x_decoded_mean)
    kl_loss = - 0.5 * K.sum(1 + z_log_var - K.square(z_mean) - K.exp(z_log_var), axis=-1)
    return K.mean(xent_loss + kl_loss)


vae = Model(x, x_decoded_mean)
vae.compile(optimizer='rmsprop', loss=vae_loss)

x_train = (np.random.rand(500, original_dim) > 0.5).astype('float32')
x_train[:250, :10] = 1  # two kinds of samples
x_train[250:, 10:] = 0
hist = vae.fit(x_train, x_train, shuffle=True, epochs=epochs, batch_size=batch_size, verbose=0)
losses = hist.history['loss']
encoder = Model(x, z_mean)
x_train_encoded = encoder.predict(x_train, batch_size=batch_size)

decoder_input = Input(shape=(latent_dim,))
_h_decoded = decoder_h(decoder_input)
_x_decoded_mean = decoder_mean(_h_decoded)
generator = Model(decoder_input, _x_decoded_mean)
sample = generator.predict(np.zeros((1, latent_dim)))
print(losses[0], losses[-1], x_train_encoded.shape, sample.shape)
assert x_train_encoded.shape == (500, latent_dim) and sample.shape == (1, original_dim)
assert losses[-1] < losses[0] * 0.85, (losses[0], losses[-1])
# the two kinds of samples land apart in the latent space
gap = np.abs(x_train_encoded[:250].mean(0) - x_train_encoded[250:].mean(0)).max()
assert gap > 0.3, gap
print('OK vae', losses[-1])
