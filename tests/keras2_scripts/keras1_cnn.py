"""A Keras 1.2-era CNN script (the shape of 2016's examples/mnist_cnn.py and cifar10_cnn.py), run
with the Keras 1 argument names Keras 2.3.1 still converted (with a warning): Convolution2D(nb_filter,
nb_row, nb_col, border_mode=, init=, dim_ordering='th', W_regularizer=), MaxPooling2D(pool_size=,
dim_ordering=), Dropout(p=), Dense(output_dim=, init=), BatchNormalization(mode=0, axis=1),
model.fit(nb_epoch=), a batch generator into fit_generator(samples_per_epoch=, nb_epoch=,
nb_val_samples=, nb_worker=, pickle_safe=, max_q_size=) and evaluate_generator(val_samples=),
Model(input=, output=).

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py.
"""
import warnings

import numpy as np

from arignote.layers import (
    Activation,
    BatchNormalization,
    Convolution2D,
    Dense,
    Dropout,
    Flatten,
    Input,
    MaxPooling2D,
)
from arignote.models import Model, Sequential
from arignote.regularizers import l2
from arignote.utils import np_utils

np.random.seed(1337)
batch_size = 16
nb_classes = 3
nb_epoch = 6
img_rows, img_cols = 16, 16
nb_filters = 8
pool_size = (2, 2)
kernel_size = (3, 3)

# three classes, channels first as Theano wanted: a horizontal bar, a vertical bar, a corner blob
n = 240
y_all = np.random.randint(0, nb_classes, n)
X_all = np.random.rand(n, 1, img_rows, img_cols).astype('float32') * 0.3
for i, c in enumerate(y_all):
    k = np.random.randint(3, 13)
    if c == 0:
        X_all[i, 0, k - 2:k + 2, :] += 1.0
    elif c == 1:
        X_all[i, 0, :, k - 2:k + 2] += 1.0
    else:
        X_all[i, 0, :6, :6] += 1.0
X_train, X_test = X_all[:192], X_all[192:]
Y_train = np_utils.to_categorical(y_all[:192], nb_classes)
Y_test = np_utils.to_categorical(y_all[192:], nb_classes)
print('X_train shape:', X_train.shape)

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    model = Sequential()
    model.add(Convolution2D(nb_filters, kernel_size[0], kernel_size[1], border_mode='valid', init='he_normal',
                            dim_ordering='th', input_shape=(1, img_rows, img_cols)))
    model.add(BatchNormalization(mode=0, axis=1))
    model.add(Activation('relu'))
    model.add(Convolution2D(nb_filters, kernel_size[0], kernel_size[1], border_mode='same', dim_ordering='th',
                            W_regularizer=l2(1e-4)))
    model.add(Activation('relu'))
    model.add(MaxPooling2D(pool_size=pool_size, dim_ordering='th'))
    model.add(Dropout(p=0.25))
    model.add(Flatten())
    model.add(Dense(output_dim=32, init='glorot_uniform'))
    model.add(Activation('relu'))
    model.add(Dropout(0.5))
    model.add(Dense(nb_classes))
    model.add(Activation('softmax'))
texts = [str(w.message) for w in caught]
assert ('Update your `Conv2D` call to the Keras 2 API: `Conv2D(8, (3, 3), input_shape=(1, 16, 16..., '
        'padding="valid", data_format="channels_first", kernel_initializer="he_normal")`') in texts, texts
assert ('Update your `Dense` call to the Keras 2 API: `Dense(units=32, kernel_initializer="glorot_uniform")`'
        in texts), texts
assert 'Update your `Dropout` call to the Keras 2 API: `Dropout(rate=0.25)`' in texts
conv = model.layers[0]
assert conv.get_config()['kernel_size'] in ((3, 3), [3, 3]), conv.get_config()
assert conv.get_config()['data_format'] == 'channels_first'
assert model.layers[0].output_shape == (None, 8, 14, 14), model.layers[0].output_shape
assert model.layers[5].output_shape == (None, 8, 7, 7), model.layers[5].output_shape
model.summary()

model.compile(loss='categorical_crossentropy', optimizer='adadelta', metrics=['accuracy'])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    hist = model.fit(X_train, Y_train, batch_size=batch_size, nb_epoch=nb_epoch, verbose=1,
                     validation_data=(X_test, Y_test))
assert any('The `nb_epoch` argument in `fit` has been renamed `epochs`.' in str(w.message) for w in caught)
assert len(hist.history['loss']) == nb_epoch, hist.history
score = model.evaluate(X_test, Y_test, verbose=0)
print('Test score:', score[0], 'Test accuracy:', score[1])

# more epochs on shifted copies from a generator, Keras 1 style. Keras 2.3.1 takes samples_per_epoch,
# nb_val_samples and val_samples of a plain generator as steps (batches), unchanged
drawn = [0]


def shifted_batches(X, Y, batch_size):
    while True:
        order = np.random.permutation(len(X))
        for i in range(0, len(X) - batch_size + 1, batch_size):
            idx = order[i:i + batch_size]
            drawn[0] += 1
            yield np.roll(X[idx], np.random.randint(-2, 3), axis=3), Y[idx]


hist = model.fit_generator(shifted_batches(X_train, Y_train, batch_size), samples_per_epoch=24, nb_epoch=3,
                           validation_data=shifted_batches(X_test, Y_test, batch_size), nb_val_samples=3,
                           nb_worker=1, pickle_safe=False, max_q_size=4)
assert len(hist.history['val_loss']) == 3, hist.history
assert drawn[0] >= 3 * 24 + 3 * 3, drawn
score = model.evaluate_generator(shifted_batches(X_test, Y_test, batch_size), val_samples=3)
print('Generator test score:', score)
assert score[1] > 0.8, score

# the functional API with Keras 1 keywords
inp = Input(shape=(1, img_rows, img_cols))
x = Convolution2D(4, 3, 3, activation='relu', dim_ordering='th')(inp)
x = Flatten()(x)
out = Dense(output_dim=nb_classes, activation='softmax')(x)
small = Model(input=inp, output=out)
small.compile(loss='categorical_crossentropy', optimizer='adam', metrics=['accuracy'])
small.fit(X_train, Y_train, batch_size=batch_size, nb_epoch=4, verbose=0)
small_score = small.evaluate(X_test, Y_test, verbose=0)
print('Functional test accuracy:', small_score[1])
assert small_score[1] > 0.6, small_score
print('OK keras1_cnn', score)
