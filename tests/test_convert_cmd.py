"""``arignote convert``: Keras 2 files in, ONNX / .pt2 out, verified; exit codes and messages."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest

from arignote import cli
from arignote.export import verify

FIXTURES = Path(__file__).parent / "fixtures" / "keras2"
needs_onnx = pytest.mark.skipif(
    not all(importlib.util.find_spec(p) for p in ("onnx", "onnxscript", "onnxruntime")),
    reason="needs the export extra: pip install 'arignote[export]'")


def _run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@needs_onnx
def test_theano_h5_to_onnx_verified(tmp_path, capsys):
    dst = tmp_path / "model.onnx"
    code, out, err = _run(capsys, "convert", str(FIXTURES / "th_cf_conv.h5"), str(dst))
    assert code == 0, err
    assert dst.stat().st_size > 0
    assert f"wrote {dst} (onnx, opset 18)" in out
    line = next(ln for ln in out.splitlines() if ln.startswith("verified with onnxruntime"))
    assert "generated batch 1, generated batch 5" in line
    assert float(line.split("largest difference ")[1].split()[0]) <= 1e-4


def test_json_and_weights_to_pt2_with_a_sample(tmp_path, capsys):
    from arignote.models import load_model

    model = load_model(str(FIXTURES / "functional.h5"), compile=False)
    (tmp_path / "arch.json").write_text(model.to_json())
    model.save_weights(str(tmp_path / "w.h5"))
    np.savez(tmp_path / "sample.npz", in_b=np.full((4, 3), 0.5, "float32"), in_a=np.ones((4, 4), "float32"))
    code, out, err = _run(capsys, "convert", str(tmp_path / "arch.json"), str(tmp_path / "m.pt2"),
                          "--weights", str(tmp_path / "w.h5"), "--sample", str(tmp_path / "sample.npz"))
    assert code == 0, err
    assert "inputs in_a (None, 4), in_b (None, 3)" in out
    assert "verified with torch.export.load on generated batch 1, generated batch 5, sample" in out


def test_a_difference_above_atol_exits_1_naming_the_output(tmp_path, capsys, monkeypatch):
    real = verify.run_exported
    monkeypatch.setattr(verify, "run_exported", lambda *a, **k: [o + 1e-3 for o in real(*a, **k)])
    code, out, _ = _run(capsys, "convert", str(FIXTURES / "seq_dense.h5"), str(tmp_path / "m.pt2"))
    assert code == 1
    assert "output 'dense_2' differs by 0.001 from arignote's prediction, above --atol 0.0001" in out
    code, out, _ = _run(capsys, "convert", str(FIXTURES / "seq_dense.h5"), str(tmp_path / "m.pt2"),
                        "--atol", "0.01")
    assert code == 0 and "(atol 1e-02)" in out


def test_a_layer_with_no_equivalent_is_one_error(tmp_path, capsys):
    code, out, err = _run(capsys, "convert", str(FIXTURES / "convrnn" / "convlstm2d_stateful.h5"),
                          str(tmp_path / "m.pt2"))
    assert code == 1
    assert err.count("\n") == 1 and "layer 'conv_stateful' (ConvLSTM2D) is stateful" in err
    assert not (tmp_path / "m.pt2").exists()


def test_missing_extra_is_named(tmp_path, capsys, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("onnx", "onnxruntime") else real(name, *a))
    code, _, err = _run(capsys, "convert", str(FIXTURES / "seq_dense.h5"), str(tmp_path / "m.onnx"))
    assert code == 1
    assert "pip install 'arignote[export]'" in err


@pytest.mark.parametrize("argv, message", [
    (["--input-shape", "4,x"], "--input-shape '4,x': give the dimensions as integers"),
    (["--input-shape", "5"], "the given shape (5,) (without the batch) does not fit it"),
    (["--weights", "w.h5"], "--weights is for a .json SRC"),
])
def test_bad_arguments_are_named(argv, message, tmp_path, capsys):
    code, _, err = _run(capsys, "convert", str(FIXTURES / "seq_dense.h5"), str(tmp_path / "m.pt2"), *argv)
    assert code == 1 and message in err


def test_bad_sources_and_destinations(tmp_path, capsys):
    code, _, err = _run(capsys, "convert", str(tmp_path / "none.h5"), str(tmp_path / "m.pt2"))
    assert code == 1 and "none.h5: no such file" in err
    code, _, err = _run(capsys, "convert", str(FIXTURES / "seq_dense.h5"), str(tmp_path / "m.txt"))
    assert code == 1 and "cannot tell the export format" in err
    shutil.copy(FIXTURES / "seq_dense.h5", tmp_path / "arch.json")
    code, _, err = _run(capsys, "convert", str(tmp_path / "arch.json"), str(tmp_path / "m.pt2"))
    assert code == 1 and "give its weights with --weights" in err


def test_the_command_offers_every_export_format():
    from arignote.commands import convert_cmd
    from arignote.export import FORMATS

    assert convert_cmd.FORMATS == tuple(FORMATS)


def test_a_file_with_stored_code_needs_unsafe(tmp_path, capsys):
    # lambda_closure.h5 (real Keras 2.3.1) keeps its Lambda as bytecode: refused unless the user trusts it
    dst = tmp_path / "closure.pt2"
    code, out, err = _run(capsys, "convert", str(FIXTURES / "lambda_closure.h5"), str(dst))
    assert code == 1 and not dst.exists()
    assert "layer 'scaled' (Lambda)" in err and "add --unsafe" in err
    code, out, err = _run(capsys, "convert", str(FIXTURES / "lambda_closure.h5"), str(dst), "--unsafe")
    assert code == 0, err
    assert dst.stat().st_size > 0 and "verified with torch.export.load" in out
