"""Training from generators, in the style of the 2017-2019 blog posts ("A detailed example of how to
generate your data in parallel with Keras", the fit_generator tutorials): a keras.utils.Sequence
DataGenerator (__len__, __getitem__, on_epoch_end shuffling its index list) given to fit_generator with
validation_data=another Sequence; a plain Python `while True: ... yield` generator with
steps_per_epoch and validation_steps; ImageDataGenerator(featurewise_center=True, ..., rotation_range,
width_shift_range, horizontal_flip) with datagen.fit(x_train) and datagen.flow(x, y, batch_size);
evaluate_generator and predict_generator.

The images are made up (a bright square in the left or right half of an 12x12 image).

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py.
"""
import numpy as np

import arignote
from arignote.layers import Conv2D, Dense, Flatten, MaxPooling2D
from arignote.models import Sequential
from arignote.preprocessing.image import ImageDataGenerator
from arignote.utils import Sequence, to_categorical

np.random.seed(5)


def make_images(n):
    x = np.random.rand(n, 12, 12, 1).astype('float32') * 0.3
    side = np.random.randint(0, 2, n)
    for i in range(n):
        r, c = np.random.randint(2, 8), np.random.randint(0, 3) + 6 * side[i]
        x[i, r:r + 3, c:c + 3, 0] += 0.7
    return x, side


x_train, side_train = make_images(320)
x_val, side_val = make_images(96)
y_train, y_val = to_categorical(side_train, 2), to_categorical(side_val, 2)


def build():
    model = Sequential()
    model.add(Conv2D(8, (3, 3), activation='relu', input_shape=(12, 12, 1)))
    model.add(MaxPooling2D(pool_size=(2, 2)))
    model.add(Flatten())
    model.add(Dense(2, activation='softmax'))
    model.compile(loss='categorical_crossentropy', optimizer='adam', metrics=['accuracy'])
    return model


class DataGenerator(Sequence):
    'Generates data for Keras'

    def __init__(self, list_IDs, labels, batch_size=32, n_classes=2, shuffle=True):
        'Initialization'
        self.list_IDs = list_IDs
        self.labels = labels
        self.batch_size = batch_size
        self.n_classes = n_classes
        self.shuffle = shuffle
        self.epochs_seen = 0
        self.on_epoch_end()

    def __len__(self):
        'Denotes the number of batches per epoch'
        return int(np.floor(len(self.list_IDs) / self.batch_size))

    def __getitem__(self, index):
        'Generate one batch of data'
        indexes = self.indexes[index * self.batch_size:(index + 1) * self.batch_size]
        list_IDs_temp = [self.list_IDs[k] for k in indexes]
        X, y = self.__data_generation(list_IDs_temp)
        return X, y

    def on_epoch_end(self):
        'Updates indexes after each epoch'
        self.epochs_seen += 1
        self.indexes = np.arange(len(self.list_IDs))
        if self.shuffle:
            np.random.shuffle(self.indexes)

    def __data_generation(self, list_IDs_temp):
        'Generates data containing batch_size samples'
        X = np.empty((self.batch_size, 12, 12, 1), dtype='float32')
        y = np.empty((self.batch_size), dtype=int)
        for i, ID in enumerate(list_IDs_temp):
            X[i,] = x_all[ID]  # (the blog post read np.load('data/' + ID + '.npy'))
            y[i] = self.labels[ID]
        return X, to_categorical(y, num_classes=self.n_classes)


x_all = np.concatenate([x_train, x_val])
labels = dict(enumerate(np.concatenate([side_train, side_val])))
partition = {'train': list(range(320)), 'validation': list(range(320, 416))}
training_generator = DataGenerator(partition['train'], labels, batch_size=32)
validation_generator = DataGenerator(partition['validation'], labels, batch_size=32, shuffle=False)
assert len(training_generator) == 10 and len(validation_generator) == 3

model = build()
history = model.fit_generator(generator=training_generator, validation_data=validation_generator,
                              epochs=6, use_multiprocessing=False, workers=1, verbose=0)
print(history.history)
assert sorted(history.history) == ['accuracy', 'loss', 'val_accuracy', 'val_loss']
assert len(history.history['loss']) == 6
assert history.history['loss'][-1] < history.history['loss'][0]
assert history.history['val_accuracy'][-1] > 0.9, history.history
assert training_generator.epochs_seen >= 6  # on_epoch_end ran after every epoch (and once in __init__)
score = model.evaluate_generator(validation_generator)
if arignote.__version__.startswith('2.3.'):
    # Keras 2.3.0 and 2.3.1 return the LAST batch's loss here (a regression of 2.3, keras-team/keras#13469;
    # 2.2.5 averaged): the accuracy, a stateful metric, is right
    np.testing.assert_allclose(score[1], model.evaluate(x_val, y_val, verbose=0)[1], rtol=1e-4)
else:
    np.testing.assert_allclose(score, model.evaluate(x_val, y_val, verbose=0), rtol=1e-4)


# a plain generator loops forever: steps_per_epoch says where an epoch ends
def batch_generator(x, y, batch_size):
    n = len(x)
    while True:
        order = np.random.permutation(n)
        for start in range(0, n - batch_size + 1, batch_size):
            idx = order[start:start + batch_size]
            yield x[idx], y[idx]


calls = []


def counted(gen):
    for item in gen:
        calls.append(len(item[0]))
        yield item


model = build()
history = model.fit_generator(counted(batch_generator(x_train, y_train, 16)), steps_per_epoch=20, epochs=3,
                              validation_data=batch_generator(x_val, y_val, 16), validation_steps=6,
                              verbose=0)
assert len(history.history['val_loss']) == 3
assert history.history['val_accuracy'][-1] > 0.85, history.history
assert len(calls) >= 60  # at least 20 batches an epoch were drawn (the queue may read ahead)
pred = model.predict_generator(batch_generator(x_val, y_val, 16), steps=6)
assert pred.shape == (96, 2), pred.shape
np.testing.assert_allclose(pred.sum(axis=1), 1, rtol=1e-5)

# ImageDataGenerator: feature-wise statistics from fit(), random transforms in flow()
datagen = ImageDataGenerator(featurewise_center=True, featurewise_std_normalization=True, rotation_range=10,
                             width_shift_range=0.1, height_shift_range=0.1, vertical_flip=True)
datagen.fit(x_train)
np.testing.assert_allclose(datagen.mean.reshape(-1), x_train.mean(), rtol=1e-4)
np.testing.assert_allclose(datagen.std.reshape(-1), x_train.std(), rtol=1e-3)
xb, yb = next(datagen.flow(x_train, y_train, batch_size=32))
assert xb.shape == (32, 12, 12, 1) and yb.shape == (32, 2)
assert abs(xb.mean()) < 0.5 and 0.5 < xb.std() < 1.5, (xb.mean(), xb.std())

model = build()
history = model.fit_generator(datagen.flow(x_train, y_train, batch_size=32),
                              steps_per_epoch=len(x_train) / 32, epochs=8,
                              validation_data=datagen.flow(x_val, y_val, batch_size=32), validation_steps=3,
                              verbose=0)
print(history.history['val_accuracy'])
assert history.params['steps'] == 10, history.params
assert history.history['val_accuracy'][-1] > 0.85, history.history
# at test time: the same standardization, no random transforms
test_flow = ImageDataGenerator(featurewise_center=True, featurewise_std_normalization=True)
test_flow.fit(x_train)
loss, acc = model.evaluate_generator(test_flow.flow(x_val, y_val, batch_size=32, shuffle=False), steps=3)
assert acc > 0.85, acc
print('OK generators', acc)
