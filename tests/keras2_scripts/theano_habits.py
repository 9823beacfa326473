"""A Theano-era Keras 2 script: channels-first images set with K.set_image_data_format('channels_first'),
a Conv2D model on (1, 28, 28) inputs, np_utils.to_categorical, model.summary(), K.floatx(), K.epsilon();
saved and loaded back (load_model; to_json + save_weights, model_from_json + load_weights) while the
script works channels-first: the model stays channels-first, as in Keras, and after the script
switches back to channels-last as well.
(Keras 2.3.1 no longer exports K.set_image_dim_ordering(), which Keras 2.0-2.2 did, so this does not call it.)

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py.
"""
import numpy as np

from arignote import backend as K
from arignote.layers import Activation, Conv2D, Dense, Dropout, Flatten, MaxPooling2D
from arignote.models import Sequential, load_model, model_from_json
from arignote.utils import np_utils

K.set_image_data_format('channels_first')
assert K.image_data_format() == 'channels_first'
assert K.floatx() == 'float32' and abs(K.epsilon() - 1e-7) < 1e-12

np.random.seed(1337)
nb_classes = 3
img_rows, img_cols = 28, 28

# three classes: a bright horizontal bar, a vertical bar, a blob in a corner
n = 150
y_train = np.random.randint(0, nb_classes, n)
X_train = np.random.rand(n, 1, img_rows, img_cols).astype(K.floatx()) * 0.3
for i, c in enumerate(y_train):
    k = np.random.randint(4, 24)
    if c == 0:
        X_train[i, 0, k - 2:k + 2, :] += 1.0
    elif c == 1:
        X_train[i, 0, :, k - 2:k + 2] += 1.0
    else:
        X_train[i, 0, :8, :8] += 1.0
X_train = X_train.reshape(X_train.shape[0], 1, img_rows, img_cols)
Y_train = np_utils.to_categorical(y_train, nb_classes)
assert Y_train.shape == (n, nb_classes) and Y_train.dtype == np.float32

model = Sequential()
model.add(Conv2D(8, (3, 3), padding='valid', input_shape=(1, img_rows, img_cols)))
model.add(Activation('relu'))
model.add(Conv2D(8, (3, 3)))
model.add(Activation('relu'))
model.add(MaxPooling2D(pool_size=(2, 2)))
model.add(Dropout(0.25))
model.add(Flatten())
model.add(Dense(32))
model.add(Activation('relu'))
model.add(Dropout(0.5))
model.add(Dense(nb_classes))
model.add(Activation('softmax'))
model.summary()
assert model.layers[0].output_shape == (None, 8, 26, 26)
assert model.layers[4].output_shape == (None, 8, 12, 12)
assert model.layers[6].output_shape == (None, 8 * 12 * 12)
kernel = model.layers[0].get_weights()[0]
assert kernel.shape == (3, 3, 1, 8), kernel.shape  # Keras 2 kernels are (rows, cols, in, out) either way

model.compile(loss='categorical_crossentropy', optimizer='adadelta', metrics=['accuracy'])
hist = model.fit(X_train, Y_train, batch_size=16, epochs=8, verbose=1, validation_split=0.2)
score = model.evaluate(X_train, Y_train, verbose=0)
print('Train score:', score[0], 'Train accuracy:', score[1])
assert score[1] > 0.85, score
classes = model.predict_classes(X_train[:10], verbose=0)
assert (classes == y_train[:10]).mean() >= 0.7, (classes, y_train[:10])
model.save('theano_habits.h5')
again = load_model('theano_habits.h5')
assert again.input_shape == (None, 1, img_rows, img_cols), again.input_shape
assert np.allclose(again.predict(X_train[:10]), model.predict(X_train[:10]), atol=1e-5)
with open('theano_habits.json', 'w') as f:
    f.write(model.to_json())
model.save_weights('theano_habits_weights.h5')
with open('theano_habits.json') as f:
    rebuilt = model_from_json(f.read())
rebuilt.load_weights('theano_habits_weights.h5')
assert np.allclose(rebuilt.predict(X_train[:10]), model.predict(X_train[:10]), atol=1e-5)
K.set_image_data_format('channels_last')
# a later channels-last script loads the same files as saved too: each layer's data_format is in
# its config and wins over the global setting (Keras 2.3.1's model_from_config)
later = load_model('theano_habits.h5')
assert later.input_shape == (None, 1, img_rows, img_cols), later.input_shape
assert np.allclose(later.predict(X_train[:10]), model.predict(X_train[:10]), atol=1e-5)
with open('theano_habits.json') as f:
    later = model_from_json(f.read())
later.load_weights('theano_habits_weights.h5')
assert np.allclose(later.predict(X_train[:10]), model.predict(X_train[:10]), atol=1e-5)
print('OK theano_habits', score)
