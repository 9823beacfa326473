"""A hand-written hyper-parameter grid search, in the style of the 2017-2019 blog posts and Stack
Overflow answers ("How to Grid Search Hyperparameters for Deep Learning Models" done by hand, "Keras:
release memory after finishing training process" -> K.clear_session()): a keras.utils.Sequence that
reads its batches in __getitem__ and reshuffles in on_epoch_end, fit_generator(train_seq,
epochs=..., validation_data=val_gen, validation_steps=..., workers=2, use_multiprocessing=False)
with a plain Python generator for the validation data, a CSVLogger('training_<name>.log') and a
TensorBoard(log_dir='./logs/<name>', histogram_freq=0) per run, the best configuration picked from
history.history['val_loss'], K.clear_session() after every model, and the winner rebuilt, trained on
all data and saved.

The regression table is made up (y depends non-linearly on 6 features). TensorBoard needs TensorFlow
in Keras 2.3.1 (its Theano backend raises ImportError), so the script adds it only when the backend is
not Theano; K.clear_session exists only in Keras 2.3.1's TensorFlow backend, so it is called where it
exists.

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py (without the
TensorBoard callback, see above).
"""
import csv
import itertools
import os

import numpy as np

from arignote import backend as K
from arignote.callbacks import CSVLogger, EarlyStopping, TensorBoard
from arignote.layers import Dense, Dropout
from arignote.models import Sequential, load_model
from arignote.utils import Sequence

np.random.seed(9)
n_features = 6
X = np.random.uniform(-1, 1, (900, n_features)).astype('float32')
y = (np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.5 * X[:, 3] ** 2
     + 0.05 * np.random.randn(900)).astype('float32')
X_train, y_train = X[:600], y[:600]
X_val, y_val = X[600:], y[600:]


class TableSequence(Sequence):
    def __init__(self, x_set, y_set, batch_size):
        self.x, self.y = x_set, y_set
        self.batch_size = batch_size
        self.indices = np.arange(len(self.x))
        self.epochs_done = 0
        self.served = 0

    def __len__(self):
        return int(np.ceil(len(self.x) / float(self.batch_size)))

    def __getitem__(self, idx):
        inds = self.indices[idx * self.batch_size:(idx + 1) * self.batch_size]
        self.served += 1
        return self.x[inds], self.y[inds]

    def on_epoch_end(self):
        self.epochs_done += 1
        np.random.shuffle(self.indices)


def validation_generator(x, y, batch_size):
    while True:
        for start in range(0, len(x), batch_size):
            yield x[start:start + batch_size], y[start:start + batch_size]


def create_model(neurons=8, dropout_rate=0.0, optimizer='adam'):
    model = Sequential()
    model.add(Dense(neurons, input_dim=n_features, activation='relu'))
    model.add(Dropout(dropout_rate))
    model.add(Dense(neurons, activation='relu'))
    model.add(Dense(1))
    model.compile(loss='mean_squared_error', optimizer=optimizer, metrics=['mae'])
    return model


param_grid = dict(neurons=[4, 32], dropout_rate=[0.0, 0.2], batch_size=[32])
keys = sorted(param_grid)
results = []
epochs = 12
for values in itertools.product(*[param_grid[k] for k in keys]):
    params = dict(zip(keys, values))
    name = 'n%(neurons)s_d%(dropout_rate)s_b%(batch_size)s' % params
    model = create_model(neurons=params['neurons'], dropout_rate=params['dropout_rate'])
    train_seq = TableSequence(X_train, y_train, params['batch_size'])
    callbacks = [CSVLogger('training_%s.log' % name, separator=',', append=False)]
    if K.backend() != 'theano':
        callbacks.append(TensorBoard(log_dir='./logs/%s' % name, histogram_freq=0, write_graph=True))
    history = model.fit_generator(train_seq, epochs=epochs,
                                  validation_data=validation_generator(X_val, y_val, 50), validation_steps=6,
                                  callbacks=callbacks, workers=2, use_multiprocessing=False, verbose=0)
    best = min(history.history['val_loss'])
    print('%s: val_loss %.4f' % (name, best))
    results.append((best, params))
    assert len(history.history['val_loss']) == epochs
    assert train_seq.epochs_done == epochs, train_seq.epochs_done
    assert train_seq.served >= epochs * len(train_seq), train_seq.served
    # the CSV log holds one row per epoch with the same numbers as the history
    with open('training_%s.log' % name) as f:
        rows = list(csv.DictReader(f))
    assert [int(r['epoch']) for r in rows] == list(range(epochs))
    assert sorted(rows[0]) == ['epoch', 'loss', 'mae', 'val_loss', 'val_mae'], sorted(rows[0])
    np.testing.assert_allclose([float(r['val_loss']) for r in rows], history.history['val_loss'], rtol=1e-5)
    # the validation generator's 6 steps of 50 cover the 300 validation rows once: evaluate agrees.
    # (Compared on the mae metric: Keras 2.3.0 and 2.3.1 report the LAST validation batch's loss as
    # val_loss from a generator, keras-team/keras#13469; their stateful metrics average correctly.)
    np.testing.assert_allclose(history.history['val_mae'][-1], model.evaluate(X_val, y_val, verbose=0)[1],
                               rtol=1e-4)
    if K.backend() != 'theano':
        assert os.listdir('./logs/%s' % name), 'TensorBoard wrote nothing'
    if hasattr(K, 'clear_session'):  # TensorFlow's (Keras 2.3.1's Theano backend has none)
        K.clear_session()

results.sort(key=lambda r: r[0])
best_loss, best_params = results[0]
print('Best: %f using %s' % (best_loss, best_params))
assert len(results) == 4
assert best_params['neurons'] == 32, results
worst_loss = results[-1][0]
assert best_loss < 0.7 * worst_loss, results

# the winner, trained on everything with early stopping, saved and reloaded
final = create_model(neurons=best_params['neurons'], dropout_rate=best_params['dropout_rate'])
stop = EarlyStopping(monitor='loss', patience=3, restore_best_weights=True)
final.fit(X, y, batch_size=best_params['batch_size'], epochs=30, callbacks=[stop], verbose=0)
final.save('best_model.h5')
if hasattr(K, 'clear_session'):
    K.clear_session()
restored = load_model('best_model.h5')
np.testing.assert_allclose(restored.predict(X_val), final.predict(X_val), rtol=1e-5, atol=1e-6)
mse = restored.evaluate(X_val, y_val, verbose=0)[0]
print('final val mse %.4f' % mse)
assert mse < best_loss * 1.5, (mse, best_loss)
print('OK grid_search_loop')
