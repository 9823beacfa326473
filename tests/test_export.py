"""model.export / arignote.export: ONNX and torch.export files of the inference graph, checked numerically
against arignote's own prediction on the real Keras 2.3.1 fixture files (Theano and TensorFlow backends)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch

from arignote.export import ExportError, export_model, format_for
from arignote.export.signature import input_specs, output_names
from arignote.export.verify import compare, run_exported, sample_batches
from arignote.layers import (
    LSTM,
    BatchNormalization,
    Dense,
    DepthwiseConv2D,
    Dropout,
    Embedding,
    Flatten,
    Input,
    Layer,
)
from arignote.models import Model, Sequential, load_model
from export_helpers import small_mobilenet

FIXTURES = Path(__file__).parent / "fixtures" / "keras2"
HAS_ONNX = all(importlib.util.find_spec(p) for p in ("onnx", "onnxscript", "onnxruntime"))
needs_onnx = pytest.mark.skipif(not HAS_ONNX, reason="needs the export extra: pip install 'arignote[export]'")

# one fixture per layer family (Keras 2.3.1, Theano backend unless named th_/theano_same: both)
QUICK = ["seq_dense.h5", "th_cf_conv.h5", "seq_gru_reset_after.h5", "seq_embedding_lstm.h5",
         "functional.h5", "nested.h5", "lambda_closure.h5"]
COVERAGE = ["seq_conv1d.h5", "seq_conv2d.h5", "seq_conv3d.h5", "seq_conv2d_transpose.h5",
            "seq_conv3d_transpose.h5", "seq_separable.h5", "seq_separable1d.h5", "seq_gru.h5",
            "seq_simple_rnn.h5", "seq_bidirectional.h5", "seq_time_distributed.h5", "td_model.h5",
            "seq_prelu.h5",
            "legacy_atrous.h5",
            "th_cf_flatten_chw.h5", "theano_same/pooling1d.h5", "theano_same/pooling2d.h5",
            "theano_same/pooling3d.h5", "wrapped/nested_bn.h5", "wrapped/td_bn.h5", "wrapped/bidir_cf.h5",
            "wrapped/cf_axes.h5", "local_cf/lc2d_cf.h5", "convrnn/convlstm2d_masked.h5"]


def _check(model, tmp_path, fmt, name="m"):
    path = tmp_path / f"{name}.{ {'onnx': 'onnx', 'torch': 'pt2'}[fmt]}"
    model.export(str(path), format=fmt)
    return compare(model, str(path), fmt, sample_batches(model)), path


def test_format_from_suffix_and_refusals():
    assert format_for("a/m.onnx", None) == "onnx"
    assert format_for("m.pt2", None) == "torch"
    assert format_for("m.keras", None) == "keras"
    assert format_for("m.bin", "torch") == "torch"
    with pytest.raises(ExportError, match="cannot tell the export format from 'm.bin'"):
        format_for("m.bin", None)
    with pytest.raises(ExportError, match="format='tf_saved_model' is not supported.*use format='onnx'"):
        format_for("m", "tf_saved_model")
    with pytest.raises(ExportError, match="unknown export format 'onnxx'"):
        format_for("m.onnx", "onnxx")


@pytest.mark.parametrize("name", QUICK)
def test_torch_program_matches_the_keras2_file(name, tmp_path):
    model = load_model(str(FIXTURES / name), compile=False, safe_mode=False)  # our fixtures: trusted
    check, path = _check(model, tmp_path, "torch")
    assert check.batches == ["generated batch 1", "generated batch 5"]
    assert check.max_diff <= 1e-5, (name, check.diffs)
    program = torch.export.load(str(path))  # the dynamic batch: 7 rows in, 7 rows out
    x = [torch.as_tensor(a) for a in sample_batches(model)[0][1]]
    x = [t.expand(7, *t.shape[1:]).contiguous() for t in x]
    assert program.module()(*x)[0].shape[0] == 7


@pytest.mark.slow
@pytest.mark.parametrize("name", COVERAGE)
def test_torch_program_covers_every_layer_family(name, tmp_path):
    model = load_model(str(FIXTURES / name), compile=False, safe_mode=False)  # our fixtures: trusted
    check, _ = _check(model, tmp_path, "torch")
    assert check.max_diff <= 1e-5, (name, check.diffs)


@needs_onnx
@pytest.mark.parametrize("name", ["th_cf_conv.h5", "seq_gru_reset_after.h5", "seq_embedding_lstm.h5",
                                  "theano_same/pooling2d.h5",
                                  "functional.h5", "seq_bidirectional.h5"])
def test_onnx_matches_the_keras2_file(name, tmp_path):
    model = load_model(str(FIXTURES / name), compile=False, safe_mode=False)  # our fixtures: trusted
    check, _ = _check(model, tmp_path, "onnx")
    assert check.max_diff <= 1e-5, (name, check.diffs)


@needs_onnx
@pytest.mark.slow
@pytest.mark.parametrize("name", ["seq_conv3d_transpose.h5", "seq_separable.h5", "td_model.h5",
                                  "wrapped/nested_bn.h5",
                                  "theano_same/pooling3d.h5", "nested.h5", "lambda_closure.h5"])
def test_onnx_covers_more_layer_families(name, tmp_path):
    model = load_model(str(FIXTURES / name), compile=False, safe_mode=False)  # our fixtures: trusted
    check, _ = _check(model, tmp_path, "onnx")
    assert check.max_diff <= 1e-5, (name, check.diffs)


@needs_onnx
def test_onnx_names_are_the_keras_layer_names_with_a_dynamic_batch(tmp_path):
    import onnx

    model = load_model(str(FIXTURES / "functional.h5"), compile=False)
    path = tmp_path / "f.onnx"
    model.export(str(path))
    graph = onnx.load(str(path))
    assert [i.name for i in graph.graph.input] == ["in_a", "in_b"]
    assert [o.name for o in graph.graph.output] == ["head"]
    batch = graph.graph.input[0].type.tensor_type.shape.dim[0]
    assert batch.dim_param and not batch.dim_value  # symbolic, not fixed
    assert [o.version for o in graph.opset_import if o.domain in ("", "ai.onnx")] == [18]


def _masked_two_heads(steps=6):
    ids = Input((steps,), name="ids")
    seq = LSTM(5, return_sequences=False, name="lstm")(Embedding(9, 4, mask_zero=True, name="emb")(ids))
    return Model(ids, [Dense(2, activation="softmax", name="probs")(seq), Dense(1, name="score")(seq)])


@pytest.mark.parametrize("fmt", ["torch", pytest.param("onnx", marks=needs_onnx)])
def test_masks_and_several_outputs_are_kept(fmt, tmp_path):
    model = _masked_two_heads()
    check, path = _check(model, tmp_path, fmt)
    assert check.outputs == ["probs", "score"] and len(check.diffs) == 2
    assert check.max_diff <= 1e-5
    # the mask is in the file: padded with zeros, a row gives what its two real steps alone give
    padded = np.array([[3, 4, 0, 0, 0, 0]], dtype="float32")
    got = run_exported(str(path), fmt, [padded])
    short = _masked_two_heads(steps=2)
    short.set_weights(model.get_weights())
    want = short.predict(padded[:, :2])
    np.testing.assert_allclose(got[0], want[0], atol=1e-5)
    np.testing.assert_allclose(got[1], want[1], atol=1e-5)
    assert not np.allclose(got[1], short.predict(np.array([[3, 4]], "float32") + 1)[1], atol=1e-4)


def test_inference_graph_drops_dropout_and_uses_moving_statistics(tmp_path):
    model = Sequential([Dense(8, input_shape=(4,)), Dropout(0.5), BatchNormalization(), Dense(2)])
    bn = model.layers[2]
    gamma, beta, mean, var = bn.get_weights()
    bn.set_weights([gamma * 2, beta + 1, mean + 0.5, var * 3])
    model.module.train()
    check, path = _check(model, tmp_path, "torch")
    assert check.max_diff <= 1e-5
    assert model.module.training  # the training flags come back
    x = np.ones((3, 4), "float32")
    out = run_exported(str(path), "torch", [x])[0]
    np.testing.assert_allclose(out, out[:1].repeat(3, 0), atol=1e-6)  # no dropout noise between rows


def test_depthwise_and_flatten(tmp_path):
    model = Sequential([DepthwiseConv2D(2, depth_multiplier=2, input_shape=(5, 5, 3)), Flatten(), Dense(2)])
    check, _ = _check(model, tmp_path, "torch")
    assert check.max_diff <= 1e-5


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["torch", pytest.param("onnx", marks=needs_onnx)])
def test_an_application_exports(fmt, tmp_path):
    model = small_mobilenet()
    check, path = _check(model, tmp_path, fmt)
    assert check.max_diff <= 1e-4
    assert np.std(run_exported(str(path), fmt, sample_batches(model)[1][1])[0], axis=0).max() > 1e-3


class _HostRoundTrip(Layer):
    """A layer whose call leaves the graph (a Python float): what no exported graph can hold."""

    def call(self, x):
        return x * float(x.sum())


def test_a_layer_with_no_equivalent_is_one_error_naming_it(tmp_path):
    model = Sequential([Dense(3, input_shape=(4,)), _HostRoundTrip(name="host_trip"), Dense(2)])
    message = r"layer 'host_trip' \(_HostRoundTrip\) has no torch.export equivalent"
    with pytest.raises(ExportError, match=message):
        model.export(str(tmp_path / "m.pt2"))
    assert not (tmp_path / "m.pt2").exists()


def test_a_stateful_rnn_is_refused_naming_it(tmp_path):
    model = load_model(str(FIXTURES / "convrnn" / "convlstm2d_stateful.h5"), compile=False)
    with pytest.raises(ExportError, match=r"layer 'conv_stateful' \(ConvLSTM2D\) is stateful"):
        model.export(str(tmp_path / "m.pt2"))


def test_missing_onnx_names_the_extra(monkeypatch, tmp_path):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "onnx" else real(name, *a))
    model = Sequential([Dense(2, input_shape=(3,))])
    with pytest.raises(ExportError, match=r"need onnx.*pip install 'arignote\[export\]'"):
        model.export(str(tmp_path / "m.onnx"))


def test_input_shapes_fix_open_dimensions_and_are_checked():
    model = Sequential([LSTM(3, input_shape=(None, 2))])
    assert input_specs(model)[0].shape == (None, None, 2)
    assert input_specs(model, [(7, 2)])[0].shape == (None, 7, 2)
    with pytest.raises(ExportError, match=r"does not fit"):
        input_specs(model, [(7, 3)])
    assert output_names(model) == [model.layers[0].name]


def test_open_timesteps_are_fixed_by_input_shapes(tmp_path):
    model = Sequential([LSTM(3, input_shape=(None, 2))])
    with pytest.raises(ExportError, match=r"leaves dimensions besides the batch open.*--input-shape"):
        model.export(str(tmp_path / "m.pt2"))
    model.export(str(tmp_path / "m.pt2"), input_shapes=[(7, 2)])
    x = np.random.default_rng(0).random((4, 7, 2), dtype=np.float32)
    got = run_exported(str(tmp_path / "m.pt2"), "torch", [x])[0]
    np.testing.assert_allclose(got, model.predict(x), atol=1e-5)


def test_export_model_takes_the_format_from_the_suffix_and_verbose_says_so(tmp_path, capsys):
    model = Sequential([Dense(2, input_shape=(3,))])
    model.export(str(tmp_path / "m.pt2"), verbose=True)
    assert f"Saved artifact at '{tmp_path / 'm.pt2'}'." in capsys.readouterr().out
    export_model(model, str(tmp_path / "m.bin"), "torch")
    assert torch.export.load(str(tmp_path / "m.bin")).module()(torch.ones(1, 3))[0].shape == (1, 2)
