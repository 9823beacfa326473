"""Regenerate tests/fixtures/keras2/wrapped/: Keras 2.3.1 (Theano backend) models with wrapped and
nested layers whose HDF5 layout Keras decides, saved by Keras's own ``model.save``; each
``<name>.npz`` keeps inputs (``x_0``, ...) and Keras's predictions (``y_0``, ...), for
tests/test_keras2_wrapped_h5.py.

* ``bidir_cf.h5``: ``Bidirectional(ConvLSTM2D(..., data_format='channels_first'))`` with
  ``merge_mode='concat'``, which joins the *last* axis: the columns of a channels-first map. One
  branch behind ``TimeDistributed(Conv2D(channels_first))``, one followed by a channels-first Conv2D,
  Flatten and Dense (Theano convolves: the file's kernels are flipped for a correlating backend).
* ``cf_axes.h5``: a channels_first functional model whose ``Concatenate(axis=1)``, ``Reshape`` and
  ``Permute`` read the axes of channels-first maps (no channels-last rebuild computes them).
* ``td_flatten_cf.h5``: ``TimeDistributed(Flatten())`` of channels-first maps, then
  ``TimeDistributed(Dense)`` (its kernel rows follow the channels-first flattening).
* ``td_bn.h5``: ``TimeDistributed(model)`` where the model holds BatchNormalization (Keras lists a
  model's trainable weights first, then the moving statistics), once trainable and once frozen.
* ``nested_bn.h5``: a Sequential and a functional model with BatchNormalization (and a frozen Dense)
  used as layers of a functional model.
* ``bidir_frozen_cell.h5``: ``Bidirectional(RNN(ScaledCell))``, a user's cell that adds a
  non-trainable weight before its kernels (Keras lists each layer's trainable weights first, and a
  Bidirectional's forward then backward trainable ones, then the others), once trainable and once
  frozen.

Run in the side venv (scripts/setup-keras2-venv.sh), from the repository root::

    THEANO_FLAGS=base_compiledir=/tmp/h5fix_theano,blas.ldflags=,floatX=float32 \\
        /work/k2venv/bin/python scripts/make_keras2_wrapped_fixture.py

Both ways: ``resave DIR`` (arignote's venv) loads every fixture in arignote and saves it again as
``DIR/<name>.h5``; ``check DIR`` (the side venv) loads those files in Keras 2.3.1 and compares its
predictions with the fixture's (1e-5)::

    .venv/bin/python scripts/make_keras2_wrapped_fixture.py resave /tmp/h5fix_ours
    THEANO_FLAGS=... /work/k2venv/bin/python scripts/make_keras2_wrapped_fixture.py check /tmp/h5fix_ours
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(ROOT, "tests", "fixtures", "keras2", "wrapped")
NAMES = ("bidir_cf", "td_bn", "nested_bn", "bidir_frozen_cell", "cf_axes", "td_flatten_cf")


def keras_cell_class():
    """The user's cell, for Keras: ``h = tanh(x W + h U) * scale`` with ``scale`` added first and not
    trainable (the same code as :func:`arignote_cell_class`)."""
    from keras import backend as K
    from keras.layers import Layer

    class ScaledCell(Layer):
        def __init__(self, units, **kwargs):
            self.units = units
            self.state_size = units
            super().__init__(**kwargs)

        def build(self, input_shape):
            self.scale = self.add_weight(shape=(self.units,), initializer="ones", name="scale",
                                         trainable=False)
            self.kernel = self.add_weight(shape=(input_shape[-1], self.units), initializer="uniform",
                                          name="kernel")
            self.recurrent_kernel = self.add_weight(shape=(self.units, self.units), initializer="uniform",
                                                    name="recurrent_kernel")
            self.built = True

        def call(self, inputs, states):
            h = K.tanh(K.dot(inputs, self.kernel) + K.dot(states[0], self.recurrent_kernel)) * self.scale
            return h, [h]

        def get_config(self):
            config = super().get_config()
            config["units"] = self.units
            return config

    return ScaledCell


def arignote_cell_class():
    """The same cell for arignote (``import keras`` -> ``import arignote``)."""
    from arignote import backend as K
    from arignote.layers import Layer

    class ScaledCell(Layer):
        def __init__(self, units, **kwargs):
            self.units = units
            self.state_size = units
            super().__init__(**kwargs)

        def build(self, input_shape):
            self.scale = self.add_weight(shape=(self.units,), initializer="ones", name="scale",
                                         trainable=False)
            self.kernel = self.add_weight(shape=(input_shape[-1], self.units), initializer="uniform",
                                          name="kernel")
            self.recurrent_kernel = self.add_weight(shape=(self.units, self.units), initializer="uniform",
                                                    name="recurrent_kernel")
            self.built = True

        def call(self, inputs, states):
            h = K.tanh(K.dot(inputs, self.kernel) + K.dot(states[0], self.recurrent_kernel)) * self.scale
            return h, [h]

        def get_config(self):
            config = super().get_config()
            config["units"] = self.units
            return config

    return ScaledCell


# ------------------------------------------------------------------------------------- Keras models


def bidir_cf(L, Model):
    cf = {"data_format": "channels_first"}
    x = L.Input((3, 2, 5, 5), name="clips")  # (time, channels, rows, cols)
    seq = L.Bidirectional(L.ConvLSTM2D(2, 3, padding="same", return_sequences=True, **cf), name="bi_seq")(
        L.TimeDistributed(L.Conv2D(3, 3, padding="same", **cf), name="td_conv")(x))
    last = L.Bidirectional(L.ConvLSTM2D(2, (3, 1), **cf), name="bi_last")(x)  # (2, 3, 5) -> (2, 3, 10)
    head = L.Conv2D(2, (2, 3), name="after_conv", **cf)(last)
    out = L.Dense(3, name="after_dense")(L.Flatten(name="flat")(head))
    return Model(x, [seq, last, out])


def cf_axes(L, Model):
    cf = {"data_format": "channels_first"}
    x = L.Input((2, 6, 6), name="images")
    joined = L.Concatenate(axis=1, name="cat")([L.Conv2D(3, 3, padding="same", name="c3", **cf)(x),
                                                L.Conv2D(2, 1, name="c1", **cf)(x)])
    maps = L.Conv2D(2, 3, name="c_after", **cf)(joined)
    rows = L.Permute((2, 1), name="perm")(L.Reshape((2, 16), name="reshape")(maps))
    return Model(x, [joined, rows, L.Dense(2, name="d")(L.Flatten(name="flat")(maps))])


def td_flatten_cf(L, Sequential):
    conv = L.Conv2D(2, 3, data_format="channels_first")
    return Sequential([L.TimeDistributed(conv, input_shape=(3, 2, 5, 5), name="td_conv"),
                       L.TimeDistributed(L.Flatten(data_format="channels_last"), name="td_flat"),
                       L.TimeDistributed(L.Dense(2), name="td_dense")])


def td_bn(L, Model, Sequential):
    def inner(name):
        return Sequential([L.Dense(4, input_shape=(3,), name=f"{name}_d1"),
                           L.BatchNormalization(name=f"{name}_bn"), L.Dense(2, name=f"{name}_d2")], name=name)

    x = L.Input((4, 3), name="steps")
    live = L.TimeDistributed(inner("live"), name="td_live")(x)
    frozen = L.TimeDistributed(inner("frozen"), name="td_frozen", trainable=False)(x)
    return Model(x, [live, frozen])


def nested_bn(L, Model, Sequential):
    seq = Sequential([L.Dense(4, input_shape=(3,), name="s_d1"), L.BatchNormalization(name="s_bn"),
                      L.Dense(3, name="s_d2")], name="inner_seq")
    x2 = L.Input((3,), name="f_in")
    h = L.Dense(3, trainable=False, name="f_frozen")(x2)
    h = L.BatchNormalization(name="f_bn")(h)
    fn = Model(x2, L.Dense(2, name="f_d2")(h), name="inner_fn")
    x = L.Input((3,), name="vec")
    y = L.Concatenate(name="cat")([seq(x), fn(x)])
    return Model(x, L.Dense(2, name="top")(y))


def bidir_frozen_cell(L, Model, cell):
    x = L.Input((5, 3), name="seq")
    live = L.Bidirectional(L.RNN(cell(2), return_sequences=True), name="bi_live")(x)
    frozen = L.Bidirectional(L.RNN(cell(3)), merge_mode="sum", name="bi_frozen", trainable=False)(x)
    return Model(x, [live, frozen])


def _set_weights(model, rng):
    from keras import backend as K

    values = [rng.uniform(0.5, 1.5, K.int_shape(w)) if "moving_variance" in w.name or "scale" in w.name
              else rng.uniform(-0.5, 0.5, K.int_shape(w)) for w in model.weights]
    K.batch_set_value([(w, v.astype("float32")) for w, v in zip(model.weights, values)])


def make():
    sys.path.insert(0, HERE)
    import keras2_shim  # noqa: F401  (before keras)
    from keras import backend as K
    from keras import layers as L
    from keras.models import Model, Sequential
    from keras.utils import get_custom_objects

    rnn = K.rnn

    def unrolled(*args, **kwargs):  # Theano's scan needs a C extension that does not build here
        kwargs["unroll"] = True
        return rnn(*args, **kwargs)

    K.rnn = unrolled
    cell = keras_cell_class()
    get_custom_objects()["ScaledCell"] = cell  # Bidirectional rebuilds its backward layer by name
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.RandomState(8)
    models = {
        "bidir_cf": (bidir_cf(L, Model), [(2, 3, 2, 5, 5)]),
        "td_bn": (td_bn(L, Model, Sequential), [(3, 4, 3)]),
        "nested_bn": (nested_bn(L, Model, Sequential), [(3, 3)]),
        "bidir_frozen_cell": (bidir_frozen_cell(L, Model, cell), [(3, 5, 3)]),
        "cf_axes": (cf_axes(L, Model), [(2, 2, 6, 6)]),
        "td_flatten_cf": (td_flatten_cf(L, Sequential), [(2, 3, 2, 5, 5)]),
    }
    for name, (model, shapes) in models.items():
        _set_weights(model, rng)
        xs = [rng.uniform(-1, 1, s).astype("float32") for s in shapes]
        ys = model.predict(xs if len(xs) > 1 else xs[0])
        ys = ys if isinstance(ys, list) else [ys]
        model.save(os.path.join(OUT, name + ".h5"))
        np.savez_compressed(os.path.join(OUT, name + ".npz"), **{f"x_{i}": x for i, x in enumerate(xs)},
                            **{f"y_{i}": y for i, y in enumerate(ys)},
                            weight_names=np.array([w.name for w in model.weights]))
        print(name, [y.shape for y in ys], os.path.getsize(os.path.join(OUT, name + ".h5")), "bytes")
        for layer in model.layers:
            if layer.weights:
                print("   ", layer.name, [w.name for w in layer.weights])


# ------------------------------------------------------------------------------------- both ways


def _numbered(data, prefix):
    out = []
    while f"{prefix}_{len(out)}" in data:
        out.append(data[f"{prefix}_{len(out)}"])
    return out


def resave(directory):
    """arignote's venv: load each fixture, check its predictions, save it again in ``directory``."""
    from arignote.models import load_model

    os.makedirs(directory, exist_ok=True)
    objects = {"ScaledCell": arignote_cell_class()}
    for name in NAMES:
        data = np.load(os.path.join(OUT, name + ".npz"))
        model = load_model(os.path.join(OUT, name + ".h5"), custom_objects=objects)
        xs, ys = _numbered(data, "x"), _numbered(data, "y")
        got = model.predict(xs if len(xs) > 1 else xs[0], verbose=0)
        got = got if isinstance(got, list) else [got]
        diff = max(float(np.abs(g - y).max()) for g, y in zip(got, ys))
        model.save(os.path.join(directory, name + ".h5"))
        print(f"{name:20s} arignote from Keras's file: max diff {diff:.1e}; saved again")


def check(directory):
    """The side venv: Keras 2.3.1 loads arignote's files; its predictions must be the fixture's."""
    sys.path.insert(0, HERE)
    import keras2_shim  # noqa: F401  (before keras)
    from keras import backend as K
    from keras.models import load_model

    rnn = K.rnn

    def unrolled(*args, **kwargs):
        kwargs["unroll"] = True
        return rnn(*args, **kwargs)

    K.rnn = unrolled
    from keras.utils import get_custom_objects

    get_custom_objects()["ScaledCell"] = keras_cell_class()
    failures = 0
    for name in NAMES:
        data = np.load(os.path.join(OUT, name + ".npz"))
        model = load_model(os.path.join(directory, name + ".h5"))
        xs, ys = _numbered(data, "x"), _numbered(data, "y")
        got = model.predict(xs if len(xs) > 1 else xs[0])
        got = got if isinstance(got, list) else [got]
        diff = max(float(np.abs(g - y).max()) for g, y in zip(got, ys))
        failures += diff > 1e-5
        print(f"{name:20s} Keras 2.3.1 from arignote's file: max diff {diff:.1e}")
    print("FAILURES:", failures)
    return failures


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "resave":
        resave(sys.argv[2])
    elif len(sys.argv) > 1 and sys.argv[1] == "check":
        sys.exit(1 if check(sys.argv[2]) else 0)
    else:
        make()
