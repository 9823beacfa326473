"""Regenerate tests/fixtures/keras2/rnnfix/*.h5 and rnnfix.npz: Keras 2.3.1 (Theano backend) models
with fixed weights, saved by Keras's own ``model.save``; the .npz keeps the inputs and Keras's
predictions, for tests/test_rnn_constants.py and tests/test_bidirectional_conv.py.

* ``rnn_constants.h5``: ``RNN(CondCell(4))(x, constants=c)`` in the functional API (a user's cell whose
  ``call`` takes ``constants``): a sequence branch, a ``go_backwards`` branch, a masked branch.
* ``bidir_convlstm.h5``: ``Bidirectional(ConvLSTM2D(...))`` with every merge mode, ``return_sequences``
  on and off, and ``return_state``.
* ``bidir_constants.h5``: ``Bidirectional(RNN(CondCell(3)))(x, constants=c)`` (both directions get the
  constants), concatenated sequences and summed last outputs.
* ``convrnn_user.h5``: ``ConvRNN2D(ConvCell(3))``, a user's cell convolving with ``K.conv2d`` (Theano
  convolves: the file's kernels are flipped for a correlating backend).

The user cells are defined here and again (for arignote) in the tests: the same code in both.

Run in the side venv (scripts/setup-keras2-venv.sh), from the repository root::

    THEANO_FLAGS=blas.ldflags=,floatX=float32,base_compiledir=/tmp/rnnfix-theano \\
        /work/k2venv/bin/python scripts/make_keras2_rnnfix_fixture.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras2_shim  # noqa: E402,F401,I001  (before keras)
import numpy as np  # noqa: E402
from keras import backend as K  # noqa: E402
from keras.layers import RNN, Bidirectional, ConvLSTM2D, Input, Layer, Masking  # noqa: E402
from keras.layers.convolutional_recurrent import ConvRNN2D  # noqa: E402
from keras.models import Model  # noqa: E402
from keras.utils import get_custom_objects  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# a folder of their own: tests/test_keras2_h5_files.py pairs every <name>.npz in keras2/ with a one-output .h5
HERE = os.path.join(ROOT, "tests", "fixtures", "keras2", "rnnfix")


class CondCell(Layer):
    """h = tanh(x W + h U + c V): conditioned on a constant ``c`` (Keras 2's "external constants")."""

    def __init__(self, units, **kwargs):
        self.units = units
        self.state_size = units
        super().__init__(**kwargs)

    def build(self, input_shape):  # [step input shape, constant shape]
        step, const = input_shape
        self.kernel = self.add_weight(shape=(step[-1], self.units), initializer="uniform", name="kernel")
        self.recurrent_kernel = self.add_weight(shape=(self.units, self.units), initializer="uniform",
                                                name="recurrent_kernel")
        self.constant_kernel = self.add_weight(shape=(const[-1], self.units), initializer="uniform",
                                               name="constant_kernel")
        self.built = True

    def call(self, inputs, states, constants):
        h = K.dot(inputs, self.kernel) + K.dot(states[0], self.recurrent_kernel)
        h = K.tanh(h + K.dot(constants[0], self.constant_kernel))
        return h, [h]

    def get_config(self):
        config = super().get_config()
        config["units"] = self.units
        return config


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

    def input_conv(self, x, w, b=None, padding="same"):  # what Keras 2.3.1's ConvRNN2D zero state uses
        out = K.conv2d(x, w, padding=padding, data_format=self.data_format)
        return out if b is None else K.bias_add(out, b, data_format=self.data_format)

    def call(self, inputs, states, training=None):
        h = K.conv2d(inputs, self.kernel, padding="same") + K.conv2d(states[0], self.recurrent_kernel,
                                                                      padding="same")
        h = K.tanh(K.bias_add(h, self.bias))
        return h, [h]

    def get_config(self):
        config = super().get_config()
        config.update(filters=self.filters, kernel_size=self.kernel_size[0])
        return config


# Bidirectional rebuilds its backward layer from the config: the cells must be known by name
get_custom_objects().update(CondCell=CondCell, ConvCell=ConvCell)


def rnn_constants():
    x, c = Input((5, 3)), Input((2,))
    outs = [
        RNN(CondCell(4), return_sequences=True, name="cond_seq")(x, constants=c),
        RNN(CondCell(4), go_backwards=True, name="cond_back")(x, constants=c),
        RNN(CondCell(3), return_sequences=True, name="cond_masked")(Masking(0.0)(x), constants=[c]),
    ]
    return Model([x, c], outs)


IMG = (3, 5, 5, 2)  # time, rows, cols, channels


def bidir_convlstm():
    x = Input(IMG)
    outs = [
        Bidirectional(ConvLSTM2D(2, 3, padding="same", return_sequences=True), name="bi_concat")(x),
        Bidirectional(ConvLSTM2D(2, 3), merge_mode="sum", name="bi_sum")(x),
        Bidirectional(ConvLSTM2D(2, (3, 1), padding="same", return_sequences=True), merge_mode="mul",
                      name="bi_mul")(x),
        Bidirectional(ConvLSTM2D(2, 3, padding="same"), merge_mode="ave", name="bi_ave")(x),
    ]
    outs += Bidirectional(ConvLSTM2D(2, 3, padding="same", return_sequences=True), merge_mode=None,
                          name="bi_none")(x)
    outs += Bidirectional(ConvLSTM2D(2, 3, padding="same", return_state=True), name="bi_state")(x)
    return Model(x, outs)


def bidir_constants():
    x, c = Input((5, 3)), Input((2,))
    outs = [
        Bidirectional(RNN(CondCell(3), return_sequences=True), name="bi_cond_seq")(x, constants=c),
        Bidirectional(RNN(CondCell(2)), merge_mode="sum", name="bi_cond_sum")(x, constants=[c]),
    ]
    return Model([x, c], outs)


def convrnn_user():
    x = Input((4, 5, 5, 2))
    return Model(x, ConvRNN2D(ConvCell(3), return_sequences=True, name="conv_cell")(x))


def fix_weights(model, rng):
    model.set_weights([rng.uniform(-0.5, 0.5, w.shape).astype("float32") for w in model.get_weights()])


def main():
    _force_unrolled_k_rnn()
    rng = np.random.RandomState(11)
    out = {}

    model = rnn_constants()
    fix_weights(model, rng)
    x = rng.uniform(-1, 1, (3, 5, 3)).astype("float32")
    x[1, 3:] = x[2, :2] = 0.0  # padding steps (post and pre) for the masked branch
    c = rng.uniform(-1, 1, (3, 2)).astype("float32")
    model.save(os.path.join(HERE, "rnn_constants.h5"))
    out.update(constants_x=x, constants_c=c)
    for i, y in enumerate(model.predict([x, c])):
        out[f"constants_y{i}"] = y

    model = bidir_convlstm()
    fix_weights(model, rng)
    x = rng.uniform(-1, 1, (2, *IMG)).astype("float32")
    model.save(os.path.join(HERE, "bidir_convlstm.h5"))
    out["bidir_x"] = x
    for i, y in enumerate(model.predict(x)):
        out[f"bidir_y{i}"] = y
    out["bidir_weight_names"] = np.array([w.name for w in model.weights])

    model = convrnn_user()
    fix_weights(model, rng)
    x = rng.uniform(-1, 1, (2, 4, 5, 5, 2)).astype("float32")
    model.save(os.path.join(HERE, "convrnn_user.h5"))
    out["user_x"] = x
    out["user_y"] = model.predict(x)

    model = bidir_constants()  # last: the fixtures above keep their random draws
    fix_weights(model, rng)
    x, c = rng.uniform(-1, 1, (3, 5, 3)).astype("float32"), rng.uniform(-1, 1, (3, 2)).astype("float32")
    model.save(os.path.join(HERE, "bidir_constants.h5"))
    out.update(bicond_x=x, bicond_c=c)
    for i, y in enumerate(model.predict([x, c])):
        out[f"bicond_y{i}"] = y

    np.savez_compressed(os.path.join(HERE, "rnnfix.npz"), **out)
    for k, v in sorted(out.items()):
        print(k, v.shape)


def _force_unrolled_k_rnn():
    """Theano's scan needs a C extension that does not build on Python 3.11: every ``K.rnn`` unrolls
    (the same results; ConvRNN2D refuses ``unroll=True`` and calls ``K.rnn`` without it)."""
    rnn = K.rnn

    def unrolled(*args, **kwargs):
        kwargs["unroll"] = True
        return rnn(*args, **kwargs)

    K.rnn = unrolled


if __name__ == "__main__":
    main()
