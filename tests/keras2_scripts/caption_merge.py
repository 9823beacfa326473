"""An image-captioning "merge" model, in the style of the most-copied 2017-2019 tutorial ("How to
Develop a Deep Learning Photo Caption Generator from Scratch"): photo features (what VGG16's fc2 layer
would give) and captions wrapped in 'startseq ... endseq'; a Tokenizer fit_on_texts,
create_sequences(tokenizer, max_length, descriptions, photos, vocab_size) that splits each caption
into (photo, in_seq) -> out_word pairs with pad_sequences([in_seq], maxlen=max_length)[0] and
to_categorical([out_seq], num_classes=vocab_size)[0]; define_model: Input(shape=(n,)) -> Dropout(0.5)
-> Dense(256, activation='relu'), Input(shape=(max_length,)) -> Embedding(vocab_size, 256,
mask_zero=True) -> Dropout(0.5) -> LSTM(256), add([fe2, se3]) -> Dense -> Dense(vocab_size,
activation='softmax'), Model(inputs=[inputs1, inputs2], outputs=outputs), categorical_crossentropy +
adam; then generate_desc's greedy loop (texts_to_sequences, argmax, word_for_id) until 'endseq'.

The "photos" are made-up feature vectors (one per scene), the captions made up too; the layers are
narrower (the tutorial's 256 units, 4096 features) so it trains in seconds. The script asserts the
greedy decoder reproduces the training captions (at least 4 of the 5 word for word).

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py.
"""
import numpy as np
from numpy import argmax, array

from arignote.layers import LSTM, Dense, Dropout, Embedding, Input
from arignote.layers.merge import add
from arignote.models import Model
from arignote.preprocessing.sequence import pad_sequences
from arignote.preprocessing.text import Tokenizer
from arignote.utils import to_categorical

np.random.seed(3)
n_features = 32
descriptions = {
    'img1': ['startseq dog runs on the grass endseq'],
    'img2': ['startseq two children play in the snow endseq'],
    'img3': ['startseq a man rides a red bike endseq'],
    'img4': ['startseq black cat sleeps on the sofa endseq'],
    'img5': ['startseq girl jumps into the lake endseq'],
}
photos = {key: np.random.rand(n_features).astype('float32') for key in descriptions}


# convert a dictionary of clean descriptions to a list of descriptions
def to_lines(descriptions):
    all_desc = list()
    for key in descriptions.keys():
        [all_desc.append(d) for d in descriptions[key]]
    return all_desc


# fit a tokenizer given caption descriptions
def create_tokenizer(descriptions):
    lines = to_lines(descriptions)
    tokenizer = Tokenizer()
    tokenizer.fit_on_texts(lines)
    return tokenizer


# calculate the length of the description with the most words
def max_length(descriptions):
    lines = to_lines(descriptions)
    return max(len(d.split()) for d in lines)


# create sequences of images, input sequences and output words for an image
def create_sequences(tokenizer, max_length, descriptions, photos, vocab_size):
    X1, X2, y = list(), list(), list()
    # walk through each image identifier
    for key, desc_list in descriptions.items():
        # walk through each description for the image
        for desc in desc_list:
            # encode the sequence
            seq = tokenizer.texts_to_sequences([desc])[0]
            # split one sequence into multiple X,y pairs
            for i in range(1, len(seq)):
                # split into input and output pair
                in_seq, out_seq = seq[:i], seq[i]
                # pad input sequence
                in_seq = pad_sequences([in_seq], maxlen=max_length)[0]
                # encode output sequence
                out_seq = to_categorical([out_seq], num_classes=vocab_size)[0]
                # store
                X1.append(photos[key])
                X2.append(in_seq)
                y.append(out_seq)
    return array(X1), array(X2), array(y)


# define the captioning model
def define_model(vocab_size, max_length):
    # feature extractor model
    inputs1 = Input(shape=(n_features,))
    fe1 = Dropout(0.5)(inputs1)
    fe2 = Dense(64, activation='relu')(fe1)
    # sequence model
    inputs2 = Input(shape=(max_length,))
    se1 = Embedding(vocab_size, 64, mask_zero=True)(inputs2)
    se2 = Dropout(0.5)(se1)
    se3 = LSTM(64)(se2)
    # decoder model
    decoder1 = add([fe2, se3])
    decoder2 = Dense(64, activation='relu')(decoder1)
    outputs = Dense(vocab_size, activation='softmax')(decoder2)
    # tie it together [image, seq] [word]
    model = Model(inputs=[inputs1, inputs2], outputs=outputs)
    model.compile(loss='categorical_crossentropy', optimizer='adam')
    # summarize model
    model.summary()
    return model


# map an integer to a word
def word_for_id(integer, tokenizer):
    for word, index in tokenizer.word_index.items():
        if index == integer:
            return word
    return None


# generate a description for an image
def generate_desc(model, tokenizer, photo, max_length):
    # seed the generation process
    in_text = 'startseq'
    # iterate over the whole length of the sequence
    for _ in range(max_length):
        # integer encode input sequence
        sequence = tokenizer.texts_to_sequences([in_text])[0]
        # pad input
        sequence = pad_sequences([sequence], maxlen=max_length)
        # predict next word
        yhat = model.predict([photo, sequence], verbose=0)
        # convert probability to integer
        yhat = argmax(yhat)
        # map integer to word
        word = word_for_id(yhat, tokenizer)
        # stop if we cannot map the word
        if word is None:
            break
        # append as input for generating the next word
        in_text += ' ' + word
        # stop if we predict the end of the sequence
        if word == 'endseq':
            break
    return in_text


tokenizer = create_tokenizer(descriptions)
vocab_size = len(tokenizer.word_index) + 1
print('Vocabulary Size: %d' % vocab_size)
max_len = max_length(descriptions)
print('Description Length: %d' % max_len)
assert tokenizer.word_index['startseq'] == 1 and tokenizer.word_index['endseq'] == 2  # 5 each, first seen
X1train, X2train, ytrain = create_sequences(tokenizer, max_len, descriptions, photos, vocab_size)
print(X1train.shape, X2train.shape, ytrain.shape)
assert X1train.shape == (len(ytrain), n_features) and X2train.shape == (len(ytrain), max_len)
assert ytrain.shape[1] == vocab_size and (ytrain.sum(axis=1) == 1).all()
assert (X2train[:, -1] != 0).all() and (X2train[:, 0] == 0).all()  # pre-padding, as pad_sequences does

model = define_model(vocab_size, max_len)
assert model.output_shape == (None, vocab_size)
history = model.fit([X1train, X2train], ytrain, epochs=600, batch_size=16, verbose=0)
print('loss %.4f -> %.4f' % (history.history['loss'][0], history.history['loss'][-1]))
assert history.history['loss'][-1] < 0.2 * history.history['loss'][0]

right = 0
for key in sorted(descriptions):
    photo = photos[key].reshape((1, n_features))
    description = generate_desc(model, tokenizer, photo, max_len)
    print(key, description)
    assert description.startswith('startseq ') and description.endswith(' endseq'), description
    right += description == descriptions[key][0]
assert right >= 4, right
print('OK caption_merge')
