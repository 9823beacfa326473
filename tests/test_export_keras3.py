"""model.export(format="keras"): a Keras 3 ``.keras`` file written without Keras; where a Python with Keras 3
exists (KERAS3_PYTHON, or /work/k3venv from scripts/setup-keras3-venv.sh), Keras 3 (torch backend) loads
each file and predicts what arignote predicts."""

from __future__ import annotations

import io
import json
import os
import subprocess
import zipfile
from pathlib import Path

import h5py
import numpy as np
import pytest

from arignote import cli
from arignote.export import ExportError
from arignote.export.verify import reference, run_keras3, sample_batches
from arignote.layers import (
    GRU,
    LSTM,
    BatchNormalization,
    Dense,
    DepthwiseConv2D,
    Dropout,
    Embedding,
    Flatten,
    Input,
    Lambda,
    LeakyReLU,
)
from arignote.models import Model, Sequential, load_model
from export_helpers import small_mobilenet

FIXTURES = Path(__file__).parent / "fixtures" / "keras2"


def _keras3_python() -> str | None:
    candidate = os.environ.get("KERAS3_PYTHON", "/work/k3venv/bin/python")
    if not os.path.exists(candidate):
        return None
    probe = subprocess.run([candidate, "-c", "import keras; assert int(keras.__version__[0]) >= 3"],
                           env=dict(os.environ, KERAS_BACKEND="torch"), capture_output=True, timeout=300)
    return candidate if probe.returncode == 0 else None


def _layout(path) -> tuple[dict, list[str], list[str]]:
    with zipfile.ZipFile(path) as zf:
        config = json.loads(zf.read("config.json"))
        names = zf.namelist()
        with h5py.File(io.BytesIO(zf.read("model.weights.h5")), "r") as f:
            groups = []
            f.visit(groups.append)
    return config, sorted(names), groups


def test_the_file_is_keras3s_layout(tmp_path):
    a, b = Input((4,), name="a"), Input((3,), name="b")
    from arignote.layers import Concatenate

    out = Dense(2, name="head")(Concatenate(name="cat")([Dense(5, name="da")(a), Dense(5, name="db")(b)]))
    model = Model([a, b], out)
    model.export(str(tmp_path / "m.keras"))
    config, names, groups = _layout(tmp_path / "m.keras")
    assert names == ["config.json", "metadata.json", "model.weights.h5"]
    assert config["class_name"] == "Functional" and config["module"] == "keras.src.models.functional"
    assert config["config"]["input_layers"] == [["a", 0, 0], ["b", 0, 0]]
    layer = next(entry for entry in config["config"]["layers"] if entry["name"] == "head")
    assert layer["module"] == "keras.layers" and layer["config"]["kernel_initializer"]["module"] == \
        "keras.initializers"
    # class-named groups in layer order, as Keras 3 addresses them
    assert {"layers/input_layer/vars", "layers/input_layer_1/vars", "layers/dense/vars/0",
            "layers/dense_1/vars/1", "layers/dense_2/vars/0", "layers/concatenate/vars"} <= set(groups)


def test_sequential_gets_an_input_layer_and_rnn_weights_sit_in_the_cell(tmp_path):
    model = Sequential([GRU(3, input_shape=(4, 2), reset_after=True, recurrent_activation="sigmoid"),
                        LeakyReLU(0.2), Dense(1)])
    model.export(str(tmp_path / "m.keras"))
    config, _, groups = _layout(tmp_path / "m.keras")
    layers = config["config"]["layers"]
    assert layers[0]["class_name"] == "InputLayer" and layers[0]["config"]["batch_shape"] == [None, 4, 2]
    assert "batch_input_shape" not in layers[1]["config"]
    assert layers[2]["config"]["negative_slope"] == pytest.approx(0.2)
    assert {"layers/gru/cell/vars/0", "layers/gru/cell/vars/2", "layers/leaky_re_lu/vars"} <= set(groups)


@pytest.mark.parametrize("build, message", [
    (lambda: Sequential([Dense(2, input_shape=(3,)), Lambda(lambda x: x * 2, name="double")]),
     r"layer 'double' \(Lambda\) has no Keras 3 equivalent: Keras 3 stores a Lambda's Python bytecode"),
    (lambda: Sequential([LSTM(2, input_shape=(3, 2), recurrent_activation="hard_sigmoid", name="old_lstm")]),
     r"layer 'old_lstm' \(LSTM\) has no Keras 3 equivalent: recurrent_activation='hard_sigmoid'"),
    (lambda: load_model(str(FIXTURES / "local_cf" / "lc2d_cf.h5"), compile=False),
     r"layer 'lc' \(LocallyConnected2D\) has no Keras 3 equivalent"),
    (lambda: load_model(str(FIXTURES / "theano_same" / "conv2d.h5"), compile=False),
     r"layer 'k23' \(Conv2D\) has no Keras 3 equivalent: it pads 'same' as Keras 2's Theano backend"),
])
def test_what_keras3_cannot_express_is_one_error_naming_the_layer(build, message, tmp_path):
    model = build()
    with pytest.raises(ExportError, match=message):
        model.export(str(tmp_path / "m.keras"))
    assert not (tmp_path / "m.keras").exists()


def test_convert_without_keras3_says_it_did_not_verify(tmp_path, capsys, monkeypatch):
    from arignote.export import verify

    monkeypatch.setattr(verify, "keras3_python", lambda: None)
    code = cli.main(["convert", str(FIXTURES / "seq_dense.h5"), str(tmp_path / "m.keras")])
    out = capsys.readouterr().out
    assert code == 0 and (tmp_path / "m.keras").exists()
    assert "not verified: no Keras 3 here (give --keras-python" in out


# ------------------------------------------------------------------ Keras 3 itself loads the files

FIXTURE_FILES = ["seq_dense.h5", "functional.h5", "nested.h5", "th_cf_conv.h5", "th_cf_flatten_chw.h5",
                 "seq_gru.h5", "seq_gru_reset_after.h5", "seq_simple_rnn.h5", "seq_embedding_lstm.h5",
                 "seq_bidirectional.h5", "seq_time_distributed.h5", "td_model.h5", "seq_separable.h5",
                 "seq_conv1d.h5", "seq_conv3d_transpose.h5", "seq_prelu.h5", "wrapped/nested_bn.h5",
                 "wrapped/cf_axes.h5", "wrapped/td_bn.h5"]


def _built_models() -> dict:
    ids = Input((6,), name="ids")
    emb = Embedding(9, 4, mask_zero=True, name="emb")(ids)
    seq = LSTM(5, recurrent_activation="sigmoid", name="lstm")(emb)
    heads = Model(ids, [Dense(2, activation="softmax", name="probs")(seq), Dense(1, name="score")(seq)])
    bn = Sequential([Dense(8, input_shape=(4,)), Dropout(0.5), BatchNormalization(), Dense(2)])
    gamma, beta, mean, var = bn.layers[2].get_weights()
    bn.layers[2].set_weights([gamma * 2, beta + 1, mean + 0.5, var * 3])
    depthwise = Sequential([DepthwiseConv2D(2, depth_multiplier=2, input_shape=(5, 5, 3)), Flatten(),
                            Dense(2)])
    return {"masked_two_heads": heads, "dropout_bn": bn, "depthwise": depthwise,
            "mobilenet": small_mobilenet()}


@pytest.fixture(scope="module")
def keras3_results(tmp_path_factory):
    python = _keras3_python()
    if python is None:
        pytest.skip("needs a Python with Keras 3 (KERAS3_PYTHON, or /work/k3venv built by "
                    "scripts/setup-keras3-venv.sh)")
    tmp = tmp_path_factory.mktemp("keras3")
    models = {name: load_model(str(FIXTURES / name), compile=False) for name in FIXTURE_FILES}
    models.update(_built_models())
    jobs, wants = [], {}
    for name, model in models.items():
        path = tmp / (name.replace("/", "_") + ".keras")
        model.export(str(path))
        batches = [x for _, x in sample_batches(model)]
        jobs.append((str(path), batches))
        wants[name] = [reference(model, x) for x in batches]
    got = run_keras3(jobs, python)  # one Keras 3 process for every file
    return {name: (wants[name], g) for name, g in zip(models, got)}


@pytest.mark.slow
@pytest.mark.parametrize("name", FIXTURE_FILES + ["masked_two_heads", "dropout_bn", "depthwise",
                                                  "mobilenet"])
def test_keras3_loads_the_file_and_predicts_as_arignote(name, keras3_results):
    want, got = keras3_results[name]
    assert not isinstance(got, str), got  # Keras 3's error while loading or predicting
    for w_batch, g_batch in zip(want, got):
        assert len(g_batch) == len(w_batch)
        for w, g in zip(w_batch, g_batch):
            np.testing.assert_allclose(g, w, atol=1e-5)


@pytest.mark.slow
def test_convert_verifies_a_keras3_file(tmp_path, capsys):
    python = _keras3_python()
    if python is None:
        pytest.skip("needs a Python with Keras 3 (KERAS3_PYTHON, or /work/k3venv)")
    code = cli.main(["convert", str(FIXTURES / "functional.h5"), str(tmp_path / "m.keras"),
                     "--keras-python", python])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "verified with Keras 3 (torch backend) on generated batch 1, generated batch 5" in out
