"""Multi-class classification evaluated by k-fold cross-validation, in the style of the 2016-2019 blog
tutorials ("Multi-Class Classification Tutorial with the Keras Deep Learning Library", "Evaluate the
Performance of Deep Learning Models in Keras"): string class labels encoded to integers and then to
one-hot vectors with to_categorical, a baseline_model() build function, a hand-written k-fold loop
that builds a fresh model per fold and collects model.evaluate(...)[1] * 100 into cvscores, printed
as "%.2f%% (+/- %.2f%%)"; then the same with KerasClassifier + KFold + cross_val_score.

The flower-like table (4 measurements, 3 species named by strings) is made up by the script. The
scikit-learn part runs only where scikit-learn is installed: it is skipped with a printed reason
otherwise (the Keras 2.3.1 side venv has none, so there only the hand-written loop runs).

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py (without the
scikit-learn part, see above).
"""
import numpy

from arignote.layers import Dense
from arignote.models import Sequential
from arignote.utils import np_utils, to_categorical

seed = 7
numpy.random.seed(seed)

# load dataset: 3 species, 50 rows each, measurements around a per-species centre
centres = numpy.array([[5.0, 3.4, 1.5, 0.2], [5.9, 2.8, 4.1, 1.2], [6.8, 3.1, 5.9, 2.2]])
rng = numpy.random.RandomState(1)
species = numpy.repeat(['Iris-setosa', 'Iris-versicolor', 'Iris-virginica'], 50)
X = (numpy.repeat(centres, 50, axis=0) + rng.normal(0, 0.25, (150, 4))).astype('float32')
order = rng.permutation(150)
X, Y = X[order], species[order]
# standardize (the tutorials' Pipeline([('standardize', StandardScaler()), ...]), by hand)
X = (X - X.mean(axis=0)) / X.std(axis=0)

# encode class values as integers (LabelEncoder by hand: sorted unique names)
classes = numpy.unique(Y)
encoded_Y = numpy.searchsorted(classes, Y)
# convert integers to dummy variables (i.e. one hot encoded)
dummy_y = np_utils.to_categorical(encoded_Y)
assert dummy_y.shape == (150, 3) and dummy_y.dtype == numpy.float32, (dummy_y.shape, dummy_y.dtype)
numpy.testing.assert_array_equal(dummy_y, to_categorical(encoded_Y, num_classes=3))
numpy.testing.assert_array_equal(dummy_y.argmax(axis=1), encoded_Y)


# define baseline model
def baseline_model():
    # create model
    model = Sequential()
    model.add(Dense(8, input_dim=4, activation='relu'))
    model.add(Dense(3, activation='softmax'))
    # Compile model
    model.compile(loss='categorical_crossentropy', optimizer='adam', metrics=['accuracy'])
    return model


# the hand-written k-fold loop: every fold gets a fresh model
k = 5
folds = numpy.array_split(numpy.arange(150), k)
cvscores = []
for i, test in enumerate(folds):
    train = numpy.concatenate([f for j, f in enumerate(folds) if j != i])
    model = baseline_model()
    model.fit(X[train], dummy_y[train], epochs=50, batch_size=10, verbose=0)
    scores = model.evaluate(X[test], dummy_y[test], verbose=0)
    print("%s: %.2f%%" % (model.metrics_names[1], scores[1] * 100))
    cvscores.append(scores[1] * 100)
    # the accuracy is the share of argmax hits
    pred = model.predict(X[test])
    assert pred.shape == (len(test), 3)
    numpy.testing.assert_allclose(pred.sum(axis=1), 1, rtol=1e-5)
    assert abs((pred.argmax(axis=1) == encoded_Y[test]).mean() * 100 - scores[1] * 100) < 1e-3
    assert model.predict_classes(X[test]).shape == (len(test),)
    numpy.testing.assert_array_equal(model.predict_classes(X[test]), pred.argmax(axis=1))
print("%.2f%% (+/- %.2f%%)" % (numpy.mean(cvscores), numpy.std(cvscores)))
assert len(cvscores) == k and numpy.mean(cvscores) > 85, cvscores

try:
    from sklearn.model_selection import KFold, cross_val_score
except ImportError:
    print('skipping the KerasClassifier + cross_val_score part: scikit-learn is not installed')
else:
    from arignote.wrappers.scikit_learn import KerasClassifier

    estimator = KerasClassifier(build_fn=baseline_model, epochs=50, batch_size=10, verbose=0)
    kfold = KFold(n_splits=5, shuffle=True, random_state=seed)
    results = cross_val_score(estimator, X, dummy_y, cv=kfold)
    print("Baseline: %.2f%% (%.2f%%)" % (results.mean() * 100, results.std() * 100))
    assert results.shape == (5,) and results.mean() > 0.85, results
    estimator.fit(X, dummy_y)
    assert list(estimator.classes_) == [0, 1, 2], estimator.classes_
    names = classes[estimator.predict(X[:5])]
    print(names)
    assert (names == Y[:5]).mean() >= 0.8
print('OK kfold_multiclass', numpy.mean(cvscores))
