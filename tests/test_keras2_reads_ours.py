"""Files written here are what Keras 2.3.1 read, and predict what Keras 2.3.1 computed from them.

tests/fixtures/keras2/keras2_reads_ours.json was recorded by scripts/check_keras2_reads_ours.py in the
Keras 2.3.1 + Theano side venv, from the files arignote wrote for every case of
scripts/keras2_ours_cases.py (functional multi-input/output with shared and merge layers, nested
models, every weight-bearing layer type, CuDNN weights, compiled models with optimizer state), and
keras2_reads_ours_sweep.json (``--sweep``) for its SWEEP_CASES (every other layer type Keras 2.3.1
exports, both data formats, recurrent flags, merge modes). Here the same cases are written again
(seeded weights, so the same files), and

* the file's structure (root attributes and groups, layer order, weight names, dtypes, shapes,
  optimizer weight names, training_config) must be what Keras 2.3.1 read;
* the layers Keras built from the file, in order, must hold weights of the shapes the file gives;
* arignote's own reload (``load_model``; ``load_weights`` in order and ``by_name``) must predict what
  Keras 2.3.1 predicted from the file, within 1e-5;
* a compiled model, reloaded with its optimizer state, must take the same next training step as
  Keras 2.3.1 took from the file (its weights afterwards, within 1e-5).
"""

from __future__ import annotations

import importlib.util
import json
import os

import numpy as np
import pytest

from arignote.models import Model, Sequential, load_model, model_from_json
from arignote.saving import keras_config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "keras2", "keras2_reads_ours.json")
# the SWEEP_CASES (every other Keras 2 layer type and argument: both data formats, pooling, reshaping,
# recurrent flags, merge modes, activations, noise), recorded the same way with --sweep
SWEEP_FIXTURE = os.path.join(ROOT, "tests", "fixtures", "keras2", "keras2_reads_ours_sweep.json")


def _script(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "scripts", name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


cases = _script("keras2_ours_cases")
check = _script("check_keras2_reads_ours")  # its file_structure() is what recorded the fixture

with open(FIXTURE, encoding="utf-8") as fh:
    RECORDED = json.load(fh)
with open(SWEEP_FIXTURE, encoding="utf-8") as fh:
    SWEEP = json.load(fh)

TOL = RECORDED["tolerance"]


# The step after reloading: BatchNormalization's batch statistics round differently under Theano and
# torch (measured up to 1.2e-5 on moving variances of ~1, 1.1e-5 on a Dense bias behind one); every
# weight of the models without it lands within 1.3e-6 of Keras's.
STEP_RTOL = 2e-5


def _close(got, want, what, rtol=0.0):
    got = got if isinstance(got, list) else [got]
    assert len(got) == len(want), what
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64), rtol=rtol, atol=TOL,
                                   err_msg=what)


def test_the_fixture_covers_every_case_and_was_made_by_keras_2_3_1():
    assert (RECORDED["keras"], RECORDED["backend"]) == ("2.3.1", "theano")
    assert set(RECORDED["cases"]) == set(cases.CASES) | set(cases.CUDNN_CASES)
    kinds = {c for entry in RECORDED["cases"].values() for layer in entry["keras_layers"] or []
             for c in [layer[0]]}
    for needed in ("Dense", "Conv1D", "Conv2D", "Conv3D", "Conv2DTranspose", "Conv3DTranspose",
                   "SeparableConv1D", "SeparableConv2D", "DepthwiseConv2D", "BatchNormalization", "Embedding",
                   "SimpleRNN", "GRU", "LSTM", "Bidirectional", "TimeDistributed", "Model", "Sequential",
                   "Add", "Concatenate", "Dot"):
        assert needed in kinds, needed


def test_the_sweep_fixture_covers_every_sweep_case_and_the_layer_types_keras_2_exports():
    assert (SWEEP["keras"], SWEEP["backend"]) == ("2.3.1", "theano")
    assert set(SWEEP["cases"]) == set(cases.SWEEP_CASES)

    kinds = {layer[0] for doc in (SWEEP, RECORDED) for entry in doc["cases"].values()
             for layer in entry["keras_layers"] or []}  # [class, name, weights] of each layer Keras built
    for needed in ("MaxPooling1D", "MaxPooling2D", "MaxPooling3D", "AveragePooling1D", "AveragePooling2D",
                   "AveragePooling3D", "GlobalMaxPooling1D", "GlobalMaxPooling2D", "GlobalMaxPooling3D",
                   "GlobalAveragePooling1D", "GlobalAveragePooling2D", "GlobalAveragePooling3D",
                   "LocallyConnected1D", "LocallyConnected2D", "ConvLSTM2D", "LeakyReLU", "PReLU", "ELU",
                   "ThresholdedReLU", "Softmax", "ReLU", "GaussianNoise", "GaussianDropout", "AlphaDropout",
                   "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "Reshape", "Permute",
                   "RepeatVector", "Masking", "ActivityRegularization", "Activation", "Cropping1D",
                   "Cropping2D", "Cropping3D", "UpSampling1D", "UpSampling2D", "UpSampling3D",
                   "ZeroPadding1D", "ZeroPadding2D", "ZeroPadding3D", "Subtract", "Multiply", "Average",
                   "Maximum", "Minimum"):
        assert needed in kinds, needed


@pytest.fixture(scope="module")
def built():
    """Every case built as the recording run built them (same order, so the same auto names)."""
    return cases.build_all()


@pytest.fixture(scope="module")
def built_sweep():
    return cases.build_all(sweep=True)


@pytest.mark.parametrize("name", list(cases.CASES))
def test_our_file_is_what_keras_read_and_predicts_what_keras_computed(name, built, tmp_path):
    _our_file_is_what_keras_read(name, built[0][name], RECORDED["cases"][name], cases.CASES[name], tmp_path)


@pytest.mark.parametrize("name", list(cases.SWEEP_CASES))
def test_sweep_file_is_what_keras_read_and_predicts_what_keras_computed(name, built_sweep, tmp_path):
    _our_file_is_what_keras_read(name, built_sweep[0][name], SWEEP["cases"][name], cases.SWEEP_CASES[name],
                                 tmp_path)


def _our_file_is_what_keras_read(name, model_xs, recorded, case, tmp_path):
    model, xs = model_xs
    for x, want in zip(xs, recorded["inputs"], strict=True):
        np.testing.assert_array_equal(x, np.asarray(want, dtype=x.dtype))
    compiled = case[2] is not None
    if compiled:
        cases.compile_and_step(model, name, xs)
    ys = model.predict(cases.feed(xs), verbose=0)
    path, wpath = str(tmp_path / "m.h5"), str(tmp_path / "m_weights.h5")
    model.save(path)
    model.save_weights(wpath)

    # the structure Keras 2.3.1 read
    assert check.file_structure(path) == recorded["file"]
    assert check.file_structure(wpath) == recorded["weights_file"]
    in_file = [(lname, [w[2] for w in weights]) for lname, weights in recorded["file"]["layers"] if weights]
    in_keras = [(lname, [w[1] for w in weights]) for _, lname, weights in recorded["keras_layers"] if weights]
    assert in_file == in_keras  # Keras pairs layers with weights in order: same names, same shapes

    # arignote's reloads predict what Keras 2.3.1 computed from the same file
    spec = json.loads(model.to_json())
    rebuilt = keras_config.model_from_keras(spec)[1].channels_first
    if rebuilt:  # load_model would rebuild it channels-last (for Theano-era files): rebuild it as saved
        loaded = _as_saved(spec)
        loaded.load_weights(path)
    else:
        loaded = load_model(path)
    _close(loaded.predict(cases.feed(xs), verbose=0), recorded["load_model"], f"{name}: load_model")
    for how, kwargs in (("load_weights", {}), ("load_weights_by_name", {"by_name": True})):
        # same layer names (by_name pairs them), fresh weights
        fresh = _as_saved(spec) if rebuilt else model_from_json(model.to_json())
        fresh.load_weights(wpath, **kwargs)
        # (a recording leaves out what equals load_model's)
        _close(fresh.predict(cases.feed(xs), verbose=0), recorded.get(how, recorded["load_model"]),
               f"{name}: {how}")

    # the next training step from the file's optimizer state lands where Keras's did
    if compiled:
        ys = ys if isinstance(ys, list) else [ys]
        loaded.train_on_batch(cases.feed(xs), cases.feed([y + 0.2 for y in ys]))
        has_bn = any("moving_variance" in w[0] for _, weights in recorded["file"]["layers"] for w in weights)
        _close(loaded.get_weights(), recorded["after_step"], f"{name}: weights after one more step",
               rtol=STEP_RTOL if has_bn else 0.0)
    else:
        assert "after_step" not in recorded


def _as_saved(spec):
    """The model of a Keras 2 ``to_json`` spec with its channels_first layers kept as they are (what
    the loader does when a channels-last rebuild would not reproduce the model), fresh weights."""
    config, _ = keras_config.model_from_keras(spec, kept=["(kept as saved)"])
    cls = Sequential if config["class_name"] == "Sequential" else Model
    return cls.from_config(config["config"])


@pytest.mark.parametrize("name", list(cases.CUDNN_CASES))
def test_cudnn_weights_we_write_load_in_keras_into_the_plain_layer(name, built, tmp_path):
    recorded = RECORDED["cases"][name]
    source, twin, xs = built[1][name]
    wpath = str(tmp_path / "w.h5")
    source.save_weights(wpath)
    assert check.file_structure(wpath) == recorded["weights_file"]
    for how, kwargs in (("load_weights", {}), ("load_weights_by_name", {"by_name": True})):
        plain = model_from_json(twin.to_json())  # the plain layer, named as the CuDNN one
        plain.load_weights(wpath, **kwargs)
        _close(plain.predict(cases.feed(xs), verbose=0), recorded[how], f"{name}: {how}")
