"""arignote bench --zoo: the Keras 2 zoo timed on this CPU end to end, its table, and its argument errors."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from arignote import cli
from arignote.bench import zoo
from arignote.commands import bench_zoo


def _arignote(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "arignote", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_quick_zoo_prints_and_writes_one_positive_row_per_model(tmp_path):
    out = tmp_path / "zoo-out"
    proc = _arignote("bench", "--zoo", "--quick", "--zoo-models", "mlp,two_inputs", "--device", "cpu",
                     "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads((out / "zoo.json").read_text())
    assert [r["model"] for r in doc["rows"]] == ["mlp", "two_inputs"]
    for row in doc["rows"]:
        assert row["batch"] == bench_zoo.QUICK["batch"]
        times = {k: v for k, v in row.items() if k.endswith("_ms")}
        assert set(times) >= {"step_ms", "step_cpu_ms", "step_wall_ms", "predict1_ms", "predict64_ms"}
        assert all(math.isfinite(v) and v > 0 for v in times.values()), row
        assert "ratio" not in row  # no Keras 3 asked for
    meta = doc["meta"]
    assert meta["device"] == "cpu" and meta["device_name"] and meta["clock"] == "cpu"
    assert meta["rounds"] == 1 and meta["steps"] == 2
    text = (out / "zoo.txt").read_text()
    assert text.strip() in proc.stdout
    lines = text.splitlines()
    assert lines[0].startswith("arignote bench --zoo · cpu (")
    assert lines[2] == "model | batch | ms/step | predict b1 ms | predict b64 ms"
    mlp = lines[3].split(" | ")
    assert mlp[:2] == ["mlp", "8"] and float(mlp[2]) == pytest.approx(doc["rows"][0]["step_ms"], abs=0.01)


def test_a_keras3_python_without_keras_is_one_clear_error(tmp_path):
    # this venv has no Keras 3: its worker stops at `import keras`, and the command says so
    proc = _arignote("bench", "--zoo", "--quick", "--zoo-models", "two_inputs", "--device", "cpu",
                     "--vs-keras3", sys.executable, "--out", str(tmp_path / "o"))
    assert proc.returncode == 2
    assert "the keras3 worker" in proc.stderr and "keras" in proc.stderr.splitlines()[-1]
    assert not (tmp_path / "o" / "zoo.json").exists()


@pytest.mark.parametrize("args, message", [
    (["--zoo-models", "mlp,resnet"], "unknown --zoo-models resnet; choose from: mlp, cnn"),
    (["--rounds", "0"], "--rounds must be a positive whole number (got 0)"),
    (["--steps", "-1"], "--steps must be a positive whole number (got -1)"),
    (["--vs-keras3", "/no/such/python"], "--vs-keras3 /no/such/python is not an executable Python"),
    (["--vs", "torch"], "with --zoo use --vs-keras3 PYTHON"),
    (["--plan"], "--plan and --vs belong to the seeds' table"),
    (["--device", "cuda7"], "--device cuda7: device=cuda7 needs a CUDA GPU"),
])
def test_bad_zoo_arguments_exit_2_naming_the_culprit(args, message, capsys, tmp_path):
    assert cli.main(["bench", "--zoo", "--out", str(tmp_path / "o"), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("arignote bench --zoo: ") and message in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_zoo_flags_without_zoo_are_an_error(capsys, tmp_path):
    assert cli.main(["bench", "--zoo-models", "mlp", "--out", str(tmp_path / "o")]) == 2
    assert "--zoo-models goes with --zoo" in capsys.readouterr().err


def _answer(step: float, predict: float) -> dict:
    return {"cpu": [step, 2 * step, step], "wall": [3 * step] * 3,
            "predict": {"1": {"cpu": predict, "wall": 2 * predict},
                        "64": {"cpu": 4 * predict, "wall": predict}}}


def test_rows_take_medians_and_per_round_ratios_and_render_them():
    got = {"arignote": [_answer(0.010, 0.001), _answer(0.020, 0.001)],
           "keras3": [_answer(0.030, 0.005), _answer(0.030, 0.005)]}
    row = bench_zoo._row("vae", got, "cpu", (1, 64), None)
    assert row["batch"] == zoo.MODELS["vae"][1]
    assert row["step_ms"] == pytest.approx(15.0)  # medians per round: 10 and 20 ms
    assert row["step_wall_ms"] == pytest.approx(45.0)
    assert row["predict1_ms"] == pytest.approx(1.0) and row["predict64_ms"] == pytest.approx(4.0)
    assert (row["ratio"], row["ratio_min"], row["ratio_max"]) == pytest.approx((2.25, 1.5, 3.0))
    assert row["keras3_predict1_ms"] == pytest.approx(5.0)
    wall = bench_zoo._row("vae", got, "wall", (1, 64), 4)
    assert wall["step_ms"] == pytest.approx(45.0) and wall["predict1_ms"] == pytest.approx(2.0)
    assert wall["batch"] == 4
    meta = {"device": "cuda0", "device_name": "Tesla V100", "torch": "2.13", "threads": 8, "rounds": 2,
            "steps": 3, "warmup": 2, "clock": "wall", "load_average": 0.5, "keras3": "keras 3.15.1"}
    text = bench_zoo.render([row], meta)
    assert "cuda0 (Tesla V100)" in text.splitlines()[0]
    assert "vae | 128 | 15.00 | 1.00 | 4.00 | 30.00 | 2.25x (1.50-3.00) | 5.00 / 20.00" in text
    bad = dict(row, predict1_ms=float("nan"))
    assert "no positive finite time for vae" in bench_zoo.render([bad], meta)


def test_measure_without_predict_times_training_steps_alone():
    """predict_reps=0 (vs_keras3.py's rounds of one step each in turn): no predict call at all."""
    from arignote.bench import zoo_timing

    class Model:
        def __init__(self):
            self.calls = []

        def train_on_batch(self, x, y):
            self.calls.append("train")

        def predict(self, x, batch_size, verbose):
            self.calls.append("predict")

    import numpy as np

    model, x = Model(), np.ones((3, 2))
    got = zoo_timing.measure(model, x, x, warmup=1, steps=2, predict_reps=0)
    assert model.calls == ["train"] * 3 and got["predict"] == {}
    assert len(got["cpu"]) == len(got["wall"]) == 2
    got = zoo_timing.measure(model, x, x, warmup=0, steps=1, predict_reps=1)
    assert sorted(got["predict"]) == ["1", "64"] and model.calls.count("predict") == 4
