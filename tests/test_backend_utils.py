"""backend (data format, floatX through config, epsilon, clear_session) and utils.to_categorical."""

from __future__ import annotations

import numpy as np
import pytest

from arignote import backend, config, layers
from arignote.utils import np_utils, to_categorical


def test_image_data_format_defaults_to_channels_last_and_can_be_set():
    assert backend.image_data_format() == "channels_last"
    backend.set_image_data_format("channels_first")
    assert backend.image_data_format() == "channels_first" and config.source("image_data_format") == "code"
    with pytest.raises(ValueError, match="channels_last"):
        backend.set_image_data_format("nhwc")


def test_floatx_goes_through_config():
    config.reload()
    try:
        assert backend.floatx() == "float32"
        backend.set_floatx("float64")
        assert backend.floatx() == "float64" and config.get("floatX") == "float64"
        assert config.source("floatX") == "code"
        with pytest.raises(config.ConfigError, match="floatX"):
            backend.set_floatx("float8")
    finally:
        config.reload()
    assert backend.floatx() == "float32"


def test_epsilon_get_set():
    assert backend.epsilon() == 1e-7
    try:
        backend.set_epsilon(1e-5)
        assert backend.epsilon() == 1e-5
        with pytest.raises(ValueError):
            backend.set_epsilon(0)
    finally:
        backend.set_epsilon(1e-7)


def test_clear_session_resets_layer_names():
    backend.clear_session()
    layers.Dense(1)
    assert layers.Dense(1).name == "dense_2"
    backend.clear_session()
    assert layers.Dense(1).name == "dense_1"


def test_to_categorical_like_keras():
    y = np.array([0, 2, 1, 2])
    out = to_categorical(y, 3)
    assert out.dtype == np.float32 and out.shape == (4, 3)
    np.testing.assert_array_equal(out, np.eye(3)[y])
    np.testing.assert_array_equal(to_categorical(y), out)  # num_classes = max + 1
    np.testing.assert_array_equal(to_categorical(y.reshape(-1, 1), 3), out)  # (N, 1) like CIFAR labels
    np.testing.assert_array_equal(to_categorical([1.0, 0.0], 2), [[0, 1], [1, 0]])
    assert to_categorical(np.array([[0, 1], [1, 1]]), 2).shape == (2, 2, 2)
    assert np_utils.to_categorical is to_categorical


def test_to_categorical_bad_labels():
    with pytest.raises(ValueError, match=r"label 5 is outside \[0, 3\)"):
        to_categorical([0, 5], 3)
    with pytest.raises(ValueError, match="label -1"):
        to_categorical([-1, 0], 3)
    with pytest.raises(ValueError, match="integer class labels"):
        to_categorical([0.5, 1.0], 3)


def test_backend_name():
    assert backend.backend() == "torch"
