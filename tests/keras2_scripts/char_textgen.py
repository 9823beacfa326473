"""Character-level text generation with an LSTM, in the style of the 2016-2019 blog tutorials ("Text
Generation With LSTM Recurrent Neural Networks in Python with Keras", the lstm_text_generation
example they all adapted): chars = sorted(list(set(text))), char_indices / indices_char, sentences cut
every `step` characters, one-hot x of dtype bool, LSTM(128, input_shape=(maxlen, len(chars))) +
Dense(len(chars), activation='softmax'), RMSprop(lr=0.01), ModelCheckpoint with
filepath="weights-improvement-{epoch:02d}-{loss:.4f}.hdf5", monitor='loss', save_best_only=True,
mode='min'; a LambdaCallback(on_epoch_end=...) that prints a sample; then the best weights loaded
back into a fresh model and text generated with sample(preds, temperature).

The text is a made-up rhyme repeated a few times (the tutorials read a Project Gutenberg book).

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py.
"""
import glob
import io
import os
import sys

import numpy as np

from arignote.callbacks import LambdaCallback, ModelCheckpoint
from arignote.layers import LSTM, Dense
from arignote.models import Sequential
from arignote.optimizers import RMSprop

np.random.seed(1)
with io.open('rhyme.txt', 'w', encoding='utf-8') as f:
    f.write('the cat sat on the mat, the dog ran in the fog. ' * 8)
with io.open('rhyme.txt', encoding='utf-8') as f:
    text = f.read().lower()
print('corpus length:', len(text))

chars = sorted(list(set(text)))
print('total chars:', len(chars))
char_indices = dict((c, i) for i, c in enumerate(chars))
indices_char = dict((i, c) for i, c in enumerate(chars))

# cut the text in semi-redundant sequences of maxlen characters
maxlen = 10
step = 1
sentences = []
next_chars = []
for i in range(0, len(text) - maxlen, step):
    sentences.append(text[i: i + maxlen])
    next_chars.append(text[i + maxlen])
print('nb sequences:', len(sentences))

print('Vectorization...')
x = np.zeros((len(sentences), maxlen, len(chars)), dtype=np.bool_)
y = np.zeros((len(sentences), len(chars)), dtype=np.bool_)
for i, sentence in enumerate(sentences):
    for t, char in enumerate(sentence):
        x[i, t, char_indices[char]] = 1
    y[i, char_indices[next_chars[i]]] = 1


def build_model():
    model = Sequential()
    model.add(LSTM(64, input_shape=(maxlen, len(chars))))
    model.add(Dense(len(chars), activation='softmax'))
    return model


model = build_model()
optimizer = RMSprop(lr=0.01)
model.compile(loss='categorical_crossentropy', optimizer=optimizer)


def sample(preds, temperature=1.0):
    # helper function to sample an index from a probability array
    preds = np.asarray(preds).astype('float64')
    preds = np.log(preds) / temperature
    exp_preds = np.exp(preds)
    preds = exp_preds / np.sum(exp_preds)
    probas = np.random.multinomial(1, preds, 1)
    return np.argmax(probas)


def generate(model, seed, length, temperature):
    generated = seed
    sentence = seed
    for _ in range(length):
        x_pred = np.zeros((1, maxlen, len(chars)))
        for t, char in enumerate(sentence):
            x_pred[0, t, char_indices[char]] = 1.
        preds = model.predict(x_pred, verbose=0)[0]
        next_index = sample(preds, temperature)
        next_char = indices_char[next_index]
        generated += next_char
        sentence = sentence[1:] + next_char
    return generated


samples = []
snapshots = {}  # predictions after each epoch, to check the checkpoint files against


def on_epoch_end(epoch, logs):
    # Function invoked at end of each epoch. Prints generated text.
    snapshots[epoch + 1] = model.predict(x[:50])
    if epoch % 4 != 3:
        return
    print()
    print('----- Generating text after Epoch: %d' % epoch)
    start_index = np.random.randint(0, len(text) - maxlen - 1)
    for diversity in [0.2, 1.0]:
        print('----- diversity:', diversity)
        seed = text[start_index: start_index + maxlen]
        print('----- Generating with seed: "' + seed + '"')
        out = generate(model, seed, 20, diversity)
        sys.stdout.write(out[maxlen:] + '\n')
        samples.append(out)


# define the checkpoint
filepath = "weights-improvement-{epoch:02d}-{loss:.4f}.hdf5"
checkpoint = ModelCheckpoint(filepath, monitor='loss', verbose=1, save_best_only=True, mode='min')
print_callback = LambdaCallback(on_epoch_end=on_epoch_end)
history = model.fit(x, y, batch_size=32, epochs=12, callbacks=[checkpoint, print_callback], verbose=2)

losses = history.history['loss']
print(losses)
assert len(losses) == 12 and losses[-1] < losses[0] * 0.3, losses
assert len(samples) == 6 and all(len(s) == maxlen + 20 and set(s) <= set(chars) for s in samples)

# one file per improvement, the epoch counted from 1 and the loss with four decimals
files = sorted(glob.glob('weights-improvement-*.hdf5'))
print(files)
best_so_far = np.minimum.accumulate(losses)
improved = [e for e in range(12) if e == 0 or losses[e] < best_so_far[e - 1]]
assert [int(f.split('-')[2]) for f in files] == [e + 1 for e in improved], (files, improved)
for f in files:
    epoch = int(f.split('-')[2])
    assert f == 'weights-improvement-%02d-%.4f.hdf5' % (epoch, losses[epoch - 1])
assert os.path.getsize(files[-1]) > 0

# load the network weights of the best epoch into a new model and generate
filename = files[-1]
model2 = build_model()
model2.load_weights(filename)
model2.compile(loss='categorical_crossentropy', optimizer='adam')
best_epoch = int(filename.split('-')[2])
assert losses[best_epoch - 1] == min(losses)
np.testing.assert_allclose(model2.predict(x[:50]), snapshots[best_epoch], rtol=1e-4, atol=1e-6)
loss = model2.evaluate(x, y, verbose=0)
assert loss < losses[0] * 0.3, (loss, losses)

# at a low temperature, the model continues the rhyme it learned
seed = 'the cat sa'
np.random.seed(5)
out = generate(model2, seed, 30, 0.2)
print(out)
assert out.startswith('the cat sat on the'), out
# a high temperature flattens the distribution: more distinct continuations
np.random.seed(6)
hot = {generate(model2, seed, 8, 5.0) for _ in range(8)}
cold = {generate(model2, seed, 8, 0.1) for _ in range(8)}
assert len(hot) > len(cold), (hot, cold)
print('OK char_textgen', min(losses))
