"""Regenerate tests/fixtures/keras2/lambda_closure.h5 / .npz: a Keras 2.3.1 (Theano backend) model whose
Lambda layers hold a lambda with a closure and a default, a lambda with ``arguments``, and a lambda
``output_shape``, saved by Keras's own ``model.save``; the .npz keeps an input and Keras's prediction,
for tests/test_keras2_small_names.py. Keras stores a lambda as marshalled bytecode, so the file loads
only on the Python version that wrote it (3.11, as the project's venv).

Run in the side venv (scripts/setup-keras2-venv.sh), from the repository root::

    THEANO_FLAGS=base_compiledir=/tmp/kl_theano,blas.ldflags=,floatX=float32 \\
        /work/k2venv/bin/python scripts/make_keras2_lambda_fixture.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras2_shim  # noqa: E402,F401,I001  (before keras)
import numpy as np  # noqa: E402
from keras import backend as K  # noqa: E402
from keras.layers import Dense, Input, Lambda  # noqa: E402
from keras.models import Model  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(ROOT, "tests", "fixtures", "keras2")


def build():
    scale = 2.5  # read through the lambda's closure

    def make(shift=0.5):
        return lambda t, s=shift: t * scale + s

    x = Input((4,))
    h = Dense(3, name="dense")(x)
    h = Lambda(make(), name="scaled")(h)
    h = Lambda(lambda t, power: K.pow(t, power), arguments={"power": 2}, name="squared")(h)
    y = Lambda(lambda t: K.sum(t, axis=-1, keepdims=True), output_shape=lambda s: (s[0], 1),
               name="total")(h)
    return Model(x, y)


def main():
    rng = np.random.RandomState(11)
    model = build()
    model.set_weights([rng.uniform(-1, 1, w.shape).astype("float32") for w in model.get_weights()])
    data = rng.uniform(-1, 1, (5, 4)).astype("float32")
    model.save(os.path.join(HERE, "lambda_closure.h5"))
    np.savez(os.path.join(HERE, "lambda_closure.npz"), x=data, y=model.predict(data))
    print("wrote lambda_closure.h5/.npz", model.predict(data).ravel())


if __name__ == "__main__":
    main()
