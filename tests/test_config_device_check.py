"""A device this machine cannot honour fails at the first config read (issue 15 item 5), not at ``fit``:
one DeviceError naming the flag, value, source and fix, checked against the visible GPU count."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from arignote import cli, config
from arignote.devices import inventory, spec
from arignote.errors import ArignoteError, ConfigError, DeviceError

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


@pytest.fixture
def gpus(monkeypatch):
    """Set how many GPUs the machine check sees (and records each count query)."""
    asked = []

    def set_count(n, reason="no NVIDIA driver is loaded"):
        def count():
            asked.append(n)
            return n, (None if n else reason)

        monkeypatch.setattr(inventory, "gpu_count", count)
        config.reload()
        return asked

    return set_count


# ------------------------------------------------------------------------------------------ pure


def test_count_problem_per_spec_form():
    assert spec.count_problem("cpu", 0) is None and spec.count_problem("auto", 0) is None
    assert spec.count_problem("cuda1", 2) is None and spec.count_problem("free:2", 2) is None
    assert spec.count_problem("cuda0,cuda1", 2) is None and spec.count_problem("all", 1) is None
    assert spec.count_problem("cuda7", 2) == ("there is no cuda7; this machine has 2 GPUs (cuda0..cuda1)",
                                              "use cuda0..cuda1, device=all or device=auto")
    assert spec.count_problem("cuda0,cuda2", 1) == ("there is no cuda2; this machine has 1 GPU (cuda0)",
                                                    "use cuda0, device=all or device=auto")
    assert spec.count_problem("free:3", 2) == ("asks for 3 GPUs but this machine has 2 GPUs (cuda0..cuda1)",
                                               "use free:2 or fewer")
    problem, fix = spec.count_problem("all", 0, "CUDA_VISIBLE_DEVICES='' hides every GPU")
    assert problem == "needs a CUDA GPU, but none is usable: CUDA_VISIBLE_DEVICES='' hides every GPU"
    assert fix == "use device=auto (GPUs when present, else the CPU) or device=cpu"


# ------------------------------------------------------------------------------------------ registry


def test_env_device_fails_at_the_first_read_of_any_flag(gpus, monkeypatch):
    monkeypatch.setenv("ARIGNOTE_FLAGS", "device=cuda7")
    asked = gpus(2)
    with pytest.raises(DeviceError) as info:
        config.get("floatX")  # not the device flag: the first read of all
    err = info.value
    assert isinstance(err, ConfigError) and isinstance(err, ArignoteError)
    assert str(err) == ("device=cuda7 (from ARIGNOTE_FLAGS): there is no cuda7; this machine has 2 GPUs "
                        "(cuda0..cuda1). Fix: use cuda0..cuda1, device=all or device=auto "
                        "(in ARIGNOTE_FLAGS).")
    assert (err.flag, err.value, err.source, err.fix) == ("device", "cuda7", "ARIGNOTE_FLAGS",
                                                          "use cuda0..cuda1, device=all or device=auto")
    assert err.__traceback__ is not None and err.__cause__ is None and err.__suppress_context__
    with pytest.raises(DeviceError):  # every later read says the same, the count is asked once
        config.get("device")
    assert asked == [2]


def test_rc_file_source_names_the_file_and_line(gpus, tmp_path, monkeypatch):
    rc = tmp_path / "arignoterc"
    rc.write_text("[global]\nfloatX = float32\ndevice = cuda1\n")
    monkeypatch.setenv("ARIGNOTERC", str(rc))
    gpus(0, "this torch build (2.13.0+cpu) has no CUDA support")
    with pytest.raises(DeviceError) as info:
        config.get("floatX")
    assert info.value.source == f"{rc}:3"
    assert str(info.value) == (f"device=cuda1 (from {rc}:3): needs a CUDA GPU, but none is usable: this "
                               "torch build (2.13.0+cpu) has no CUDA support. Fix: use device=auto (GPUs "
                               f"when present, else the CPU) or device=cpu (at {rc}:3).")


def test_cpu_and_auto_never_ask_the_hardware(gpus, monkeypatch):
    asked = gpus(0)
    for value in ("cpu", "auto", "AUTO"):
        monkeypatch.setenv("ARIGNOTE_FLAGS", f"device={value}")
        config.reload()
        assert config.get("device") == value
    assert asked == []


def test_a_good_gpu_spec_passes_and_is_counted_once(gpus, monkeypatch):
    monkeypatch.setenv("ARIGNOTE_FLAGS", "device=cuda0,cuda1")
    asked = gpus(2)
    assert config.get("device") == "cuda0,cuda1" and config.get("floatX") == "float32"
    assert asked == [2]


def test_configure_raises_at_the_call_with_source_code(gpus):
    gpus(2)
    with pytest.raises(DeviceError) as info:
        config.configure(device="free:3", floatX="float64")
    assert info.value.source == "code" and str(info.value).endswith("(in the configure() call).")
    assert config.get("floatX") == "float32"  # nothing of the refused call was applied
    config.configure(device="cuda1")
    assert config.source("device") == "code"


def test_code_in_effect_hides_a_bad_env_value(gpus, monkeypatch):
    monkeypatch.setenv("ARIGNOTE_FLAGS", "device=cuda7")
    gpus(2)
    with config.override(device="cpu"):
        assert config.get("device") == "cpu"  # the bad value is not in effect here
    config.configure(device="cuda1")
    assert config.get("device") == "cuda1"
    config.reload()
    with pytest.raises(DeviceError):
        config.get("device")


def test_override_blocks_are_checked_where_used_and_unchecked_shows_the_value(gpus, monkeypatch):
    gpus(2)
    with config.override(device="cuda7"):  # tests and one-off blocks: resolve() reports it at fit
        assert config.get("device") == "cuda7"
    monkeypatch.setenv("ARIGNOTE_FLAGS", "device=cuda7")
    config.reload()
    with config.unchecked():
        assert (config.get("device"), config.source("device")) == ("cuda7", "ARIGNOTE_FLAGS")
    with pytest.raises(DeviceError):
        config.get("device")


def test_cli_config_lists_the_flags_then_exits_2_and_run_exits_2(gpus, monkeypatch, capsys):
    monkeypatch.setenv("ARIGNOTE_FLAGS", "device=cuda1")
    gpus(0)
    assert cli.main(["config"]) == 2
    out, err = capsys.readouterr()
    assert "device" in out and "ARIGNOTE_FLAGS" in out  # the table is shown
    assert "device=cuda1" in err and "needs a CUDA GPU" in err
    assert cli.main(["devices"]) == 0  # a listing shows the problem instead of failing
    assert "the device flag cannot be used here: device=cuda1" in capsys.readouterr().out


# ------------------------------------------------------------------------------------------ end to end

SCRIPT = textwrap.dedent("""\
    import numpy as np
    from arignote.layers import Dense
    from arignote.models import Sequential

    model = Sequential()
    model.add(Dense(3, input_shape=(4,)))
    model.compile("sgd", "mse")
    model.fit(np.zeros((4, 4)), np.zeros((4, 3)), verbose=0)
    print("trained")
""")

# runs the script as `python train.py` would, on a machine whose check sees FAKE_GPUS GPUs
RUNNER = textwrap.dedent("""\
    import os, runpy, sys
    if os.environ.get("FAKE_GPUS"):
        from arignote.devices import inventory
        inventory.gpu_count = lambda: (int(os.environ["FAKE_GPUS"]), None)
    sys.argv = [sys.argv[1]]
    runpy.run_path(sys.argv[0], run_name="__main__")
""")


def _run(tmp_path, flags, fake_gpus=None):
    (tmp_path / "train.py").write_text(SCRIPT)
    (tmp_path / "runner.py").write_text(RUNNER)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARIGNOTE")}
    env.update(ARIGNOTE_FLAGS=flags, ARIGNOTERC=str(tmp_path / "none"), PYTHONPATH=SRC, OMP_NUM_THREADS="1")
    env.pop("FAKE_GPUS", None)
    if fake_gpus is not None:
        env["FAKE_GPUS"] = str(fake_gpus)
    argv = [sys.executable, str(tmp_path / "runner.py"), str(tmp_path / "train.py")]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)


def _frames(stderr):
    """(file, line, code) of each traceback frame, and the last line (the exception)."""
    lines = stderr.rstrip().splitlines()
    frames = []
    for i, line in enumerate(lines):
        if line.startswith('  File "'):
            path, _, rest = line[len('  File "'):].partition('", line ')
            frames.append((path, int(rest.split(",")[0]), lines[i + 1].strip()))
    return frames, lines[-1]


def test_a_script_with_a_missing_gpu_fails_at_its_first_config_read(tmp_path):
    if inventory.gpu_count()[0]:
        pytest.skip("this machine has a GPU: device=cuda1 may exist; the 2-GPU case below covers it")
    proc = _run(tmp_path, "device=cuda1")
    assert proc.returncode == 1 and "trained" not in proc.stdout
    frames, last = _frames(proc.stderr)
    assert last.startswith("arignote.errors.DeviceError: device=cuda1 (from ARIGNOTE_FLAGS): needs a "
                           "CUDA GPU, but none is usable: ")
    assert last.endswith("Fix: use device=auto (GPUs when present, else the CPU) or device=cpu "
                         "(in ARIGNOTE_FLAGS).")
    script = [f for f in frames if f[0].endswith("train.py")]
    assert script == [(str(tmp_path / "train.py"), 6, "model.add(Dense(3, input_shape=(4,)))")]  # not fit
    path, _, code = frames[-1]  # the last frame reads as what happened
    assert path.endswith(os.path.join("arignote", "config", "__init__.py"))
    assert code == ("raise problem.with_traceback(None) from None  # the message names flag, value, source "
                    "and fix")


def test_a_script_naming_cuda7_on_two_gpus_fails_at_its_first_config_read(tmp_path):
    proc = _run(tmp_path, "floatX=float32,device=cuda7", fake_gpus=2)
    assert proc.returncode == 1 and "trained" not in proc.stdout
    frames, last = _frames(proc.stderr)
    assert last == ("arignote.errors.DeviceError: device=cuda7 (from ARIGNOTE_FLAGS): there is no cuda7; "
                    "this machine has 2 GPUs (cuda0..cuda1). Fix: use cuda0..cuda1, device=all or "
                    "device=auto (in ARIGNOTE_FLAGS).")
    assert [f[1] for f in frames if f[0].endswith("train.py")] == [6]


def test_the_same_script_with_a_good_flag_trains(tmp_path):
    proc = _run(tmp_path, "device=cpu")
    assert proc.returncode == 0, proc.stderr
    assert "trained" in proc.stdout


def test_contexts_naming_a_missing_gpu_fail_at_the_first_read(gpus, monkeypatch):
    monkeypatch.setenv("ARIGNOTE_FLAGS", "contexts=dev0->cuda0;dev1->cuda3")
    gpus(2)
    with pytest.raises(DeviceError) as info:
        config.get("floatX")
    assert str(info.value).startswith("contexts=dev0->cuda0;dev1->cuda3 (from ARIGNOTE_FLAGS): context dev1 "
                                      "maps to cuda3: there is no cuda3; this machine has 2 GPUs "
                                      "(cuda0..cuda1). Fix: map the contexts to cuda0..cuda1 or cpu")
    assert (info.value.flag, info.value.source) == ("contexts", "ARIGNOTE_FLAGS")
    monkeypatch.setenv("ARIGNOTE_FLAGS", "contexts=dev0->gpu1")
    gpus(0)
    with pytest.raises(DeviceError, match="context dev0 maps to cuda1: needs a CUDA GPU, but none is usable: "
                                          "no NVIDIA driver is loaded. Fix: map the contexts to cpu"):
        config.get("floatX")


def test_cpu_contexts_and_gpus_that_exist_pass_without_asking_twice(gpus, monkeypatch):
    monkeypatch.setenv("ARIGNOTE_FLAGS", "contexts=dev0->cpu;dev1->cpu")
    asked = gpus(0)
    assert config.get("contexts") == "dev0->cpu;dev1->cpu" and asked == []  # CPU contexts ask no hardware
    monkeypatch.setenv("ARIGNOTE_FLAGS", "contexts=a->cuda:1;b->cuda0")
    asked = gpus(2)
    assert config.get("contexts") == "a->cuda:1;b->cuda0" and asked == [2]
