"""The Keras 2 functional API guide ("Getting started with the Keras functional API"): the multi-input
multi-output model (main_input -> Embedding -> LSTM, an auxiliary output, auxiliary_input concatenated),
compiled with loss_weights as a list and as dicts keyed by the output layers' names, fit with dicts;
shared layers (the tweet-similarity model with one shared LSTM); a model called as a layer on two
inputs; TimeDistributed over a layer; an intermediate model from get_layer(...).output.

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py.
"""
import numpy as np

from arignote import layers
from arignote.layers import LSTM, Conv2D, Dense, Embedding, Input, MaxPooling2D, TimeDistributed
from arignote.models import Model

np.random.seed(0)

# --- multi-input and multi-output models
main_input = Input(shape=(12,), dtype='int32', name='main_input')
x = Embedding(output_dim=16, input_dim=50, input_length=12)(main_input)
lstm_out = LSTM(8)(x)
auxiliary_output = Dense(1, activation='sigmoid', name='aux_output')(lstm_out)

auxiliary_input = Input(shape=(5,), name='aux_input')
x = layers.concatenate([lstm_out, auxiliary_input])
x = Dense(16, activation='relu')(x)
x = Dense(16, activation='relu')(x)
main_output = Dense(1, activation='sigmoid', name='main_output')(x)

model = Model(inputs=[main_input, auxiliary_input], outputs=[main_output, auxiliary_output])
model.compile(optimizer='rmsprop', loss='binary_crossentropy', loss_weights=[1., 0.2])

n = 256
headline_data = np.random.randint(1, 50, (n, 12))
additional_data = np.random.randn(n, 5).astype('float32')
labels = (headline_data[:, :6].mean(axis=1) > 25).astype('float32')
main_labels = ((labels + (additional_data[:, 0] > 0)) > 0.5).astype('float32')
model.fit([headline_data, additional_data], [main_labels, labels], epochs=2, batch_size=32, verbose=0)

model.compile(optimizer='rmsprop',
              loss={'main_output': 'binary_crossentropy', 'aux_output': 'binary_crossentropy'},
              loss_weights={'main_output': 1., 'aux_output': 0.2})
before = model.evaluate({'main_input': headline_data, 'aux_input': additional_data},
                        {'main_output': main_labels, 'aux_output': labels}, verbose=0)
hist = model.fit({'main_input': headline_data, 'aux_input': additional_data},
                 {'main_output': main_labels, 'aux_output': labels}, epochs=12, batch_size=32, verbose=0)
after = model.evaluate({'main_input': headline_data, 'aux_input': additional_data},
                       {'main_output': main_labels, 'aux_output': labels}, verbose=0)
print(model.metrics_names, before, after)
assert model.metrics_names == ['loss', 'main_output_loss', 'aux_output_loss']
np.testing.assert_allclose(after[0], after[1] + 0.2 * after[2], rtol=1e-3)
assert after[0] < before[0] * 0.9, (before, after)
assert set(hist.history) >= {'loss', 'main_output_loss', 'aux_output_loss'}
main_pred, aux_pred = model.predict([headline_data, additional_data])
assert main_pred.shape == (n, 1) and aux_pred.shape == (n, 1)

# --- shared layers: do two tweets come from the same person?
tweet_a = Input(shape=(10, 8))
tweet_b = Input(shape=(10, 8))
shared_lstm = LSTM(16)
encoded_a = shared_lstm(tweet_a)
encoded_b = shared_lstm(tweet_b)
merged_vector = layers.concatenate([encoded_a, encoded_b], axis=-1)
hidden = Dense(16, activation='relu')(merged_vector)  # "same author" is not linear in the codes
predictions = Dense(1, activation='sigmoid')(hidden)
tweets = Model(inputs=[tweet_a, tweet_b], outputs=predictions)
tweets.compile(optimizer='rmsprop', loss='binary_crossentropy', metrics=['accuracy'])

authors = np.random.randn(2, 1, 8)
who_a, who_b = np.random.randint(0, 2, (2, 200))
data_a = (authors[who_a] + 0.5 * np.random.randn(200, 10, 8)).astype('float32')
data_b = (authors[who_b] + 0.5 * np.random.randn(200, 10, 8)).astype('float32')
same = (who_a == who_b).astype('float32')
tweets.fit([data_a, data_b], same, epochs=40, batch_size=32, verbose=0)
loss, acc = tweets.evaluate([data_a, data_b], same, verbose=0)
print('tweets', loss, acc)
assert acc > 0.8, acc
assert len(tweets.layers) == 6 and len(shared_lstm.get_weights()) == 3
# a layer called twice has two nodes
assert shared_lstm.get_output_at(0) is encoded_a and shared_lstm.get_output_at(1) is encoded_b
assert shared_lstm.get_input_shape_at(0) == (None, 10, 8)

# --- a model as a layer: "all models are callable, just like layers"
digit_input = Input(shape=(8, 8, 1))
x = Conv2D(4, (3, 3))(digit_input)
x = Conv2D(4, (3, 3))(x)
x = MaxPooling2D((2, 2))(x)
out = layers.Flatten()(x)
vision_model = Model(digit_input, out)
digit_a = Input(shape=(8, 8, 1))
digit_b = Input(shape=(8, 8, 1))
out_a = vision_model(digit_a)
out_b = vision_model(digit_b)
concatenated = layers.concatenate([out_a, out_b])
out = Dense(1, activation='sigmoid')(concatenated)
classification_model = Model([digit_a, digit_b], out)
images = np.random.rand(3, 8, 8, 1).astype('float32')
assert vision_model.output_shape == (None, 16)
assert classification_model.predict([images, images]).shape == (3, 1)
assert len(classification_model.get_weights()) == len(vision_model.get_weights()) + 2
# NOTE: the guide's next step, TimeDistributed(vision_model) on a video input, is left out: arignote's
# TimeDistributed wraps layers only (see the corpus report).
# TimeDistributed over a layer, on a sequence of frame codes
frame_codes = Input(shape=(5, 16))
encoded_video = LSTM(6)(TimeDistributed(Dense(8, activation='relu'))(frame_codes))
video_model = Model(frame_codes, Dense(2, activation='softmax')(encoded_video))
assert video_model.layers[1].output_shape == (None, 5, 8)
assert video_model.predict(np.random.rand(3, 5, 16)).shape == (3, 2)

# --- an intermediate model: the output of one layer
intermediate_layer_model = Model(inputs=model.input, outputs=model.get_layer('aux_output').output)
intermediate_output = intermediate_layer_model.predict([headline_data, additional_data])
np.testing.assert_allclose(intermediate_output, aux_pred, rtol=1e-5, atol=1e-6)
assert model.get_layer('main_output').input_shape == (None, 16)
print('OK functional_guide', after)
