"""Bidirectional and GRU recurrent layers on a small sequence-labelling problem, in the style of the
2017-2019 blog tutorials ("How to Develop a Bidirectional LSTM For Sequence Classification in Python
with Keras"): the cumulative-sum problem (a sequence of random numbers in [0, 1]; each time step is
labelled 1 once the running sum passes a limit), get_sequence(n_timesteps), Bidirectional(LSTM(20,
return_sequences=True), input_shape=(n_timesteps, 1)) + TimeDistributed(Dense(1, activation=
'sigmoid')), predict_classes per time step with "Expected / Predicted" lines; a forward-only GRU next to
it, and Bidirectional(GRU, merge_mode='sum').

The tutorial trained on one fresh sequence per fit call for 1000 calls; here a batch of sequences is
generated once (small data, a few seconds).

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py.
"""
from random import random, seed

import numpy as np
from numpy import array, cumsum

from arignote.layers import GRU, LSTM, Bidirectional, Dense, TimeDistributed
from arignote.models import Sequential

seed(1)
np.random.seed(1)


# create a sequence classification instance
def get_sequence(n_timesteps):
    # create a sequence of random numbers in [0,1]
    X = array([random() for _ in range(n_timesteps)])
    # calculate cut-off value to change class values
    limit = n_timesteps / 4.0
    # determine the class outcome for each item in cumulative sequence
    y = array([0 if x < limit else 1 for x in cumsum(X)])
    # reshape input and output data to be suitable for LSTMs
    X = X.reshape(1, n_timesteps, 1)
    y = y.reshape(1, n_timesteps, 1)
    return X, y


n_timesteps = 10
pairs = [get_sequence(n_timesteps) for _ in range(384)]
X = np.concatenate([p[0] for p in pairs]).astype('float32')
y = np.concatenate([p[1] for p in pairs]).astype('float32')
X_test, y_test = X[320:], y[320:]
X, y = X[:320], y[:320]
assert X.shape == (320, 10, 1) and y.shape == (320, 10, 1)


def train(model, epochs=25):
    model.compile(loss='binary_crossentropy', optimizer='adam', metrics=['accuracy'])
    history = model.fit(X, y, epochs=epochs, batch_size=16, verbose=0)
    assert history.history['loss'][-1] < history.history['loss'][0] * 0.6, history.history['loss']
    loss, acc = model.evaluate(X_test, y_test, verbose=0)
    return acc


# define LSTM
model = Sequential()
model.add(Bidirectional(LSTM(20, return_sequences=True), input_shape=(n_timesteps, 1)))
model.add(TimeDistributed(Dense(1, activation='sigmoid')))
assert model.layers[0].output_shape == (None, n_timesteps, 40), model.layers[0].output_shape
assert model.output_shape == (None, n_timesteps, 1)
lstm_params = 4 * (20 * (1 + 20) + 20)
assert model.count_params() == 2 * lstm_params + 41, model.count_params()
assert len(model.layers[0].get_weights()) == 6  # forward kernel, recurrent kernel, bias; then backward
acc = train(model)
print('bidirectional LSTM accuracy: %.3f' % acc)
assert acc > 0.9, acc
# evaluate LSTM
X1, y1 = get_sequence(n_timesteps)
yhat = model.predict_classes(X1.astype('float32'), verbose=0)
assert yhat.shape == (1, n_timesteps, 1), yhat.shape
for i in range(n_timesteps):
    print('Expected:', y1[0, i], 'Predicted', yhat[0, i])
assert (yhat[0, :, 0] == y1[0, :, 0]).mean() >= 0.7
# once the sum has passed the limit it stays passed: the labels never go back to 0
pred = model.predict(X_test)
assert pred.shape == (64, n_timesteps, 1)
steps_back = (np.diff((pred[:, :, 0] > 0.5).astype(int), axis=1) < 0).mean()
assert steps_back < 0.05, steps_back

# a forward-only GRU sees the whole past, which is all this problem needs
model = Sequential()
model.add(GRU(20, return_sequences=True, input_shape=(n_timesteps, 1)))
model.add(TimeDistributed(Dense(1, activation='sigmoid')))
assert model.layers[0].count_params() == 3 * (20 * (1 + 20) + 20)
acc_gru = train(model)
print('GRU accuracy: %.3f' % acc_gru)
assert acc_gru > 0.9, acc_gru

# merge_mode='sum' adds the two directions: the output keeps 20 features
model = Sequential()
model.add(Bidirectional(GRU(20, return_sequences=True), merge_mode='sum', input_shape=(n_timesteps, 1)))
model.add(TimeDistributed(Dense(1, activation='sigmoid')))
assert model.layers[0].output_shape == (None, n_timesteps, 20)
layer = model.layers[0]
forward, backward = layer.forward_layer, layer.backward_layer
assert forward.go_backwards is False and backward.go_backwards is True
acc_sum = train(model)
print('bidirectional GRU (sum) accuracy: %.3f' % acc_sum)
assert acc_sum > 0.9, acc_sum
print('OK bidirectional_gru', acc, acc_gru, acc_sum)
