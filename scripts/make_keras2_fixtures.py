"""Regenerate tests/fixtures/keras2/: small HDF5 files written by real Keras 2.3.1 (Theano backend).

Run in the side venv (scripts/setup-keras2-venv.sh), from the repository root::

    bash scripts/setup-keras2-venv.sh /work/k2venv
    /work/k2venv/bin/python scripts/make_keras2_fixtures.py [--only NAME ...]

For every model NAME it writes ``NAME.h5`` (``model.save``: model_config, training_config,
model_weights, optimizer_weights when compiled) and ``NAME.npz`` with ``x`` (inputs) and ``y``
(what Keras 2.3.1 predicted for ``x``). ``seq_dense`` also gets ``seq_dense_weights.h5``
(``model.save_weights``). Weights are random (BatchNormalization statistics too) so that a wrong
layout or gate order cannot go unnoticed. RNNs use ``unroll=True`` (Theano's scan needs a BLAS
this venv does not link). Files are tiny on purpose: a few KB each.

All files come from the Theano backend, so their convolution kernels are stored for Theano's
true convolution (flipped relative to TensorFlow/torch's correlation); ``th_cf_conv`` is also
``channels_first`` (a Flatten then Dense after a convolution), the layout of most
Theano-era models; ``th_cf_flatten_chw`` flattens channels-first features in (C, H, W) order as
Keras before 2.2.3 did, so its Dense rows must be reordered.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras  # noqa: E402
import keras2_shim  # noqa: E402,F401  (before keras)
import numpy as np  # noqa: E402
from keras import layers as L  # noqa: E402
from keras.models import Model, Sequential  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "fixtures", "keras2")
RNG = np.random.RandomState(1234)


def randomize(model):
    """Every weight random (incl. BN moving statistics; variances kept positive)."""
    for layer in model.layers:
        sub = getattr(layer, "layers", None)
        if sub is not None:
            randomize(layer)
            continue
        ws = layer.get_weights()
        new = []
        for w, sym in zip(ws, layer.weights):
            v = RNG.uniform(-0.6, 0.6, size=w.shape).astype(w.dtype)
            if "variance" in sym.name:
                v = RNG.uniform(0.5, 1.5, size=w.shape).astype(w.dtype)
            new.append(v)
        if new:
            layer.set_weights(new)


def x_for(model, n=3, vocab=None):
    shape = (n,) + tuple(model.input_shape[1:])
    if vocab:
        return RNG.randint(0, vocab, size=shape).astype("int32")
    return RNG.uniform(-1, 1, size=shape).astype("float32")


def finish(name, model, x, compile_with=None, train=False):
    if compile_with:
        model.compile(optimizer=compile_with, loss="mse")
        if train:
            y0 = model.predict(x)
            model.train_on_batch(x, y0 + 0.1)
    y = model.predict(x)
    path = os.path.join(OUT, name + ".h5")
    model.save(path)
    np.savez(os.path.join(OUT, name + ".npz"), x=x, y=y)
    print(f"{name:<22} {os.path.getsize(path):6d} bytes  {[type(l).__name__ for l in model.layers]}")
    return model


def seq_dense():
    m = Sequential([L.Dense(5, activation="relu", input_shape=(4,)), L.Dense(3, activation="softmax")])
    randomize(m)
    m = finish("seq_dense", m, x_for(m), compile_with=keras.optimizers.Adam(lr=0.01), train=True)
    m.save_weights(os.path.join(OUT, "seq_dense_weights.h5"))


def seq_dense_sgd():
    m = Sequential([L.Dense(3, input_shape=(4,)), L.Dense(2, use_bias=False)])
    randomize(m)
    finish("seq_dense_sgd", m, x_for(m), compile_with=keras.optimizers.SGD(lr=0.1, momentum=0.9), train=True)


def seq_conv2d():
    m = Sequential(
        [
            L.Conv2D(3, (3, 2), padding="same", activation="relu", input_shape=(6, 5, 2)),
            L.BatchNormalization(),
            L.MaxPooling2D(),
            L.Conv2D(2, 2, strides=1),
            L.Flatten(),
            L.Dense(4),
        ]
    )
    randomize(m)
    finish("seq_conv2d", m, x_for(m))


def seq_conv1d():
    m = Sequential(
        [
            L.Conv1D(3, 3, padding="same", input_shape=(7, 2)),
            L.Conv1D(2, 2, dilation_rate=2),
            L.GlobalMaxPooling1D(),
            L.Dense(2),
        ]
    )
    randomize(m)
    finish("seq_conv1d", m, x_for(m))


def seq_conv3d():
    m = Sequential([L.Conv3D(2, (2, 3, 2), input_shape=(4, 5, 4, 2)), L.Flatten(), L.Dense(2)])
    randomize(m)
    finish("seq_conv3d", m, x_for(m))


def seq_conv2d_transpose():
    m = Sequential(
        [L.Conv2DTranspose(2, (3, 2), strides=(2, 1), input_shape=(3, 4, 2)), L.Flatten(), L.Dense(2)]
    )
    randomize(m)
    finish("seq_conv2d_transpose", m, x_for(m))


def seq_conv3d_transpose():
    m = Sequential([L.Conv3DTranspose(2, 2, strides=2, input_shape=(2, 3, 2, 2)), L.Flatten(), L.Dense(2)])
    randomize(m)
    finish("seq_conv3d_transpose", m, x_for(m))


def seq_separable():
    m = Sequential(
        [
            L.SeparableConv2D(3, 3, depth_multiplier=2, padding="same", input_shape=(5, 5, 2)),
            L.DepthwiseConv2D(2, depth_multiplier=1),
            L.Flatten(),
            L.Dense(2),
        ]
    )
    randomize(m)
    finish("seq_separable", m, x_for(m))


def seq_separable1d():
    m = Sequential([L.SeparableConv1D(3, 3, input_shape=(6, 2)), L.Flatten(), L.Dense(2)])
    randomize(m)
    finish("seq_separable1d", m, x_for(m))


def seq_embedding_lstm():
    m = Sequential([L.Embedding(10, 4, input_length=5), L.LSTM(3, unroll=True), L.Dense(2)])
    randomize(m)
    finish("seq_embedding_lstm", m, x_for(m, vocab=10))


def seq_gru():
    m = Sequential(
        [
            L.GRU(3, unroll=True, return_sequences=True, input_shape=(4, 2)),
            L.GRU(2, reset_after=True, unroll=True),
        ]
    )
    randomize(m)
    finish("seq_gru", m, x_for(m))


def seq_gru_reset_after():
    m = Sequential([L.GRU(3, reset_after=True, unroll=True, input_shape=(4, 2)), L.Dense(2)])
    randomize(m)
    finish("seq_gru_reset_after", m, x_for(m))


def seq_simple_rnn():
    m = Sequential(
        [
            L.SimpleRNN(3, unroll=True, return_sequences=True, input_shape=(4, 2)),
            L.SimpleRNN(2, unroll=True, activation="relu"),
        ]
    )
    randomize(m)
    finish("seq_simple_rnn", m, x_for(m))


def seq_bidirectional():
    m = Sequential(
        [
            L.Bidirectional(L.LSTM(3, unroll=True, return_sequences=True), input_shape=(4, 2)),
            L.Bidirectional(L.GRU(2, unroll=True, reset_after=True), merge_mode="sum"),
            L.Dense(2),
        ]
    )
    randomize(m)
    finish("seq_bidirectional", m, x_for(m))


def seq_time_distributed():
    m = Sequential(
        [L.TimeDistributed(L.Dense(3, activation="tanh"), input_shape=(4, 2)), L.LSTM(2, unroll=True)]
    )
    randomize(m)
    finish("seq_time_distributed", m, x_for(m))


def seq_prelu():
    m = Sequential([L.Dense(4, input_shape=(3,)), L.PReLU(), L.Dense(2)])
    randomize(m)
    finish("seq_prelu", m, x_for(m))


def functional():
    a = L.Input(shape=(4,), name="in_a")
    b = L.Input(shape=(3,), name="in_b")
    h = L.Dense(5, activation="relu", name="da")(a)
    g = L.Dense(5, activation="tanh", name="db")(b)
    s = L.Add()([h, g])
    c = L.Concatenate()([s, b])
    out = L.Dense(2, name="head")(c)
    m = Model([a, b], out)
    randomize(m)
    xa = RNG.uniform(-1, 1, size=(3, 4)).astype("float32")
    xb = RNG.uniform(-1, 1, size=(3, 3)).astype("float32")
    m.compile(optimizer="rmsprop", loss="mse")
    y = m.predict([xa, xb])
    path = os.path.join(OUT, "functional.h5")
    m.save(path)
    np.savez(os.path.join(OUT, "functional.npz"), x0=xa, x1=xb, y=y)
    print(f"{'functional':<22} {os.path.getsize(path):6d} bytes")


def nested():
    inner = Sequential(
        [L.Dense(4, activation="relu", input_shape=(3,)), L.BatchNormalization()], name="inner"
    )
    x = L.Input(shape=(3,))
    y = L.Dense(2)(inner(x))
    m = Model(x, y)
    randomize(m)
    finish("nested", m, x_for(m))


def th_cf_conv():
    keras.backend.set_image_data_format("channels_first")
    try:
        m = Sequential(
            [
                L.Conv2D(3, (3, 2), input_shape=(2, 6, 5), activation="relu"),
                L.MaxPooling2D(),
                L.Flatten(),
                L.Dense(3),
            ]
        )
        randomize(m)
        finish("th_cf_conv", m, x_for(m))
    finally:
        keras.backend.set_image_data_format("channels_last")


def th_cf_flatten_chw():
    """channels_first convolutions, then a Flatten that flattens in (C, H, W) order (Keras < 2.2.3 did
    this for every Flatten): the Dense kernel's rows follow channels-first order."""
    keras.backend.set_image_data_format("channels_first")
    try:
        m = Sequential(
            [
                L.Conv2D(2, 3, input_shape=(2, 5, 4), padding="same"),
                L.Flatten(data_format="channels_last"),
                L.Dense(3),
            ]
        )
        randomize(m)
        finish("th_cf_flatten_chw", m, x_for(m))
    finally:
        keras.backend.set_image_data_format("channels_last")


MAKERS = [
    seq_dense,
    seq_dense_sgd,
    seq_conv2d,
    seq_conv1d,
    seq_conv3d,
    seq_conv2d_transpose,
    seq_conv3d_transpose,
    seq_separable,
    seq_separable1d,
    seq_embedding_lstm,
    seq_gru,
    seq_gru_reset_after,
    seq_simple_rnn,
    seq_bidirectional,
    seq_time_distributed,
    seq_prelu,
    functional,
    nested,
    th_cf_conv,
    th_cf_flatten_chw,
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="names to regenerate (default: all)")
    args = parser.parse_args()
    os.makedirs(OUT, exist_ok=True)
    print("Keras", keras.__version__, "backend", keras.backend.backend(), "->", OUT)
    for make in MAKERS:
        if args.only and make.__name__ not in args.only:
            continue
        make()


if __name__ == "__main__":
    main()
