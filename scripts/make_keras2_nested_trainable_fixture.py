"""Regenerate tests/fixtures/keras2/nested_trainable.json: what Keras 2.3.1 (Theano backend) lists as
``trainable_weights`` / ``non_trainable_weights`` / ``weights`` of layers and models holding other
layers as their ``trainable`` flags are set at several levels, and which weights ``fit`` /
``train_on_batch`` change after such toggles and compiles (a custom layer holding Dense layers, an
RNN whose cell is unfrozen inside it, a model frozen and unfrozen, the GAN and fine-tuning idioms,
``TimeDistributed(model)``), and ``get_weights()`` order of a layer creating a non-trainable weight
first. Weights are named ``layer/weight`` (the last two parts of Keras's name) with their Keras
shape. Read by tests/test_nested_trainable_keras2.py.

Run in the side venv (scripts/setup-keras2-venv.sh), from the repository root::

    /work/k2venv/bin/python scripts/make_keras2_nested_trainable_fixture.py
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras2_shim  # noqa: E402,I001  (before keras)
import numpy as np  # noqa: E402
from keras import backend as K  # noqa: E402
from keras.layers import RNN, Dense, Input, Layer, SimpleRNNCell, TimeDistributed  # noqa: E402
from keras.models import Model, Sequential  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "keras2", "nested_trainable.json")


class Block(Layer):
    """A user's layer holding two Dense layers and a weight of its own (``trainable=False`` first)."""

    def build(self, input_shape):
        self.count = self.add_weight(name="count", shape=(1,), initializer="zeros", trainable=False)
        self.gain = self.add_weight(name="gain", shape=(4,), initializer="ones")
        self.first = Dense(4, name="first")
        self.second = Dense(4, name="second")
        self.first.build(input_shape)
        self.second.build((input_shape[0], 4))
        self.built = True

    def call(self, x):
        return self.second(self.first(x) * self.gain) + K.sum(self.count)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], 4)


class Scaled(Layer):
    """A user's layer creating a non-trainable weight before its trainable kernel and bias."""

    def build(self, input_shape):
        self.steps = self.add_weight(name="steps", shape=(2,), initializer="zeros", trainable=False)
        self.kernel = self.add_weight(name="kernel", shape=(input_shape[-1], 3), initializer="ones")
        self.bias = self.add_weight(name="bias", shape=(3,), initializer="zeros")
        self.built = True

    def call(self, x):
        return K.dot(x, self.kernel) + self.bias + K.sum(self.steps)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], 3)


def name(v):
    return "/".join(v.name.split(":")[0].split("/")[-2:])


def names(weights):
    return [[name(v), list(K.int_shape(v))] for v in weights]


def split(layer):
    return {"trainable": bool(layer.trainable), "T": names(layer.trainable_weights),
            "NT": names(layer.non_trainable_weights), "W": names(layer.weights)}


def snapshot(models):
    return {name(v): K.get_value(v).copy() for m in models for v in m.weights}


def changed(before, models):
    after = snapshot(models)
    return {k: bool(not np.allclose(before[k], after[k])) for k in sorted(before)}


RNG = np.random.RandomState(5)


def data(*shape):
    return RNG.uniform(-1, 1, shape).astype("float32")


def layers():
    out = {}
    block = Block(name="block")
    block(Input((3,)))
    out["block_init"] = split(block)
    block.first.trainable = False
    out["block_first_off"] = split(block)
    block.trainable = False
    out["block_off"] = split(block)
    block.trainable = True
    out["block_on"] = split(block)  # the Dense the user froze stays frozen
    scaled = Scaled(name="scaled")
    scaled(Input((2,)))
    out["scaled"] = split(scaled)
    scaled.trainable = False
    out["scaled_off"] = split(scaled)
    return out


def block_fit():
    """A model holding a Block: the Dense frozen inside it, the block toggled, compile, fit."""
    x = Input((3,), name="x")
    block = Block(name="block")
    model = Model(x, Dense(1, name="head")(block(x)))
    block.first.trainable = False
    block.trainable = False
    block.trainable = True
    model.compile("sgd", "mse")
    before = snapshot([model])
    model.fit(data(8, 3), data(8, 1), epochs=2, verbose=0)
    return {"model": split(model), "changed": changed(before, [model])}


def rnn_cell_fit():
    """An RNN frozen, then its cell unfrozen: the cell does not train (its RNN is frozen)."""
    x = Input((4, 5), name="x")
    rnn = RNN(SimpleRNNCell(3, name="cell"), name="rnn")
    model = Model(x, Dense(1, name="head")(rnn(x)))
    rnn.trainable = False
    rnn.cell.trainable = True
    model.compile("sgd", "mse")
    before = snapshot([model])
    model.fit(data(8, 4, 5), data(8, 1), epochs=2, verbose=0)
    return {"rnn": split(rnn), "cell": split(rnn.cell), "model": split(model),
            "changed": changed(before, [model])}


def model_toggle():
    """model.trainable = False then True: the per-layer freezing the user had comes back."""
    model = Sequential([Dense(4, input_shape=(3,), name="a"), Dense(2, name="b"), Dense(1, name="c")],
                       name="seq")
    model.layers[1].trainable = False
    out = {"init": split(model)}
    model.trainable = False
    out["off"] = {**split(model), "layer_flags": [bool(layer.trainable) for layer in model.layers]}
    model.trainable = True
    out["on"] = {**split(model), "layer_flags": [bool(layer.trainable) for layer in model.layers]}
    model.compile("sgd", "mse")
    before = snapshot([model])
    model.fit(data(8, 3), data(8, 1), epochs=2, verbose=0)
    out["changed"] = changed(before, [model])
    return out


def gan():
    """The GAN idiom: D compiled, frozen, the combined model compiled; then the steps, with and
    without toggling ``d.trainable`` around them."""
    x = Input((3,), name="img")
    d = Model(x, Dense(1, name="d_out", activation="sigmoid")(Dense(4, name="d_hidden")(x)), name="d")
    d.compile("sgd", "binary_crossentropy")
    z = Input((2,), name="z")
    g = Model(z, Dense(3, name="g_out")(Dense(5, name="g_hidden")(z)), name="g")
    d.trainable = False
    combined = Model(z, d(g(z)), name="combined")
    combined.compile("sgd", "binary_crossentropy")
    out = {"d": split(d), "combined": split(combined),
           "d_layer_flags": [bool(layer.trainable) for layer in d.layers]}
    imgs, zs, labels = data(8, 3), data(8, 2), (RNG.uniform(0, 1, (8, 1)) > 0.5).astype("float32")
    models = [d, g]
    before = snapshot(models)
    d.train_on_batch(imgs, labels)
    out["d_step"] = changed(before, models)
    before = snapshot(models)
    combined.train_on_batch(zs, labels)
    out["combined_step"] = changed(before, models)
    # the toggling tutorials: unfreeze for D's step, freeze again for the combined step
    d.trainable = True
    before = snapshot(models)
    d.train_on_batch(imgs, labels)
    out["toggled_d_step"] = changed(before, models)
    d.trainable = False
    before = snapshot(models)
    combined.train_on_batch(zs, labels)
    out["toggled_combined_step"] = changed(before, models)
    out["d_after"] = split(d)
    out["combined_after"] = split(combined)
    return out


def fine_tune():
    """A base model inside a Sequential: base.trainable = True then per-layer flags; then the first
    layers of the outer model frozen and compiled again."""
    x = Input((3,), name="bx")
    h = Dense(4, name="b1")(x)
    h = Dense(4, name="b2")(h)
    base = Model(x, Dense(4, name="b3")(h), name="base")
    base.trainable = False
    model = Sequential([base, Dense(2, name="top1"), Dense(1, name="top2")], name="tuned")
    model.compile("sgd", "mse")
    out = {"frozen_base": split(model)}
    xs, ys = data(8, 3), data(8, 1)
    before = snapshot([model])
    model.fit(xs, ys, epochs=1, verbose=0)
    out["frozen_base_changed"] = changed(before, [model])
    base.trainable = True
    for layer in base.layers:
        layer.trainable = layer.name == "b3"
    model.compile("sgd", "mse")
    out["b3_only"] = split(model)
    before = snapshot([model])
    model.fit(xs, ys, epochs=1, verbose=0)
    out["b3_only_changed"] = changed(before, [model])
    for layer in model.layers[:2]:
        layer.trainable = False
    model.compile("sgd", "mse")
    out["first_two_off"] = {**split(model), "base_flags": [bool(layer.trainable) for layer in base.layers]}
    before = snapshot([model])
    model.fit(xs, ys, epochs=1, verbose=0)
    out["first_two_off_changed"] = changed(before, [model])
    return out


def time_distributed_model():
    """TimeDistributed(model): its flag is the model's; the model's layers keep theirs."""
    x = Input((3,), name="ix")
    inner = Model(x, Dense(2, name="i2")(Dense(4, name="i1")(x)), name="inner")
    inner.layers[1].trainable = False
    td = TimeDistributed(inner, name="td")
    td(Input((5, 3)))
    out = {"init": {**split(td), "inner": bool(inner.trainable)}}
    td.trainable = False
    out["off"] = {**split(td), "inner": bool(inner.trainable),
                  "layer_flags": [bool(layer.trainable) for layer in inner.layers]}
    td.trainable = True
    out["on"] = {**split(td), "inner": bool(inner.trainable),
                 "layer_flags": [bool(layer.trainable) for layer in inner.layers]}
    return out


def main():
    keras2_shim.force_unroll()  # Theano's scan C extension does not build on Python 3.11
    out = {"layers": layers(), "block_fit": block_fit(), "rnn_cell_fit": rnn_cell_fit(),
           "model_toggle": model_toggle(), "gan": gan(), "fine_tune": fine_tune(),
           "time_distributed_model": time_distributed_model()}
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
