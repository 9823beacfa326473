"""Regenerate tests/fixtures/keras2/legacy_dense.h5 / .npz and legacy_atrous.h5 / .npz: Keras 2.3.1
(Theano backend) models with the Keras 1 layers Keras 2.3.1 still exported (MaxoutDense, Highway,
AtrousConvolution1D / 2D, with Keras 1 argument names), trained a little so the weights are not the
initial ones, saved by Keras's own ``model.save``; each .npz keeps an input (``x``) and Keras's
prediction (``y``), for tests/test_layers_legacy.py and tests/test_keras2_h5_files.py.

Run in the side venv (scripts/setup-keras2-venv.sh), from the repository root::

    THEANO_FLAGS=base_compiledir=/tmp/legacy_theano,blas.ldflags=,floatX=float32 \\
        /work/k2venv/bin/python scripts/make_keras2_legacy_fixture.py
"""

import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras2_shim  # noqa: E402,F401,I001  (before keras)
import numpy as np  # noqa: E402
from keras.layers import AtrousConvolution1D, AtrousConvolution2D, Dense, Flatten, Highway, MaxoutDense  # noqa: E402
from keras.models import Sequential  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(ROOT, "tests", "fixtures", "keras2")


def dense_model():
    return Sequential([
        MaxoutDense(5, nb_feature=3, input_dim=4, name="maxout"),
        Highway(activation="relu", name="highway"),
        Highway(bias=False, name="highway_nobias"),
        Dense(2, name="out"),
    ])


def atrous_model():
    return Sequential([
        AtrousConvolution2D(3, (3, 3), atrous_rate=(2, 2), padding="same", input_shape=(7, 7, 2), name="at2"),
        Flatten(name="flat"),
        Dense(2, name="out"),
    ])


def atrous1d_model():
    return Sequential([
        AtrousConvolution1D(4, 3, atrous_rate=2, input_shape=(9, 3), name="at1"),
        Flatten(name="flat"),
        Dense(2, name="out"),
    ])


def main():
    rng = np.random.RandomState(0)
    warnings.simplefilter("ignore")
    for name, build, shape in (("legacy_dense", dense_model, (4,)),
                               ("legacy_atrous", atrous_model, (7, 7, 2)),
                               ("legacy_atrous1d", atrous1d_model, (9, 3))):
        model = build()
        model.compile("adam", "mse")
        x = rng.normal(size=(16, *shape)).astype("float32")
        y = rng.normal(size=(16, 2)).astype("float32")
        model.fit(x, y, epochs=3, batch_size=8, verbose=0)
        model.save(os.path.join(HERE, name + ".h5"))
        np.savez(os.path.join(HERE, name + ".npz"), x=x[:5], y=model.predict(x[:5]))
        print(name, model.count_params(), [w.name for w in model.weights])


if __name__ == "__main__":
    main()
