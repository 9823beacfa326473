"""Regenerate tests/fixtures/keras2/optimizers_adamax_nadam.json and the .h5 files next to it: real
Keras 2.3.1 (Theano backend) training a small Dense model with Adamax and Nadam, for
tests/test_optimizers_adamax_nadam.py.

Per case: the starting weights, the batch, the weights after each of 3 ``train_on_batch`` steps,
then ``model.save`` (with ``optimizer_weights``) to ``opt_<case>.h5`` and the weights after 2 more
steps, which a model loaded from the file must reach too.

Run in the side venv (scripts/setup-keras2-venv.sh), from the repository root::

    THEANO_FLAGS=base_compiledir=/tmp/ko_theano,blas.ldflags=,floatX=float32 \\
        /work/k2venv/bin/python scripts/make_keras2_optimizer_fixture.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras2_shim  # noqa: E402,F401,I001  (before keras)
import json  # noqa: E402

import numpy as np  # noqa: E402
from keras import optimizers  # noqa: E402
from keras.layers import Dense  # noqa: E402
from keras.models import Sequential  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(ROOT, "tests", "fixtures", "keras2")
CASES = {
    "adamax": ("Adamax", {}),
    "adamax_decay_clip": ("Adamax", {"lr": 0.01, "decay": 0.1, "clipnorm": 0.5}),
    "nadam": ("Nadam", {}),
    "nadam_schedule": ("Nadam", {"lr": 0.01, "beta_1": 0.8, "schedule_decay": 0.05, "epsilon": 1e-4}),
}


def main():
    rng = np.random.RandomState(5)
    out = {}
    for case, (cls, kwargs) in sorted(CASES.items()):
        model = Sequential([Dense(4, activation="tanh", input_shape=(3,)), Dense(2)])
        model.compile(getattr(optimizers, cls)(**kwargs), "mse")
        start = [rng.uniform(-1, 1, w.shape).astype("float32") for w in model.get_weights()]
        model.set_weights(start)
        x = rng.uniform(-1, 1, (8, 3)).astype("float32")
        y = rng.uniform(-1, 1, (8, 2)).astype("float32")
        steps = []
        for _ in range(3):
            model.train_on_batch(x, y)
            steps.append([w.tolist() for w in model.get_weights()])
        model.save(os.path.join(HERE, f"opt_{case}.h5"))
        resumed = []
        for _ in range(2):
            model.train_on_batch(x, y)
            resumed.append([w.tolist() for w in model.get_weights()])
        out[case] = {"class": cls, "kwargs": kwargs, "start": [w.tolist() for w in start], "x": x.tolist(),
                     "y": y.tolist(), "steps": steps, "resumed": resumed,
                     "config": model.optimizer.get_config()}
    with open(os.path.join(HERE, "optimizers_adamax_nadam.json"), "w") as fh:
        json.dump(out, fh)
    print("wrote", sorted(out))


if __name__ == "__main__":
    main()
