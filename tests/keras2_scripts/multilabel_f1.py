"""Multi-label image classification with hand-written precision / recall / F1 metrics, in the style of
the 2018-2019 blog posts ("Multi-label classification with Keras", the Planet Amazon kernels) and the
most-copied Stack Overflow answer on F1 in Keras ("How to get other metrics in Tensorflow/Keras?"):
MultiLabelBinarizer-style 0/1 label rows, a small convnet ending in Dense(n_labels,
activation='sigmoid') with binary_crossentropy, recall_m / precision_m / f1_m written with K.sum,
K.round, K.clip and K.epsilon() passed to compile(metrics=['accuracy', f1_m, precision_m, recall_m]),
ImageDataGenerator(rotation_range, width_shift_range, height_shift_range, horizontal_flip,
fill_mode='nearest') with aug.flow(trainX, trainY, batch_size=BS) into fit_generator(steps_per_epoch=
len(trainX) // BS, validation_data=(testX, testY)), then the tags read with
np.argsort(proba)[::-1][:2], a 0.5 threshold, and model.save / load_model(custom_objects=
{'f1_m': f1_m, ...}).

The pictures are made up (16x16; each of four tags, a bright blob in one quadrant, is present or
not). The script checks the metric values of evaluate against numpy: Keras 2.3.1 averages a
function metric over batches weighted by batch size, so the F1 it reports is the mean of the
per-batch F1s (not the F1 of the whole set).

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py.
"""
import numpy as np

from arignote import backend as K
from arignote.layers import Conv2D, Dense, Flatten, MaxPooling2D
from arignote.models import Sequential, load_model
from arignote.preprocessing.image import ImageDataGenerator


def recall_m(y_true, y_pred):
    true_positives = K.sum(K.round(K.clip(y_true * y_pred, 0, 1)))
    possible_positives = K.sum(K.round(K.clip(y_true, 0, 1)))
    recall = true_positives / (possible_positives + K.epsilon())
    return recall


def precision_m(y_true, y_pred):
    true_positives = K.sum(K.round(K.clip(y_true * y_pred, 0, 1)))
    predicted_positives = K.sum(K.round(K.clip(y_pred, 0, 1)))
    precision = true_positives / (predicted_positives + K.epsilon())
    return precision


def f1_m(y_true, y_pred):
    precision = precision_m(y_true, y_pred)
    recall = recall_m(y_true, y_pred)
    return 2 * ((precision * recall) / (precision + recall + K.epsilon()))


np.random.seed(11)
TAGS = ['clouds', 'river', 'road', 'field']


def make_images(n):
    X = np.random.rand(n, 16, 16, 3).astype('float32') * 0.5
    Y = (np.random.rand(n, 4) < 0.4).astype('float32')
    for i in range(n):
        for t in range(4):
            if Y[i, t]:
                r, c = 8 * (t // 2) + np.random.randint(1, 4), 8 * (t % 2) + np.random.randint(1, 4)
                X[i, r:r + 3, c:c + 3, t % 3] += 0.5
    return X, Y


trainX, trainY = make_images(512)
testX, testY = make_images(128)
print('[INFO] labels:', TAGS, trainY.sum(axis=0))

EPOCHS = 8
INIT_LR = 1e-3
BS = 32

aug = ImageDataGenerator(rotation_range=5, width_shift_range=0.05, height_shift_range=0.05,
                         horizontal_flip=False, fill_mode="nearest")

model = Sequential()
model.add(Conv2D(16, (3, 3), padding="same", activation='relu', input_shape=(16, 16, 3)))
model.add(MaxPooling2D(pool_size=(2, 2)))
model.add(Conv2D(16, (3, 3), padding="same", activation='relu'))
model.add(MaxPooling2D(pool_size=(2, 2)))
model.add(Flatten())
model.add(Dense(32, activation='relu'))
model.add(Dense(len(TAGS), activation='sigmoid'))
model.compile(loss="binary_crossentropy", optimizer='adam',
              metrics=['accuracy', f1_m, precision_m, recall_m])
print(model.metrics_names)
assert model.metrics_names == ['loss', 'accuracy', 'f1_m', 'precision_m', 'recall_m'], model.metrics_names

H = model.fit_generator(aug.flow(trainX, trainY, batch_size=BS), validation_data=(testX, testY),
                        steps_per_epoch=len(trainX) // BS, epochs=EPOCHS, verbose=0)
print(sorted(H.history), H.history['f1_m'])
assert sorted(H.history) == ['accuracy', 'f1_m', 'loss', 'precision_m', 'recall_m', 'val_accuracy',
                             'val_f1_m', 'val_loss', 'val_precision_m', 'val_recall_m'], sorted(H.history)
assert H.history['f1_m'][-1] > H.history['f1_m'][0]
loss, accuracy, f1_score, precision, recall = model.evaluate(testX, testY, batch_size=32, verbose=0)
print('loss %.3f accuracy %.3f f1 %.3f precision %.3f recall %.3f' % (loss, accuracy, f1_score, precision,
                                                                       recall))
assert 0.6 < f1_score < 1 and accuracy > 0.75, (f1_score, accuracy)
np.testing.assert_allclose(H.history['val_f1_m'][-1], f1_score, rtol=1e-4)

# the metrics recomputed in numpy: per batch of 32, then averaged (four equal batches)
proba = model.predict(testX)
pred = np.round(np.clip(proba, 0, 1))
per_batch = []
for s in range(0, 128, 32):
    t, p = testY[s:s + 32], pred[s:s + 32]
    tp = (t * p).sum()
    prec, rec = tp / (p.sum() + K.epsilon()), tp / (t.sum() + K.epsilon())
    per_batch.append((2 * prec * rec / (prec + rec + K.epsilon()), prec, rec))
np.testing.assert_allclose([f1_score, precision, recall], np.mean(per_batch, axis=0), rtol=1e-4)
# binary accuracy: the share of right 0/1 decisions over all tags
np.testing.assert_allclose(accuracy, (pred == testY).mean(), rtol=1e-4)

# classify one picture: the two most likely tags
proba = model.predict(testX[:1])[0]
idxs = np.argsort(proba)[::-1][:2]
for j in idxs:
    label = "%s: %.2f%%" % (TAGS[j], proba[j] * 100)
    print(label)
assert set(np.where(proba > 0.5)[0]) == set(np.where(testY[0] == 1)[0]), (proba, testY[0])

model.save('multilabel.h5')
restored = load_model('multilabel.h5', custom_objects={'f1_m': f1_m, 'precision_m': precision_m,
                                                       'recall_m': recall_m})
np.testing.assert_allclose(restored.evaluate(testX, testY, batch_size=32, verbose=0),
                           [loss, accuracy, f1_score, precision, recall], rtol=1e-4)
try:
    load_model('multilabel.h5')
except ValueError as err:
    print('without custom_objects:', err)
    assert 'f1_m' in str(err)
else:
    raise AssertionError('load_model without custom_objects should fail on the unknown metric')
print('OK multilabel_f1')
