"""Keras 2.0-era book scripts (IMDB, Reuters, Boston housing), run as written on fixture files in
Keras's formats: `metrics=['accuracy']` read back as `history.history['acc']`, `metrics=['mae']` as
`history.history['val_mean_absolute_error']`."""

from __future__ import annotations

import hashlib
import urllib.error

import numpy as np
import pytest
import torch

from arignote import config, layers, models
from arignote.datasets import _files, boston_housing, imdb, reuters
from arignote.utils import to_categorical


@pytest.fixture(autouse=True)
def keras_cache(tmp_path, monkeypatch):
    home = tmp_path / "home"
    cache = home / ".keras" / "datasets"
    cache.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("KERAS_HOME", raising=False)
    monkeypatch.setenv("ARIGNOTE_DATA", str(tmp_path / "data"))

    def no_network(url, timeout=None):
        raise urllib.error.URLError("network disabled in tests")

    monkeypatch.setattr(_files, "_urlopen", no_network)
    config.reload()
    torch.manual_seed(0)
    with config.override(device="cpu", print_active_device=False):
        yield cache
    monkeypatch.undo()
    config.reload()


def _objects(rows):
    out = np.empty(len(rows), dtype=object)
    for i, r in enumerate(rows):
        out[i] = r
    return out


def _trust(module, path, attr="FILE_HASH", algorithm="md5"):
    digest = hashlib.new(algorithm, open(path, "rb").read()).hexdigest()
    return module, attr, digest


def vectorize_sequences(sequences, dimension=200):
    results = np.zeros((len(sequences), dimension))
    for i, sequence in enumerate(sequences):
        results[i, sequence] = 1.
    return results


def test_imdb_chapter_reads_history_acc(keras_cache, monkeypatch):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 120)
    # reviews whose words 1..20 say "positive" and 21..40 "negative", so the model can learn
    reviews = [list(rng.integers(1, 21, 12) + 20 * (1 - y)) for y in labels]
    np.savez(keras_cache / "imdb.npz", x_train=_objects(reviews[:80]), y_train=labels[:80],
             x_test=_objects(reviews[80:]), y_test=labels[80:])
    monkeypatch.setattr(*_trust(imdb, keras_cache / "imdb.npz"))

    (train_data, train_labels), (test_data, test_labels) = imdb.load_data(num_words=200)
    x_train = vectorize_sequences(train_data)
    y_train = np.asarray(train_labels).astype("float32")
    model = models.Sequential()
    model.add(layers.Dense(16, activation="relu", input_shape=(200,)))
    model.add(layers.Dense(16, activation="relu"))
    model.add(layers.Dense(1, activation="sigmoid"))
    model.compile(optimizer="rmsprop", loss="binary_crossentropy", metrics=["accuracy"])
    history = model.fit(x_train[20:], y_train[20:], epochs=4, batch_size=16,
                        validation_data=(x_train[:20], y_train[:20]), verbose=0)
    history_dict = history.history
    acc = history_dict["acc"]
    val_acc = history_dict["val_acc"]
    loss_values = history_dict["loss"]
    assert len(acc) == len(val_acc) == len(loss_values) == 4
    assert acc == history_dict["accuracy"] and acc[-1] > max(0.7, acc[0])  # learnable: it learned
    results = model.evaluate(vectorize_sequences(test_data), test_labels.astype("float32"), verbose=0)
    assert len(results) == 2 and 0.0 <= results[1] <= 1.0


def test_reuters_chapter_one_hot_labels(keras_cache, monkeypatch):
    rng = np.random.default_rng(1)
    topics = rng.integers(0, 4, 100)
    wires = [list(rng.integers(1, 10, 8) + 10 * t) for t in topics]
    np.savez(keras_cache / "reuters.npz", x=_objects(wires), y=topics)
    monkeypatch.setattr(*_trust(reuters, keras_cache / "reuters.npz"))
    (train_data, train_labels), (test_data, test_labels) = reuters.load_data(num_words=60)
    one_hot_train_labels = to_categorical(train_labels)
    model = models.Sequential([layers.Dense(32, activation="relu", input_shape=(60,)),
                               layers.Dense(4, activation="softmax")])
    model.compile(optimizer="rmsprop", loss="categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(vectorize_sequences(train_data, 60), one_hot_train_labels, epochs=3, batch_size=16,
                        validation_split=0.2, verbose=0)
    assert one_hot_train_labels.shape == (80, 4) and len(test_data) == 20
    assert len(history.history["val_acc"]) == 3


def test_boston_chapter_reads_val_mean_absolute_error(keras_cache, monkeypatch):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(60, 13))
    y = x @ rng.normal(size=13) + 20
    np.savez(keras_cache / "boston_housing.npz", x=x, y=y)
    monkeypatch.setattr(*_trust(boston_housing, keras_cache / "boston_housing.npz", algorithm="sha256"))
    (train_data, train_targets), (test_data, test_targets) = boston_housing.load_data()
    mean, std = train_data.mean(axis=0), train_data.std(axis=0)
    train_data = (train_data - mean) / std
    model = models.Sequential([layers.Dense(16, activation="relu", input_shape=(13,)), layers.Dense(1)])
    model.compile(optimizer="rmsprop", loss="mse", metrics=["mae"])
    history = model.fit(train_data, train_targets, validation_split=0.25, epochs=3, batch_size=8, verbose=0)
    mae_history = history.history["val_mean_absolute_error"]
    assert mae_history == history.history["val_mae"] and len(mae_history) == 3
    assert train_data.shape == (48, 13) and test_data.shape == (12, 13)
