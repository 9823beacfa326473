"""Siamese network in the style of Keras 2's examples/mnist_siamese.py (imports renamed keras -> arignote).

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py.
"""

import numpy as np

from arignote import backend as K
from arignote.layers import Dense, Dropout, Input, Lambda
from arignote.models import Model
from arignote.optimizers import RMSprop

np.random.seed(1)


def euclidean_distance(vects):
    x, y = vects
    sum_square = K.sum(K.square(x - y), axis=1, keepdims=True)
    return K.sqrt(K.maximum(sum_square, K.epsilon()))


def eucl_dist_output_shape(shapes):
    shape1, shape2 = shapes
    return (shape1[0], 1)


def contrastive_loss(y_true, y_pred):
    margin = 1
    square_pred = K.square(y_pred)
    margin_square = K.square(K.maximum(margin - y_pred, 0))
    return K.mean(y_true * square_pred + (1 - y_true) * margin_square)


def create_base_network(input_shape):
    input = Input(shape=input_shape)
    x = Dense(32, activation='relu')(input)
    x = Dropout(0.1)(x)
    x = Dense(16, activation='relu')(x)
    return Model(input, x)


def compute_accuracy(y_true, y_pred):
    pred = y_pred.ravel() < 0.5
    return np.mean(pred == y_true)


# two clusters: pairs from the same cluster are positives
centers = np.random.randn(2, 20) * 4
labels = np.random.randint(0, 2, 400)
points = centers[labels] + np.random.randn(400, 20)
pairs_a, pairs_b = points[:200], points[200:]
y = (labels[:200] == labels[200:]).astype('float32')

input_shape = (20,)
base_network = create_base_network(input_shape)
input_a = Input(shape=input_shape)
input_b = Input(shape=input_shape)
processed_a = base_network(input_a)
processed_b = base_network(input_b)  # the same weights on both branches
distance = Lambda(euclidean_distance, output_shape=eucl_dist_output_shape)([processed_a, processed_b])
model = Model([input_a, input_b], distance)
model.summary()

rms = RMSprop()
model.compile(loss=contrastive_loss, optimizer=rms)
model.fit([pairs_a, pairs_b], y, batch_size=32, epochs=40, verbose=0)
pred = model.predict([pairs_a, pairs_b])
acc = compute_accuracy(y, pred)
print('* Accuracy on training set: %0.2f%%' % (100 * acc))
assert len(model.layers) == 4 and len(base_network.get_weights()) == 4
assert acc > 0.8, acc
print('OK siamese', acc)
