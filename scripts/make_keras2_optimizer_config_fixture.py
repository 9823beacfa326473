"""Regenerate tests/fixtures/keras2/optimizer_configs.json: what real Keras 2.3.1 (Theano backend)
gives for ``optimizers.serialize(opt)`` of each optimizer built with its defaults, with arguments
(Keras 2.3.1's ``learning_rate`` and the older ``lr`` spelling, ``decay``, ``clipnorm`` /
``clipvalue``), and after a ``deserialize`` round trip, for tests/test_keras2_optimizer_configs.py.

Run in the side venv (scripts/setup-keras2-venv.sh), from the repository root::

    THEANO_FLAGS=base_compiledir=/tmp/koc_theano,blas.ldflags=,floatX=float32 \\
        /work/k2venv/bin/python scripts/make_keras2_optimizer_config_fixture.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras2_shim  # noqa: E402,F401,I001  (before keras)
import json  # noqa: E402

from keras import optimizers  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "keras2", "optimizer_configs.json")

CASES = [
    ("SGD", {}), ("SGD", {"lr": 0.01, "momentum": 0.9, "nesterov": True}),
    ("SGD", {"learning_rate": 0.05, "decay": 1e-4, "clipnorm": 0.5}), ("SGD", {"lr": 0.01, "clipvalue": 0.5}),
    ("RMSprop", {}), ("RMSprop", {"lr": 0.0001, "rho": 0.8, "epsilon": 1e-6}),
    ("Adagrad", {}), ("Adagrad", {"learning_rate": 0.1, "decay": 0.01}),
    ("Adadelta", {}), ("Adadelta", {"lr": 0.5, "rho": 0.9}),
    ("Adam", {}), ("Adam", {"lr": 0.0003, "beta_1": 0.8, "amsgrad": True}),
    ("Adamax", {}), ("Adamax", {"learning_rate": 0.001, "beta_2": 0.99}),
    ("Nadam", {}), ("Nadam", {"lr": 0.001, "schedule_decay": 0.01}),
]


def main():
    out = []
    for name, kwargs in CASES:
        opt = getattr(optimizers, name)(**kwargs)
        config = optimizers.serialize(opt)
        again = optimizers.serialize(optimizers.deserialize(json.loads(json.dumps(config))))
        out.append({"class": name, "kwargs": kwargs, "serialized": config, "round_trip": again})
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote", OUT, len(out), "cases")


if __name__ == "__main__":
    main()
