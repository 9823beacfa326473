"""Sequence classification of movie-review-like integer sequences, in the style of the most-copied
2016-2019 blog tutorial ("Sequence Classification with LSTM Recurrent Neural Networks in Python with
Keras"): top_words / max_review_length, sequence.pad_sequences(X, maxlen=...), Embedding(top_words,
embedding_vecor_length, input_length=max_review_length), then a plain LSTM, an LSTM with dropout and
recurrent_dropout, and Conv1D(filters=32, kernel_size=3, padding='same', activation='relu') +
MaxPooling1D(pool_size=2) before the LSTM; "Accuracy: %.2f%%" % (scores[1]*100).

imdb.load_data would download: the reviews here are made up (variable-length lists of word indices;
a review is positive when it holds more words from a "good" vocabulary than from a "bad" one), built
the way imdb.load_data(num_words=top_words) returns them. The 2016 version used Convolution1D
(nb_filter, filter_length, border_mode='same'), dropout_W/dropout_U (Keras 1); this script uses the
Keras 2 names.

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py --rnn scan
(19 min on a loaded machine; unrolled, the three 40-step LSTMs did not finish compiling in 15 min).
"""
import numpy

from arignote.layers import LSTM, Conv1D, Dense, Dropout, MaxPooling1D
from arignote.layers.embeddings import Embedding
from arignote.models import Sequential
from arignote.preprocessing import sequence

# fix random seed for reproducibility
numpy.random.seed(7)

# load the dataset but only keep the top n words, zero the rest
top_words = 200
rng = numpy.random.RandomState(3)
good, bad = numpy.arange(4, 24), numpy.arange(24, 44)


def review(label):
    words = list(rng.randint(44, top_words, rng.randint(10, 60)))
    strong, weak = (good, bad) if label else (bad, good)
    words += list(rng.choice(strong, rng.randint(3, 7))) + list(rng.choice(weak, rng.randint(0, 3)))
    rng.shuffle(words)
    return [1] + words  # 1 marks the start of a review, as in imdb.load_data


y_train, y_test = rng.randint(0, 2, 400), rng.randint(0, 2, 200)
X_train = numpy.array([review(label) for label in y_train], dtype=object)
X_test = numpy.array([review(label) for label in y_test], dtype=object)

# truncate and pad input sequences
max_review_length = 40
X_train = sequence.pad_sequences(X_train, maxlen=max_review_length)
X_test = sequence.pad_sequences(X_test, maxlen=max_review_length)
assert X_train.shape == (400, max_review_length), X_train.shape
assert X_train.dtype == numpy.int32, X_train.dtype
# short reviews are padded with zeros in front, long ones lose their first words
short = [i for i in range(400) if X_train[i, 0] == 0][0]
assert (X_train[short] == 0).sum() > 0 and X_train[short, -1] != 0
numpy.testing.assert_array_equal(sequence.pad_sequences([[1, 2, 3]], maxlen=5), [[0, 0, 1, 2, 3]])
numpy.testing.assert_array_equal(sequence.pad_sequences([[1, 2, 3, 4]], maxlen=2), [[3, 4]])
numpy.testing.assert_array_equal(
    sequence.pad_sequences([[1, 2, 3, 4]], maxlen=3, padding='post', truncating='post'), [[1, 2, 3]])

embedding_vecor_length = 16


def check(model, epochs):
    model.compile(loss='binary_crossentropy', optimizer='adam', metrics=['accuracy'])
    print(model.summary())
    history = model.fit(X_train, y_train, validation_data=(X_test, y_test), epochs=epochs, batch_size=32,
                        verbose=0)
    # Final evaluation of the model
    scores = model.evaluate(X_test, y_test, verbose=0)
    print("Accuracy: %.2f%%" % (scores[1] * 100))
    assert sorted(history.history) == ['accuracy', 'loss', 'val_accuracy', 'val_loss'], history.history.keys()
    last = [history.history['val_loss'][-1], history.history['val_accuracy'][-1]]
    numpy.testing.assert_allclose(scores, last, rtol=1e-4)
    assert history.history['loss'][-1] < history.history['loss'][0]
    return scores


# create the model
model = Sequential()
model.add(Embedding(top_words, embedding_vecor_length, input_length=max_review_length))
model.add(LSTM(20))
model.add(Dense(1, activation='sigmoid'))
assert model.layers[0].output_shape == (None, max_review_length, embedding_vecor_length)
assert model.count_params() == top_words * 16 + 4 * (20 * (16 + 20) + 20) + 21
scores = check(model, epochs=8)
assert scores[1] > 0.75, scores

# LSTM with dropout on the inputs and on the recurrent connections
model = Sequential()
model.add(Embedding(top_words, embedding_vecor_length, input_length=max_review_length))
model.add(Dropout(0.2))
model.add(LSTM(20, dropout=0.2, recurrent_dropout=0.2))
model.add(Dropout(0.2))
model.add(Dense(1, activation='sigmoid'))
scores = check(model, epochs=8)
assert scores[1] > 0.7, scores
# dropout is off at prediction time: two predictions agree
p1, p2 = model.predict(X_test[:16]), model.predict(X_test[:16])
numpy.testing.assert_array_equal(p1, p2)

# convolution + pooling in front of the LSTM
model = Sequential()
model.add(Embedding(top_words, embedding_vecor_length, input_length=max_review_length))
model.add(Conv1D(filters=32, kernel_size=3, padding='same', activation='relu'))
model.add(MaxPooling1D(pool_size=2))
model.add(LSTM(20))
model.add(Dense(1, activation='sigmoid'))
assert model.layers[1].output_shape == (None, max_review_length, 32)
assert model.layers[2].output_shape == (None, max_review_length // 2, 32)
assert model.layers[1].get_weights()[0].shape == (3, embedding_vecor_length, 32)
scores = check(model, epochs=8)
assert scores[1] > 0.75, scores
classes = model.predict_classes(X_test)
assert classes.shape == (200, 1)
assert abs((classes[:, 0] == y_test).mean() - scores[1]) < 1e-6
print('OK imdb_cnn_lstm', scores)
