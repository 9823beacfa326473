"""Regenerate tests/fixtures/keras2/sequential_configs.json: what Keras 2.3.1 (Theano backend) writes
as a Sequential model's configuration (``to_json()``, and the ``model_config`` attribute of
``model.save``) for the ways a Sequential gets its input shape: ``input_shape=`` on the first layer,
an ``InputLayer`` added first, ``add`` only (built by ``fit``, or never built), and a Sequential
nested in another. Read by tests/test_sequential_config_keras2.py.

Run in the side venv (scripts/setup-keras2-venv.sh), from the repository root::

    /work/k2venv/bin/python scripts/make_keras2_sequential_config_fixture.py
"""

import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras2_shim  # noqa: E402,F401,I001  (before keras)
import h5py  # noqa: E402
import numpy as np  # noqa: E402
from keras.layers import Conv2D, Dense, Flatten, InputLayer  # noqa: E402
from keras.models import Sequential  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "keras2", "sequential_configs.json")


def cases():
    yield "input_shape", Sequential([Dense(4, input_shape=(3,), name="d1"), Dense(2, name="d2")], name="s1")
    model = Sequential(name="s2")
    model.add(InputLayer(input_shape=(3,), name="inp"))
    model.add(Dense(4, name="d1"))
    yield "input_layer", model
    model = Sequential(name="s3")
    model.add(Dense(4, name="d1"))
    model.add(Dense(2, name="d2"))
    model.compile("sgd", "mse")
    model.fit(np.zeros((4, 3), "float32"), np.zeros((4, 2), "float32"), verbose=0)
    yield "add_then_fit", model
    model = Sequential(name="s4")
    model.add(Dense(4, name="d1"))
    yield "add_unbuilt", model
    inner = Sequential([Dense(4, input_shape=(3,), name="in_d")], name="inner")
    yield "nested", Sequential([inner, Dense(2, name="top")], name="outer")
    yield "conv", Sequential([Conv2D(2, 3, input_shape=(5, 5, 1), name="c"), Flatten(name="f"),
                              Dense(3, activation="softmax", name="d")], name="s5")


def main():
    out = {}
    for name, model in cases():
        out[name] = json.loads(model.to_json())
    with tempfile.TemporaryDirectory() as tmp:  # the .h5 attribute is the same JSON
        model = Sequential([Dense(4, input_shape=(3,), name="d1"), Dense(2, name="d2")], name="s1")
        model.save(os.path.join(tmp, "m.h5"))
        with h5py.File(os.path.join(tmp, "m.h5"), "r") as f:
            out["h5_model_config"] = json.loads(f.attrs["model_config"])
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1, sort_keys=False)
        f.write("\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
