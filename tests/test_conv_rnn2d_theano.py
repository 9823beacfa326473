"""A ``ConvRNN2D`` around a user's cell from a Keras 2.3.1 Theano file: Theano's ``K.conv2d`` convolves,
so the cell's rank-4 ``kernel``/``recurrent_kernel`` are stored flipped and arignote flips them back as
it does ConvLSTM2D's (tests/fixtures/keras2/rnnfix/convrnn_user.h5, from
scripts/make_keras2_rnnfix_fixture.py, with the same cell code)."""

import os

import h5py
import numpy as np

from arignote import backend as K
from arignote.layers import Layer
from arignote.models import load_model

HERE = os.path.join(os.path.dirname(__file__), "fixtures", "keras2", "rnnfix")


class ConvCell(Layer):
    """A convolutional simple RNN cell: h = tanh(conv(x, kernel) + conv(h, recurrent_kernel) + bias)."""

    def __init__(self, filters, kernel_size=3, **kwargs):
        self.filters = filters
        self.kernel_size = (kernel_size, kernel_size)
        self.strides, self.dilation_rate = (1, 1), (1, 1)
        self.padding, self.data_format = "same", "channels_last"
        self.state_size = (filters,)
        super().__init__(**kwargs)

    def build(self, input_shape):
        self.kernel_shape = self.kernel_size + (input_shape[-1], self.filters)
        self.kernel = self.add_weight(shape=self.kernel_shape, initializer="uniform", name="kernel")
        self.recurrent_kernel = self.add_weight(shape=self.kernel_size + (self.filters, self.filters),
                                                initializer="uniform", name="recurrent_kernel")
        self.bias = self.add_weight(shape=(self.filters,), initializer="zeros", name="bias")
        self.built = True

    def call(self, inputs, states, training=None):
        h = K.conv2d(inputs, self.kernel, padding="same") + K.conv2d(states[0], self.recurrent_kernel,
                                                                      padding="same")
        h = K.tanh(K.bias_add(h, self.bias))
        return h, [h]

    def get_config(self):
        config = super().get_config()
        config.update(filters=self.filters, kernel_size=self.kernel_size[0])
        return config


def test_a_theano_file_of_a_users_conv_cell_is_flipped_and_predicts_as_keras(capsys):
    path = os.path.join(HERE, "convrnn_user.h5")
    ref = np.load(os.path.join(HERE, "rnnfix.npz"))
    model = load_model(path, custom_objects={"ConvCell": ConvCell})
    assert "convolution kernels flipped" in capsys.readouterr().out
    np.testing.assert_allclose(model.predict(ref["user_x"], verbose=0), ref["user_y"], rtol=1e-5, atol=1e-6)
    with h5py.File(path, "r") as f:
        group = f["model_weights"]["conv_cell"]
        stored = [group[n][()] for n in group.attrs["weight_names"]]
    kernel, recurrent, bias = model.get_layer("conv_cell").get_weights()
    np.testing.assert_array_equal(kernel, stored[0][::-1, ::-1])  # both spatial axes reversed
    np.testing.assert_array_equal(recurrent, stored[1][::-1, ::-1])
    np.testing.assert_array_equal(bias, stored[2])  # the bias is not a kernel
    assert not np.array_equal(kernel, stored[0])
