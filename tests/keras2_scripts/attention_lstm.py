"""A custom attention layer on top of a recurrent layer with return_sequences=True, in the style of
the most-copied 2017-2019 Kaggle kernels and blog posts ("Attention" from the toxic-comment and
Quora-insincere kernels, "How to add an attention mechanism in Keras"): a Layer subclass with
supports_masking = True, step_dim and features_dim, self.add_weight((input_shape[-1],),
initializer=initializers.get('glorot_uniform'), name='{}_W'.format(self.name), regularizer=...),
call(x, mask=None) with K.reshape(K.dot(K.reshape(x, (-1, features_dim)), K.reshape(self.W,
(features_dim, 1))), (-1, step_dim)), K.tanh, K.exp, the mask cast with K.cast(mask, K.floatx()),
a /= K.cast(K.sum(a, axis=1, keepdims=True) + K.epsilon(), K.floatx()), K.expand_dims and K.sum;
compute_mask returning None, compute_output_shape and get_config; used after
Embedding(mask_zero=True) + Bidirectional(LSTM(return_sequences=True)). Then the shorter variant of
the blog posts (K.squeeze(K.tanh(K.dot(x, self.W) + self.b), axis=-1), K.softmax, x * at summed over
time) in a functional model, saved with model.save and reloaded with custom_objects.

The task is made up: a sequence of word indices (zero-padded at the front) is positive when one
"trigger" word occurs anywhere in it. The script checks the attention pooling against numpy on the
recurrent layer's outputs (an intermediate Model), including the masked time steps getting no weight.

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py --rnn scan
(unrolled, Theano compiles the three recurrent models for longer than the runner waits).
"""
import numpy as np

from arignote import backend as K
from arignote import constraints, initializers, regularizers
from arignote.engine.topology import Layer
from arignote.layers import LSTM, Bidirectional, Dense, Embedding, Input
from arignote.models import Model, load_model
from arignote.preprocessing.sequence import pad_sequences


class Attention(Layer):
    def __init__(self, step_dim,
                 W_regularizer=None, b_regularizer=None,
                 W_constraint=None, b_constraint=None,
                 bias=True, **kwargs):
        self.supports_masking = True
        self.init = initializers.get('glorot_uniform')

        self.W_regularizer = regularizers.get(W_regularizer)
        self.b_regularizer = regularizers.get(b_regularizer)

        self.W_constraint = constraints.get(W_constraint)
        self.b_constraint = constraints.get(b_constraint)

        self.bias = bias
        self.step_dim = step_dim
        self.features_dim = 0
        super().__init__(**kwargs)

    def build(self, input_shape):
        assert len(input_shape) == 3

        self.W = self.add_weight(shape=(input_shape[-1],),
                                 initializer=self.init,
                                 name=f'{self.name}_W',
                                 regularizer=self.W_regularizer,
                                 constraint=self.W_constraint)
        self.features_dim = input_shape[-1]

        if self.bias:
            self.b = self.add_weight(shape=(input_shape[1],),
                                     initializer='zero',
                                     name=f'{self.name}_b',
                                     regularizer=self.b_regularizer,
                                     constraint=self.b_constraint)
        else:
            self.b = None

        self.built = True

    def compute_mask(self, input, input_mask=None):
        return None

    def call(self, x, mask=None):
        features_dim = self.features_dim
        step_dim = self.step_dim

        eij = K.reshape(K.dot(K.reshape(x, (-1, features_dim)),
                        K.reshape(self.W, (features_dim, 1))), (-1, step_dim))

        if self.bias:
            eij += self.b

        eij = K.tanh(eij)

        a = K.exp(eij)

        if mask is not None:
            a *= K.cast(mask, K.floatx())

        a /= K.cast(K.sum(a, axis=1, keepdims=True) + K.epsilon(), K.floatx())

        a = K.expand_dims(a)
        weighted_input = x * a
        return K.sum(weighted_input, axis=1)

    def compute_output_shape(self, input_shape):
        return input_shape[0], self.features_dim

    def get_config(self):
        config = {'step_dim': self.step_dim, 'bias': self.bias}
        base_config = super().get_config()
        return dict(list(base_config.items()) + list(config.items()))


np.random.seed(7)
max_features, maxlen, embed_size = 30, 12, 8
trigger = 7


def make_data(n):
    seqs, labels = [], []
    for _ in range(n):
        length = np.random.randint(4, maxlen + 1)
        s = list(np.random.choice([w for w in range(1, max_features) if w != trigger], length))
        label = np.random.randint(0, 2)
        if label:
            s[np.random.randint(0, length)] = trigger
        seqs.append(s)
        labels.append(label)
    return pad_sequences(seqs, maxlen=maxlen), np.array(labels)


x_train, y_train = make_data(600)
x_test, y_test = make_data(200)
assert x_train.shape == (600, maxlen) and (x_train[:, 0] == 0).any()

inp = Input(shape=(maxlen,))
x = Embedding(max_features, embed_size, mask_zero=True)(inp)
x = Bidirectional(LSTM(8, return_sequences=True))(x)
x = Attention(maxlen, name='attention')(x)
x = Dense(8, activation="relu")(x)
x = Dense(1, activation="sigmoid")(x)
model = Model(inputs=inp, outputs=x)
model.compile(loss='binary_crossentropy', optimizer='adam', metrics=['accuracy'])
model.summary()
att = model.get_layer('attention')
# (Keras 2.3.1 names these weights 'attention/attention_W' and 'attention/attention_b' on Theano,
# 'attention/attention_W:0' on TensorFlow; arignote's weights are torch tensors without .name, left out)
assert [K.int_shape(w) for w in att.weights] == [(16,), (maxlen,)]
assert att.output_shape == (None, 16), att.output_shape
assert att.get_config()['step_dim'] == maxlen

history = model.fit(x_train, y_train, batch_size=32, epochs=12, validation_data=(x_test, y_test), verbose=0)
print(history.history['val_accuracy'])
loss, acc = model.evaluate(x_test, y_test, verbose=0)
print('Test accuracy:', acc)
assert acc > 0.9, history.history

# the pooling, recomputed in numpy on the recurrent layer's outputs
seq_model = Model(inputs=model.input, outputs=model.layers[2].output)
h = seq_model.predict(x_test[:5])
pooled = Model(inputs=model.input, outputs=att.output).predict(x_test[:5])
W, b = att.get_weights()
e = np.exp(np.tanh(h.dot(W) + b)) * (x_test[:5] != 0)
a = e / (e.sum(axis=1, keepdims=True) + K.epsilon())
np.testing.assert_allclose(pooled, (h * a[:, :, None]).sum(axis=1), rtol=1e-4, atol=1e-6)


# the short variant of the blog posts
class attention(Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    def build(self, input_shape):
        self.W = self.add_weight(name="att_weight", shape=(input_shape[-1], 1), initializer="normal")
        self.b = self.add_weight(name="att_bias", shape=(input_shape[1], 1), initializer="zeros")
        super().build(input_shape)

    def call(self, x):
        et = K.squeeze(K.tanh(K.dot(x, self.W) + self.b), axis=-1)
        at = K.softmax(et)
        at = K.expand_dims(at, axis=-1)
        output = x * at
        return K.sum(output, axis=1)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[-1])

    def get_config(self):
        return super().get_config()


inputs = Input((maxlen,))
emb = Embedding(max_features, embed_size)(inputs)
lstm_out = LSTM(16, return_sequences=True)(emb)
att_out = attention(name='att')(lstm_out)
outputs = Dense(1, activation='sigmoid')(att_out)
model2 = Model(inputs, outputs)
model2.compile(loss='binary_crossentropy', optimizer='adam', metrics=['acc'])
model2.fit(x_train, y_train, batch_size=32, epochs=25, verbose=0)
acc2 = model2.evaluate(x_test, y_test, verbose=0)[1]
print('short attention accuracy:', acc2)
assert acc2 > 0.85, acc2

Wt, bt = model2.get_layer('att').get_weights()
assert Wt.shape == (16, 1) and bt.shape == (maxlen, 1)
h2 = Model(inputs, lstm_out).predict(x_test[:4])
et = np.tanh(h2.dot(Wt) + bt)[..., 0]
at = np.exp(et - et.max(axis=1, keepdims=True))
at /= at.sum(axis=1, keepdims=True)
np.testing.assert_allclose(Model(inputs, att_out).predict(x_test[:4]), (h2 * at[..., None]).sum(axis=1),
                           rtol=1e-4, atol=1e-6)

model2.save('attention_model.h5')
restored = load_model('attention_model.h5', custom_objects={'attention': attention})
np.testing.assert_allclose(restored.predict(x_test), model2.predict(x_test), rtol=1e-5, atol=1e-6)
print('OK attention_lstm')
