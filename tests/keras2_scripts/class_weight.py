"""An imbalanced binary problem, in the style of the 2017-2019 blog posts and Stack Overflow answers on
class imbalance (fraud / rare-event detection): a 5% minority class, fit(..., class_weight={0: 1.,
1: 10.}) against an unweighted model (recall of the minority class with predict_classes), weights from
sklearn.utils.class_weight.compute_class_weight('balanced', ...) turned into a dict, and
sample_weight arrays for fit and train_on_batch.

The weighted loss is checked against Keras 2's rule: the mean over the batch of each sample's loss
times its weight. The table is made up by the script. The compute_class_weight line runs only where
scikit-learn is installed (the same numbers are computed by hand otherwise).

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py.
"""
import numpy as np

from arignote.layers import Dense
from arignote.models import Sequential

np.random.seed(11)
n = 2000
X = np.random.randn(n, 10).astype('float32')
score = X[:, 0] + 0.8 * X[:, 1] - 0.5 * X[:, 2]
y = (score > np.percentile(score, 95)).astype('int32')  # 5% positives
print('positives:', y.sum(), 'of', n)
x_train, y_train, x_test, y_test = X[:1500], y[:1500], X[1500:], y[1500:]

try:
    from sklearn.utils import class_weight as sk_class_weight
except ImportError:
    counts = np.bincount(y_train)
    weights = len(y_train) / (2 * counts.astype('float64'))
    print('scikit-learn is not installed: balanced class weights computed by hand')
else:
    weights = sk_class_weight.compute_class_weight(class_weight='balanced', classes=np.unique(y_train),
                                                   y=y_train)
class_weights = dict(enumerate(weights))
print('class weights:', class_weights)
np.testing.assert_allclose(class_weights[0] * (y_train == 0).sum(), class_weights[1] * (y_train == 1).sum())


def build():
    model = Sequential()
    model.add(Dense(16, input_dim=10, activation='relu'))
    model.add(Dense(1, activation='sigmoid'))
    model.compile(loss='binary_crossentropy', optimizer='adam', metrics=['accuracy'])
    return model


def recall(model):
    pred = model.predict_classes(x_test)[:, 0]
    return (pred[y_test == 1] == 1).mean(), (pred[y_test == 0] == 0).mean()


plain = build()
plain.fit(x_train, y_train, epochs=8, batch_size=32, verbose=0)
weighted = build()
hist = weighted.fit(x_train, y_train, epochs=8, batch_size=32, verbose=0, class_weight=class_weights)
r_plain, r_weighted = recall(plain), recall(weighted)
print('minority recall / majority recall: plain %.2f / %.2f, weighted %.2f / %.2f' % (r_plain + r_weighted))
assert r_weighted[0] > 0.85, r_weighted
assert r_weighted[0] >= r_plain[0], (r_plain, r_weighted)
assert r_weighted[1] < r_plain[1] + 1e-9  # paid for with false alarms
assert sorted(hist.history) == ['accuracy', 'loss']
# a class weight of 10 on the rare class predicts it far more often
rate_plain = plain.predict_classes(x_test).mean()
rate_weighted = weighted.predict_classes(x_test).mean()
assert rate_weighted > rate_plain, (rate_plain, rate_weighted)


def bce(y_true, p):
    p = np.clip(p, 1e-7, 1 - 1e-7)
    return -(y_true * np.log(p) + (1 - y_true) * np.log(1 - p))


# the weighted loss of a batch: the mean of each sample's loss times its weight
model = build()
xb, yb = x_train[:64], y_train[:64]
per_sample = bce(yb, model.predict(xb)[:, 0].astype('float64'))
cw = {0: 1., 1: 10.}
w = np.where(yb == 1, 10., 1.)
loss, acc = model.test_on_batch(xb, yb, sample_weight=w)
np.testing.assert_allclose(loss, (per_sample * w).mean(), rtol=1e-4)
np.testing.assert_allclose(model.test_on_batch(xb, yb)[0], per_sample.mean(), rtol=1e-4)
# train_on_batch reports the loss before its update, with the class weights applied
loss, acc = model.train_on_batch(xb, yb, class_weight=cw)
np.testing.assert_allclose(loss, (per_sample * w).mean(), rtol=1e-4)
# evaluate ignores class weights: it reports the plain loss
np.testing.assert_allclose(model.evaluate(xb, yb, verbose=0)[0],
                           bce(yb, model.predict(xb)[:, 0].astype('float64')).mean(), rtol=1e-4)

# sample_weight in fit: a zero weight removes a sample from training
model = build()
w_fit = np.ones(len(y_train))
w_fit[y_train == 1] = 0.0
model.fit(x_train, y_train, epochs=4, batch_size=32, verbose=0, sample_weight=w_fit)
p = model.predict(x_test)[:, 0]
print('predicted positives without positive examples:', (p > 0.5).sum())
# it never saw a positive example: it flags far fewer than the 5% that are positive, and far fewer
# than the class-weighted model (the count depends on the initial weights: 0-10 of 500 here)
assert (p > 0.5).mean() < min(0.03, rate_weighted / 4), ((p > 0.5).mean(), rate_weighted)
assert p[y_test == 1].mean() < weighted.predict(x_test)[y_test == 1, 0].mean()
print('OK class_weight', r_plain, r_weighted)
