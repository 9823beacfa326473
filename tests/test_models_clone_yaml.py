"""Keras 2.3.1's model-level functions: clone_model, model_from_config, model_from_yaml / to_yaml
(checked on YAML written by real Keras 2.3.1: tests/fixtures/keras2/yaml_models.json from
scripts/make_keras2_yaml_fixture.py), save_model with overwrite (issue 13 items 1, 3, 7)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from arignote import config
from arignote.layers import Dense, Input, Layer, concatenate
from arignote.models import (
    Model,
    Sequential,
    clone_model,
    load_model,
    model_from_config,
    model_from_json,
    model_from_yaml,
    save_model,
)
from arignote.utils import io_utils

KERAS = json.loads((Path(__file__).parent / "fixtures" / "keras2" / "yaml_models.json").read_text())


@pytest.fixture(autouse=True)
def cpu():
    with config.override(device="cpu", print_active_device=False):
        yield


class Scale(Layer):
    """A user's custom layer, known to no registry."""

    def __init__(self, factor=2.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def call(self, inputs):
        return inputs * self.factor

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


def _graph():
    a, b = Input((3,), name="a"), Input((3,), name="b")
    shared = Dense(4, name="shared")
    merged = concatenate([shared(a), shared(b)])
    return Model([a, b], Scale(3.0, name="scale")(Dense(2, name="head")(merged)))


@pytest.mark.parametrize("build", [_graph, lambda: Sequential([Dense(4, input_shape=(3,)), Scale(0.5),
                                                               Dense(1)])])
def test_clone_has_the_architecture_and_its_own_new_weights(build):
    torch.manual_seed(0)
    model = build()
    clone = clone_model(model)
    assert [type(x).__name__ for x in clone.layers] == [type(x).__name__ for x in model.layers]
    assert [x.name for x in clone.layers] == [x.name for x in model.layers]
    assert clone.get_config() == model.get_config()
    assert all(c is not m for c, m in zip(clone.layers, model.layers))
    ours = {id(p) for p in model.module.parameters()}
    assert not ours & {id(p) for p in clone.module.parameters()}  # nothing shared
    assert any(not np.array_equal(c, m) for c, m in zip(clone.get_weights(), model.get_weights()))
    # training the clone leaves the original as it was
    before = [w.copy() for w in model.get_weights()]
    clone.set_weights(model.get_weights())
    clone.compile("sgd", "mse")
    inputs = [np.ones((4, 3), "float32")] * len(model.inputs)
    clone.fit(inputs if len(inputs) > 1 else inputs[0], np.ones((4, model.output_shape[-1]), "float32"),
              epochs=1, verbose=0)
    for w, b in zip(model.get_weights(), before):
        np.testing.assert_array_equal(w, b)


def test_clone_keeps_shared_layers_shared():
    clone = clone_model(_graph())
    shared = clone.get_layer("shared")
    assert len(shared._inbound_nodes) == 2 and len(clone.get_weights()) == len(_graph().get_weights())


def test_clone_on_new_input_tensors():
    model = Sequential([Dense(2, input_shape=(3,), name="d")])
    x = Input((3,), name="new_in")
    clone = clone_model(model, input_tensors=[x])
    assert clone.inputs[0] is x and clone.output_shape == (None, 2)
    assert clone.predict(np.ones((2, 3), "float32")).shape == (2, 2)
    with pytest.raises(ValueError, match="1 inputs, input_tensors gives 2"):
        clone_model(model, input_tensors=[x, Input((3,))])


def test_clone_refuses_a_module_model_with_a_clear_error():
    with pytest.raises(ValueError, match="clone_model: expected a Sequential or functional.*torch.nn.Module"):
        clone_model(Model(torch.nn.Linear(2, 2)))


@pytest.mark.parametrize("kind", ["sequential", "functional"])
def test_keras_2_3_1_yaml_builds_the_same_architecture(kind):
    want = KERAS[kind]
    assert "!!python/tuple" in KERAS["sequential"]["yaml"]  # Keras wrote tuples with Python tags
    model = model_from_yaml(want["yaml"])
    assert [x.name for x in model.layers] == want["names"]
    assert [type(x).__name__ for x in model.layers] == want["classes"]
    shapes = [list(x.output_shape) for x in model.layers]
    assert shapes == want["output_shapes"] and model.count_params() == want["params"]


def test_to_yaml_round_trip_and_model_from_config():
    model = _graph()
    text = model.to_yaml()
    assert "!!python" not in text  # plain YAML: any safe loader reads it
    again = model_from_yaml(text, custom_objects={"Scale": Scale})
    assert again.get_config() == model.get_config()
    spec = json.loads(model.to_json())
    assert model_from_config(spec, custom_objects={"Scale": Scale}).get_config() == model.get_config()
    with pytest.raises(TypeError, match="not a list.*Sequential.from_config"):
        model_from_config([spec])
    with pytest.raises(ValueError, match="model_from_yaml: not YAML"):
        model_from_yaml("a: [unclosed")
    assert model_from_json(model.to_json(), {"Scale": Scale}).count_params() == model.count_params()


def test_yaml_without_pyyaml_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "yaml", None)  # what an environment without PyYAML imports
    with pytest.raises(ImportError, match=r"pip install arignote\[yaml\]"):
        Sequential([Dense(1, input_shape=(2,))]).to_yaml()
    with pytest.raises(ImportError, match=r"pip install arignote\[yaml\]"):
        model_from_yaml("class_name: Sequential")


def test_save_model_overwrite_as_keras_2(tmp_path, monkeypatch):
    model = Sequential([Dense(1, input_shape=(2,))])
    path = tmp_path / "m.h5"
    save_model(model, str(path))
    stamp = path.stat().st_mtime_ns
    answers = iter(["maybe", "n"])
    monkeypatch.setattr(io_utils.sys, "stdin", type("Tty", (), {"isatty": lambda self: True})())
    monkeypatch.setattr("builtins.input", lambda prompt="": next(answers))
    save_model(model, str(path), overwrite=False)  # the user said "n": the file is kept
    assert path.stat().st_mtime_ns == stamp
    monkeypatch.setattr("builtins.input", lambda prompt="": "y")
    model.save(str(path), False)  # Keras 2's positional order: overwrite second
    assert path.stat().st_mtime_ns != stamp
    monkeypatch.setattr(io_utils.sys, "stdin", None)  # a batch job: nobody to ask
    with pytest.raises(FileExistsError, match="overwrite=False.*no terminal"):
        save_model(model, str(path), overwrite=False)
    assert load_model(str(path)).count_params() == model.count_params()
