"""A triplet-loss embedding, in the style of the 2017-2019 Stack Overflow answers and blog posts
("Triplet loss in Keras", "One-shot learning with Siamese networks and triplet loss"): a shared
base network ending in Lambda(lambda x: K.l2_normalize(x, axis=1)), three Inputs (anchor, positive,
negative) through it, concatenate([...], axis=-1) as the output, and a custom loss that slices y_pred
into thirds by K.int_shape(y_pred)[-1] and returns K.maximum(pos_dist - neg_dist + alpha, 0.0); fit
with a dummy y_true (np.zeros), then the base network alone embeds new samples; a hard-negative count
with K.function; and the loss checked by hand on one batch.

The data are made up: 6 classes of 10-dimensional points around random centres; triplets are drawn
as in the answers (anchor and positive of one class, negative of another).

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py.
"""
import numpy as np

from arignote import backend as K
from arignote.layers import Dense, Input, Lambda, concatenate
from arignote.models import Model, Sequential
from arignote.optimizers import Adam

np.random.seed(4)
n_classes, dim = 6, 10
centres = np.random.randn(n_classes, dim) * 1.5


def make_points(n):
    labels = np.random.randint(0, n_classes, n)
    return (centres[labels] + np.random.randn(n, dim)).astype('float32'), labels


def triplet_loss(y_true, y_pred, alpha=0.4):
    """
    Implementation of the triplet loss function
    Arguments:
    y_true -- true labels, required when you define a loss in Keras, you don't need it in this function.
    y_pred -- python list containing three objects:
            anchor -- the encodings for the anchor data
            positive -- the encodings for the positive data (similar to anchor)
            negative -- the encodings for the negative data (different from anchor)
    Returns:
    loss -- real number, value of the loss
    """
    total_lenght = K.int_shape(y_pred)[-1]
    anchor = y_pred[:, 0:int(total_lenght * 1 / 3)]
    positive = y_pred[:, int(total_lenght * 1 / 3):int(total_lenght * 2 / 3)]
    negative = y_pred[:, int(total_lenght * 2 / 3):int(total_lenght * 3 / 3)]

    # distance between the anchor and the positive
    pos_dist = K.sum(K.square(anchor - positive), axis=1)

    # distance between the anchor and the negative
    neg_dist = K.sum(K.square(anchor - negative), axis=1)

    # compute loss
    basic_loss = pos_dist - neg_dist + alpha
    loss = K.maximum(basic_loss, 0.0)

    return loss


def create_base_network(in_dims, out_dims):
    """
    Base network to be shared.
    """
    model = Sequential()
    model.add(Dense(32, activation='relu', input_shape=(in_dims,)))
    model.add(Dense(out_dims, activation=None))
    model.add(Lambda(lambda x: K.l2_normalize(x, axis=1)))
    return model


def generate_triplets(x, labels, n):
    anchors, positives, negatives = [], [], []
    for _ in range(n):
        c = np.random.randint(0, n_classes)
        same = np.where(labels == c)[0]
        other = np.where(labels != c)[0]
        a, p = np.random.choice(same, 2, replace=False)
        anchors.append(x[a])
        positives.append(x[p])
        negatives.append(x[np.random.choice(other)])
    return np.array(anchors), np.array(positives), np.array(negatives)


x_train, y_train = make_points(600)
x_test, y_test = make_points(200)
Anchor, Positive, Negative = generate_triplets(x_train, y_train, 2000)

embedding_size = 8
anchor_input = Input((dim,), name='anchor_input')
positive_input = Input((dim,), name='positive_input')
negative_input = Input((dim,), name='negative_input')

# Shared embedding layer for positive and negative items
Shared_DNN = create_base_network(dim, embedding_size)

encoded_anchor = Shared_DNN(anchor_input)
encoded_positive = Shared_DNN(positive_input)
encoded_negative = Shared_DNN(negative_input)

merged_vector = concatenate([encoded_anchor, encoded_positive, encoded_negative], axis=-1,
                            name='merged_layer')

model = Model(inputs=[anchor_input, positive_input, negative_input], outputs=merged_vector)
model.compile(loss=triplet_loss, optimizer=Adam(lr=0.001))
model.summary()
assert model.output_shape == (None, 3 * embedding_size)
assert len(model.trainable_weights) == 4  # one shared base network

Y_dummy = np.zeros((Anchor.shape[0], 1))
before = model.evaluate([Anchor, Positive, Negative], Y_dummy, batch_size=100, verbose=0)
history = model.fit([Anchor, Positive, Negative], y=Y_dummy, batch_size=64, epochs=15, verbose=0)
after = model.evaluate([Anchor, Positive, Negative], Y_dummy, batch_size=100, verbose=0)
print('triplet loss %.4f -> %.4f' % (before, after))
assert after < 0.3 * before, (before, after)

# the loss by hand on one batch of the training triplets
out = model.predict([Anchor[:100], Positive[:100], Negative[:100]])
a, p, n = out[:, :embedding_size], out[:, embedding_size:2 * embedding_size], out[:, 2 * embedding_size:]
by_hand = np.maximum(((a - p) ** 2).sum(1) - ((a - n) ** 2).sum(1) + 0.4, 0).mean()
np.testing.assert_allclose(model.evaluate([Anchor[:100], Positive[:100], Negative[:100]], Y_dummy[:100],
                                          verbose=0), by_hand, rtol=1e-4, atol=1e-6)

# the trained base network embeds new points on the unit sphere, classes apart
trained_model = Model(inputs=anchor_input, outputs=encoded_anchor)
emb = trained_model.predict(x_test)
np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1, rtol=1e-5)
np.testing.assert_allclose(Shared_DNN.predict(x_test), emb, rtol=1e-5, atol=1e-6)
dists = ((emb[:, None] - emb[None]) ** 2).sum(-1)
same = y_test[:, None] == y_test[None]
off_diag = ~np.eye(len(y_test), dtype=bool)
print('mean same-class distance %.3f, other-class %.3f'
      % (dists[same & off_diag].mean(), dists[~same].mean()))
assert dists[same & off_diag].mean() < 0.3 * dists[~same].mean()
# nearest neighbour of each test point (leaving itself out) has its class
nearest = np.where(off_diag, dists, np.inf).argmin(1)
assert (y_test[nearest] == y_test).mean() > 0.9

# how many triplets still violate the margin: a K.function over the three inputs
violations = K.function([anchor_input, positive_input, negative_input],
                        [K.sum(K.cast(K.greater(triplet_loss(None, merged_vector), 0), 'float32'))])
count = violations([Anchor, Positive, Negative])[0]
out = model.predict([Anchor, Positive, Negative])
a, p, n = out[:, :embedding_size], out[:, embedding_size:2 * embedding_size], out[:, 2 * embedding_size:]
expected = ((((a - p) ** 2).sum(1) - ((a - n) ** 2).sum(1) + 0.4) > 0).sum()
assert abs(float(count) - expected) <= 1, (count, expected)
print('OK triplet_loss', count)
