"""Regenerate tests/fixtures/keras2/lambda_marker.h5 / .json: a Keras 2.3.1 (Theano backend) Sequential
whose first Lambda, when its stored bytecode is rebuilt and run, creates the file named by the
environment variable ARIGNOTE_LAMBDA_MARKER (the stand-in for any code a downloaded model could run),
and whose second Lambda is a named function (``def halve``), which Keras 2 also stores as bytecode.
Saved by Keras's own ``model.save``; the .json keeps ``to_json()``, ``to_yaml()``, an input and
Keras's prediction, for tests/test_safe_mode.py (a file loads its Lambdas only with safe_mode=False
or with the functions given in custom_objects). Bytecode loads only on the Python version that wrote
it (3.11, as the project's venv).

Run in the side venv (scripts/setup-keras2-venv.sh), from the repository root::

    THEANO_FLAGS=base_compiledir=/tmp/km_theano,blas.ldflags=,floatX=float32 \\
        /work/k2venv/bin/python scripts/make_keras2_marker_lambda_fixture.py
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras2_shim  # noqa: E402,F401,I001  (before keras)
import json  # noqa: E402

import numpy as np  # noqa: E402
from keras.layers import Dense, Lambda  # noqa: E402
from keras.models import Sequential  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(ROOT, "tests", "fixtures", "keras2")


def halve(t):
    return t * 0.5


def build():
    # the marker: what a hostile file's Lambda could do instead (read keys, start a shell ...)
    touch = lambda t: (open(__import__("os").environ.get("ARIGNOTE_LAMBDA_MARKER", __import__("os").devnull),  # noqa: E731
                            "a").close(), t * 2.0)[1]
    return Sequential([Dense(3, input_shape=(4,), name="dense"), Lambda(touch, name="touch"),
                       Lambda(halve, name="halve")])


def main():
    os.environ["ARIGNOTE_LAMBDA_MARKER"] = os.path.join(tempfile.mkdtemp(), "built-by-keras")
    rng = np.random.RandomState(5)
    model = build()
    model.set_weights([rng.uniform(-1, 1, w.shape).astype("float32") for w in model.get_weights()])
    data = rng.uniform(-1, 1, (3, 4)).astype("float32")
    model.save(os.path.join(HERE, "lambda_marker.h5"))
    with open(os.path.join(HERE, "lambda_marker.json"), "w") as fh:
        json.dump({"json": model.to_json(), "yaml": model.to_yaml(), "x": data.tolist(),
                   "y": model.predict(data).tolist()}, fh, indent=1)
    print("wrote lambda_marker.h5/.json", model.predict(data).ravel())


if __name__ == "__main__":
    main()
