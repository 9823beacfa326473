"""Regenerate tests/fixtures/keras2/local_cf/*.h5 + local_cf.npz: Keras 2.3.1 (Theano backend) models
with ``LocallyConnected2D(data_format='channels_first')`` (its kernel flattens each patch as
``(channels, rows, cols)``, and its ``(rows, cols, filters)`` bias is *reshaped*, not transposed, to
``(filters, rows, cols)`` by Keras's ``bias_add``) and ``LocallyConnected1D(data_format=
'channels_first')`` (which Keras 2.3.1 computes as channels-last whatever it says), for
tests/test_local_channels_first.py. The .npz keeps each model's input and Keras's prediction.

Run in the side venv (scripts/setup-keras2-venv.sh), from the repository root (Theano needs a BLAS
for LocallyConnected: scipy's bundled OpenBLAS does)::

    SL=/work/k2venv/lib/python3.11/site-packages/scipy.libs LD_LIBRARY_PATH=$SL \\
    THEANO_FLAGS="floatX=float32,blas.ldflags=-L$SL -l:$(basename $SL/libopenblas*.so)" \\
    /work/k2venv/bin/python scripts/make_keras2_local_cf_fixture.py

``check DIR`` is the other way: Keras loads ``DIR/NAME.h5`` (arignote's ``load_model(fixture).save``)
and must predict what it predicted from its own file (exit status 1 otherwise).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras2_shim  # noqa: E402,F401,I001  (before keras)
import numpy as np  # noqa: E402
from keras import layers as L  # noqa: E402
from keras.models import Model, Sequential  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(ROOT, "tests", "fixtures", "keras2", "local_cf")


def lc2d_cf():
    return Sequential([L.LocallyConnected2D(3, (2, 3), strides=(1, 2), data_format="channels_first",
                                            input_shape=(2, 5, 6), name="lc"),
                       L.Activation("tanh", name="act"),
                       L.Flatten(name="flat"),
                       L.Dense(2, name="dense")])


def lc2d_cf_conv():
    x = L.Input((2, 6, 5), name="image")
    h = L.Conv2D(3, 3, padding="same", data_format="channels_first", name="conv")(x)
    h = L.LocallyConnected2D(2, 2, data_format="channels_first", use_bias=True, name="lc")(h)
    h = L.LocallyConnected2D(2, 2, strides=2, data_format="channels_first", use_bias=False,
                             name="lc_nobias")(h)
    return Model(x, L.GlobalAveragePooling2D(data_format="channels_first", name="gap")(h))


def lc1d_cf():
    return Sequential([L.LocallyConnected1D(3, 2, data_format="channels_first", input_shape=(5, 4),
                                            name="lc"),
                       L.Flatten(name="flat"),
                       L.Dense(2, name="dense")])


MODELS = [lc2d_cf, lc2d_cf_conv, lc1d_cf]


def main():
    os.makedirs(HERE, exist_ok=True)
    rng = np.random.RandomState(11)
    arrays = {}
    for make in MODELS:
        model = make()
        for w in model.weights:
            w.set_value(rng.uniform(-1, 1, w.get_value().shape).astype("float32"))
        x = rng.uniform(-1, 1, (2, *model.input_shape[1:])).astype("float32")
        model.save(os.path.join(HERE, make.__name__ + ".h5"))
        arrays[make.__name__ + "_x"] = x
        arrays[make.__name__ + "_y"] = model.predict(x)
    np.savez_compressed(os.path.join(HERE, "local_cf.npz"), **arrays)


def check(prefix):
    from keras.models import load_model

    arrays = np.load(os.path.join(HERE, "local_cf.npz"))
    worst = 0.0
    for make in MODELS:
        path = prefix + make.__name__ + ".h5"
        if os.path.exists(path):
            x, y = arrays[make.__name__ + "_x"], arrays[make.__name__ + "_y"]
            diff = float(np.abs(load_model(path, compile=False).predict(x) - y).max())
            worst = max(worst, diff)
            print(make.__name__, "max |difference|", diff)
    sys.exit(1 if worst > 1e-5 else 0)


if __name__ == "__main__":
    if sys.argv[1:2] == ["check"]:
        check(sys.argv[2])
    else:
        main()
