"""Regenerate tests/fixtures/keras2/long_names_weights.h5 and long_names_values.npz: real Keras 2.3.1
(Theano backend) ``save_weights`` of a model whose layer names are so long that the ``layer_names``
attribute, and one layer's ``weight_names``, pass HDF5's 64 KB attribute limit, so Keras splits them
into numbered chunks (``layer_names0``, ``layer_names1``, ...: ``save_attributes_to_hdf5_group``).
The .npz keeps the weights, for tests/test_keras2_engine_saving.py.

Run in the side venv (scripts/setup-keras2-venv.sh), from the repository root::

    THEANO_FLAGS=base_compiledir=/tmp/kln_theano,blas.ldflags=,floatX=float32 \\
        /work/k2venv/bin/python scripts/make_keras2_long_names_fixture.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras2_shim  # noqa: E402,F401,I001  (before keras)
import h5py  # noqa: E402
import numpy as np  # noqa: E402
from keras.layers import LSTM, Dense  # noqa: E402
from keras.models import Sequential  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(ROOT, "tests", "fixtures", "keras2")
LONG = 25000  # characters: 3 of them pass the 64512-byte attribute limit


def names():
    return ["lstm_" + "l" * LONG, "dense_a_" + "a" * LONG, "dense_b_" + "b" * LONG, "out"]


def main():
    rng = np.random.RandomState(5)
    first, second, third, last = names()
    model = Sequential([LSTM(3, input_shape=(4, 2), name=first), Dense(3, name=second),
                        Dense(2, name=third), Dense(1, name=last)])
    model.set_weights([rng.uniform(-1, 1, w.shape).astype("float32") for w in model.get_weights()])
    path = os.path.join(HERE, "long_names_weights.h5")
    model.save_weights(path)
    with h5py.File(path, "r") as f:
        chunks = sorted(a for a in f.attrs if a.startswith("layer_names"))
        weight_chunks = sorted(a for a in f[first].attrs if a.startswith("weight_names"))
    assert chunks[0] == "layer_names0" and weight_chunks[0] == "weight_names0", (chunks, weight_chunks)
    np.savez(os.path.join(HERE, "long_names_values.npz"),
             **{f"w{i}": w for i, w in enumerate(model.get_weights())})
    print("wrote long_names_weights.h5, long_names_values.npz", chunks, weight_chunks,
          os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
