"""arignote.wrappers.scikit_learn inside scikit-learn's GridSearchCV and cross_val_score, on tiny data."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arignote import config
from arignote.layers import Dense
from arignote.models import Sequential
from arignote.wrappers.scikit_learn import KerasClassifier, KerasRegressor

sklearn = pytest.importorskip("sklearn")
from sklearn.base import clone, is_classifier, is_regressor  # noqa: E402
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold, cross_val_score  # noqa: E402

BUILT = []


@pytest.fixture(autouse=True)
def cpu():
    BUILT.clear()
    with config.override(device="cpu", print_active_device=False):
        yield


def _data(n=48, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    labels = np.array(["cat", "dog", "eel"])[(x[:, 0] > 0).astype(int) + (x[:, 1] > 0.8).astype(int)]
    return x, labels


def build_classifier(units=8, loss="sparse_categorical_crossentropy"):
    torch.manual_seed(len(BUILT))
    BUILT.append(units)
    model = Sequential([Dense(units, activation="relu", input_shape=(4,)), Dense(3, activation="softmax")])
    model.compile("adam", loss, metrics=["accuracy"])
    return model


def build_regressor(units=8):
    BUILT.append(units)
    model = Sequential([Dense(units, activation="relu", input_shape=(4,)), Dense(1)])
    model.compile("adam", "mse")
    return model


def test_classifier_fit_predict_proba_score_with_string_labels():
    x, labels = _data()
    clf = KerasClassifier(build_classifier, units=16, epochs=3, batch_size=8, verbose=0)
    history = clf.fit(x, labels)
    assert len(history.history["loss"]) == 3 and BUILT == [16]
    assert clf.classes_.tolist() == ["cat", "dog", "eel"] and clf.n_classes_ == 3
    proba = clf.predict_proba(x)
    assert proba.shape == (48, 3) and np.allclose(proba.sum(axis=1), 1, atol=1e-5)
    pred = clf.predict(x)
    assert pred.shape == (48,) and set(pred) <= {"cat", "dog", "eel"}
    assert (pred == clf.classes_[proba.argmax(axis=1)]).all()
    accuracy = clf.score(x, labels)
    assert accuracy == pytest.approx(float((pred == labels).mean()), abs=1e-6)
    one_hot = KerasClassifier(build_classifier, loss="categorical_crossentropy", epochs=1, verbose=0)
    one_hot.fit(x, labels)  # integer labels are one-hot encoded for categorical_crossentropy
    assert 0.0 <= one_hot.score(x, labels) <= 1.0


def test_binary_sigmoid_classifier_gives_two_probability_columns():
    x, labels = _data()
    y = (labels == "cat").astype(int)

    def build():
        model = Sequential([Dense(1, activation="sigmoid", input_shape=(4,))])
        model.compile("sgd", "binary_crossentropy", metrics=["acc"])
        return model

    clf = KerasClassifier(build, epochs=1, verbose=0)
    clf.fit(x, y)
    proba = clf.predict_proba(x)
    assert proba.shape == (48, 2) and np.allclose(proba.sum(axis=1), 1)
    assert (clf.predict(x) == (proba[:, 1] > 0.5)).all()
    assert clf.score(x, y) == pytest.approx(float((clf.predict(x) == y).mean()))


def test_params_are_checked_and_cloneable():
    clf = KerasClassifier(build_classifier, units=4, epochs=2, verbose=0)
    assert clf.get_params() == {"build_fn": build_classifier, "units": 4, "epochs": 2, "verbose": 0}
    assert is_classifier(clf) and is_regressor(KerasRegressor(build_regressor))
    copy = clone(clf)
    assert copy is not clf and copy.get_params() == clf.get_params()
    assert clf.set_params(units=6) is clf and clf.sk_params["units"] == 6
    with pytest.raises(ValueError, match="unitz is not a legal parameter"):
        KerasClassifier(build_classifier, unitz=4)
    with pytest.raises(ValueError, match="not a legal parameter"):
        clf.set_params(learning_rate=0.1)
    with pytest.raises(ValueError, match="not fitted yet"):
        KerasClassifier(build_classifier).predict(np.zeros((1, 4)))
    # sample_weight and class_weight reach Model.fit (Keras 2 passes fit's keyword arguments on)
    clf = KerasClassifier(build_classifier, verbose=0, epochs=1, batch_size=48)
    assert clf.fit(*_data(), sample_weight=np.zeros(48)).history["loss"] == [0.0]
    assert clf.fit(*_data(), class_weight={0: 0.0, 1: 0.0, 2: 0.0}).history["loss"] == [0.0]
    assert clf.fit(*_data(), sample_weight=np.ones(48)).history["loss"][0] > 0.1


def test_subclass_with_call_as_build_fn():
    class Mine(KerasRegressor):
        def __call__(self, units=3):
            return build_regressor(units)

    x, _ = _data()
    reg = Mine(units=5, epochs=1, verbose=0)
    reg.fit(x, x[:, 0])
    assert BUILT == [5] and reg.predict(x).shape == (48,)
    with pytest.raises(ValueError, match="pass build_fn=, or subclass it"):
        KerasRegressor(units=3)


def test_grid_search_tunes_model_and_fit_parameters():
    x, labels = _data()
    search = GridSearchCV(KerasClassifier(build_classifier, verbose=0, batch_size=16),
                          param_grid={"units": [2, 6], "epochs": [1, 2]}, cv=2, refit=True)
    search.fit(x, labels)
    assert len(search.cv_results_["params"]) == 4
    assert set(search.best_params_) == {"units", "epochs"}
    # 4 settings x 2 folds, then the refit: each fit built a fresh model with the searched units
    assert sorted(BUILT[:8]) == [2, 2, 2, 2, 6, 6, 6, 6] and BUILT[8] == search.best_params_["units"]
    assert search.predict(x).shape == (48,)
    assert all(0.0 <= s <= 1.0 for s in search.cv_results_["mean_test_score"])


def test_cross_val_score_classifier_and_regressor():
    x, labels = _data()
    scores = cross_val_score(KerasClassifier(build_classifier, epochs=2, verbose=0), x, labels,
                             cv=StratifiedKFold(3))
    assert scores.shape == (3,) and all(0.0 <= s <= 1.0 for s in scores)
    target = x @ np.array([1.0, -2.0, 0.5, 0.0], dtype="float32")
    reg = KerasRegressor(build_regressor, epochs=3, batch_size=8, verbose=0)
    scores = cross_val_score(reg, x, target, cv=KFold(2))
    assert scores.shape == (2,) and all(s < 0 for s in scores)  # minus the mse
    reg.fit(x, target)
    mse = float(np.mean((reg.predict(x) - target) ** 2))
    assert reg.score(x, target) == pytest.approx(-mse, rel=1e-4)


def test_time_distributed_passes_training_to_its_layer():
    """Keras 2.3.1's test_TimeDistributed_learning_phase: ``TimeDistributed(layer)(x, training=True)``
    runs the inner layer in training mode even under predict (a layer whose call takes training)."""
    import numpy as np

    from arignote.layers import Input, Layer, TimeDistributed
    from arignote.models import Model

    class Doubling(Layer):
        def call(self, x, training=None):
            return x * 2 if training else x

    x = Input((3, 2))
    fixed = Model(x, TimeDistributed(Doubling())(x, training=True))
    free = Model(x, TimeDistributed(Doubling())(x))
    data = np.ones((4, 3, 2), dtype="float32")
    np.testing.assert_array_equal(fixed.predict(data), 2 * data)
    np.testing.assert_array_equal(free.predict(data), data)
