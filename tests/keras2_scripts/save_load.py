"""Saving and loading models, in the style of the 2016-2019 blog tutorials ("Save and Load Your Keras
Deep Learning Models", "How to Check-Point Deep Learning Models in Keras") and the Keras FAQ: the
architecture to JSON (model.to_json() written to model.json, read back with model_from_json) plus the
weights to HDF5 (save_weights / load_weights), then compile the loaded model before evaluate; the whole
model with model.save('model.h5') / load_model (optimizer state included: training resumes where it
stopped); ModelCheckpoint to a single "weights.best.hdf5" with save_best_only and the best weights
loaded back; load_weights(by_name=True) into a model that shares only some layer names.

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py.
"""
import json
import os

import numpy

from arignote.callbacks import ModelCheckpoint
from arignote.layers import Dense
from arignote.models import Sequential, load_model, model_from_json

numpy.random.seed(7)
X = numpy.random.rand(300, 8).astype('float32')
Y = (X[:, 0] + X[:, 1] * X[:, 2] > 0.75).astype('float32')

# create model
model = Sequential()
model.add(Dense(12, input_dim=8, kernel_initializer='uniform', activation='relu', name='hidden1'))
model.add(Dense(8, kernel_initializer='uniform', activation='relu', name='hidden2'))
model.add(Dense(1, kernel_initializer='uniform', activation='sigmoid', name='out'))
model.compile(loss='binary_crossentropy', optimizer='adam', metrics=['accuracy'])
model.fit(X, Y, epochs=40, batch_size=10, verbose=0)
scores = model.evaluate(X, Y, verbose=0)
print("%s: %.2f%%" % (model.metrics_names[1], scores[1] * 100))
assert scores[1] > 0.8, scores

# serialize model to JSON
model_json = model.to_json()
with open("model.json", "w") as json_file:
    json_file.write(model_json)
# serialize weights to HDF5
model.save_weights("model.h5")
print("Saved model to disk")
config = json.loads(model_json)
assert config['class_name'] == 'Sequential', config['class_name']
# (Keras 2.3.1 lists the three Dense layers, the first with batch_input_shape; tf.keras 2 and arignote put
# an InputLayer named 'hidden1_input' first: both read either)
dense = [layer for layer in config['config']['layers'] if layer['class_name'] != 'InputLayer']
assert [layer['config']['name'] for layer in dense] == ['hidden1', 'hidden2', 'out']
assert dense[0]['config']['units'] == 12
assert dense[0]['config']['kernel_initializer']['class_name'] == 'RandomUniform'

# later...

# load json and create model
json_file = open('model.json', 'r')
loaded_model_json = json_file.read()
json_file.close()
loaded_model = model_from_json(loaded_model_json)
# load weights into new model
loaded_model.load_weights("model.h5")
print("Loaded model from disk")

# evaluate loaded model on test data
loaded_model.compile(loss='binary_crossentropy', optimizer='rmsprop', metrics=['accuracy'])
score = loaded_model.evaluate(X, Y, verbose=0)
print("%s: %.2f%%" % (loaded_model.metrics_names[1], score[1] * 100))
numpy.testing.assert_allclose(score, scores, rtol=1e-5)
numpy.testing.assert_allclose(loaded_model.predict(X), model.predict(X), rtol=1e-5, atol=1e-7)
for a, b in zip(loaded_model.get_weights(), model.get_weights()):
    numpy.testing.assert_array_equal(a, b)

# the whole model in one file: architecture, weights, training configuration, optimizer state
model.save('my_model.h5')
del model  # deletes the existing model
model = load_model('my_model.h5')
assert model.optimizer.__class__.__name__ == 'Adam'
assert model.loss == 'binary_crossentropy'
numpy.testing.assert_allclose(model.evaluate(X, Y, verbose=0), scores, rtol=1e-5)
# training continues from the saved optimizer state: one more epoch gives the same weights in both
x1, y1 = X[:10], Y[:10]
twin = load_model('my_model.h5')
model.train_on_batch(x1, y1)
twin.train_on_batch(x1, y1)
for a, b in zip(model.get_weights(), twin.get_weights()):
    numpy.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
# and that step is Adam's step from its saved moments, not a fresh Adam's first step
fresh = model_from_json(loaded_model_json)
fresh.load_weights('model.h5')
fresh.compile(loss='binary_crossentropy', optimizer='adam')
fresh.train_on_batch(x1, y1)
assert not numpy.allclose(fresh.get_weights()[0], model.get_weights()[0], rtol=0, atol=1e-7)

# checkpoint the best weights to one file
model = Sequential()
model.add(Dense(12, input_dim=8, kernel_initializer='uniform', activation='relu', name='hidden1'))
model.add(Dense(8, kernel_initializer='uniform', activation='relu', name='hidden2'))
model.add(Dense(1, kernel_initializer='uniform', activation='sigmoid', name='out'))
model.compile(loss='binary_crossentropy', optimizer='adam', metrics=['accuracy'])
filepath = "weights.best.hdf5"
checkpoint = ModelCheckpoint(filepath, monitor='val_accuracy', verbose=1, save_best_only=True, mode='max',
                             save_weights_only=True)
callbacks_list = [checkpoint]
history = model.fit(X, Y, validation_split=0.33, epochs=30, batch_size=10, callbacks=callbacks_list,
                    verbose=0)
assert os.path.exists(filepath)
model.load_weights(filepath)
model.compile(loss='binary_crossentropy', optimizer='adam', metrics=['accuracy'])
split = int(300 * (1 - 0.33))
best = model.evaluate(X[split:], Y[split:], verbose=0)
print('best val_accuracy', max(history.history['val_accuracy']), best)
numpy.testing.assert_allclose(best[1], max(history.history['val_accuracy']), rtol=1e-5)

# by_name: only the layers whose names match get weights; the new head keeps its own
other = Sequential()
other.add(Dense(12, input_dim=8, activation='relu', name='hidden1'))
other.add(Dense(8, activation='relu', name='hidden2'))
other.add(Dense(3, activation='softmax', name='new_head'))
head_before = other.get_layer('new_head').get_weights()
other.load_weights(filepath, by_name=True)
for name in ['hidden1', 'hidden2']:
    for a, b in zip(other.get_layer(name).get_weights(), model.get_layer(name).get_weights()):
        numpy.testing.assert_array_equal(a, b)
numpy.testing.assert_array_equal(other.get_layer('new_head').get_weights()[0], head_before[0])
print('OK save_load', scores)
