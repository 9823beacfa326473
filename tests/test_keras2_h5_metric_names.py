"""Keras 2.3.1 writes a user's metric function into an HDF5 file's training_config by its ``__name__``;
loading it then needs the function in ``custom_objects``."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from arignote.layers import Dense
from arignote.models import Sequential, load_model

RNG = np.random.RandomState(0)


def test_a_function_metric_is_written_by_name_and_needs_custom_objects_to_load(tmp_path):
    # Keras 2.3.1 writes a user's metric function by its __name__ ('"metrics": ["rmse", "mae"]', checked
    # on real Keras 2.3.1), and its load_model then needs the function in custom_objects
    # ("Unknown metric function:rmse" without). Before, arignote dropped the metric from the file.
    from arignote import backend as K

    def rmse(y_true, y_pred):
        return K.sqrt(K.mean(K.square(y_pred - y_true), axis=-1))

    model = Sequential([Dense(1, input_shape=(3,))])
    model.compile("sgd", "mse", metrics=[rmse, "mae", lambda t, p: p])
    path = str(tmp_path / "m.h5")
    model.save(path)
    with h5py.File(path, "r") as f:
        assert json.loads(f.attrs["training_config"])["metrics"] == ["rmse", "mae"]  # a lambda has no name
    with pytest.raises(Exception, match=r"unknown metric function 'rmse'.*custom_objects=\{'rmse': rmse\}"):
        load_model(path)
    assert load_model(path, compile=False).predict(np.zeros((1, 3), "float32")).shape == (1, 1)
    loaded = load_model(path, custom_objects={"rmse": rmse})
    assert loaded.metrics_names == ["loss", "rmse", "mae"]
    x = RNG.uniform(-1, 1, (8, 3)).astype("float32")
    y = RNG.uniform(-1, 1, (8, 1)).astype("float32")
    np.testing.assert_allclose(loaded.evaluate(x, y, verbose=0)[:2], model.evaluate(x, y, verbose=0)[:2],
                               rtol=1e-6)
