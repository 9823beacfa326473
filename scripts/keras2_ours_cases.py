"""The models whose .h5 files Keras 2.3.1 must read: built here with seeded weights and inputs.

Used by scripts/check_keras2_reads_ours.py (``write``: the files Keras 2.3.1 and Keras 3 are given)
and by tests/test_keras2_reads_ours.py (the same models written again in CI, checked against what
Keras 2.3.1 computed from them: tests/fixtures/keras2/keras2_reads_ours.json). Weights come from a
NumPy generator seeded per case, never from torch's initializers, so the files are the same
wherever they are written.

Each case is ``name -> (build, input spec, optimizer or None)``: ``build()`` returns a fresh
arignote model; a compiled case is trained one step before saving, so its file holds optimizer
state (no bias right before a BatchNormalization: its true gradient is 0, and an adaptive
optimizer turns the rounding noise of 0 into a full step). Semantics where Keras 2's *Theano*
backend differs from TensorFlow (and arignote's fresh layers) are kept out of these models:
``padding='same'`` with even kernels or strides > 1, and pooling ``'same'`` but for pools of 1 and 3
with strides 1 (see :mod:`arignote.saving.theano_padding`: a model loaded from a Theano file pads
as Theano did, and is saved as one). :data:`SWEEP_CASES` holds the rest of Keras 2's layer types.

Example::

    >>> model, xs = build_case("dense_adam")
    >>> [type(layer).__name__ for layer in model.layers][:2], [x.shape for x in xs]
    (['Dense', 'Dropout'], [(2, 4)])
"""

from __future__ import annotations

import numpy as np

from arignote import backend as K
from arignote import layers as L
from arignote.models import Model, Sequential
from arignote.optimizers import SGD
from arignote.saving import layouts

SEQ = (5, 3)  # (timesteps, features): every RNN sees a known length (Keras-Theano unrolls them)
IMG = (6, 5, 2)
VOL = (4, 4, 3, 2)


def _seq(*layers, shape):
    return Sequential([L.InputLayer(input_shape=shape), *layers])


def _functional_multi():
    """Two inputs, two outputs, a Dense shared by both inputs, every merge layer."""
    a = L.Input(shape=(4,), name="in_a")
    b = L.Input(shape=(4,), name="in_b")
    shared = L.Dense(3, activation="tanh", name="shared")
    sa, sb = shared(a), shared(b)
    merged = [
        L.Add(name="add")([sa, sb]),
        L.Subtract(name="sub")([sa, sb]),
        L.Multiply(name="mul")([sa, sb]),
        L.Average(name="avg")([sa, sb]),
        L.Maximum(name="max")([sa, sb]),
        L.Minimum(name="min")([sa, sb]),
        L.Dot(axes=1, normalize=True, name="dot")([sa, sb]),
    ]
    cat = L.Concatenate(name="cat")(merged)
    out1 = L.Dense(2, activation="softmax", name="out_class")(cat)
    out2 = L.Dense(1, name="out_value")(L.BatchNormalization(name="bn")(cat))
    return Model([a, b], [out1, out2], name="multi")


def _functional_nested():
    """A Sequential (with BatchNormalization: its group is trainable weights first, then moving
    statistics) and a functional model, each used as a layer of a functional model."""
    inner_seq = Sequential([L.Dense(4, activation="relu", use_bias=False, input_shape=(3,), name="seq_dense"),
                            L.BatchNormalization(name="seq_bn"), L.Dense(3, name="seq_out")],
                           name="inner_seq")
    x_in = L.Input(shape=(3,), name="f_in")
    inner_fn = Model(x_in, L.Dense(2, name="fn_out")(L.Dense(3, activation="tanh", name="fn_dense")(x_in)),
                     name="inner_fn")
    inp = L.Input(shape=(3,), name="outer_in")
    h = inner_seq(inp)
    y = L.Concatenate(name="outer_cat")([inner_fn(h), inner_fn(inp)])  # the nested model is shared too
    return Model(inp, L.Dense(2, name="outer_out")(y), name="outer")


def _seq_in_seq():
    inner = Sequential([L.Dense(4, activation="relu", use_bias=False, input_shape=(3,), name="in_dense"),
                        L.BatchNormalization(name="in_bn")], name="inner")
    return Sequential([inner, L.Dense(2, name="top")], name="outer_seq")


def _frozen_in_nested():
    """A non-trainable layer inside a nested model: Keras lists its weights after every trainable one."""
    inner = Sequential([L.Dense(3, input_shape=(4,), name="frozen_dense"), L.Dense(3, name="live_dense")],
                       name="inner_frozen")
    inner.layers[0].trainable = False
    inp = L.Input(shape=(4,), name="fz_in")
    return Model(inp, L.Dense(2, name="fz_out")(inner(inp)), name="frozen_outer")


# name -> (build, input spec: a shape, ("int", shape, high) or a list of those, optimizer or None)
CASES = {
    "dense_adam": (lambda: Sequential([L.Dense(5, activation="relu", input_shape=(4,)), L.Dropout(0.0),
                                       L.Dense(3, activation="softmax")]), (4,), "adam"),
    "conv2d_bn_sgd": (lambda: _seq(L.Conv2D(3, 3, padding="same", use_bias=False), L.BatchNormalization(),
                                   L.MaxPooling2D(),
                                   L.Flatten(), L.Dense(2), shape=IMG), IMG, "sgd_momentum"),
    "conv1d_rmsprop": (lambda: _seq(L.Conv1D(3, 2), L.GlobalAveragePooling1D(), L.Dense(2), shape=SEQ), SEQ,
                       "rmsprop"),
    "functional_multi": (_functional_multi, [(4,), (4,)], "adam"),
    "functional_nested": (_functional_nested, (3,), "sgd_momentum"),
    "seq_in_seq": (_seq_in_seq, (3,), "rmsprop"),
    "frozen_in_nested": (_frozen_in_nested, (4,), "adam"),
    "dense": (lambda: _seq(L.Dense(3, activation="tanh"), shape=(4,)), (4,), None),
    "conv1d": (lambda: _seq(L.Conv1D(2, 3, padding="same", dilation_rate=2), shape=SEQ), SEQ, None),
    "conv2d": (lambda: _seq(L.Conv2D(2, (3, 2), strides=2), shape=IMG), IMG, None),
    "conv3d": (lambda: _seq(L.Conv3D(2, 2), shape=VOL), VOL, None),
    "conv2d_transpose": (lambda: _seq(L.Conv2DTranspose(2, 3, strides=2), shape=IMG), IMG, None),
    "conv3d_transpose": (lambda: _seq(L.Conv3DTranspose(2, 2), shape=VOL), VOL, None),
    "separable_conv1d": (lambda: _seq(L.SeparableConv1D(2, 3, depth_multiplier=2), shape=SEQ), SEQ, None),
    "separable_conv2d": (lambda: _seq(L.SeparableConv2D(2, 3, depth_multiplier=2), shape=IMG), IMG, None),
    "depthwise_conv2d": (lambda: _seq(L.DepthwiseConv2D(2, depth_multiplier=2), shape=IMG), IMG, None),
    "batch_normalization": (lambda: _seq(L.BatchNormalization(axis=-1, center=False), shape=IMG), IMG, None),
    "embedding": (lambda: Sequential([L.Embedding(9, 3, input_length=5), L.Flatten()]),
                  ("int", (5,), 9), None),
    "simple_rnn": (lambda: _seq(L.SimpleRNN(3, return_sequences=True), shape=SEQ), SEQ, None),
    "gru": (lambda: _seq(L.GRU(3), shape=SEQ), SEQ, None),
    "gru_reset_after": (lambda: _seq(L.GRU(3, reset_after=True, return_sequences=True), shape=SEQ),
                        SEQ, None),
    "lstm": (lambda: _seq(L.LSTM(3, return_sequences=True), L.LSTM(2), shape=SEQ), SEQ, None),
    "bidirectional_lstm": (lambda: _seq(L.Bidirectional(L.LSTM(2, return_sequences=True)), shape=SEQ), SEQ,
                           None),
    "bidirectional_gru_sum": (lambda: _seq(L.Bidirectional(L.GRU(2, reset_after=True), merge_mode="sum"),
                                           shape=SEQ), SEQ, None),
    "time_distributed": (lambda: _seq(L.TimeDistributed(L.Dense(2)), shape=SEQ), SEQ, None),
    "time_distributed_conv2d": (lambda: _seq(L.TimeDistributed(L.Conv2D(2, 3)), shape=(2, *IMG)), (2, *IMG),
                                None),
    "embedding_lstm_sgd": (lambda: Sequential([L.Embedding(9, 3, input_length=5), L.LSTM(3), L.Dense(2)]),
                           ("int", (5,), 9), "sgd_momentum"),
}

IMG_CF = (2, 6, 5)  # channels first
VOL_CF = (2, 4, 4, 3)
SEQ_CF = (3, 5)  # (features, steps)


def _cf(cls, *args, **kwargs):
    return cls(*args, data_format="channels_first", **kwargs)


def _fn(shape, *branches, name):
    """A functional model: every branch (a list of layers, applied in turn) on one input, outputs
    flattened and joined."""
    x = L.Input(shape=shape)
    outs = []
    for branch in branches:
        h = x
        for layer in branch:
            h = layer(h)
        outs.append(h)
    flat = [o if len(o.shape) == 2 else L.Flatten()(o) for o in outs]
    return Model(x, flat[0] if len(flat) == 1 else L.Concatenate()(flat), name=name)


def _rnn_outputs():
    """return_state, go_backwards, unroll; Bidirectional's mul, ave and None merge modes."""
    x = L.Input(shape=SEQ)
    seq, h, c = L.LSTM(2, return_sequences=True, return_state=True, go_backwards=True)(x)
    g = L.GRU(2, go_backwards=True, unroll=True, reset_after=True)(seq)
    s = L.SimpleRNN(2, return_state=True)(x)
    mul = L.Bidirectional(L.LSTM(2), merge_mode="mul")(x)
    ave = L.Bidirectional(L.GRU(2, return_sequences=True), merge_mode="ave")(x)
    fwd, bwd = L.Bidirectional(L.SimpleRNN(2), merge_mode=None)(x)
    return Model(x, [L.Flatten()(seq), h, c, g, s[0], s[1], mul, L.Flatten()(ave), fwd, bwd],
                 name="rnn_outputs")


def _stateful():
    return Sequential([L.InputLayer(batch_input_shape=(2, *SEQ)),
                       L.LSTM(3, stateful=True, return_sequences=True),
                       L.GRU(2, stateful=True, return_sequences=True), L.SimpleRNN(2, stateful=True)])


def _dots():
    x = L.Input(shape=(4, 3))
    a, b = L.Dense(3, name="dot_a")(x), L.Dense(3, name="dot_b")(x)
    return Model(x, [L.Dot(axes=(1, 1))([a, b]), L.Dot(axes=2, normalize=True)([a, b]),
                     L.Concatenate(axis=1)([a, b])], name="dots")


def _bidirectional_state():
    x = L.Input(shape=SEQ)
    out, fh, fc, bh, bc = L.Bidirectional(L.LSTM(2, return_state=True))(x)
    seq, f, b = L.Bidirectional(L.GRU(2, return_sequences=True, return_state=True), merge_mode="sum")(x)
    return Model(x, [out, fh, fc, bh, bc, L.Flatten()(seq), f, b], name="bi_state")


# More layer types and arguments, checked the same way (their own fixture file,
# tests/fixtures/keras2/keras2_reads_ours_sweep.json). Theano-only semantics stay out (see above):
# 'same' only with odd kernels and strides 1, pooling 'same' only for pools 1 and 3 with strides 1.
# New cases go at the end: the auto names of the layers (simple_rnn_4) follow the table order.
SWEEP_CASES = {
    "conv1d_cf": (lambda: _seq(_cf(L.Conv1D, 2, 3, padding="same"), _cf(L.MaxPooling1D, 2),
                               _cf(L.Conv1D, 2, 1),
                               shape=SEQ_CF), SEQ_CF, None),
    "conv2d_cf": (lambda: _seq(_cf(L.Conv2D, 3, 3, padding="same"), _cf(L.AveragePooling2D, 2),
                               _cf(L.Conv2D, 2, 2, dilation_rate=1), L.Flatten(), L.Dense(2), shape=IMG_CF),
                  IMG_CF, None),
    "conv3d_cf": (lambda: _seq(_cf(L.Conv3D, 2, 3, padding="same"), _cf(L.MaxPooling3D, 2),
                               _cf(L.AveragePooling3D, (1, 1, 1)), shape=VOL_CF), VOL_CF, None),
    "conv_transpose_cf": (lambda: _seq(_cf(L.Conv2DTranspose, 2, 3, strides=2), shape=IMG_CF), IMG_CF, None),
    "conv3d_transpose_cf": (lambda: _seq(_cf(L.Conv3DTranspose, 2, 2), shape=VOL_CF), VOL_CF, None),
    "separable_cf": (lambda: _seq(_cf(L.SeparableConv2D, 2, 3), _cf(L.DepthwiseConv2D, 3, padding="same"),
                                  shape=IMG_CF), IMG_CF, None),
    "separable1d_cf": (lambda: _seq(_cf(L.SeparableConv1D, 2, 3, depth_multiplier=2), shape=SEQ_CF), SEQ_CF,
                       None),
    "batchnorm_cf": (lambda: _seq(_cf(L.Conv2D, 2, 1), L.BatchNormalization(axis=1), shape=IMG_CF), IMG_CF,
                     None),
    "conv2d_dilated_same": (lambda: _seq(L.Conv2D(2, 2, dilation_rate=2, padding="same"),
                                         L.Conv2D(2, 3, padding="same"), shape=IMG), IMG, None),
    "pooling_1d": (lambda: _fn(SEQ, [L.MaxPooling1D(2)], [L.AveragePooling1D(3, strides=1, padding="same")],
                               [L.GlobalMaxPooling1D()], [L.AveragePooling1D(2, strides=1)], name="pool1"),
                   SEQ, None),
    "pooling_2d": (lambda: _fn(IMG, [L.AveragePooling2D(2)], [L.MaxPooling2D(3, strides=1, padding="same")],
                               [L.GlobalMaxPooling2D()], [L.GlobalAveragePooling2D()],
                               [L.MaxPooling2D((2, 1))],
                               name="pool2"), IMG, None),
    "pooling_3d": (lambda: _fn(VOL, [L.MaxPooling3D(2)], [L.AveragePooling3D(2, strides=1)],
                               [L.GlobalMaxPooling3D()], [L.GlobalAveragePooling3D()], name="pool3"),
                   VOL, None),
    "pooling_cf": (lambda: _fn(IMG_CF, [_cf(L.GlobalAveragePooling2D)], [_cf(L.GlobalMaxPooling2D)],
                               [_cf(L.MaxPooling2D, 3, strides=1, padding="same")], name="pool_cf"),
                   IMG_CF, None),
    "pooling_3d_cf": (lambda: _fn(VOL_CF, [_cf(L.GlobalAveragePooling3D)], [_cf(L.GlobalMaxPooling3D)],
                                  [_cf(L.AveragePooling3D, 2, strides=1)], name="pool3_cf"), VOL_CF, None),
    "pooling_1d_cf": (lambda: _fn(SEQ_CF, [_cf(L.GlobalAveragePooling1D)], [_cf(L.GlobalMaxPooling1D)],
                                  [_cf(L.AveragePooling1D, 2)], name="pool1_cf"), SEQ_CF, None),
    "locally_connected": (lambda: _fn(IMG, [L.LocallyConnected2D(2, (2, 3), strides=(1, 2))],
                                      [L.Reshape((6, 10)), L.LocallyConnected1D(2, 3, strides=2)],
                                      name="local"),
                          IMG, None),
    "locally_connected_cf": (lambda: _seq(_cf(L.LocallyConnected2D, 2, 2), shape=IMG_CF), IMG_CF, None),
    "conv_lstm2d": (lambda: _seq(L.ConvLSTM2D(2, 3, padding="same", return_sequences=True),
                                 L.ConvLSTM2D(2, 3, go_backwards=True), shape=(2, *IMG)), (2, *IMG), None),
    "conv_lstm2d_cf": (lambda: _seq(_cf(L.ConvLSTM2D, 2, 3, padding="same"), shape=(2, *IMG_CF)),
                       (2, *IMG_CF), None),
    "bidirectional_conv_lstm2d": (lambda: _seq(L.Bidirectional(L.ConvLSTM2D(2, 3), merge_mode="sum"),
                                               shape=(2, *IMG)), (2, *IMG), None),
    "rnn_outputs": (_rnn_outputs, SEQ, None),
    "stateful": (_stateful, SEQ, None),
    "time_distributed_more": (lambda: _seq(L.TimeDistributed(L.BatchNormalization()),
                                           L.TimeDistributed(L.Conv2D(2, 3, data_format="channels_first")),
                                           L.TimeDistributed(L.Flatten()), L.TimeDistributed(L.Dense(2)),
                                           shape=(2, *IMG_CF)), (2, *IMG_CF), None),
    "advanced_activations": (lambda: _seq(L.Dense(6), L.LeakyReLU(0.2), L.Dense(6), L.PReLU(), L.ELU(0.5),
                                          L.ThresholdedReLU(0.1), L.ReLU(max_value=0.6, negative_slope=0.1,
                                                                         threshold=0.05),
                                          L.Softmax(), shape=(4,)), (4,), None),
    "prelu_shared": (lambda: _seq(L.Conv2D(3, 1), L.PReLU(shared_axes=[1, 2]), shape=IMG), IMG, None),
    "activations": (lambda: _fn((4,), *[[L.Dense(2, activation=a)] for a in (
        "elu", "selu", "softplus", "softsign", "relu", "tanh", "sigmoid", "hard_sigmoid", "exponential",
        "linear", "softmax")], name="acts"), (4,), None),
    "noise": (lambda: _seq(L.GaussianNoise(0.5), L.GaussianDropout(0.3), L.AlphaDropout(0.2),
                           L.SpatialDropout1D(0.3), L.Dropout(0.4), L.ActivityRegularization(0.1, 0.1),
                           L.LSTM(2), shape=SEQ), SEQ, None),
    "spatial_dropout": (lambda: _fn(IMG, [L.SpatialDropout2D(0.3)], [L.Reshape((3, 5, 2, 2)),
                                                                     L.SpatialDropout3D(0.3)], name="sdrop"),
                        IMG, None),
    "core_reshaping": (lambda: _seq(L.Dense(6), L.Reshape((2, 3)), L.Permute((2, 1)), L.Flatten(),
                                    L.RepeatVector(2), L.Activation("tanh"), L.Masking(0.0), L.LSTM(2),
                                    shape=(4,)), (4,), None),
    "padding_1d": (lambda: _seq(L.ZeroPadding1D((1, 2)), L.Cropping1D((2, 1)), L.UpSampling1D(2), shape=SEQ),
                   SEQ, None),
    "padding_2d": (lambda: _seq(L.ZeroPadding2D(((1, 0), (2, 1))), L.Cropping2D(((0, 1), (1, 1))),
                                L.UpSampling2D((2, 1)), shape=IMG), IMG, None),
    "padding_2d_cf": (lambda: _seq(_cf(L.ZeroPadding2D, 1), _cf(L.Cropping2D, ((0, 1), (2, 0))),
                                   _cf(L.UpSampling2D, 2), shape=IMG_CF), IMG_CF, None),
    "padding_3d": (lambda: _seq(L.ZeroPadding3D(1), L.Cropping3D(((1, 0), (0, 1), (2, 1))),
                                L.UpSampling3D((1, 2, 1)),
                                shape=VOL), VOL, None),
    "padding_3d_cf": (lambda: _seq(_cf(L.ZeroPadding3D, (1, 0, 1)), _cf(L.Cropping3D, 1),
                                   _cf(L.UpSampling3D, (2, 1, 1)),
                                   shape=VOL_CF), VOL_CF, None),
    "embedding_mask": (lambda: Sequential([L.Embedding(9, 3, mask_zero=True, input_length=5),
                                           L.SimpleRNN(2, return_sequences=True), L.GRU(2)]),
                       ("int", (5,), 9), None),
    "rnn_cells": (lambda: _fn(SEQ, [L.RNN(L.SimpleRNNCell(2))],
                              [L.RNN([L.LSTMCell(2), L.GRUCell(2, reset_after=True)], return_sequences=True)],
                              [L.RNN(L.GRUCell(2), go_backwards=True)], name="cells"), SEQ, None),
    "rnn_options": (lambda: _fn(SEQ, [L.LSTM(2, unit_forget_bias=False, use_bias=False, activation="relu",
                                             recurrent_activation="sigmoid", implementation=1)],
                                [L.GRU(2, use_bias=False, implementation=2)],
                                [L.SimpleRNN(2, activation="relu", use_bias=False)], name="rnn_opts"),
                     SEQ, None),
    "bidirectional_state": (_bidirectional_state, SEQ, None),
    "conv_transpose_output_padding": (lambda: _seq(L.Conv2DTranspose(2, 3, strides=2, output_padding=1),
                                                   L.Activation("relu"),
                                                   shape=(3, 2, 2)), (3, 2, 2), None),
    "softmax_axis": (lambda: _seq(L.Dense(6), L.Reshape((2, 3)), L.Softmax(axis=1), L.Flatten(), shape=(4,)),
                     (4,), None),
    "dots": (_dots, (4, 3), None),
}

# CuDNN RNNs: Keras 2.3.1 runs them only with TensorFlow on a GPU, so Keras reads their weights
# files into the plain layer (its _convert_rnn_weights); arignote does the same (and the file is
# written from a CuDNN layer, whose weights cannot run on a CPU). cudnn case -> the plain twin.
CUDNN_CASES = {
    "cudnn_lstm": (lambda: _seq(L.CuDNNLSTM(3, return_sequences=True, name="rnn"), shape=SEQ),
                   lambda: _seq(L.LSTM(3, return_sequences=True, recurrent_activation="sigmoid", name="rnn"),
                                shape=SEQ), SEQ),
    "cudnn_gru": (lambda: _seq(L.CuDNNGRU(3, name="rnn"), shape=SEQ),
                  lambda: _seq(L.GRU(3, reset_after=True, recurrent_activation="sigmoid", name="rnn"),
                               shape=SEQ),
                  SEQ),
}


def _leaves(model):
    for layer in model.layers:
        if getattr(layer, "layers", None) is not None and not hasattr(layer, "_keras_weights"):
            yield from _leaves(layer)
        else:
            yield layer


def set_seeded_weights(model, seed: int) -> None:
    """Every weight uniform in [-0.5, 0.5) from ``seed`` (moving variances in [0.5, 1.5))."""
    rng = np.random.RandomState(seed)
    for layer in _leaves(model):
        values = layer.get_weights()
        if not values:
            continue
        names = layouts.weight_names(layer, len(values))
        layer.set_weights([rng.uniform(0.5, 1.5, w.shape).astype(w.dtype)
                           if name.endswith("moving_variance:0")
                           else rng.uniform(-0.5, 0.5, w.shape).astype(w.dtype)
                           for name, w in zip(names, values)])


def make_inputs(spec, seed: int, batch: int = 2) -> list[np.ndarray]:
    rng = np.random.RandomState(seed)
    specs = spec if isinstance(spec, list) else [spec]
    out = []
    for s in specs:
        if s[0] == "int":
            out.append(rng.randint(0, s[2], (batch, *s[1])).astype("int64"))
        else:
            out.append(rng.uniform(-1, 1, (batch, *s)).astype("float32"))
    return out


def seed_of(name: str) -> int:
    """A per-case seed that does not depend on the case's position in the table."""
    return sum((i + 1) * ord(c) for i, c in enumerate(name)) % 10007


def build_case(name: str):
    """``(model, inputs)`` of a case (of :data:`CASES` or :data:`SWEEP_CASES`): fresh model, seeded
    weights and inputs (not compiled).

    A compiled case gets 8 samples: its training step normalizes over the batch, and batch statistics
    of 2 samples are too sensitive to rounding for a 1e-5 comparison of the step's result."""
    build, spec, opt = CASES[name] if name in CASES else SWEEP_CASES[name]
    model = build()
    set_seeded_weights(model, seed_of(name))
    return model, make_inputs(spec, seed_of(name) + 1, batch=8 if opt is not None else 2)


def build_all(sweep: bool = False):
    """Every case, built in table order after ``clear_session()``: layers the cases do not name get
    auto names (``dense_3``) from that order, and the file's names must be the ones Keras read.

    Returns ``({name: (model, inputs)}, {cudnn name: (cudnn model, plain twin, inputs)})``; the
    CuDNN models have seeded weights, their twins are built after them (they load the weights).
    ``sweep``: the :data:`SWEEP_CASES` instead (and no CuDNN ones).
    """
    K.clear_session()
    if sweep:
        return {name: build_case(name) for name in SWEEP_CASES}, {}
    built = {name: build_case(name) for name in CASES}
    cudnn = {}
    for name, (make_cudnn, make_plain, spec) in CUDNN_CASES.items():
        source = make_cudnn()
        set_seeded_weights(source, seed_of(name))
        cudnn[name] = (source, make_plain(), make_inputs(spec, seed_of(name) + 1))
    return built, cudnn


def compile_and_step(model, name: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Compile a case with its optimizer (loss mse) and take one step; returns the targets used."""
    opt = (CASES[name] if name in CASES else SWEEP_CASES[name])[2]
    model.compile(SGD(lr=0.05, momentum=0.9) if opt == "sgd_momentum" else opt, "mse")
    y0 = model.predict(feed(inputs), verbose=0)
    targets = [t + 0.1 for t in (y0 if isinstance(y0, list) else [y0])]
    model.train_on_batch(feed(inputs), feed(targets))
    return targets


def feed(arrays: list[np.ndarray]):
    """One array for a single-input (or single-output) model, the list otherwise (as Keras takes them)."""
    return arrays if len(arrays) > 1 else arrays[0]
