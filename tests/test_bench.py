"""arignote bench and selftest: pure parts on fixtures, runners and the CLI end to end on this CPU."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace as NS

import numpy as np
import pytest

from arignote import cli, config
from arignote.bench import configs, data, models, report, runners, suite
from arignote.bench.report import Run

CPU2 = NS(gpus=[], cpu_threads=2, cuda_reason="no NVIDIA driver")
GPU1 = NS(gpus=[NS(index=0, name="GeForce GTX 1060")], cpu_threads=8, cuda_reason=None)
GPU4 = NS(gpus=[NS(index=i, name="A100") for i in range(4)], cpu_threads=64, cuda_reason=None)


def _arignote(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "arignote", *args], capture_output=True, text=True,
                          timeout=timeout)


# --------------------------------------------------------------------------- models


@pytest.mark.parametrize("name", ["cnn", "mlp"])
def test_torch_and_arignote_models_have_the_keras_parameter_counts(name):
    assert models.count_params(models.torch_model(name)) == models.SPECS[name].params
    net = models.arignote_model(name)
    assert net.count_params() == models.SPECS[name].params


def test_lstm_models_match_each_other_and_keras_up_to_torchs_second_bias():
    torch_net = models.torch_model("lstm")
    assert models.count_params(torch_net) == models.SPECS["lstm"].params + 4 * 128
    # arignote's LSTM has Keras's single bias: Keras's count
    assert models.arignote_model("lstm").count_params() == models.SPECS["lstm"].params


def test_torch_cnn_maps_a_cifar_batch_to_ten_logits():
    import torch

    out = models.torch_model("cnn")(torch.zeros(2, 3, 32, 32))
    assert tuple(out.shape) == (2, 10)


def test_unknown_model_names_the_choices():
    with pytest.raises(ValueError, match="cnn, mlp, lstm"):
        models.spec("resnet")


# --------------------------------------------------------------------------- data


def test_synthetic_cifar_shaped_data_is_keras_style_and_split_like_the_seeds():
    d = data.load("cnn", 90, data.default_val(90), source="synthetic")
    assert d.x_train.shape == (90, 32, 32, 3) and d.x_val.shape == (10, 32, 32, 3)
    assert d.x_train.dtype == np.float32 and 0.0 <= d.x_train.min() and d.x_train.max() <= 1.0
    assert d.y_train.shape == (90, 10) and np.all(d.y_train.sum(1) == 1)
    assert d.source == "synthetic CIFAR-shaped (seed 0)"
    assert data.default_val(45000) == 5000
    again = data.load("cnn", 90, 10, source="synthetic")
    np.testing.assert_array_equal(d.x_train, again.x_train)


def test_mlp_and_lstm_shapes():
    assert data.load("mlp", 8, 2, source="synthetic").x_train.shape == (8, 784)
    assert data.load("lstm", 8, 2, source="synthetic").x_val.shape == (2, 32, 96)


def _fake_cifar(monkeypatch, n=40):
    from arignote.datasets import cifar10

    rng = np.random.default_rng(1)
    x = rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8)
    y = rng.integers(0, 10, (n, 1))
    monkeypatch.setattr(cifar10, "find", lambda: "/data/cifar-10-batches-py")
    monkeypatch.setattr(cifar10, "load_data", lambda: ((x, y), (x[:4], y[:4])))
    return x, y


def test_auto_uses_cifar10_when_found_locally_and_says_so(monkeypatch):
    x, y = _fake_cifar(monkeypatch)
    d = data.load("cnn", 30, 10, source="auto")
    assert d.source == "CIFAR-10 (/data/cifar-10-batches-py)"
    np.testing.assert_allclose(d.x_train, x[:30] / 255.0, rtol=1e-6)
    assert list(d.y_val.argmax(1)) == list(y[30:40, 0])
    assert data.load("cnn", 30, 10, source="synthetic").source.startswith("synthetic")


def test_auto_falls_back_to_synthetic_without_downloading(monkeypatch):
    from arignote.datasets import cifar10

    monkeypatch.setattr(cifar10, "find", lambda: None)

    def no_download():
        raise AssertionError("bench must not download in auto mode")

    monkeypatch.setattr(cifar10, "load_data", no_download)
    assert data.load("cnn", 4, 1).source.startswith("synthetic CIFAR-shaped")


def test_asking_for_more_samples_than_cifar_has_is_a_clear_error(monkeypatch):
    _fake_cifar(monkeypatch, n=40)
    with pytest.raises(ValueError, match="lower --samples"):
        data.load("cnn", 45000, 5000)
    with pytest.raises(ValueError, match="auto, cifar10, synthetic"):
        data.load("cnn", 4, 1, source="imagenet")


# --------------------------------------------------------------------------- configurations


def test_configuration_names_and_cpu_splits():
    assert [c.name for c in configs.default_configs(CPU2)] == [
        "cpu", "cuda-nodnn", "cuda", "cuda-benchmark", "cuda-fast", "cuda-compiled", "cuda-mixed", "all-gpus",
        "cpu-1x2", "cpu-2x1"]
    names = [c.name for c in configs.default_configs(GPU4)]
    assert names[-3:] == ["cpu-1x64", "cpu-2x32", "cpu-64x1"]
    c = configs.get("cpu-2x1", CPU2)
    assert c.flags == {"device": "cpu", "cpu.processes": 2, "cpu.threads": 1} and not c.single_process
    assert configs.get("cuda-mixed", CPU2).flags["precision"] == "mixed-fp16"
    assert configs.get("cuda-nodnn", CPU2).flags["dnn.enabled"] == "false"


def test_gpu_ladder_adds_one_fast_path_per_rung():
    """The seeds' GPU rows run with the fast defaults off; cuda-fast and the rows above with them on."""
    flags = {c.name: c.flags for c in configs.default_configs(GPU4) if c.is_gpu}
    plain = {"dnn.benchmark": False, "tf32": "off", "memory_format": "contiguous",
             "optimizer.impl": "foreach"}
    for name in ("cuda-nodnn", "cuda"):
        assert {k: flags[name][k] for k in plain} == plain
    assert flags["cuda-benchmark"] == {**flags["cuda"], "dnn.benchmark": True}
    for name in ("cuda-fast", "cuda-mixed", "all-gpus"):
        assert {k: flags[name][k] for k in plain} == configs.FAST_GPU
        assert flags[name]["dnn.enabled"] == "true"
    assert flags["cuda-mixed"] == {**flags["cuda-fast"], "precision": "mixed-fp16"}
    for name, cfg in flags.items():  # every flag a rung sets is a registered flag with a valid value
        with config.override(**cfg):
            assert all(config.get(k) == v for k, v in cfg.items()), name


def test_compiled_rows():
    """cuda-compiled is cuda-fast plus jit=on (in the ladder); cpu-compiled is asked for by name;
    peers run their eager loop and are not timed on a compiled row."""
    flags = {c.name: c.flags for c in configs.default_configs(GPU4)}
    assert flags["cuda-compiled"] == {**flags["cuda-fast"], "jit": "on"}
    assert "cpu-compiled" not in flags
    cpu_jit = configs.get("cpu-compiled", CPU2)
    assert cpu_jit.flags == {"device": "cpu", "jit": "on"} and configs.skip_reason(cpu_jit, CPU2) is None
    assert [c.name for c in configs.parse("cpu,cpu-compiled", CPU2)] == ["cpu", "cpu-compiled"]
    assert "eager" in configs.peer_skip_reason("torch", cpu_jit)
    assert configs.peer_skip_reason("arignote", cpu_jit) is None
    assert configs.peer_skip_reason("torch", configs.get("cpu", CPU2)) is None


def test_seeds_reference_rows_under_the_cnn_table():
    lines = configs.seeds_reference("cnn", [32, 128])
    assert lines[1:] == ["  cpu          CPU                       152 s/epoch",
                         "  cuda-nodnn   GTX 1060, CUDA             20 s/epoch",
                         "  cuda         GTX 1060, CUDA + cuDNN      7 s/epoch"]
    assert configs.seeds_reference("mlp", [32]) == [] and configs.seeds_reference("cnn", [64]) == []


def test_skip_reasons_follow_the_machine():
    cuda = configs.get("cuda", CPU2)
    assert configs.skip_reason(cuda, CPU2) == "needs a CUDA GPU (no NVIDIA driver)"
    assert configs.skip_reason(cuda, GPU1, cudnn=8902) is None
    assert "cuDNN" in configs.skip_reason(cuda, GPU1, cudnn=None)
    assert configs.skip_reason(configs.get("cuda-nodnn", GPU1), GPU1, cudnn=None) is None
    all_gpus = configs.get("all-gpus", GPU1)
    assert configs.skip_reason(all_gpus, GPU1, 8902) == "needs 2 GPUs, this machine has 1"
    assert configs.skip_reason(configs.get("all-gpus", GPU4), GPU4, 8902) is None
    assert "this machine has 2" in configs.skip_reason(configs.get("cpu-4x1", CPU2), CPU2)
    assert "not available" in configs.skip_reason(configs.get("cpu-2x1", CPU2), CPU2, strategies=frozenset())
    assert configs.peer_skip_reason("torch", configs.get("cpu-2x1", CPU2)).endswith("single-process "
                                                                                      "configurations only")
    assert configs.peer_skip_reason("arignote", configs.get("cpu-2x1", CPU2)) is None


def test_configs_parse_keeps_order_and_rejects_unknown_names():
    assert [c.name for c in configs.parse("cuda,cpu,cpu-3x1", CPU2)] == ["cuda", "cpu", "cpu-3x1"]
    with pytest.raises(ValueError, match="unknown configuration 'gpu'.*cuda-benchmark"):
        configs.parse("cpu,gpu", CPU2)
    with pytest.raises(ValueError, match="at least 1"):
        configs.get("cpu-0x2", CPU2)


# --------------------------------------------------------------------------- schedule


def test_schedule_alternates_runners_and_carries_skip_reasons():
    plan = suite.SuitePlan(model="mlp", n_train=64, n_val=8, batch_sizes=[32, 128],
                      configs=["cpu", "cuda", "cpu-2x1"], runners=["arignote", "torch", "keras"], repeats=2)
    runs = suite.schedule(plan, CPU2, {"keras": "keras is not installed"})
    b32 = [(r.config, r.runner, r.status) for r in runs if r.batch_size == 32]
    assert b32 == [
        ("cpu", "arignote", "ok"), ("cpu", "torch", "ok"), ("cpu", "keras", "skipped"),
        ("cpu", "keras", "skipped"), ("cpu", "torch", "ok"), ("cpu", "arignote", "ok"),
        ("cuda", "*", "skipped"),
        ("cpu-2x1", "arignote", "ok"), ("cpu-2x1", "torch", "skipped"), ("cpu-2x1", "keras", "skipped"),
        ("cpu-2x1", "keras", "skipped"), ("cpu-2x1", "torch", "skipped"), ("cpu-2x1", "arignote", "ok")]
    reasons = {(r.config, r.runner): r.reason for r in runs if r.status == "skipped"}
    assert reasons[("cpu", "keras")] == "keras is not installed"
    assert reasons[("cuda", "*")].startswith("needs a CUDA GPU")
    assert [r.repeat for r in runs if r.config == "cpu" and r.runner == "arignote"] == [0, 1, 0, 1]


# --------------------------------------------------------------------------- report (fixture results)


def _fixture_runs() -> list[Run]:
    mk = lambda cfg, rn, b, s, mem, **kw: Run(cfg, rn, b, epoch_seconds=s, samples=45000,  # noqa: E731
                                              device_name=kw.pop("dev", "AMD EPYC"), peak_memory=mem, **kw)
    return [
        mk("cpu", "arignote", 32, [60.0, 50.0, 52.0], 1 << 30),
        mk("cpu", "torch", 32, [55.0], 1100 << 20),
        mk("cpu", "arignote", 32, [49.0], 1 << 30, repeat=1),
        mk("cuda", "arignote", 32, [5.0], 300 << 20, dev="GeForce GTX 1060", memory_kind="GPU"),
        mk("cuda", "torch", 32, [6.0], 310 << 20, dev="GeForce GTX 1060", memory_kind="GPU"),
        Run("cuda-mixed", "*", 32, status="skipped", reason="needs compute capability 7.0"),
        Run("cpu", "keras", 32, status="failed", reason="exit code 1: ImportError", log="logs/03.log"),
        mk("cpu", "arignote", 128, [40.0], 1 << 30),
    ]


def test_seconds_per_epoch_drops_the_warm_up_epoch():
    assert report.seconds_per_epoch([60.0, 50.0, 52.0]) == 51.0
    assert report.seconds_per_epoch([7.0]) == 7.0


def test_table_rows_merge_repeats_and_compute_speedup_and_ratios():
    rows = {(r["batch_size"], r["config"], r["runner"]): r for r in report.table_rows(_fixture_runs())}
    cpu = rows[(32, "cpu", "arignote")]
    assert cpu["seconds_per_epoch"] == 50.0  # median of the repeats' 51 and 49
    assert cpu["repeats"] == 2 and cpu["samples_per_sec"] == 900.0 and cpu["speedup"] == 1.0
    assert rows[(32, "cuda", "arignote")]["speedup"] == 10.0
    assert rows[(32, "cuda", "torch")]["speedup"] == pytest.approx(55 / 6, abs=0.01)
    assert rows[(32, "cpu", "torch")]["vs_arignote"] == 1.1
    assert rows[(32, "cuda", "torch")]["vs_arignote"] == 1.2
    assert rows[(32, "cpu", "arignote")]["vs_arignote"] is None
    assert rows[(128, "cpu", "arignote")]["speedup"] == 1.0
    assert (32, "cpu", "keras") not in rows


def test_render_table_is_the_seed_table_with_reasons():
    text = report.render_table(_fixture_runs(), "title line")
    lines = text.splitlines()
    assert lines[0] == "title line"
    header = next(ln for ln in lines if ln.startswith("configuration"))
    for col in ("device", "s/epoch", "samples/s", "speedup vs cpu", "peak memory", "time / arignote"):
        assert col in header
    cuda_line = next(ln for ln in lines if ln.startswith("cuda "))
    assert "GeForce GTX 1060" in cuda_line and "5.00" in cuda_line and "10.00x" in cuda_line
    assert "300 MiB GPU" in cuda_line
    assert any("torch" in ln and "1.20x" in ln for ln in lines)
    assert "batch size 32" in lines and "batch size 128" in lines
    assert "  cuda-mixed: skipped: needs compute capability 7.0" in lines
    assert "  cpu / keras: failed: exit code 1: ImportError (log: logs/03.log)" in lines
    assert text.rstrip().endswith("(above 1.00x: arignote is faster)")


def test_render_table_without_peers_has_no_ratio_column():
    runs = [r for r in _fixture_runs() if r.runner == "arignote"]
    assert "time / arignote" not in report.render_table(runs)
    assert "no configuration ran" in report.render_table([Run("cuda", "*", 32, status="skipped", reason="x")])


def test_json_is_serialisable_and_complete():
    doc = report.to_json(_fixture_runs(), {"model": {"name": "cnn"}})
    doc = json.loads(json.dumps(doc))
    assert doc["model"]["name"] == "cnn"
    assert len(doc["runs"]) == 6 and all(r["seconds_per_epoch"] > 0 for r in doc["runs"])
    not_run = {(r["config"], r["status"]) for r in doc["not_run"]}
    assert not_run == {("cuda-mixed", "skipped"), ("cpu", "failed")}
    assert len(doc["table"]) == 5


def _png_size(path: Path) -> tuple[int, int]:
    import matplotlib.image as mpimg

    raw = path.read_bytes()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    h, w = mpimg.imread(str(path)).shape[:2]
    return w, h


def test_chart_is_a_png_of_the_announced_size_with_labelled_bars(tmp_path, monkeypatch):
    import matplotlib.axes

    labels: list[str] = []
    real = matplotlib.axes.Axes.bar_label

    def spy(self, container, labels_=None, **kw):
        labels.extend(kw.get("labels") or labels_ or [])
        return real(self, container, labels=kw.pop("labels", labels_), **kw)

    monkeypatch.setattr(matplotlib.axes.Axes, "bar_label", spy)
    path = tmp_path / "bench.png"
    size = report.write_chart(_fixture_runs(), str(path), "title")
    assert size == report.chart_size(2) == (900, 780)
    assert _png_size(path) == size
    assert sorted(labels) == sorted(["50.0s", "55.0s", "5.00s", "6.00s", "40.0s"])
    img = __import__("matplotlib.image").image.imread(str(path))
    assert img[..., :3].std() > 0.05  # not a blank canvas


def test_chart_without_matplotlib_is_a_clear_message(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(report.ChartUnavailable, match=r"pip install 'arignote\[chart\]'"):
        report.write_chart(_fixture_runs(), str(tmp_path / "x.png"))


def test_progress_redraws_on_a_terminal_and_prints_lines_otherwise():
    plain = io.StringIO()
    p = suite.Progress(plain)
    p.update("[1/2] cpu · starting")
    p.update("[1/2] cpu · 5.00 s/epoch", final=True)
    assert plain.getvalue() == "[1/2] cpu · starting\n[1/2] cpu · 5.00 s/epoch\n"

    class TTY(io.StringIO):
        def isatty(self):
            return True

    tty = TTY()
    p = suite.Progress(tty)
    p.update("a long status line")
    p.update("short", final=True)
    assert tty.getvalue() == "\ra long status line" + "\rshort" + " " * 13 + "\n"

    ticking = TTY()
    p = suite.Progress(ticking)
    p.update("[1/1] cpu · arignote")
    with p.ticking(interval=0.02):
        time.sleep(0.15)
    assert "\r[1/1] cpu · arignote · 0s" in ticking.getvalue()
    quiet = io.StringIO()
    with suite.Progress(quiet).ticking(interval=0.01):  # not a terminal: no redraws
        time.sleep(0.05)
    assert quiet.getvalue() == ""


# --------------------------------------------------------------------------- runners and worker


def test_torch_runner_reports_each_epoch_with_finite_logs():
    d = data.load("mlp", 256, 64, source="synthetic")
    seen = []
    runners.run("torch", "mlp", d, 64, 2, "cpu", "fp32", lambda e, s, logs: seen.append((e, s, logs)))
    assert [e for e, _, _ in seen] == [0, 1]
    assert all(s > 0 for _, s, _ in seen)
    assert set(seen[-1][2]) == {"loss", "acc", "val_loss", "val_acc"}
    assert all(np.isfinite(v) for v in seen[-1][2].values())


def test_arignote_runner_trains_the_same_model_and_times_epochs():
    from arignote import config

    d = data.load("mlp", 256, 64, source="synthetic")
    seen = []
    with config.override(device="cpu", print_active_device=False):
        runners.run("arignote", "mlp", d, 64, 2, "cpu", "fp32", lambda e, s, logs: seen.append((e, s, logs)))
    assert [e for e, _, _ in seen] == [0, 1] and all(s > 0 for _, s, _ in seen)
    assert "val_loss" in seen[-1][2]


def test_missing_peer_is_a_note_not_a_crash(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "keras" else real(n, *a))
    assert runners.missing("keras") == "keras is not installed (pip install 'arignote[peers]')"
    assert runners.missing("torch") is None
    with pytest.raises(ValueError, match="torch, keras, lightning"):
        runners.missing("jax")


def test_worker_reports_start_epochs_and_result_with_peak_memory():
    spec = {"runner": "torch", "model": "mlp", "config": "cpu", "batch_size": 128, "epochs": 2,
            "n_train": 512, "n_val": 64, "data": "synthetic"}
    proc = subprocess.run([sys.executable, "-m", "arignote.bench.worker", json.dumps(spec)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    msgs = [json.loads(ln[len("@@bench "):]) for ln in proc.stdout.splitlines() if ln.startswith("@@bench ")]
    assert [m["event"] for m in msgs] == ["start", "epoch", "epoch", "result"]
    assert msgs[0]["device"] == "cpu" and msgs[0]["data"].startswith("synthetic MNIST-shaped")
    result = msgs[-1]
    assert len(result["epoch_seconds"]) == 2 and min(result["epoch_seconds"]) > 0
    assert result["peak_rss"] > 50 << 20 and result["peak_gpu"] is None


# --------------------------------------------------------------------------- CLI


@pytest.mark.parametrize("args, message", [
    (["--model", "resnet"], "unknown --model 'resnet'"),
    (["--batch-size", "0"], "--batch-size must be a positive"),
    (["--batch-size", "32,x"], "is not a whole number"),
    (["--samples", "-5"], "--samples must be a positive"),
    (["--epochs", "0"], "--epochs must be a positive"),
    (["--configs", "cpu,tpu"], "unknown configuration 'tpu'"),
    (["--vs", "torch,jax"], "unknown peer 'jax'"),
])
def test_bad_bench_arguments_exit_2_naming_the_culprit(args, message, capsys, tmp_path):
    assert cli.main(["bench", "--out", str(tmp_path / "o"), *args]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_bench_out_must_not_be_a_file(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    assert cli.main(["bench", "--out", str(f)]) == 2
    assert "is a file" in capsys.readouterr().err


def _check_outputs(out: Path, expect_runners: set[str], expect_skipped: set[str]) -> dict:
    text = (out / "bench.txt").read_text()
    doc = json.loads((out / "bench.json").read_text())
    assert doc["n_train"] == 1024 and doc["n_val"] == 113 and doc["batch_sizes"] == [32]
    assert doc["data"].startswith(("synthetic CIFAR-shaped", "CIFAR-10"))
    assert doc["data"] in text
    assert {r["runner"] for r in doc["table"]} == expect_runners
    for row in doc["table"]:
        assert row["seconds_per_epoch"] > 0 and row["samples_per_sec"] > 0 and row["peak_memory"] > 0
        assert row["memory_kind"] == "RSS" and row["device"] == "cpu"
    for run in doc["runs"]:
        assert run["epoch_seconds"] and min(run["epoch_seconds"]) > 0
    skipped = {r["config"]: r["reason"] for r in doc["not_run"]
               if r["status"] == "skipped" and r["runner"] == "*"}
    assert set(skipped) == expect_skipped
    assert all(reason.startswith("needs") for reason in skipped.values())
    assert not [r for r in doc["not_run"] if r["status"] == "failed"]
    assert _png_size(out / "bench.png") == report.chart_size(1)
    return doc


@pytest.mark.slow
@pytest.mark.timeout(900)  # one CPU thread, or a loaded 2-core box: several minutes
def test_bench_quick_writes_table_json_and_chart(tmp_path):
    out = tmp_path / "bench-out"
    proc = _arignote("bench", "--quick", "--out", str(out), timeout=800)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    gpu_configs = {"cuda-nodnn", "cuda", "cuda-benchmark", "cuda-fast", "cuda-compiled", "cuda-mixed",
                   "all-gpus"}
    doc = _check_outputs(out, {"arignote"}, gpu_configs)
    # the process x thread splits follow the threads this machine gives (OMP_NUM_THREADS, CPUs):
    # cpu, cpu-1x2, cpu-2x1 on 2 threads; cpu, cpu-1x1 on 1
    cores = doc["machine"]["cpu_threads"]
    expected = ["cpu", *(c.name for c in configs._cpu_variants(cores))]
    assert [r["config"] for r in doc["table"]] == expected
    assert cores != 2 or expected == ["cpu", "cpu-1x2", "cpu-2x1"]
    assert next(r for r in doc["table"] if r["config"] == "cpu")["speedup"] == 1.0
    assert "configuration" in proc.stdout and "speedup vs cpu" in proc.stdout
    n = len(expected)
    assert f"[{n}/{n}] {expected[-1]} · arignote · batch 32" in proc.stderr  # the progress line


@pytest.mark.slow
def test_bench_vs_torch_reports_a_ratio(tmp_path):
    out = tmp_path / "vs"
    proc = _arignote("bench", "--quick", "--configs", "cpu,cuda-mixed", "--vs", "torch", "--out", str(out))
    assert proc.returncode == 0, proc.stderr + proc.stdout
    doc = _check_outputs(out, {"arignote", "torch"}, {"cuda-mixed"})
    torch_row = next(r for r in doc["table"] if r["runner"] == "torch")
    arignote_row = next(r for r in doc["table"] if r["runner"] == "arignote")
    assert torch_row["vs_arignote"] == pytest.approx(
        torch_row["seconds_per_epoch"] / arignote_row["seconds_per_epoch"], abs=0.01)
    assert "time / arignote" in proc.stdout


# --------------------------------------------------------------------------- selftest


def test_selftest_output_and_exit_codes_with_a_fake_gpu_box(monkeypatch, capsys):
    from arignote import devices
    from arignote.bench import selfchecks

    box = NS(gpus=[NS(index=0, name="T4")], cpu_name="Xeon", cpu_threads=4, cuda_reason=None)
    monkeypatch.setattr(devices, "current_inventory", lambda: box)
    outcome = {"memory-limit": {"ok": False, "message": "cap is 1.0, expected 0.25", "numbers": {},
                                "record": {}}}
    fine = {"ok": True, "message": "fine", "numbers": {}, "record": {}}
    monkeypatch.setattr(selfchecks, "outcome_in_process", lambda name, timeout: outcome.get(name, fine))
    monkeypatch.setattr(selfchecks, "environment", lambda inv: {"torch": "2.13.0", "gpus": [{"name": "T4"}]})
    assert cli.main(["selftest"]) == 1
    out = capsys.readouterr().out
    assert "FAIL  memory-limit" in out and "cap is 1.0, expected 0.25" in out
    assert "PASS  memory-preallocate" in out
    line = next(ln for ln in out.splitlines() if "data-parallel-nccl" in ln)
    assert line.split()[:2] == ["SKIP", "data-parallel-nccl"]
    assert line.endswith("not tested: needs 2 GPUs, this machine has 1")
    assert "SKIP  placement" in out
    # + mixed-bf16, preallocate-after-oom, the 5 fast-path items, compiled-cuda-graphs, compiled-optimizer,
    # compiled-accumulate; DP items not tested (weights, oom, oom-sync, placement + data parallel,
    # placement-memory-limit, placement-data-parallel-oom, compiled-data-parallel) besides nccl and placement
    assert "26 passed, 1 failed, 9 not tested" in out
    assert cli.main(["selftest", "--only", "nope"]) == 2


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_selftest_here_passes_the_cpu_items_and_lists_the_untested_gpu_items():
    proc = _arignote("selftest", "--json", timeout=800)  # 1 CPU thread or a loaded box: minutes
    assert proc.returncode == 0, proc.stderr + proc.stdout
    doc = json.loads(proc.stdout)
    status = {r["item"]: r["status"] for r in doc["results"]}
    cpu_items = ["banner-cpu", "train-cpu", "data-parallel-cpu", "mixed-precision-cpu", "oom-split-cpu",
                 "placement-cpu"]
    assert [status[item] for item in cpu_items] == ["PASS"] * len(cpu_items)
    from arignote.bench.selfchecks import CHECKS

    gpu_items = {c.name for c in CHECKS if c.gpus}
    assert {k for k, v in status.items() if v == "SKIP"} == gpu_items
    assert all(r["detail"].startswith("not tested: needs") for r in doc["results"] if r["status"] == "SKIP")
    assert doc["FAIL"] == 0


# --------------------------------------------------------------------------- on a GPU (skipped here)


@pytest.mark.gpu
def test_bench_on_a_gpu_reports_the_allocator_peak(tmp_path):
    out = tmp_path / "gpu"
    proc = _arignote("bench", "--quick", "--model", "mlp", "--configs", "cpu,cuda-nodnn,cuda",
                     "--vs", "torch", "--out", str(out))
    assert proc.returncode == 0, proc.stderr + proc.stdout
    doc = json.loads((out / "bench.json").read_text())
    gpu_rows = [r for r in doc["table"] if r["config"] in ("cuda", "cuda-nodnn")]
    assert len(gpu_rows) == 4
    assert all(r["memory_kind"] == "GPU" and r["peak_memory"] > 0 and r["speedup"] > 0 for r in gpu_rows)


@pytest.mark.slow
def test_a_busy_machine_is_noted_in_the_table_and_json(tmp_path, monkeypatch, capsys):
    from arignote.commands import bench_cmd

    monkeypatch.setattr(bench_cmd, "_load_average", lambda: 9.5)
    out = tmp_path / "busy"
    args = ["bench", "--model", "mlp", "--samples", "64", "--configs", "cpu,cuda", "--out", str(out)]
    assert cli.main(args) == 0
    text = (out / "bench.txt").read_text()
    assert "load average 9.5 before and 9.5 after" in text and "ratios of alternated runs" in text
    doc = json.loads((out / "bench.json").read_text())
    assert doc["load_average"] == {"before": 9.5, "after": 9.5}
    assert doc["data"] == "synthetic MNIST-shaped (seed 0)"
    assert "[1/1] cpu · arignote · batch 32" in capsys.readouterr().err


def test_speedup_baseline_is_cpu_else_the_first_single_process_cpu_config():
    assert report.baseline(["cpu-2x1", "cpu", "cuda"]) == "cpu"
    assert report.baseline(["cuda", "cpu-2x1", "cpu-1x1"]) == "cpu-1x1"
    runs = [Run("cpu-1x1", "arignote", 32, epoch_seconds=[90.0], samples=45000, device_name="EPYC"),
            Run("cpu-2x1", "arignote", 32, epoch_seconds=[60.0], samples=45000, device_name="EPYC")]
    assert [r["speedup"] for r in report.table_rows(runs)] == [1.0, 1.5]
    assert "speedup vs cpu-1x1" in report.render_table(runs)
