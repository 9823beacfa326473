"""``arignote smi`` and the NVML snapshot: rendering of fixtures, JSON round trip, n/a, no driver."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import types

import pytest
from rich.console import Console

from arignote import cli, config, monitor
from arignote.devices import nvml
from arignote.devices.nvml import NA, SnapshotFormatError
from arignote.share import LeaseInfo, gpu_key
from share_helpers import FOUR_GPUS, child_env, gpu, snap, write


@pytest.fixture
def lease_dir(tmp_path, monkeypatch):
    path = tmp_path / "leases"
    monkeypatch.setenv("ARIGNOTE_LEASE_DIR", str(path))
    config.reload()
    return path


def _lease(s, index, user="carol", pid=4242):
    return LeaseInfo(key=gpu_key(s.gpus[index]), index=index, pid=pid, user=user, host="gpu-box",
                     start=1_763_726_400.0, command="python sweep.py", uid=1001)


# --------------------------------------------------------------------------- NA


def test_na_renders_as_na_and_serialises_as_null():
    assert str(NA) == "n/a" and f"{NA:>5}" == "  n/a" and f"{NA:.1f}" == "n/a" and not NA
    assert f"{NA:*^7.2f}" == "**n/a**" and f"{NA:8,d}" == "n/a     "
    assert type(NA)() is NA
    s = snap(gpu(0, util=NA))
    data = json.loads(nvml.to_json(s))
    assert data["gpus"][0]["utilization_gpu"] is None
    assert nvml.from_json(nvml.to_json(s)).gpus[0].utilization_gpu is NA


# --------------------------------------------------------------------------- table


def cells(line: str) -> list[str]:
    return re.split(r"\s{2,}", line.strip())


def test_table_renders_gpus_processes_leases_and_na():
    s = nvml.load(FOUR_GPUS)
    text = monitor.render_text(s, [_lease(s, 1)], width=160)
    lines = text.splitlines()
    assert lines[0] == "CPU 37.5% of 64 threads (load 24.10)  RAM 131072 / 515891 MiB"
    assert "gpu-box  driver 550.54.15  CUDA 12.4" in lines[1]
    assert cells(lines[2]) == ["GPU", "Name", "Bus-Id", "Temp", "Power", "Memory", "Util", "Lease"]
    rows = [cells(line) for line in lines if "NVIDIA A100" in line]
    assert [r[0] for r in rows] == ["0", "1", "2", "3"]  # nvidia-smi order
    assert rows[0] == ["0", "NVIDIA A100-SXM4-40GB", "00000000:07:00.0", "61C", "287/400W",
                       "37888 / 40960 MiB", "98%", "-"]
    assert rows[1][7].startswith("carol pid 4242 since ")
    assert rows[3][3:8] == ["n/a", "n/a", "4 / 40960 MiB", "n/a", "-"]  # unsupported readings
    head = [line.strip() for line in lines].index("Processes")
    assert cells(lines[head + 1]) == ["GPU", "PID", "Type", "User", "GPU Mem", "Command"]
    procs = [cells(line) for line in lines[head + 3:] if line.strip()]
    assert procs == [["0", "41203", "C", "alice", "37824 MiB", "python train_gpt.py --bs 64"],
                     ["2", "5120", "C", "bob", "12224 MiB", "jupyter-lab"],
                     ["2", "5200", "G", "n/a", "n/a", "n/a"]]


def test_no_processes_option_and_no_process_message():
    s = nvml.load(FOUR_GPUS)
    assert "Processes" not in monitor.render_text(s, processes=False)
    assert "alice" not in monitor.render_text(s, processes=False)
    assert "no running processes found" in monitor.render_text(snap(gpu(0)))


def test_markup_in_command_lines_is_shown_verbatim():
    s = snap(gpu(0, processes=(nvml.GPUProcess(7, "eve", 1 << 30, "python x.py --tag [bold]x[/bold]"),)))
    assert "--tag [bold]x[/bold]" in monitor.render_text(s)


def test_no_driver_prints_host_and_one_reason_line():
    s = nvml.Snapshot(hostname="laptop", time=0.0, host=nvml.HostSnapshot(4, 3.0, 0.5, 1 << 30, 8 << 30),
                      nvml_error="no NVIDIA driver found: libnvidia-ml.so.1 could not be loaded")
    assert monitor.render_text(s).splitlines() == [
        "CPU 3% of 4 threads (load 0.50)  RAM 1024 / 8192 MiB",
        "no NVIDIA driver found: libnvidia-ml.so.1 could not be loaded",
    ]


# --------------------------------------------------------------------------- JSON


def test_json_round_trip_and_leases(tmp_path):
    s = nvml.load(FOUR_GPUS)
    text = monitor.to_json(s, [_lease(s, 2, user="dave")])
    data = json.loads(text)
    assert data["format"] == "arignote-snapshot/1"
    assert data["leases"] == [{"key": gpu_key(s.gpus[2]), "index": 2, "pid": 4242, "user": "dave",
                               "host": "gpu-box", "start": 1_763_726_400.0, "command": "python sweep.py",
                               "uid": 1001}]
    assert data["gpus"][3]["temperature"] is None and data["gpus"][2]["processes"][1]["user"] is None
    assert nvml.from_json(text) == s  # what --json writes is what --inventory reads
    stripped = json.loads(monitor.to_json(s, processes=False))
    assert all(g["processes"] == [] for g in stripped["gpus"])


def test_minimal_hand_written_inventory(tmp_path):
    path = tmp_path / "inv.json"
    path.write_text(json.dumps({"gpus": [{"index": 1, "memory_total": 100}, {"index": 0}]}))
    s = nvml.load(path)
    assert [g.index for g in s.gpus] == [0, 1]
    assert s.gpus[1].memory_total == 100 and s.gpus[1].memory_used is NA and s.gpus[0].name is NA


@pytest.mark.parametrize("content, message", [
    ("{not json", "not valid JSON"),
    ('{"gpus": [{"name": "x"}]}', "gpus[0]: missing 'index'"),
    ('{"gpus": [{"index": 0}, {"index": 0}]}', "repeat"),
    ('{"format": "other/2", "gpus": []}', "format 'other/2'"),
    ('{"gpus": {"index": 0}}', "'gpus' must be a list"),
    ('{"gpus": [{"index": 0, "processes": [{"user": "x"}]}]}', "processes[0]: missing 'pid'"),
])
def test_bad_inventory_names_file_and_key(tmp_path, content, message):
    path = tmp_path / "inv.json"
    path.write_text(content)
    with pytest.raises(SnapshotFormatError) as err:
        nvml.load(path)
    assert message in str(err.value) and str(path) in str(err.value)


# --------------------------------------------------------------------------- NVML through a fake pynvml


class _NVMLError(Exception):
    pass


class _NotSupported(_NVMLError):
    pass


def _fake_pynvml(gpus: int = 2):
    """Enough of pynvml for snapshot(): GPU 1 supports neither power nor utilization (n/a)."""
    m = types.SimpleNamespace(NVMLError=_NVMLError, NVMLError_NotSupported=_NotSupported,
                              NVMLError_LibraryNotFound=type("LNF", (_NVMLError,), {}),
                              NVMLError_DriverNotLoaded=type("DNL", (_NVMLError,), {}),
                              NVMLError_NoPermission=type("NP", (_NVMLError,), {}),
                              NVML_TEMPERATURE_GPU=0, calls=[])

    def unsupported_on_1(value):
        def fn(h, *a):
            if h == 1:
                raise _NotSupported()
            return value(h)
        return fn

    proc = types.SimpleNamespace
    m.nvmlInit = lambda: m.calls.append("init")
    m.nvmlShutdown = lambda: m.calls.append("shutdown")
    m.nvmlDeviceGetCount = lambda: gpus
    m.nvmlDeviceGetHandleByIndex = lambda i: i
    m.nvmlSystemGetDriverVersion = lambda: "550.54.15"
    m.nvmlSystemGetCudaDriverVersion = lambda: 12040
    m.nvmlDeviceGetUUID = lambda h: f"GPU-fake-{h}"
    m.nvmlDeviceGetName = lambda h: b"Fake GPU"  # old pynvml returns bytes
    m.nvmlDeviceGetPciInfo = lambda h: proc(busId=f"00000000:0{h + 1}:00.0".encode())
    m.nvmlDeviceGetTemperature = lambda h, sensor: 50 + h
    m.nvmlDeviceGetPowerUsage = unsupported_on_1(lambda h: 123456)
    m.nvmlDeviceGetEnforcedPowerLimit = unsupported_on_1(lambda h: 300000)
    m.nvmlDeviceGetMemoryInfo = lambda h: proc(used=(h + 1) << 30, total=16 << 30, free=(15 - h) << 30)
    m.nvmlDeviceGetUtilizationRates = unsupported_on_1(lambda h: proc(gpu=42, memory=7))
    me = os.getpid()
    m.nvmlDeviceGetComputeRunningProcesses = lambda h: ([proc(pid=me, usedGpuMemory=1 << 30),
                                                         proc(pid=2**22 + 7, usedGpuMemory=None)]
                                                        if h == 0 else [])
    m.nvmlDeviceGetGraphicsRunningProcesses = lambda h: [proc(pid=me, usedGpuMemory=None)] if h == 0 else []
    return m


def test_snapshot_through_nvml_with_unsupported_readings(monkeypatch):
    fake = _fake_pynvml()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    nvml.close()
    s = nvml.snapshot(cpu_interval=None)
    assert fake.calls == ["init"]  # the session stays open for the next read (tests/test_nvml_session.py)
    nvml.close()
    assert fake.calls == ["init", "shutdown"]
    assert s.nvml_error is None and s.driver_version == "550.54.15" and s.cuda_driver_version == "12.4"
    g0, g1 = s.gpus
    assert (g0.index, g0.uuid, g0.name, g0.pci_bus_id) == (0, "GPU-fake-0", "Fake GPU", "00000000:01:00.0")
    assert (g0.power_draw, g0.power_limit, g0.utilization_gpu, g0.temperature) == (123.456, 300.0, 42, 50)
    assert g0.memory_used == 1 << 30 and g0.memory_free == 15 << 30
    assert g1.power_draw is NA and g1.utilization_gpu is NA and g1.utilization_memory is NA
    assert g1.temperature == 51 and g1.processes == ()
    mine, gone = g0.processes
    import getpass

    assert (mine.pid, mine.user, mine.gpu_memory) == (os.getpid(), getpass.getuser(), 1 << 30)
    assert mine.kind == "C+G"
    assert "pytest" in mine.command or "python" in mine.command
    assert (gone.user, gone.gpu_memory, gone.command) == (NA, NA, NA)  # no such process: n/a
    text = monitor.render_text(s)
    row1 = next(line for line in text.splitlines() if "00000000:02:00.0" in line)
    assert cells(row1)[3:7] == ["51C", "n/a", "2048 / 16384 MiB", "n/a"]


def test_snapshot_without_driver_is_a_value_not_an_exception(monkeypatch):
    fake = _fake_pynvml()

    def fail():
        raise fake.NVMLError_DriverNotLoaded()

    fake.nvmlInit = fail
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    s = nvml.snapshot(cpu_interval=None)
    assert s.gpus == ()
    assert s.nvml_error.startswith("no NVIDIA driver found: the NVIDIA kernel driver is not loaded")
    assert s.host.memory_total > 0 and s.host.cpu_count >= 1


# --------------------------------------------------------------------------- the command


def _run(lease_dir, *args):
    return subprocess.run([sys.executable, "-m", "arignote", "smi", *args], capture_output=True, text=True,
                          env=child_env(lease_dir), timeout=60)


def test_smi_on_this_machine_exits_0_with_the_no_driver_line(lease_dir):
    if not nvml.snapshot(cpu_interval=None).nvml_error:
        pytest.skip("this machine has a working NVIDIA driver")
    out = _run(lease_dir)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.replace("\n ", " ").splitlines()
    assert lines[0].startswith("CPU ") and " threads" in lines[0] and "RAM " in lines[0]
    assert sum("no NVIDIA driver found: " in line for line in lines) == 1
    data = json.loads(_run(lease_dir, "--json").stdout)
    assert data["gpus"] == [] and data["nvml_error"].startswith("no NVIDIA driver found: ")


def test_smi_does_not_import_torch(lease_dir):
    code = ("import sys; from arignote.cli import main; rc = main(['smi', '--inventory', sys.argv[1]]); "
            "bad = sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')); "
            "print('TORCH', bad, rc)")
    out = subprocess.run([sys.executable, "-c", code, str(FOUR_GPUS)], capture_output=True, text=True,
                         env=child_env(lease_dir), timeout=60)
    assert out.stdout.splitlines()[-1] == "TORCH [] 0", out.stderr
    code = code.replace("'--inventory', sys.argv[1]", "'--json'")
    out = subprocess.run([sys.executable, "-c", code, "x"], capture_output=True, text=True,
                         env=child_env(lease_dir), timeout=60)
    assert out.stdout.splitlines()[-1] == "TORCH [] 0", out.stderr


def test_smi_json_is_what_inventory_reads(lease_dir, tmp_path):
    s = snap(gpu(0, used_gib=3), gpu(1, util=NA))
    inv = write(tmp_path / "inv.json", s)
    out = _run(lease_dir, "--json", "--inventory", str(inv))
    assert out.returncode == 0
    assert nvml.from_json(out.stdout) == s
    table = _run(lease_dir, "--inventory", str(inv), "--no-processes")
    assert table.returncode == 0 and "Test GPU" in table.stdout and "Processes" not in table.stdout


def test_smi_shows_live_leases(lease_dir, capsys):
    from arignote import share

    with share.acquire(1, snapshot=str(FOUR_GPUS)):
        assert cli.main(["smi", "--json", "--inventory", str(FOUR_GPUS)]) == 0
        data = json.loads(capsys.readouterr().out)
    assert [(x["index"], x["pid"]) for x in data["leases"]] == [(1, os.getpid())]


@pytest.mark.parametrize("args, message", [
    (["--watch", "0"], "must be > 0"),
    (["--watch", "1", "--json"], "do not combine"),
    (["--inventory", "/nonexistent.json"], "cannot be read"),
])
def test_smi_bad_input_exits_2(lease_dir, capsys, args, message):
    assert cli.main(["smi", *args]) == 2
    assert message in capsys.readouterr().err


def test_watch_redraws_from_fresh_snapshots():
    reads = []

    def read():
        reads.append(1)
        return snap(gpu(0, util=len(reads) * 10)), []

    buf = io.StringIO()
    monitor.watch(read, interval=0.01, console=Console(file=buf, width=140, force_terminal=False),
                  iterations=3)
    assert len(reads) == 3
    assert "30%" in buf.getvalue()


@pytest.mark.gpu
def test_real_nvml_snapshot_lists_the_gpus():
    s = nvml.snapshot()
    assert s.nvml_error is None and s.gpus and s.driver_version is not NA
    assert [g.index for g in s.gpus] == list(range(len(s.gpus)))
    assert all(g.memory_total is not NA and g.memory_total > 0 and g.pci_bus_id is not NA for g in s.gpus)
    assert nvml.from_json(nvml.to_json(s)) == s


def test_cpu_use_excludes_our_own_process(monkeypatch):
    import psutil

    class Me:
        def cpu_percent(self, interval=None):
            return 50.0  # half of one thread: our own start-up

    monkeypatch.setitem(nvml._CPU_WINDOW, "self", Me())
    monkeypatch.setitem(nvml._CPU_WINDOW, "start", 0.0)  # window opened long ago: no sleep
    monkeypatch.setattr(psutil, "cpu_percent", lambda interval=None: 60.0)
    monkeypatch.setattr(psutil, "cpu_count", lambda logical=True: 2)
    assert nvml.host_snapshot(cpu_interval=0.03).cpu_percent == 35.0  # 60% of 2 threads minus 25%
    assert nvml._CPU_WINDOW["start"] > 0  # a new window started


# --------------------------------------------------------------------------- GPU processes' jobs (issue 19)


def _run_record(lease_dir, pid, **kw):
    """A status record of a running fit by ``pid`` (as the RunStatus callback writes it)."""

    import psutil

    from arignote.share import status

    start = psutil.Process(pid).create_time() + 0.5  # the record is younger than its process
    rec = {"format": status.FORMAT, "pid": pid, "start": start, "state": "running", "user": "me",
           "host": __import__("socket").gethostname(), "script": "train_cnn.py", "epoch": 2, "epochs": 10,
           "step": 5, "steps": 20, "eta": 252.0, "command": "python train_cnn.py", "devices": ["cuda:0"]}
    rec.update(kw)
    folder = lease_dir / "runs"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"run-{os.getuid()}-{pid}-{int(start * 1000)}.json").write_text(json.dumps(rec))
    return rec


def test_smi_shows_the_job_of_arignote_processes(lease_dir, tmp_path, capsys):
    me = os.getpid()
    s = snap(gpu(0, processes=(nvml.GPUProcess(me, "me", 1 << 30, "python train_cnn.py"),
                               nvml.GPUProcess(2**22 + 5, "bob", 1 << 30, "jupyter-lab"))))
    inv = write(tmp_path / "inv.json", s)
    _run_record(lease_dir, me)
    assert cli.main(["smi", "--inventory", str(inv)]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.strip() == "Processes")
    assert cells(lines[head + 1]) == ["GPU", "PID", "Type", "User", "GPU Mem", "Command", "Job"]
    rows = [cells(line) for line in lines[head + 3:] if line.strip()]
    job = "train_cnn.py epoch 3/10 ETA 4m12s"
    assert rows == [["0", str(me), "C", "me", "1024 MiB", "python train_cnn.py", job],
                    ["0", str(2**22 + 5), "C", "bob", "1024 MiB", "jupyter-lab", "-"]]
    assert cli.main(["smi", "--json", "--inventory", str(inv)]) == 0
    data = json.loads(capsys.readouterr().out)
    job = data["gpus"][0]["processes"][0]["job"]
    assert (job["script"], job["epoch"], job["epochs"], job["eta"], job["pid"]) == (
        "train_cnn.py", 2, 10, 252.0, me)
    assert job["text"] == "train_cnn.py epoch 3/10 ETA 4m12s"
    assert data["gpus"][0]["processes"][1]["job"] is None
    assert [r["pid"] for r in data["runs"]] == [me]
    assert nvml.from_json(json.dumps(data)) == s  # the extra keys do not disturb --inventory


def test_smi_without_runs_has_no_job_column_and_ignores_finished_runs(lease_dir, tmp_path, capsys):
    me = os.getpid()
    proc = nvml.GPUProcess(me, "me", 1 << 30, "python x.py")
    inv = write(tmp_path / "inv.json", snap(gpu(0, processes=(proc,))))
    _run_record(lease_dir, me, state="finished", ended=__import__("time").time())
    assert cli.main(["smi", "--inventory", str(inv)]) == 0
    assert "Job" not in capsys.readouterr().out
    assert cli.main(["smi", "--json", "--inventory", str(inv)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["runs"] == [] and data["gpus"][0]["processes"][0]["job"] is None
