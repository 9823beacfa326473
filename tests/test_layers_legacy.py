"""Keras 1 layers that Keras 2.3.1 still exported (keras.legacy.layers): MaxoutDense, Highway and the
AtrousConvolution1D/2D constructors, checked against real Keras 2.3.1 files (Theano backend, from
scripts/make_keras2_legacy_fixture.py) and against their formulas; Keras 1's abstract recurrent
bases stay a clear error."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
import torch

from arignote import layers
from arignote.errors import KerasNameMissing
from arignote.layers import Dense, Highway, MaxoutDense
from arignote.layers.convolutional import AtrousConv1D, AtrousConvolution2D
from arignote.models import Sequential, load_model
from arignote.regularizers import l2

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "keras2")


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


@pytest.mark.parametrize("name", ["legacy_dense", "legacy_atrous", "legacy_atrous1d"])
def test_keras_2_files_with_legacy_layers_predict_what_keras_predicted(name):
    model = _quiet(load_model, os.path.join(FIXTURES, name + ".h5"))
    data = np.load(os.path.join(FIXTURES, name + ".npz"))
    np.testing.assert_allclose(model.predict(data["x"], verbose=0), data["y"], rtol=1e-5, atol=1e-5)


def test_the_loaded_legacy_layers_are_keras_s_with_their_weights_in_keras_order():
    model = _quiet(load_model, os.path.join(FIXTURES, "legacy_dense.h5"))
    maxout, highway, nobias = model.layers[:3]
    assert type(maxout) is MaxoutDense and maxout.nb_feature == 3 and maxout.output_dim == 5
    assert [w.shape for w in maxout.get_weights()] == [(3, 4, 5), (3, 5)]
    assert type(highway) is Highway and [w.shape for w in highway.get_weights()] == [(5, 5)] * 2 + [(5,)] * 2
    assert nobias.bias is False and len(nobias.get_weights()) == 2
    atrous = _quiet(load_model, os.path.join(FIXTURES, "legacy_atrous.h5")).layers[0]
    assert type(atrous).__name__ == "Conv2D" and atrous.dilation_rate == (2, 2)


def test_maxout_and_highway_compute_their_formulas():
    x = torch.randn(6, 4)
    maxout = _quiet(MaxoutDense, 3, nb_feature=2, input_dim=4)
    out = maxout(x)
    w, b = (torch.as_tensor(a) for a in maxout.get_weights())
    expected = torch.stack([x @ w[k] + b[k] for k in range(2)]).amax(dim=0)
    torch.testing.assert_close(out, expected)

    highway = _quiet(Highway, activation="tanh", input_dim=4)
    out = highway(x)
    W, W_carry, b, b_carry = (torch.as_tensor(a) for a in highway.get_weights())
    assert torch.equal(b_carry, torch.ones(4)) and torch.equal(b, torch.zeros(4))
    t = torch.sigmoid(x @ W_carry + b_carry)
    torch.testing.assert_close(out, torch.tanh(x @ W + b) * t + (1 - t) * x)


def test_legacy_layers_train_save_and_reload(tmp_path):
    torch.manual_seed(0)
    model = Sequential([_quiet(MaxoutDense, 8, input_dim=3, W_regularizer=l2(1e-3)),
                        _quiet(Highway, activation="relu", activity_regularizer=l2(1e-4)), Dense(1)])
    model.compile("adam", "mse")
    x = np.random.default_rng(0).normal(size=(64, 3)).astype("float32")
    y = (x ** 2).sum(axis=1, keepdims=True)
    history = model.fit(x, y, epochs=30, batch_size=16, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    path = str(tmp_path / "legacy.h5")
    model.save(path)
    again = _quiet(load_model, path)
    np.testing.assert_allclose(again.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    config = model.layers[0].get_config()
    assert config["nb_feature"] == 4 and config["W_regularizer"]["config"]["l2"] == pytest.approx(1e-3)


def test_they_warn_as_keras_2_did_and_atrous_maps_to_dilation():
    with pytest.warns(UserWarning, match="`MaxoutDense` layer is deprecated"):
        MaxoutDense(2)
    with pytest.warns(UserWarning, match="Use instead the `Conv2D` layer with the `dilation_rate`"):
        conv = AtrousConvolution2D(4, (3, 3), atrous_rate=(2, 3))
    assert conv.dilation_rate == (2, 3)
    with pytest.warns(UserWarning):
        assert AtrousConv1D(2, 3).dilation_rate == (1,)
    assert layers.AtrousConvolution1D is AtrousConv1D


def test_bad_input_and_keras_1_bases_are_clear_errors():
    with pytest.raises(ValueError, match="takes \\(batch, features\\) inputs"):
        _quiet(MaxoutDense, 2)(torch.ones(2, 3, 4))
    with pytest.raises(KerasNameMissing, match="RNN\\(cell\\)"):
        layers.Recurrent  # noqa: B018
