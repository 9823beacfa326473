"""A Keras 1.2-era text classifier (the shape of 2016's examples/imdb_lstm.py and imdb_cnn_lstm.py),
run with the Keras 1 argument names Keras 2.3.1 still converted (with a warning):
Embedding(max_features, dim, input_length=, dropout=), Convolution1D(nb_filter=, filter_length=,
border_mode=, subsample_length=), MaxPooling1D(pool_length=), LSTM(output_dim=, dropout_W=,
dropout_U=, consume_less=), GRU(output_dim=, input_dim=, input_length=, inner_activation=),
Dense(output_dim=, init=, W_regularizer=), model.fit(nb_epoch=), predict_generator(val_samples=).

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py.
"""
import warnings

import numpy as np

from arignote.layers import GRU, LSTM, Activation, Convolution1D, Dense, Embedding, MaxPooling1D
from arignote.models import Sequential
from arignote.optimizers import Adam
from arignote.regularizers import l2

np.random.seed(7)
max_features = 50
maxlen = 16
batch_size = 16
embedding_size = 16

# label 1: the sequence holds "positive" words 1..5 (three places); label 0: none of them
n = 320
X = np.random.randint(6, max_features, size=(n, maxlen))
y = np.random.randint(0, 2, n)
for i in np.nonzero(y)[0]:
    X[i, np.random.choice(maxlen, 3, replace=False)] = np.random.randint(1, 6, size=3)
X_train, X_test, y_train, y_test = X[:256], X[256:], y[:256], y[256:]
print(len(X_train), 'train sequences', len(X_test), 'test sequences')

print('Build model...')
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    model = Sequential()
    model.add(Embedding(max_features, embedding_size, input_length=maxlen, dropout=0.1))
    model.add(Convolution1D(nb_filter=16, filter_length=3, border_mode='valid', activation='relu',
                            subsample_length=1))
    model.add(MaxPooling1D(pool_length=2))
    model.add(LSTM(output_dim=16, dropout_W=0.1, dropout_U=0.1, consume_less='gpu'))
    model.add(Dense(output_dim=1, init='uniform', W_regularizer=l2(1e-4)))
    model.add(Activation('sigmoid'))
texts = [str(w.message) for w in caught]
assert any(t.startswith('The `dropout` argument is no longer support in `Embedding`.') for t in texts), texts
assert ('Update your `Conv1D` call to the Keras 2 API: `Conv1D(activation="relu", filters=16, kernel_size=3, '
        'strides=1, padding="valid")`') in texts, texts
assert 'Update your `MaxPooling1D` call to the Keras 2 API: `MaxPooling1D(pool_size=2)`' in texts, texts
assert ('Update your `LSTM` call to the Keras 2 API: `LSTM(units=16, dropout=0.1, recurrent_dropout=0.1, '
        'implementation=2)`') in texts, texts
assert model.layers[1].output_shape == (None, maxlen - 2, 16), model.layers[1].output_shape
assert model.layers[2].output_shape == (None, (maxlen - 2) // 2, 16), model.layers[2].output_shape
lstm_config = model.layers[3].get_config()
assert lstm_config['units'] == 16 and lstm_config['implementation'] == 2, lstm_config
model.summary()

model.compile(loss='binary_crossentropy', optimizer='adam', metrics=['accuracy'])
print('Train...')
hist = model.fit(X_train, y_train, batch_size=batch_size, nb_epoch=15, validation_data=(X_test, y_test))
assert len(hist.history['loss']) == 15, hist.history
score, acc = model.evaluate(X_test, y_test, batch_size=batch_size)
print('Test score:', score)
print('Test accuracy:', acc)
assert acc > 0.8, acc


def test_batches():
    while True:
        for i in range(0, len(X_test), batch_size):
            yield X_test[i:i + batch_size]


# Keras 2.3.1 takes val_samples as steps: 4 batches of 16
probabilities = model.predict_generator(test_batches(), val_samples=len(X_test) // batch_size)
assert probabilities.shape == (len(X_test), 1), probabilities.shape
assert ((probabilities[:, 0] > 0.5) == y_test).mean() > 0.8

# a Keras 1 GRU on one-hot words: input_dim / input_length become input_shape (with a warning)
one_hot = np.eye(max_features, dtype='float32')
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    gru = Sequential()
    gru.add(GRU(output_dim=12, input_dim=max_features, input_length=maxlen, inner_activation='hard_sigmoid'))
    gru.add(Dense(1, activation='sigmoid'))
texts = [str(w.message) for w in caught]
assert ('The `input_dim` and `input_length` arguments in recurrent layers are deprecated. '
        'Use `input_shape` instead.') in texts, texts
assert gru.layers[0].input_shape == (None, maxlen, max_features), gru.layers[0].input_shape
gru.compile(loss='binary_crossentropy', optimizer=Adam(lr=0.01), metrics=['accuracy'])
gru.fit(one_hot[X_train], y_train, batch_size=batch_size, nb_epoch=15, verbose=0)
gru_acc = gru.evaluate(one_hot[X_test], y_test, verbose=0)[1]
print('GRU test accuracy:', gru_acc)
assert gru_acc > 0.75, gru_acc
print('OK keras1_text', acc)
