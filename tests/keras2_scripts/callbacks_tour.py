"""A tour of Keras 2 callbacks in the style of the Keras 2 docs ("Usage of callbacks") and the 2017-2018
blog posts: a custom Callback recording the batch losses, ModelCheckpoint with a formatted file name and
save_best_only, EarlyStopping, ReduceLROnPlateau, LearningRateScheduler, CSVLogger; then load_model of
the best checkpoint and evaluate.

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py.
"""
import csv
import glob
import os

import numpy as np

from arignote import backend as K
from arignote.callbacks import (
    Callback,
    CSVLogger,
    EarlyStopping,
    LearningRateScheduler,
    ModelCheckpoint,
    ReduceLROnPlateau,
)
from arignote.layers import Dense, Dropout
from arignote.models import Sequential, load_model
from arignote.optimizers import SGD


class LossHistory(Callback):
    def on_train_begin(self, logs=None):
        self.losses = []
        self.lrs = []

    def on_batch_end(self, batch, logs=None):
        self.losses.append(logs.get('loss'))

    def on_epoch_end(self, epoch, logs=None):
        self.lrs.append(float(K.get_value(self.model.optimizer.lr)))


def step_decay(epoch):
    initial_lrate = 0.1
    drop = 0.5
    epochs_drop = 4.0
    return initial_lrate * np.power(drop, np.floor((1 + epoch) / epochs_drop))


np.random.seed(7)
x = np.random.randn(600, 8).astype('float32')
y = (x[:, :4].sum(axis=1) > x[:, 4:].sum(axis=1)).astype('float32')
x_train, y_train, x_val, y_val = x[:500], y[:500], x[500:], y[500:]

model = Sequential()
model.add(Dense(16, input_dim=8, activation='relu'))
model.add(Dropout(0.1))
model.add(Dense(1, activation='sigmoid'))
model.compile(loss='binary_crossentropy', optimizer=SGD(lr=0.1, momentum=0.9), metrics=['accuracy'])

history = LossHistory()
checkpointer = ModelCheckpoint(filepath='weights.{epoch:02d}-{val_loss:.2f}.hdf5', monitor='val_loss',
                               verbose=1, save_best_only=True)
early_stopping = EarlyStopping(monitor='val_loss', patience=3, verbose=1)
reduce_lr = ReduceLROnPlateau(monitor='val_loss', factor=0.2, patience=2, min_lr=0.0001)
lrate = LearningRateScheduler(step_decay)
csv_logger = CSVLogger('training.log')

hist = model.fit(x_train, y_train, batch_size=50, epochs=30, verbose=0, validation_data=(x_val, y_val),
                 callbacks=[history, checkpointer, early_stopping, reduce_lr, lrate, csv_logger])

epochs_run = len(hist.history['loss'])
print('epochs run:', epochs_run, 'batch losses:', len(history.losses), 'lrs:', history.lrs[:6])
assert len(history.losses) == epochs_run * 10  # 500 samples / 50 per batch
assert all(np.isfinite(float(loss)) for loss in history.losses)
# the scheduler set the rate at each epoch's beginning
np.testing.assert_allclose(history.lrs[:6], [step_decay(e) for e in range(6)], rtol=1e-6)
assert 'val_loss' in hist.history and 'lr' in hist.history

files = sorted(glob.glob('weights.*.hdf5'))
print(files)
assert files and files[0].startswith('weights.01-')
val_losses = [float(f[len('weights.00-'):-len('.hdf5')]) for f in files]
assert val_losses == sorted(val_losses, reverse=True)  # save_best_only writes only improvements
best_file = files[-1]
assert abs(val_losses[-1] - min(hist.history['val_loss'])) < 0.006

with open('training.log') as f:
    rows = list(csv.DictReader(f))
assert len(rows) == epochs_run and rows[0]['epoch'] == '0' and 'val_loss' in rows[0]
np.testing.assert_allclose([float(r['loss']) for r in rows], hist.history['loss'], rtol=1e-4)

best = load_model(best_file)
score = best.evaluate(x_val, y_val, verbose=0)
print('best model val loss, acc:', score)
np.testing.assert_allclose(score[0], min(hist.history['val_loss']), rtol=1e-3, atol=1e-4)
assert score[1] > 0.85, score
assert os.path.exists('training.log')
print('OK callbacks_tour', score)
