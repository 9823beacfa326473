"""Regenerate tests/fixtures/keras2/layer_idioms.json: what real Keras 2.3.1 (Theano backend) computes
for the custom-layer idioms of published Keras 2 code that issue 29 made run on arignote: the WGAN-GP
graph (``_Merge._merge_function``, a model called on the merged tensor), a weight
replaced in ``build`` by ``K.clip`` of itself, ``BatchNormalization(x, training=True)`` in predict,
a one-output ``class_weight`` given as a list, a shared layer's activity penalty, integer data into
a float ``Input``.

Run in the side venv (scripts/setup-keras2-venv.sh), from the repository root::

    THEANO_FLAGS=base_compiledir=/tmp/idioms-theano,blas.ldflags=,floatX=float32 \\
        /work/k2venv/bin/python scripts/make_keras2_layer_idioms_fixture.py

tests/test_keras2_layer_idioms_fixture.py rebuilds each case in arignote from the stored data and
starting weights and compares.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import json  # noqa: E402

import numpy as np  # noqa: E402
from keras import backend as K  # noqa: E402
from keras import layers as L  # noqa: E402
from keras.layers.merge import _Merge  # noqa: E402
from keras.models import Model, Sequential  # noqa: E402
from keras.optimizers import SGD  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "fixtures", "keras2",
                   "layer_idioms.json")


def lists(arrays):
    return [np.asarray(a).tolist() for a in arrays]


class HalfAverage(_Merge):
    def _merge_function(self, inputs):
        return 0.5 * inputs[0] + 0.5 * inputs[1]


def wgan_gp(rng):
    """The critic's three outputs of the WGAN-GP graph (real, fake, their ``_Merge`` average). The
    penalty itself is checked against finite differences in the test: Keras's Theano backend
    differentiates with respect to the merged tensor as a 1-D sum over the batch, while the
    published WGAN-GP code ran on TensorFlow (per-sample gradients), which arignote follows."""
    critic = Sequential([L.Dense(4, activation="tanh", input_shape=(3,)), L.Dense(1)])
    start = [rng.uniform(-1, 1, w.shape).astype("float32") for w in critic.get_weights()]
    critic.set_weights(start)
    real, fake = L.Input((3,)), L.Input((3,))
    averaged = HalfAverage()([real, fake])
    model = Model([real, fake], [critic(real), critic(fake), critic(averaged)])
    x = [rng.rand(4, 3).astype("float32"), rng.rand(4, 3).astype("float32")]
    return {"start": lists(start), "x": lists(x), "outputs": lists(model.predict(x))}


class ClippedDense(L.Layer):
    def __init__(self, units, clip, **kwargs):
        super().__init__(**kwargs)
        self.units, self.clip = units, clip

    def build(self, input_shape):
        self.kernel = self.add_weight(name="kernel", shape=(input_shape[-1], self.units),
                                      initializer="ones")
        self.kernel = K.clip(self.kernel, -self.clip, self.clip)
        super().build(input_shape)

    def call(self, x):
        return K.dot(x, self.kernel)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.units)


def clip_expression(rng):
    x = L.Input((3,))
    layer = ClippedDense(2, 0.5)
    model = Model(x, layer(x))
    start = np.array([[0.1, 0.9], [-0.2, -0.7], [0.3, 0.4]], "float32")
    layer.set_weights([start])
    model.compile(SGD(lr=0.1), "mse")
    data = rng.rand(5, 3).astype("float32")
    target = rng.rand(5, 2).astype("float32")
    before = model.predict(data)
    model.train_on_batch(data, target)
    return {"start": start.tolist(), "x": data.tolist(), "y": target.tolist(), "before": before.tolist(),
            "after_weights": lists(layer.get_weights()), "after": model.predict(data).tolist()}


def batchnorm_training_true(rng):
    x = L.Input((3,))
    bn = L.BatchNormalization()
    model = Model(x, bn(x, training=True))
    data = (rng.rand(6, 3) * 10).astype("float32")
    return {"x": data.tolist(), "out": model.predict(data).tolist(), "weights": lists(bn.get_weights())}


def class_weight(rng):
    x = rng.rand(8, 3).astype("float32")
    y = np.eye(2)[[0, 1, 0, 1, 1, 1, 0, 1]].astype("float32")
    out = {"x": x.tolist(), "y": y.tolist(), "cases": []}
    for name, cw in (("none", None), ("list_of_numbers", [1.0, 5.0]), ("array", np.array([1.0, 5.0])),
                     ("list_of_dict", [{0: 1.0, 1: 5.0}]), ("dict", {0: 1.0, 1: 5.0})):
        i = L.Input((3,))
        model = Model(i, L.Dense(2, activation="softmax", kernel_initializer="ones")(i))
        model.compile("sgd", "categorical_crossentropy")
        out["cases"].append([name, float(model.train_on_batch(x, y, class_weight=cw))])
    return out


def shared_activity():
    a, b = L.Input((2,)), L.Input((2,))
    dense = L.Dense(2, kernel_initializer="ones", use_bias=False, activity_regularizer=lambda t: K.sum(t))
    model = Model([a, b], L.add([dense(a), dense(b)]))
    model.compile("sgd", loss=None)
    x = [np.ones((1, 2), "float32"), 2 * np.ones((1, 2), "float32")]
    return {"x": lists(x), "loss": float(model.evaluate(x, verbose=0))}


def integer_input():
    x = L.Input((3,))
    model = Model(x, L.Dense(1, kernel_initializer="ones", bias_initializer="ones")(x))
    data = np.arange(6, dtype="int64").reshape(2, 3)
    return {"x": data.tolist(), "out": model.predict(data).tolist()}


def main():
    rng = np.random.RandomState(29)
    fixture = {
        "keras_version": "2.3.1", "backend": K.backend(),
        "wgan_gp": wgan_gp(rng),
        "clip_expression": clip_expression(rng),
        "batchnorm_training_true": batchnorm_training_true(rng),
        "class_weight": class_weight(rng),
        "shared_activity": shared_activity(),
        "integer_input": integer_input(),
    }
    with open(OUT, "w") as f:
        json.dump(fixture, f, indent=1)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
