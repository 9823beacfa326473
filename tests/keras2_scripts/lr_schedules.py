"""Learning-rate schedules, in the style of the 2016-2019 blog tutorials ("Using Learning Rate Schedules
for Deep Learning Models in Python with Keras", the ionosphere data): time-based decay with
SGD(lr=0.1, momentum=0.8, decay=learning_rate / epochs, nesterov=False), a drop-based schedule with
LearningRateScheduler(step_decay), the (epoch, lr) form of a schedule, ReduceLROnPlateau on a
plateauing val_loss, and K.set_value(model.optimizer.lr, ...) between two fit calls.

The ionosphere-like table (34 features, two classes) is made up by the script. The time-based decay is
checked step by step on a linear model against the rule SGD applies: lr / (1 + decay * iterations).

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py.
"""
import math

import numpy

from arignote import backend as K
from arignote.callbacks import Callback, LearningRateScheduler, ReduceLROnPlateau
from arignote.layers import Dense
from arignote.models import Sequential
from arignote.optimizers import SGD

seed = 7
numpy.random.seed(seed)
X = numpy.random.uniform(-1, 1, (351, 34)).astype('float32')
Y = (X[:, :5].sum(axis=1) - X[:, 5:10].sum(axis=1) > 0).astype('float32')

# --- time-based learning rate decay
model = Sequential()
model.add(Dense(34, input_dim=34, kernel_initializer='normal', activation='relu'))
model.add(Dense(1, kernel_initializer='normal', activation='sigmoid'))
epochs = 20
learning_rate = 0.1
decay_rate = learning_rate / epochs
momentum = 0.8
sgd = SGD(lr=learning_rate, momentum=momentum, decay=decay_rate, nesterov=False)
model.compile(loss='binary_crossentropy', optimizer=sgd, metrics=['accuracy'])
history = model.fit(X, Y, validation_split=0.33, epochs=epochs, batch_size=28, verbose=2)
assert history.history['val_accuracy'][-1] > 0.8, history.history['val_accuracy']
# the decay does not touch the lr variable: it is applied inside each update
assert abs(float(K.get_value(model.optimizer.lr)) - 0.1) < 1e-7
assert int(K.get_value(model.optimizer.iterations)) == epochs * math.ceil(235 / 28)
config = model.optimizer.get_config()
assert abs(config['decay'] - 0.005) < 1e-7 and abs(config['momentum'] - 0.8) < 1e-7, config

# the rule, step by step: plain SGD on a linear model with a mean squared error
lin = Sequential()
lin.add(Dense(1, input_dim=3, use_bias=False, kernel_initializer='zeros'))
lin.compile(loss='mse', optimizer=SGD(lr=0.1, decay=0.5))
xs = numpy.random.randn(8, 3).astype('float32')
ys = numpy.random.randn(8, 1).astype('float32')
w = numpy.zeros((3, 1))
for it in range(4):
    lin.train_on_batch(xs, ys)
    grad = 2.0 / 8 * xs.T.dot(xs.dot(w) - ys)
    w = w - 0.1 / (1 + 0.5 * it) * grad
    numpy.testing.assert_allclose(lin.get_weights()[0], w, rtol=1e-4, atol=1e-6)


# --- drop-based learning rate decay
def step_decay(epoch):
    initial_lrate = 0.1
    drop = 0.5
    epochs_drop = 5.0
    lrate = initial_lrate * math.pow(drop, math.floor((1 + epoch) / epochs_drop))
    return lrate


class LrLog(Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.seen = getattr(self, 'seen', []) + [float(K.get_value(self.model.optimizer.lr))]


model = Sequential()
model.add(Dense(34, input_dim=34, kernel_initializer='normal', activation='relu'))
model.add(Dense(1, kernel_initializer='normal', activation='sigmoid'))
sgd = SGD(lr=0.0, momentum=0.9, decay=0.0, nesterov=False)
model.compile(loss='binary_crossentropy', optimizer=sgd, metrics=['accuracy'])
# learning schedule callback
lrate = LearningRateScheduler(step_decay, verbose=1)
log = LrLog()
callbacks_list = [lrate, log]
history = model.fit(X, Y, validation_split=0.33, epochs=12, batch_size=28, callbacks=callbacks_list,
                    verbose=0)
print(log.seen)
numpy.testing.assert_allclose(log.seen, [step_decay(e) for e in range(12)], rtol=1e-6)
numpy.testing.assert_allclose(history.history['lr'], [step_decay(e) for e in range(12)], rtol=1e-6)
assert history.history['val_accuracy'][-1] > 0.8, history.history['val_accuracy']

# a schedule may take the current rate as well
model.compile(loss='binary_crossentropy', optimizer=SGD(lr=0.05), metrics=['accuracy'])
log = LrLog()
model.fit(X, Y, epochs=4, batch_size=28, verbose=0,
          callbacks=[LearningRateScheduler(lambda epoch, lr: lr * 0.5), log])
numpy.testing.assert_allclose(log.seen, [0.025, 0.0125, 0.00625, 0.003125], rtol=1e-6)

# set the rate by hand between two fit calls
K.set_value(model.optimizer.lr, 0.01)
assert abs(float(K.get_value(model.optimizer.lr)) - 0.01) < 1e-9
log = LrLog()
model.fit(X, Y, epochs=1, batch_size=28, verbose=0, callbacks=[log])
numpy.testing.assert_allclose(log.seen, [0.01], rtol=1e-6)

# --- reduce the rate when the validation loss stops improving: labels with 30% noise, a large rate
noisy = numpy.where(numpy.random.rand(351) < 0.3, 1 - Y, Y)
model = Sequential()
model.add(Dense(1, input_dim=34, activation='sigmoid'))
model.compile(loss='binary_crossentropy', optimizer=SGD(lr=0.5), metrics=['accuracy'])
reduce_lr = ReduceLROnPlateau(monitor='val_loss', factor=0.2, patience=2, min_lr=0.001, verbose=1)
history = model.fit(X, noisy, validation_split=0.33, epochs=25, batch_size=28, callbacks=[reduce_lr],
                    verbose=0)
lrs = history.history['lr']
print(lrs)
assert lrs[0] == 0.5 and min(lrs) < 0.5, lrs
assert all(b <= a for a, b in zip(lrs, lrs[1:])), lrs  # only ever lowered
assert all(abs(b / a - 1) < 1e-6 or abs(b / a - 0.2) < 1e-6 or abs(b - 0.001) < 1e-7
           for a, b in zip(lrs, lrs[1:])), lrs  # by the factor, or down to min_lr
val = history.history['val_loss']
first_cut = next(i for i in range(1, 25) if lrs[i] < lrs[i - 1])
# the cut comes after `patience` epochs without a new best val_loss
assert min(val[:first_cut - 1]) <= min(val[first_cut - 2:first_cut]), (val, lrs)
print('OK lr_schedules', lrs[-1])
