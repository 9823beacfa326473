"""Regenerate tests/fixtures/keras2/yaml_models.json: ``model.to_yaml()`` of real Keras 2.3.1 (Theano
backend) for a Sequential and a functional model (two inputs, a shared layer, a merge), with each
model's layer names, classes, output shapes and parameter count, for tests/test_models_clone_yaml.py.

Run in the side venv (scripts/setup-keras2-venv.sh), from the repository root::

    THEANO_FLAGS=base_compiledir=/tmp/ky_theano,blas.ldflags=,floatX=float32 \\
        /work/k2venv/bin/python scripts/make_keras2_yaml_fixture.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras2_shim  # noqa: E402,F401,I001  (before keras)
import json  # noqa: E402

from keras.layers import LSTM, Conv2D, Dense, Dropout, Embedding, Flatten, Input, MaxPooling2D  # noqa: E402
from keras.layers import concatenate  # noqa: E402
from keras.models import Model, Sequential  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "keras2", "yaml_models.json")


def describe(model):
    return {"yaml": model.to_yaml(), "names": [layer.name for layer in model.layers],
            "classes": [type(layer).__name__ for layer in model.layers],
            "output_shapes": [list(layer.output_shape) if isinstance(layer.output_shape, tuple)
                              else [list(s) for s in layer.output_shape] for layer in model.layers],
            "params": int(model.count_params())}


def main():
    seq = Sequential([Conv2D(4, (3, 3), activation="relu", input_shape=(12, 12, 3)), MaxPooling2D(),
                      Dropout(0.25), Flatten(), Dense(5, activation="softmax")])
    words, numbers = Input((6,), name="words"), Input((3,), name="numbers")
    shared = Dense(4, name="shared")
    text = LSTM(3)(Embedding(20, 5)(words))
    merged = concatenate([text, shared(numbers), shared(Dense(3)(numbers))])
    fun = Model([words, numbers], Dense(2, activation="sigmoid", name="out")(merged))
    with open(OUT, "w") as fh:
        json.dump({"sequential": describe(seq), "functional": describe(fun)}, fh, indent=1, default=int)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
