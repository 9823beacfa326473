"""Regenerate tests/fixtures/keras2/theano_same/adam.h5 / .npz: a Keras 2.3.1 (Theano backend) model with
convolutions (Conv2D with an even 'same' kernel, a TimeDistributed Conv1D), compiled with Adam and
trained a step, saved with its optimizer state; the .npz keeps the batch and every weight after one
more ``train_on_batch`` in Keras (kernels as Keras holds them: for convolution), for
tests/test_theano_same_padding.py. Theano stores kernels flipped, and Adam's slots for them alike.

Run in the side venv (scripts/setup-keras2-venv.sh), from the repository root::

    /work/k2venv/bin/python scripts/make_keras2_theano_optimizer_fixture.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras2_shim  # noqa: E402,F401,I001  (before keras)
import numpy as np  # noqa: E402
from keras import layers as L  # noqa: E402
from keras.models import Sequential  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(ROOT, "tests", "fixtures", "keras2", "theano_same")


def main():
    rng = np.random.RandomState(5)
    model = Sequential([L.Conv2D(3, 2, padding="same", input_shape=(4, 5, 2), name="conv"),
                        L.TimeDistributed(L.Conv1D(2, 3), name="td"),
                        L.Flatten(name="flat"), L.Dense(2, name="dense")])
    model.compile("adam", "mse")
    x = rng.uniform(-1, 1, (4, 4, 5, 2)).astype("float32")
    y = rng.uniform(-1, 1, (4, 2)).astype("float32")
    model.train_on_batch(x, y)
    model.train_on_batch(x, y)
    model.save(os.path.join(HERE, "adam.h5"))
    model.train_on_batch(x, y)
    after = {f"after_{i}": w for i, w in enumerate(model.get_weights())}
    np.savez_compressed(os.path.join(HERE, "adam.npz"), x=x, y=y, **after)


if __name__ == "__main__":
    main()
