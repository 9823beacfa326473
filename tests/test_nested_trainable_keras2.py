"""``trainable`` at several levels as Keras 2.3.1 has it: a user's layer holding Dense layers, an RNN
whose cell is unfrozen inside it, a model frozen and unfrozen (its layers keep their flags), the GAN
and fine-tuning idioms, ``TimeDistributed(model)``; and ``get_weights()`` order (trainable weights
first, at every level). Expected values are what Keras 2.3.1 itself listed and trained
(tests/fixtures/keras2/nested_trainable.json, written by
scripts/make_keras2_nested_trainable_fixture.py): weights named ``layer/weight`` with Keras shapes."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from arignote import backend as K
from arignote.layers import RNN, Dense, Input, InputLayer, Layer, SimpleRNNCell, TimeDistributed
from arignote.models import Model, Sequential

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "keras2" / "nested_trainable.json").read_text())


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


def _names(obj, scope=None):
    """id(tensor) -> [``layer/weight``, Keras shape] for every weight inside a layer or model (a
    sublayer of a user's layer is named by the outer layer, as Keras 2.3.1's Theano names are)."""
    modules = list(obj.modules() if isinstance(obj, torch.nn.Module) else obj.module.modules())
    rnn_of = {id(m.cell): m.name for m in modules if isinstance(getattr(m, "cell", None), Layer)}
    out = {}
    for module in modules:
        if not isinstance(module, Layer):
            continue
        table = {attr: (name, perm) for name, attr, perm in module.__dict__.get("_weight_table", [])}
        for attr, p in [*module.named_parameters(recurse=False), *module.named_buffers(recurse=False)]:
            name, perm = table.get(attr, (attr, None))
            out.setdefault(id(p), [f"{scope or rnn_of.get(id(module), module.name)}/{name}",
                                   list(p.permute(perm).shape if perm is not None else p.shape)])
    return out


def _weight_names(layer, scope):
    """Names of ``layer.get_weights()`` (Keras layout), matched to the weights by their storage."""
    names = _names(layer, scope)
    by_ptr = {}
    for module in layer.modules():
        for t in [*module.parameters(recurse=False), *module.buffers(recurse=False)]:
            by_ptr[t.untyped_storage().data_ptr()] = names[id(t)]
    return [by_ptr[t.untyped_storage().data_ptr()] for t in layer._keras_weights()]


def _split(obj, scope=None):
    names = _names(obj, scope)
    return {"trainable": bool(obj.trainable), "T": [names[id(p)] for p in obj.trainable_weights],
            "NT": [names[id(p)] for p in obj.non_trainable_weights]}


def _params(obj):
    return list(obj.parameters()) if isinstance(obj, torch.nn.Module) else list(obj.module.parameters())


def _trains(obj, scope=None):
    names = _names(obj, scope)
    return sorted(tuple(names[id(p)]) for p in _params(obj) if p.requires_grad)


def _check(obj, expected, scope=None, trains=None):
    """The lists as Keras's; requires_grad as the lists say (or ``trains``: what the flags of the
    holders above leave trainable)."""
    got = _split(obj, scope)
    assert got == {k: expected[k] for k in ("trainable", "T", "NT")}
    if not isinstance(obj, torch.nn.Module):  # a model: weights is T + NT, in Keras layouts
        assert [list(w.shape) for w in obj.weights] == [s for _, s in expected["W"]]
    want = expected["T"] if trains is None else trains
    assert _trains(obj, scope) == sorted(map(tuple, want))


def _snapshot(*models):
    return {name: t.detach().clone() for m in models for name, t in _named_weights(m).items()}


def _named_weights(model):
    names = _names(model)
    return {names[id(p)][0]: p for p in model.module.parameters()}


def _changed(before, *models):
    after = _snapshot(*models)
    return {k: bool(not torch.allclose(before[k], after[k])) for k in sorted(before)}


RNG = np.random.RandomState(5)


def _data(*shape):
    return RNG.uniform(-1, 1, shape).astype("float32")


# ------------------------------------------------------------------------ 1. layers holding layers


def test_unfreezing_a_users_layer_keeps_the_sublayer_the_user_froze():
    lists = FIXTURE["layers"]
    block = Block(name="block")
    block(Input((3,)))
    _check(block, lists["block_init"], "block")
    block.first.trainable = False
    _check(block, lists["block_first_off"], "block")
    block.trainable = False
    _check(block, lists["block_off"], "block")
    block.trainable = True
    _check(block, lists["block_on"], "block")  # before: first's kernel and bias trained again
    block.trainable = False
    block.first.trainable = True  # inside a frozen layer: listed by the Dense, trained by nobody
    assert _trains(block, "block") == []
    assert len(block.first.trainable_weights) == 2
    copied = pickle.loads(pickle.dumps(block))  # what holds what is kept outside the layers
    assert _split(copied, "block") == _split(block, "block")


def test_a_users_layer_fit_trains_what_keras_trains():
    expected = FIXTURE["block_fit"]
    x = Input((3,), name="x")
    block = Block(name="block")
    model = Model(x, Dense(1, name="head")(block(x)))
    block.first.trainable = False
    block.trainable = False
    block.trainable = True
    model.compile("sgd", "mse")
    names = {k: v for k, v in _names(model).items()}
    for module in block.modules():  # Keras's Theano names put the Dense layers under the block
        for p in module.parameters(recurse=False):
            names[id(p)] = [f"block/{names[id(p)][0].split('/')[-1]}", names[id(p)][1]]
    assert [names[id(p)] for p in model.trainable_weights] == expected["model"]["T"]
    assert [names[id(p)] for p in model.non_trainable_weights] == expected["model"]["NT"]
    weights = model.trainable_weights + model.non_trainable_weights
    before = [p.detach().clone() for p in weights]
    model.fit(_data(8, 3), _data(8, 1), epochs=2, verbose=0)
    # keyed by name as the script keyed them: of two weights named alike, the later one in model.weights
    changed = {names[id(p)][0]: not torch.allclose(b, p) for b, p in zip(before, weights)}
    assert changed == expected["changed"]
    frozen = [i for i, p in enumerate(weights) if names[id(p)] == ["block/kernel", [3, 4]]]
    assert len(frozen) == 1 and torch.equal(before[frozen[0]], weights[frozen[0]])  # first's, frozen


def test_a_cell_unfrozen_inside_a_frozen_rnn_does_not_train():
    expected = FIXTURE["rnn_cell_fit"]
    x = Input((4, 5), name="x")
    rnn = RNN(SimpleRNNCell(3, name="cell"), name="rnn")
    model = Model(x, Dense(1, name="head")(rnn(x)))
    rnn.trainable = False
    rnn.cell.trainable = True  # before: the cell's weights required grad again
    _check(rnn, expected["rnn"], "rnn")
    _check(rnn.cell, expected["cell"], "rnn", trains=[])
    model.compile("sgd", "mse")
    _check(model, expected["model"])
    before = _snapshot(model)
    model.fit(_data(8, 4, 5), _data(8, 1), epochs=2, verbose=0)
    assert _changed(before, model) == expected["changed"]


def test_get_weights_lists_trainable_weights_first():
    lists = FIXTURE["layers"]
    scaled = Scaled(name="scaled")
    scaled(Input((2,)))
    scaled.requires_grad_(False)  # (plain reads below)
    assert _weight_names(scaled, "scaled") == lists["scaled"]["W"]
    values = [np.full(s, i + 1.0, "float32") for i, (_, s) in enumerate(lists["scaled"]["W"])]
    scaled.set_weights(values)
    assert [float(scaled.kernel[0, 0]), float(scaled.bias[0]), float(scaled.steps[0])] == [1.0, 2.0, 3.0]
    assert [w.shape for w in scaled.get_weights()] == [(2, 3), (3,), (2,)]
    scaled.trainable = False
    assert _weight_names(scaled, "scaled") == lists["scaled_off"]["W"]
    block = Block(name="block")
    block(Input((3,)))
    for case, step in (("block_init", None), ("block_first_off", "first"), ("block_off", "off"),
                       ("block_on", "on")):
        if step == "first":
            block.first.trainable = False
        elif step is not None:
            block.trainable = step == "on"
        assert _weight_names(block, "block") == lists[case]["W"], case
        assert [list(w.shape) for w in block.get_weights()] == [s for _, s in lists[case]["W"]], case


# ------------------------------------------------------------------------ 2. models


def _flags(model):
    return [bool(layer.trainable) for layer in model.layers]


def test_model_trainable_keeps_its_layers_flags():
    expected = FIXTURE["model_toggle"]
    model = Sequential([Dense(4, input_shape=(3,), name="a"), Dense(2, name="b"), Dense(1, name="c")],
                       name="seq")
    model.layers[1].trainable = False
    _check(model, expected["init"])
    model.trainable = False
    _check(model, expected["off"])
    assert _flags(model) == expected["off"]["layer_flags"]
    model.trainable = True
    _check(model, expected["on"])  # b stays frozen
    assert _flags(model) == expected["on"]["layer_flags"]
    model.compile("sgd", "mse")
    before = _snapshot(model)
    model.fit(_data(8, 3), _data(8, 1), epochs=2, verbose=0)
    assert _changed(before, model) == expected["changed"]


def _keras_flags(model):
    """Layer flags as Keras lists them (its InputLayer reports trainable=False)."""
    return [False if isinstance(layer, InputLayer) else bool(layer.trainable) for layer in model.layers]


@pytest.mark.parametrize("toggle", [False, True])
def test_gan_discriminator_frozen_in_the_combined_model_only(toggle):
    expected = FIXTURE["gan"]
    x = Input((3,), name="img")
    d = Model(x, Dense(1, name="d_out", activation="sigmoid")(Dense(4, name="d_hidden")(x)), name="d")
    d.compile("sgd", "binary_crossentropy")
    z = Input((2,), name="z")
    g = Model(z, Dense(3, name="g_out")(Dense(5, name="g_hidden")(z)), name="g")
    d.trainable = False
    combined = Model(z, d(g(z)), name="combined")
    combined.compile("sgd", "binary_crossentropy")
    _check(d, expected["d"])
    _check(combined, expected["combined"])
    assert _keras_flags(d) == expected["d_layer_flags"]
    imgs, zs = _data(8, 3), _data(8, 2)
    labels = (RNG.uniform(0, 1, (8, 1)) > 0.5).astype("float32")
    prefix = "toggled_" if toggle else ""
    for _ in range(2):
        if toggle:
            d.trainable = True
        before = _snapshot(d, g)
        d.train_on_batch(imgs, labels)
        assert _changed(before, d, g) == expected[prefix + "d_step"]
        if toggle:
            d.trainable = False
        before = _snapshot(d, g)
        combined.train_on_batch(zs, labels)
        assert _changed(before, d, g) == expected[prefix + "combined_step"]
        prefix = "toggled_" if toggle else ""
    _check(d, expected["d_after"])
    _check(combined, expected["combined_after"])


def test_fine_tuning_a_base_model_layer_by_layer():
    expected = FIXTURE["fine_tune"]
    x = Input((3,), name="bx")
    h = Dense(4, name="b2")(Dense(4, name="b1")(x))
    base = Model(x, Dense(4, name="b3")(h), name="base")
    base.trainable = False
    model = Sequential([base, Dense(2, name="top1"), Dense(1, name="top2")], name="tuned")
    model.compile("sgd", "mse")
    _check(model, expected["frozen_base"])
    xs, ys = _data(8, 3), _data(8, 1)
    before = _snapshot(model)
    model.fit(xs, ys, epochs=1, verbose=0)
    assert _changed(before, model) == expected["frozen_base_changed"]
    base.trainable = True
    for layer in base.layers:
        layer.trainable = layer.name == "b3"
    model.compile("sgd", "mse")
    _check(model, expected["b3_only"])
    before = _snapshot(model)
    model.fit(xs, ys, epochs=1, verbose=0)
    assert _changed(before, model) == expected["b3_only_changed"]
    for layer in model.layers[:2]:
        layer.trainable = False
    model.compile("sgd", "mse")
    _check(model, expected["first_two_off"])
    assert _keras_flags(base) == expected["first_two_off"]["base_flags"]
    before = _snapshot(model)
    model.fit(xs, ys, epochs=1, verbose=0)
    assert _changed(before, model) == expected["first_two_off_changed"]


def test_time_distributed_model_proxies_the_models_flag():
    expected = FIXTURE["time_distributed_model"]
    x = Input((3,), name="ix")
    inner = Model(x, Dense(2, name="i2")(Dense(4, name="i1")(x)), name="inner")
    inner.layers[1].trainable = False
    td = TimeDistributed(inner, name="td")
    td(Input((5, 3)))
    _check(td, expected["init"])
    assert inner.trainable is expected["init"]["inner"]
    for state in ("off", "on"):
        td.trainable = state == "on"
        _check(td, expected[state])
        assert inner.trainable is expected[state]["inner"]
        assert _keras_flags(inner) == expected[state]["layer_flags"]


def test_a_users_layer_round_trips_through_hdf5_in_keras_order(tmp_path):
    """The file's group lists ``layer.weights`` as Keras 2.3.1 writes it (trainable first), which is
    now ``get_weights()``'s order too; loading puts each array back in its weight."""
    import h5py

    x = Input((2,), name="x")
    model = Model(x, Scaled(name="scaled")(x))
    values = [np.full(s, i + 1.0, "float32") for i, (_, s) in enumerate(FIXTURE["layers"]["scaled"]["W"])]
    model.get_layer("scaled").set_weights(values)
    path = str(tmp_path / "scaled.h5")
    model.save_weights(path)
    with h5py.File(path, "r") as f:
        group = f["scaled"]
        names = [n.decode() if isinstance(n, bytes) else n for n in group.attrs["weight_names"]]
        stored = [np.asarray(group[n]) for n in names]
    assert [list(a.shape) for a in stored] == [s for _, s in FIXTURE["layers"]["scaled"]["W"]]
    assert [float(a.flat[0]) for a in stored] == [1.0, 2.0, 3.0]
    x2 = Input((2,), name="x")
    again = Model(x2, Scaled(name="scaled")(x2))
    again.load_weights(path)
    assert [float(w.flat[0]) for w in again.get_layer("scaled").get_weights()] == [1.0, 2.0, 3.0]
    assert float(again.get_layer("scaled").steps.detach()[0]) == 3.0


def test_a_model_frozen_before_its_layers_are_built_trains_nothing():
    """Keras 2.3.1: a frozen model's ``trainable_weights`` are ``[]`` whatever its layers' flags, also
    for layers that create their weights later (a Sequential without an input shape, built by fit)."""
    model = Sequential([Dense(4, name="a")])
    model.trainable = False
    model.add(Dense(1, name="b"))  # added to the frozen model, built by the first fit after compile
    model.compile("sgd", "mse")
    xs, ys = _data(8, 3), _data(8, 1)
    model.fit(xs, ys, epochs=1, verbose=0)
    assert [layer.trainable for layer in model.layers] == [True, True]
    assert model.trainable_weights == [] and not model.layers[0].kernel.requires_grad
    before = _snapshot(model)
    model.fit(xs, ys, epochs=2, verbose=0)
    assert not any(_changed(before, model).values())
    model.trainable = True
    model.compile("sgd", "mse")
    model.fit(xs, ys, epochs=1, verbose=0)
    assert all(_changed(before, model).values())
