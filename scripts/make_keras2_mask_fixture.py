"""Regenerate tests/fixtures/keras2/masks.json: what real Keras 2.3.1 (Theano backend) computes for
models whose outputs carry a mask (``Embedding(mask_zero=True)``, ``Masking``) in the loss, the
metrics, with and without ``sample_weight`` / ``sample_weight_mode='temporal'`` / ``class_weight``,
a custom per-timestep loss, two outputs, masks into and out of models used as layers; and the
weights after one SGD step (issue 13, item 2).

Run in the side venv (scripts/setup-keras2-venv.sh), from the repository root::

    THEANO_FLAGS=base_compiledir=/tmp/masks-theano,blas.ldflags=,floatX=float32 \\
        /work/k2venv/bin/python scripts/make_keras2_mask_fixture.py

Every case stores its data, its weights and the model's starting weights, so
tests/test_masks_keras2.py rebuilds the same model in arignote and compares.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras2_shim  # noqa: E402,I001  (before keras)
import json  # noqa: E402

import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import backend as K  # noqa: E402
from keras import layers as L  # noqa: E402
from keras.models import Model, Sequential  # noqa: E402

keras2_shim.force_unroll()  # Theano's scan does not build on Python 3.11: RNNs unroll
OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "fixtures", "keras2",
                   "masks.json")
RNG = np.random.RandomState(1313)


def arr(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, size=shape).astype("float32")


def randomize(model):
    weights = [arr(*w.shape, low=-0.6, high=0.6) for w in model.get_weights()]
    model.set_weights(weights)
    return [w.tolist() for w in weights]


def floats(values):
    values = values if isinstance(values, list) else [values]
    return [float(v) for v in values]


def tokens(n, steps, vocab):
    """Integer sequences padded with trailing zeros (lengths 1..steps), one all-padding row."""
    x = RNG.randint(1, vocab, size=(n, steps))
    for i in range(n):
        x[i, RNG.randint(1, steps + 1):] = 0
    x[-1, :] = 0
    x[0, :] = RNG.randint(1, vocab, size=steps)  # one full-length row
    return x.astype("int32")


def padded_features(n, steps, features):
    """Float sequences whose padded steps are all zeros (what Masking(0.) masks)."""
    x = arr(n, steps, features)
    for i in range(n):
        x[i, RNG.randint(1, steps + 1):] = 0.0
    x[0] = arr(steps, features)
    return x


def run(m, x, y, sw=None, cw=None, batch_size=3, fit=False):
    out = {"names": m.metrics_names,
           "evaluate": floats(m.evaluate(x, y, batch_size=batch_size, verbose=0))}
    if sw is not None:
        out["evaluate_weighted"] = floats(m.evaluate(x, y, sample_weight=sw, batch_size=batch_size,
                                                     verbose=0))
    m.reset_metrics()  # Keras 2.3.1's train_on_batch resets its metrics after the call, not before
    out["train_on_batch"] = floats(m.train_on_batch(x, y, sample_weight=sw, class_weight=cw))
    out["after_step"] = [v.tolist() for v in m.get_weights()]
    if fit:
        h = m.fit(x, y, sample_weight=sw, class_weight=cw, batch_size=batch_size, epochs=2, shuffle=False,
                  verbose=0)
        out["history"] = {k: floats(v) for k, v in h.history.items()}
        out["after_fit"] = [v.tolist() for v in m.get_weights()]
    return out


def embedding_lstm():
    """Embedding(mask_zero) -> LSTM(return_sequences) -> TimeDistributed(Dense softmax), sample weights."""
    x = tokens(7, 5, 6)
    y = np.eye(3, dtype="float32")[RNG.randint(0, 3, size=(7, 5))]
    sw = arr(7, low=0.0, high=2.0)
    m = Sequential([L.Embedding(6, 3, mask_zero=True, input_length=5), L.LSTM(4, return_sequences=True),
                    L.TimeDistributed(L.Dense(3, activation="softmax"))])
    start = randomize(m)
    m.compile(keras.optimizers.SGD(lr=0.5), "categorical_crossentropy", metrics=["acc", "mae"],
              weighted_metrics=["acc"])
    out = run(m, x, y, sw, fit=True)
    return {"x": x.tolist(), "y": y.tolist(), "w": sw.tolist(), "start": start, **out}


def embedding_gru_temporal():
    """Embedding(mask_zero) -> GRU(return_sequences) -> TimeDistributed(Dense); temporal weights, mse."""
    x = tokens(6, 4, 5)
    y = arr(6, 4, 2)
    sw = arr(6, 4, low=0.0, high=2.0)
    m = Sequential([L.Embedding(5, 3, mask_zero=True, input_length=4), L.GRU(3, return_sequences=True),
                    L.TimeDistributed(L.Dense(2))])
    start = randomize(m)
    m.compile(keras.optimizers.SGD(lr=0.3), "mse", metrics=["mae"], weighted_metrics=["mae"],
              sample_weight_mode="temporal")
    out = run(m, x, y, sw, batch_size=4, fit=True)
    return {"x": x.tolist(), "y": y.tolist(), "w": sw.tolist(), "start": start, **out}


def masking_lstm_binary():
    """Masking(0.) -> LSTM(return_sequences) -> TimeDistributed(Dense sigmoid); binary crossentropy, acc."""
    x = padded_features(6, 4, 3)
    y = (arr(6, 4, 1) > 0).astype("float32")
    m = Sequential([L.Masking(0.0, input_shape=(4, 3)), L.LSTM(3, return_sequences=True),
                    L.TimeDistributed(L.Dense(1, activation="sigmoid"))])
    start = randomize(m)
    m.compile(keras.optimizers.SGD(lr=0.5), "binary_crossentropy", metrics=["acc"])
    out = run(m, x, y, batch_size=4)
    return {"x": x.tolist(), "y": y.tolist(), "start": start, **out}


def masking_dense_class_weight():
    """Masking on 2-D input -> Dense softmax: all-zero rows are masked samples; class and sample weights."""
    x = arr(8, 4)
    x[[2, 5]] = 0.0
    labels = np.array([0, 1, 2, 1, 0, 2, 2, 1])
    y = np.eye(3, dtype="float32")[labels]
    sw = arr(8, low=0.0, high=2.0)
    cw = {0: 0.5, 1: 2.0, 2: 1.5}
    m = Sequential([L.Masking(0.0, input_shape=(4,)), L.Dense(3, activation="softmax")])
    start = randomize(m)
    m.compile(keras.optimizers.SGD(lr=0.2), "categorical_crossentropy", metrics=["acc"],
              weighted_metrics=["acc"])
    out = run(m, x, y, sw, cw=cw, batch_size=4, fit=True)
    return {"x": x.tolist(), "y": y.tolist(), "w": sw.tolist(),
            "class_weight": {str(k): v for k, v in cw.items()},
            "start": start, **out}


def custom_per_step_loss():
    """A custom loss returning one value per time step, Masking -> GRU -> TimeDistributed(Dense)."""
    x = padded_features(5, 4, 2)
    y = arr(5, 4, 2)
    sw = arr(5, low=0.0, high=2.0)

    def per_step(y_true, y_pred):
        return K.sum(K.abs(y_pred - y_true), axis=-1) * 0.5

    m = Sequential([L.Masking(0.0, input_shape=(4, 2)), L.GRU(3, return_sequences=True),
                    L.TimeDistributed(L.Dense(2))])
    start = randomize(m)
    m.compile(keras.optimizers.SGD(lr=0.3), per_step, metrics=["mae"])
    out = run(m, x, y, sw, batch_size=5)
    return {"x": x.tolist(), "y": y.tolist(), "w": sw.tolist(), "start": start, **out}


def two_outputs():
    """Functional: a masked sequence output and an unmasked last-state output, loss weights."""
    x = tokens(6, 4, 5)
    ya = arr(6, 4, 2)
    yb = (arr(6, 1) > 0).astype("float32")
    inp = L.Input(shape=(4,), name="tokens")
    emb = L.Embedding(5, 3, mask_zero=True, name="emb")(inp)
    seq = L.LSTM(3, return_sequences=True, name="lstm")(emb)
    a = L.TimeDistributed(L.Dense(2), name="a")(seq)
    b = L.Dense(1, activation="sigmoid", name="b")(L.LSTM(2, name="last")(seq))
    m = Model(inp, [a, b])
    start = randomize(m)
    m.compile(keras.optimizers.SGD(lr=0.3), ["mae", "binary_crossentropy"], loss_weights=[1.0, 0.5],
              metrics={"a": ["mse"], "b": ["acc"]})
    # batch_size 3 divides 6: Keras 2.3.1's per-output losses are means over batches
    out = run(m, x, [ya, yb], batch_size=3)
    return {"x": x.tolist(), "ya": ya.tolist(), "yb": yb.tolist(), "start": start, **out}


def nested_encoder():
    """A Sequential encoder (Embedding(mask_zero) -> LSTM) used as a layer: its output mask goes on."""
    x = tokens(6, 4, 6)
    y = arr(6, 4, 2)
    inp = L.Input(shape=(4,), name="tokens")
    enc = Sequential([L.Embedding(6, 3, mask_zero=True, input_length=4), L.LSTM(3, return_sequences=True)],
                     name="encoder")
    m = Model(inp, L.TimeDistributed(L.Dense(2), name="out")(enc(inp)))
    start = randomize(m)
    m.compile(keras.optimizers.SGD(lr=0.3), "mse", metrics=["mae"])
    out = run(m, x, y, batch_size=3)
    return {"x": x.tolist(), "y": y.tolist(), "start": start, **out}


def mask_into_inner_model():
    """An outer Embedding(mask_zero)'s mask handed into a model used as a layer (its LSTM uses it)."""
    x = tokens(6, 4, 6)
    y = arr(6, 4, 2)
    inner_in = L.Input(shape=(4, 3), name="inner_in")
    inner = Model(inner_in, L.LSTM(3, return_sequences=True, name="inner_lstm")(inner_in), name="inner")
    inp = L.Input(shape=(4,), name="tokens")
    emb = L.Embedding(6, 3, mask_zero=True, name="emb")(inp)
    m = Model(inp, L.TimeDistributed(L.Dense(2), name="out")(inner(emb)))
    start = randomize(m)
    m.compile(keras.optimizers.SGD(lr=0.3), "mae", metrics=["mse"])
    out = run(m, x, y, batch_size=3)
    return {"x": x.tolist(), "y": y.tolist(), "start": start, **out}


def main():
    cases = {"embedding_lstm": embedding_lstm(), "embedding_gru_temporal": embedding_gru_temporal(),
             "masking_lstm_binary": masking_lstm_binary(),
             "masking_dense_class_weight": masking_dense_class_weight(),
             "custom_per_step_loss": custom_per_step_loss(), "two_outputs": two_outputs(),
             # added after the others: the random draws of the cases above are unchanged
             "nested_encoder": nested_encoder(), "mask_into_inner_model": mask_into_inner_model()}
    meta = {"keras": keras.__version__, "backend": K.backend(),
            "made_by": "scripts/make_keras2_mask_fixture.py"}
    with open(OUT, "w") as f:
        json.dump({"meta": meta, **cases}, f)
        f.write("\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
