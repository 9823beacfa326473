"""Looking inside a model while and after it trains, in the style of the Keras FAQ and the most-voted
2016-2019 Stack Overflow answers ("How can I obtain the output of an intermediate layer?", "Keras, how to
get the output of each layer?", "How to record the loss after every batch"): a LossHistory callback with
on_train_begin / on_batch_end, K.function([model.layers[0].input, K.learning_phase()],
[model.layers[3].output]) called with learning phase 0 and 1, one functor for the outputs of every
layer, an intermediate Model(inputs=model.input, outputs=model.get_layer(layer_name).output), and the
first layer's output recomputed by hand from get_weights().

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py.
"""
import numpy as np

from arignote import backend as K
from arignote.callbacks import Callback
from arignote.layers import Dense, Dropout
from arignote.models import Model, Sequential

np.random.seed(3)
x = np.random.randn(256, 6).astype('float32')
y = np.eye(3, dtype='float32')[(x[:, 0] > 0).astype(int) + (x[:, 1] > 0.5).astype(int)]


class LossHistory(Callback):
    def on_train_begin(self, logs={}):
        self.losses = []
        self.batch_sizes = []
        self.epoch_losses = []

    def on_batch_end(self, batch, logs={}):
        self.losses.append(logs.get('loss'))
        self.batch_sizes.append(logs.get('size'))

    def on_epoch_end(self, epoch, logs={}):
        self.epoch_losses.append(logs.get('loss'))


model = Sequential()
model.add(Dense(16, input_dim=6, activation='relu', name='dense_in'))
model.add(Dropout(0.5))
model.add(Dense(16, activation='tanh', name='features'))
model.add(Dense(3, activation='softmax', name='probs'))
model.compile(loss='categorical_crossentropy', optimizer='adam', metrics=['accuracy'])

history = LossHistory()
hist = model.fit(x, y, batch_size=64, epochs=10, verbose=0, callbacks=[history])
print(len(history.losses), history.losses[:4])
assert len(history.losses) == 10 * 4
assert history.batch_sizes[:4] == [64, 64, 64, 64], history.batch_sizes[:4]
assert all(np.isfinite(loss) for loss in history.losses)
# each batch logs its own loss, so an epoch's loss is the mean of its four (equal-size) batch losses
np.testing.assert_allclose(np.reshape(history.losses, (10, 4)).mean(axis=1), hist.history['loss'],
                           rtol=1e-5)
np.testing.assert_allclose(history.epoch_losses, hist.history['loss'], rtol=1e-6)
assert np.mean(history.losses[-4:]) < np.mean(history.losses[:4])

# with a Sequential model
get_3rd_layer_output = K.function([model.layers[0].input, K.learning_phase()], [model.layers[3].output])
# output in test mode = 0
layer_output = get_3rd_layer_output([x, 0])[0]
assert layer_output.shape == (256, 3)
np.testing.assert_allclose(layer_output, model.predict(x), rtol=1e-5, atol=1e-6)
# output in train mode = 1: dropout is active, the outputs change from call to call
train_a = get_3rd_layer_output([x, 1])[0]
train_b = get_3rd_layer_output([x, 1])[0]
assert not np.allclose(train_a, train_b)
assert not np.allclose(train_a, layer_output)
np.testing.assert_allclose(train_a.sum(axis=1), 1, rtol=1e-5)

# all layer outputs at once
inp = model.input                                           # input placeholder
outputs = [layer.output for layer in model.layers]          # all layer outputs
functor = K.function([inp, K.learning_phase()], outputs)   # evaluation function
layer_outs = functor([x[:5], 0.])
print([o.shape for o in layer_outs])
assert [o.shape for o in layer_outs] == [(5, 16), (5, 16), (5, 16), (5, 3)]
np.testing.assert_allclose(layer_outs[1], layer_outs[0], rtol=1e-6)  # dropout is the identity at test time

# the first layer by hand: relu(x W + b)
W, b = model.get_layer('dense_in').get_weights()
assert W.shape == (6, 16) and b.shape == (16,)
np.testing.assert_allclose(layer_outs[0], np.maximum(x[:5].dot(W) + b, 0), rtol=1e-5, atol=1e-6)

# the FAQ's other way: a model that ends at the layer
layer_name = 'features'
intermediate_layer_model = Model(inputs=model.input, outputs=model.get_layer(layer_name).output)
intermediate_output = intermediate_layer_model.predict(x)
assert intermediate_output.shape == (256, 16)
np.testing.assert_allclose(intermediate_output[:5], layer_outs[2], rtol=1e-5, atol=1e-6)
assert np.abs(intermediate_output).max() <= 1  # tanh
# it shares the layers (and so the weights) with the model
assert intermediate_layer_model.get_layer('features') is model.get_layer('features')
model.fit(x, y, batch_size=64, epochs=1, verbose=0)
np.testing.assert_allclose(intermediate_layer_model.predict(x[:5]), functor([x[:5], 0.])[2], rtol=1e-5,
                           atol=1e-6)
print('OK introspection', hist.history['loss'][-1])
