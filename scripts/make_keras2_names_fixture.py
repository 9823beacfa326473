"""Regenerate tests/fixtures/keras2/public_names.json: the public names of Keras 2.3.1's modules, as
real Keras 2.3.1 (Theano backend) exposes them, for tests/test_keras2_public_names.py.

Run in the side venv (scripts/setup-keras2-venv.sh), from the repository root::

    THEANO_FLAGS=base_compiledir=/tmp/kn_theano,blas.ldflags= \\
        /work/k2venv/bin/python scripts/make_keras2_names_fixture.py

A name counts when it does not start with ``_`` and is a Keras module, or a class or function
defined in Keras (``__module__`` starts with ``keras``); numpy, six, os and the like are left out.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras2_shim  # noqa: E402,F401,I001  (before keras)
import importlib  # noqa: E402
import inspect  # noqa: E402
import json  # noqa: E402

import keras  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "keras2", "public_names.json")
MODULES = [
    "keras", "keras.layers", "keras.models", "keras.backend", "keras.optimizers", "keras.losses",
    "keras.metrics", "keras.callbacks", "keras.activations", "keras.initializers", "keras.regularizers",
    "keras.constraints", "keras.utils", "keras.preprocessing.image", "keras.preprocessing.sequence",
    "keras.preprocessing.text", "keras.applications", "keras.applications.imagenet_utils", "keras.datasets",
    "keras.datasets.cifar", "keras.datasets.cifar10", "keras.datasets.cifar100", "keras.datasets.mnist",
    "keras.wrappers.scikit_learn", "keras.engine", "keras.engine.topology", "keras.utils.np_utils",
    "keras.utils.data_utils", "keras.utils.generic_utils", "keras.utils.layer_utils",
    "keras.utils.conv_utils",
    "keras.utils.vis_utils", "keras.utils.io_utils", "keras.layers.core", "keras.layers.convolutional",
    "keras.layers.recurrent", "keras.layers.merge", "keras.layers.normalization", "keras.layers.pooling",
    "keras.layers.embeddings", "keras.layers.noise", "keras.layers.advanced_activations",
    "keras.layers.wrappers", "keras.layers.local", "keras.layers.cudnn_recurrent",
    "keras.layers.convolutional_recurrent",
    # issue 33 item 2: the rest of the Keras 2 module paths a script imports from
    "keras.legacy", "keras.legacy.interfaces", "keras.preprocessing", "keras.wrappers",
    "keras.datasets.boston_housing", "keras.datasets.fashion_mnist",
    "keras.datasets.imdb", "keras.datasets.reuters",
]


def public(module):
    names = []
    for name in sorted(dir(module)):
        if name.startswith("_"):
            continue
        value = getattr(module, name)
        if inspect.ismodule(value):
            if value.__name__.startswith("keras"):
                names.append(name)
        elif (getattr(value, "__module__", None) or "").startswith("keras"):
            names.append(name)
    return names


def main():
    modules = {m: public(importlib.import_module(m)) for m in MODULES}
    out = {"keras_version": keras.__version__, "modules": modules}
    with open(OUT, "w") as fh:
        json.dump(out, fh, indent=1, sort_keys=True)
        fh.write("\n")
    print(OUT, sum(len(v) for v in out["modules"].values()), "names")


if __name__ == "__main__":
    main()
