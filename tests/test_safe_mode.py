"""Safe mode (issue 30): opening a model file or config never runs Python code stored in it (a Keras 2
``Lambda``'s marshalled bytecode) unless the user says so: ``safe_mode=False`` for one call,
``arignote.config.enable_unsafe_deserialization()`` (the flag ``saving.safe_mode``) for the process,
or the function given by name in ``custom_objects`` (then the stored code is never read).

The hostile stand-in is a Lambda that creates a marker file (named by ARIGNOTE_LAMBDA_MARKER) when its
function runs; arignote runs a Lambda's function while rebuilding the model (to find its output shape),
so an unguarded load creates the marker before ``load_model`` returns.
"""

from __future__ import annotations

import copy
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from arignote import config, layers
from arignote._keras_objects import deserialize_keras_object, func_dump, func_load
from arignote.config import safe_mode
from arignote.errors import UnsafeDeserializationError
from arignote.layers import Dense, Input, Lambda, TimeDistributed
from arignote.models import (
    Model,
    Sequential,
    clone_model,
    load_model,
    model_from_config,
    model_from_json,
    model_from_yaml,
)
from arignote.utils import CustomObjectScope, generic_utils

HERE = os.path.join(os.path.dirname(__file__), "fixtures", "keras2")
KERAS_H5 = os.path.join(HERE, "lambda_marker.h5")  # written by real Keras 2.3.1
with open(os.path.join(HERE, "lambda_marker.json")) as _fh:
    KERAS = json.load(_fh)


def _touch(t):
    """What the hostile Lambda does: create the marker, then double its input."""
    open(os.environ["ARIGNOTE_LAMBDA_MARKER"], "a").close()
    return t * 2.0


@pytest.fixture
def marker(tmp_path, monkeypatch):
    path = tmp_path / "marker"
    monkeypatch.setenv("ARIGNOTE_LAMBDA_MARKER", str(path))
    return path


def _hostile_model():
    # a lambda (not _touch by name): get_config stores it as bytecode, as Keras 2 does
    return Sequential([Dense(3, input_shape=(4,), name="dense"),
                       Lambda(lambda t: (_touch(t) * 1.0), name="touch")])


@pytest.fixture
def ours(tmp_path, marker):
    """Our own .h5, .ckpt, JSON and YAML of the hostile model (building it ran the lambda once)."""
    model = _hostile_model()
    out = {"h5": tmp_path / "m.h5", "ckpt": tmp_path / "m.ckpt"}
    for path in out.values():
        model.save(str(path))
    marker.unlink()
    return model, out


def _load_ours(kind, paths, model, **kw):
    if kind in ("h5", "ckpt"):
        return load_model(str(paths[kind]), **kw)
    if kind == "json":
        return model_from_json(model.to_json(), **kw)
    pytest.importorskip("yaml")
    return model_from_yaml(model.to_yaml(), **kw)


KINDS = ["h5", "ckpt", "json", "yaml"]


@pytest.mark.parametrize("kind", KINDS)
def test_the_default_refuses_stored_code_and_names_the_file_the_layer_and_both_ways_in(ours, marker, kind):
    model, paths = ours
    with pytest.raises(UnsafeDeserializationError) as info:
        _load_ours(kind, paths, model)
    assert not marker.exists()  # the stored code never ran
    text = str(info.value)
    where = {"h5": str(paths["h5"]), "ckpt": str(paths["ckpt"]), "json": "the JSON text",
             "yaml": "the YAML text"}[kind]
    assert text.startswith(f"{where}: layer 'touch' (Lambda) stores its function as Python bytecode")
    call = {"h5": f"load_model({str(paths['h5'])!r}", "ckpt": f"load_model({str(paths['ckpt'])!r}",
            "json": "model_from_json(...", "yaml": "model_from_yaml(..."}[kind]
    assert f"{call}, safe_mode=False)" in text
    assert "arignote.config.enable_unsafe_deserialization()" in text
    assert f"{call}, custom_objects={{'touch': your_function}})" in text
    assert isinstance(info.value, ValueError)  # Keras 3 raises a ValueError here too


@pytest.mark.parametrize("kind", KINDS)
def test_safe_mode_false_trusts_the_file(ours, marker, kind):
    model, paths = ours
    again = _load_ours(kind, paths, model, safe_mode=False)
    assert marker.exists()  # the user asked for it: the stored lambda ran
    again.set_weights(model.get_weights())
    data = np.random.RandomState(0).rand(2, 4).astype("float32")
    np.testing.assert_allclose(again.predict(data), model.predict(data), rtol=1e-6)


@pytest.mark.parametrize("switch", ["enable_unsafe_deserialization", "ARIGNOTE_FLAGS", "override"])
@pytest.mark.parametrize("kind", ["h5", "json"])
def test_the_process_wide_switch_trusts_every_file(ours, marker, monkeypatch, switch, kind):
    model, paths = ours
    if switch == "enable_unsafe_deserialization":
        config.enable_unsafe_deserialization()
        assert (config.get("saving.safe_mode"), config.source("saving.safe_mode")) == (False, "code")
        _load_ours(kind, paths, model)
    elif switch == "ARIGNOTE_FLAGS":
        monkeypatch.setenv("ARIGNOTE_FLAGS", "saving.safe_mode=false")
        config.reload()
        assert config.source("saving.safe_mode") == "ARIGNOTE_FLAGS"
        _load_ours(kind, paths, model)
    else:
        with config.override(saving_safe_mode=False):
            _load_ours(kind, paths, model, safe_mode=True)  # as Keras 3: the global switch opens it too
    assert marker.exists()
    monkeypatch.delenv("ARIGNOTE_FLAGS", raising=False)
    config.reload()
    marker.unlink()
    with pytest.raises(UnsafeDeserializationError):  # and the switch is the process's, not the file's
        _load_ours(kind, paths, model)
    assert not marker.exists()


@pytest.mark.parametrize("kind", KINDS)
def test_the_function_given_in_custom_objects_loads_in_safe_mode(ours, marker, kind):
    model, paths = ours
    again = _load_ours(kind, paths, model, custom_objects={"touch": lambda t: t * 2.0})
    assert not marker.exists()  # the stored bytecode was never read
    again.set_weights(model.get_weights())
    data = np.ones((2, 4), "float32")
    model_out = model.predict(data)
    marker.unlink()
    np.testing.assert_allclose(again.predict(data), model_out, rtol=1e-6)
    with CustomObjectScope({"touch": lambda t: t * 2.0}):  # the global registry serves it as well
        _load_ours(kind, paths, model)
    assert not marker.exists()


# --------------------------------------------------------------------------- real Keras 2.3.1 files


KERAS_FUNCTIONS = {"touch": lambda t: t * 2.0, "halve": lambda t: t * 0.5}


def _load_keras(kind, **kw):
    if kind == "h5":
        return load_model(KERAS_H5, **kw)
    if kind == "json":
        return model_from_json(KERAS["json"], **kw)
    pytest.importorskip("yaml")
    return model_from_yaml(KERAS["yaml"], **kw)


@pytest.mark.parametrize("kind", ["h5", "json", "yaml"])
def test_a_keras_2_3_1_file_behaves_the_same(marker, kind):
    """lambda_marker.h5/.json (scripts/make_keras2_marker_lambda_fixture.py, real Keras 2.3.1): its
    Lambda ``touch`` creates the marker when run; ``halve`` is a named function, which Keras 2 also
    stores as bytecode (function_type 'lambda')."""
    x, y = np.asarray(KERAS["x"], "float32"), np.asarray(KERAS["y"], "float32")
    with pytest.raises(UnsafeDeserializationError, match="layer 'touch' \\(Lambda\\)"):
        _load_keras(kind)
    assert not marker.exists()
    model = _load_keras(kind, custom_objects=KERAS_FUNCTIONS)
    assert not marker.exists()
    if kind == "h5":  # the JSON and YAML hold no weights
        np.testing.assert_allclose(model.predict(x), y, rtol=1e-5)
    trusted = _load_keras(kind, safe_mode=False)
    assert marker.exists()
    if kind == "h5":
        np.testing.assert_allclose(trusted.predict(x), y, rtol=1e-5)
    with pytest.raises(UnsafeDeserializationError, match="'halve'"):  # each stored function is asked for
        _load_keras(kind, custom_objects={"touch": KERAS_FUNCTIONS["touch"]})


def test_the_keras_2_3_1_closure_fixture_is_refused_then_loads_when_trusted():
    path = os.path.join(HERE, "lambda_closure.h5")  # closures, defaults, arguments, a lambda output_shape
    with pytest.raises(UnsafeDeserializationError, match="layer 'scaled'"):
        load_model(path)
    with pytest.raises(UnsafeDeserializationError, match="output_shape function of layer 'total'.*"
                                                         "'total.output_shape': your_function"):
        load_model(path, custom_objects={"scaled": abs, "squared": abs, "total": abs})
    expected = np.load(os.path.join(HERE, "lambda_closure.npz"))
    model = load_model(path, custom_objects={"scaled": lambda t: t * 2.5 + 0.5,
                                             "squared": lambda t, power: t ** power,
                                             "total": lambda t: t.sum(-1, keepdims=True),
                                             "total.output_shape": lambda s: (s[0], 1)})
    np.testing.assert_allclose(model.predict(expected["x"]), expected["y"], rtol=1e-5)


# --------------------------------------------------------------------------- every stored form


def _lambda_spec(function, function_type="lambda", **extra):
    return {"class_name": "Lambda", "config": {"name": "lam", "function": function,
                                               "function_type": function_type, "arguments": {}, **extra}}


def _forms(fn):
    code, defaults, closure = func_dump(fn)
    raw = __import__("marshal").dumps(fn.__code__).decode("raw_unicode_escape")  # Keras < 2.1.2
    return {"triple": [code, defaults, closure], "base64": code, "raw": raw}


@pytest.mark.parametrize("form", ["triple", "base64", "raw"])
def test_every_keras_2_form_of_stored_bytecode_is_refused_then_loads_when_trusted(marker, form):
    spec = _lambda_spec(_forms(lambda t: _touch(t))[form])
    with pytest.raises(UnsafeDeserializationError, match="layer 'lam'"):
        layers.deserialize(copy.deepcopy(spec))
    assert not marker.exists()
    layer = layers.deserialize(copy.deepcopy(spec), custom_objects={"_touch": _touch}, safe_mode=False)
    assert layer(np.ones((1, 2), "float32")).tolist() == [[2.0, 2.0]] and marker.exists()


def test_an_unknown_function_type_is_an_error_not_a_guess():
    with pytest.raises(ValueError, match="unknown function type 'raw'"):
        Lambda.from_config(_lambda_spec("abc", "raw")["config"], safe_mode=False)


def _lambdas(obj):
    if isinstance(obj, Lambda):
        return [obj]
    inner = getattr(obj, "layers", None) or [getattr(obj, "layer", None)]
    return [found for layer in inner if layer is not None for found in _lambdas(layer)]


def test_every_entry_takes_safe_mode(marker):
    spec = layers.serialize(Lambda(lambda t: _touch(t), name="lam"))
    seq = {"name": "s", "layers": [layers.serialize(Dense(2, input_shape=(2,))), spec]}
    x = Input((2,))
    functional = Model(x, Lambda(lambda t: _touch(t), name="lam")(x)).get_config()
    wrapped = layers.serialize(TimeDistributed(Lambda(lambda t: _touch(t), name="lam"), input_shape=(3, 2)))
    entries = {
        "Lambda.from_config": lambda **kw: Lambda.from_config(spec["config"], **kw),
        "deserialize": lambda **kw: layers.deserialize(spec, **kw),
        "deserialize_keras_object": lambda **kw: deserialize_keras_object(spec, {"Lambda": Lambda}, **kw),
        "layers.deserialize_keras_object":
            lambda **kw: layers.deserialize_keras_object(spec, {"Lambda": Lambda}, **kw),
        "Sequential.from_config": lambda **kw: Sequential.from_config(seq, **kw),
        "Model.from_config": lambda **kw: Model.from_config(functional, **kw),
        "model_from_config":
            lambda **kw: model_from_config({"class_name": "Sequential", "config": seq}, **kw),
        "TimeDistributed": lambda **kw: layers.deserialize(wrapped, **kw),
    }
    if marker.exists():
        marker.unlink()  # (building the functional model above ran its lambda)
    assert generic_utils.deserialize_keras_object is deserialize_keras_object  # the same entry
    for name, entry in entries.items():
        with pytest.raises(UnsafeDeserializationError, match="layer 'lam'"):
            entry()
        assert not marker.exists(), name
        rebuilt = entry(safe_mode=False)
        found = _lambdas(rebuilt)
        assert len(found) == 1 and found[0].function(np.ones(1)) == 2.0, name  # the stored lambda, rebuilt
        marker.unlink()


def test_a_function_stored_by_name_loads_in_safe_mode_from_a_loaded_module_only():
    named = Lambda.from_config(_lambda_spec("sqrt", "function", module="math")["config"])
    assert named.function is math.sqrt
    by_registry = Lambda.from_config(_lambda_spec("my_fn", "function", module="nowhere")["config"],
                                     custom_objects={"my_fn": abs})
    assert by_registry.function is abs
    missing = "arignote_no_such_module_for_safe_mode"
    assert missing not in sys.modules
    with pytest.raises(ValueError, match=f"not among the loaded modules' public names; import {missing}"):
        Lambda.from_config(_lambda_spec("f", "function", module=missing)["config"])
    with pytest.raises(ValueError, match="public names"):  # no walking through private attributes
        Lambda.from_config(_lambda_spec("_Helper.f", "function", module="math")["config"])


def test_the_users_own_model_still_clones():
    model = Sequential([Dense(2, input_shape=(2,)), Lambda(lambda t: t * 3.0, name="triple")])
    clone = clone_model(model)  # its own live config: the functions are the user's code
    clone.set_weights(model.get_weights())
    data = np.ones((1, 2), "float32")
    np.testing.assert_allclose(clone.predict(data), model.predict(data))


def test_func_load_obeys_the_loading_call_it_runs_in():
    code = func_dump(lambda x: x + 1)
    assert func_load(code)(1) == 2  # called by hand: the user asked for it
    with safe_mode.scope(True, "load_model", "m.h5"), pytest.raises(UnsafeDeserializationError, match="m.h5"):
        func_load(code)
    with safe_mode.scope(False, "load_model", "m.h5"):
        assert func_load(code)(2) == 3


def test_safe_mode_takes_a_bool_only():
    with pytest.raises(TypeError, match="safe_mode must be True or False, got 'no'"):
        model_from_json(Sequential([Dense(1, input_shape=(1,))]).to_json(), safe_mode="no")


def test_arignote_config_shows_the_flag_with_its_source():
    env = {**os.environ, "ARIGNOTE_FLAGS": "saving.safe_mode=false", "ARIGNOTERC": "", "ARIGNOTE_PRINT": ""}
    proc = subprocess.run([sys.executable, "-m", "arignote", "config"], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    row = next(line.split() for line in proc.stdout.splitlines() if line.startswith("saving.safe_mode"))
    assert row[1:] == ["False", "ARIGNOTE_FLAGS"]
    assert config.get("saving.safe_mode") is True and config.source("saving.safe_mode") == "default"
