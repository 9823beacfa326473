"""Keras 2.3.1's test_model_with_crossentropy_losses_channels_first: ``K.sparse_categorical_crossentropy``
and ``K.categorical_crossentropy`` with ``axis=1`` on channels_first maps give what ``axis=-1``
gives on the same maps channels-last; like Keras on Theano, the sparse form normalizes the
probabilities over the channels first (it goes through categorical_crossentropy)."""

import numpy as np
import pytest

from arignote import backend as K
from arignote.layers import Conv2D, Input
from arignote.models import Model

DATA_CF = np.array([[[[8.0, 7.1, 0.0], [4.5, 2.6, 0.55], [0.9, 4.2, 11.2]]]], dtype=np.float32)
SPARSE_CF = np.array([[[[0, 1, 3], [2, 1, 0], [2, 2, 1]]]])


def _evaluate(data_format, loss_name):
    axis = 1 if data_format == "channels_first" else -1
    data = DATA_CF if data_format == "channels_first" else np.moveaxis(DATA_CF, 1, -1)
    labels = SPARSE_CF if data_format == "channels_first" else np.moveaxis(SPARSE_CF, 1, -1)
    if loss_name == "categorical":
        labels = np.moveaxis(np.eye(4)[labels[:, 0] if axis == 1 else labels[..., 0]], -1, axis)
        loss = lambda t, p: K.categorical_crossentropy(t, p, axis=axis)  # noqa: E731
    else:
        loss = lambda t, p: K.sparse_categorical_crossentropy(t, p, axis=axis)  # noqa: E731
    inputs = Input(shape=data.shape[1:])
    out = Conv2D(4, 1, activation="softmax", kernel_initializer="ones", bias_initializer="ones",
                 data_format=data_format)(inputs)
    model = Model(inputs, out)
    model.compile("rmsprop", loss=loss)
    return model.evaluate(data, labels, batch_size=1, verbose=0)


@pytest.mark.parametrize("loss_name", ["sparse", "categorical"])
def test_channels_first_and_channels_last_give_the_same_loss(loss_name):
    last, first = _evaluate("channels_last", loss_name), _evaluate("channels_first", loss_name)
    # channels_last: the 4 channels are equal, softmax gives 1/4 each; channels_first: Keras's softmax
    # runs over the last axis, and the loss normalizes over the channels again: 1/4 each too
    np.testing.assert_allclose(last, np.log(4.0), rtol=1e-6)
    np.testing.assert_allclose(first, last, rtol=1e-6)
