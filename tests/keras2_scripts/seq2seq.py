"""Sequence to sequence in the style of Keras 2's examples/addition_rnn.py: an LSTM encoder, RepeatVector,
an LSTM decoder with return_sequences, TimeDistributed(Dense) and softmax. Task: reverse a digit string.

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py.
"""
import numpy as np

from arignote import layers
from arignote.models import Sequential

np.random.seed(0)
DIGITS, CHARS, N = 4, 10, 2000
RNN = layers.LSTM
HIDDEN_SIZE = 64

seqs = np.random.randint(0, CHARS, (N, DIGITS))
x = np.eye(CHARS, dtype='float32')[seqs]
y = np.eye(CHARS, dtype='float32')[seqs[:, ::-1]]

model = Sequential()
model.add(RNN(HIDDEN_SIZE, input_shape=(DIGITS, CHARS)))
model.add(layers.RepeatVector(DIGITS))
model.add(RNN(HIDDEN_SIZE, return_sequences=True))
model.add(layers.TimeDistributed(layers.Dense(CHARS, activation='softmax')))
model.compile(loss='categorical_crossentropy', optimizer='adam', metrics=['accuracy'])
model.summary()
hist = model.fit(x, y, batch_size=64, epochs=25, verbose=0, validation_split=0.1)
acc = hist.history['val_accuracy'][-1] if 'val_accuracy' in hist.history else hist.history['val_acc'][-1]
guess = model.predict(x[:5]).argmax(-1)
print(guess, seqs[:5, ::-1], acc)
assert model.output_shape == (None, DIGITS, CHARS)
assert acc > 0.8, acc
print('OK seq2seq', acc)
