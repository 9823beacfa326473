"""Convolutional autoencoder in the style of the Keras blog "Building Autoencoders in Keras" (2016).

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py.
"""
import numpy as np

from arignote.layers import Conv2D, Input, MaxPooling2D, UpSampling2D
from arignote.models import Model

np.random.seed(0)
input_img = Input(shape=(8, 8, 1))

x = Conv2D(8, (3, 3), activation='relu', padding='same')(input_img)
x = MaxPooling2D((2, 2), padding='same')(x)
encoded = Conv2D(4, (3, 3), activation='relu', padding='same')(x)

x = UpSampling2D((2, 2))(encoded)
decoded = Conv2D(1, (3, 3), activation='sigmoid', padding='same')(x)

autoencoder = Model(input_img, decoded)
encoder = Model(input_img, encoded)
autoencoder.compile(optimizer='adam', loss='binary_crossentropy')

# blobs: smooth images an autoencoder can learn quickly
xs = np.linspace(-1, 1, 8)
grid = np.stack(np.meshgrid(xs, xs), -1)
centers = np.random.uniform(-0.5, 0.5, (256, 1, 1, 2))
x_train = np.exp(-((grid[None] - centers) ** 2).sum(-1) * 4)[..., None].astype('float32')

before = autoencoder.evaluate(x_train, x_train, verbose=0)
autoencoder.fit(x_train, x_train, epochs=30, batch_size=32, shuffle=True, validation_data=(x_train, x_train),
                verbose=0)
after = autoencoder.evaluate(x_train, x_train, verbose=0)
codes = encoder.predict(x_train)
decoded_imgs = autoencoder.predict(x_train)
print(before, after, codes.shape, decoded_imgs.shape)
assert codes.shape == (256, 4, 4, 4) and decoded_imgs.shape == (256, 8, 8, 1)
assert after < before * 0.9, (before, after)
print('OK autoencoder', after)
