"""One NVML session per process (devices/nvml.py): smi, dash, GPU leases, doctor and the device-stats
callback all read through ``nvml.session()``; NVML is initialised once and shut down once."""

from __future__ import annotations

import os
import sys
import types

import pytest

from arignote.devices import nvml


class _NVMLError(Exception):
    pass


def _fake(init_fails: bool = False):
    """Two GPUs, every reading supported; ``calls`` records init/shutdown."""
    ns = types.SimpleNamespace
    m = ns(NVMLError=_NVMLError, NVMLError_LibraryNotFound=type("LNF", (_NVMLError,), {}),
           NVMLError_DriverNotLoaded=type("DNL", (_NVMLError,), {}),
           NVMLError_NoPermission=type("NP", (_NVMLError,), {}), NVML_TEMPERATURE_GPU=0, calls=[])

    def init():
        m.calls.append("init")
        if init_fails:
            raise m.NVMLError_DriverNotLoaded()

    m.nvmlInit = init
    m.nvmlShutdown = lambda: m.calls.append("shutdown")
    m.nvmlDeviceGetCount = lambda: 2
    m.nvmlDeviceGetHandleByIndex = lambda i: i
    m.nvmlDeviceGetHandleByUUID = lambda uuid: int(uuid[-1])
    m.nvmlSystemGetDriverVersion = lambda: "550.54.15"
    m.nvmlSystemGetCudaDriverVersion = lambda: 12040
    m.nvmlDeviceGetUUID = lambda h: f"GPU-fake-{h}"
    m.nvmlDeviceGetName = lambda h: "Fake GPU"
    m.nvmlDeviceGetPciInfo = lambda h: ns(busId=f"00000000:0{h + 1}:00.0")
    m.nvmlDeviceGetTemperature = lambda h, sensor: 40
    m.nvmlDeviceGetPowerUsage = lambda h: 100000
    m.nvmlDeviceGetEnforcedPowerLimit = lambda h: 300000
    m.nvmlDeviceGetMemoryInfo = lambda h: ns(used=1 << 30, total=16 << 30, free=15 << 30)
    m.nvmlDeviceGetUtilizationRates = lambda h: ns(gpu=10, memory=5)
    m.nvmlDeviceGetComputeRunningProcesses = lambda h: []
    m.nvmlDeviceGetGraphicsRunningProcesses = lambda h: []
    return m


@pytest.fixture
def fake(monkeypatch, tmp_path):
    from arignote import config

    monkeypatch.setenv("ARIGNOTE_LEASE_DIR", str(tmp_path / "leases"))
    config.reload()
    nvml.close()
    m = _fake()
    monkeypatch.setitem(sys.modules, "pynvml", m)
    yield m
    nvml.close()
    monkeypatch.undo()
    config.reload()


def test_smi_dash_leases_and_doctor_share_one_init(fake):
    from arignote import share
    from arignote.commands import doctor_cmd, smi_cmd
    from arignote.dash import collect

    read = smi_cmd._reader(types.SimpleNamespace(inventory=None, no_processes=False))
    snap, _, _ = read()
    snap_again, _, _ = read()  # `smi --watch`: the next refresh
    state = collect(hours=0)
    ranked = share.select_gpus(1)
    version, count = doctor_cmd.driver_version()
    assert [g.uuid for g in snap.gpus] == [g.uuid for g in snap_again.gpus] == ["GPU-fake-0", "GPU-fake-1"]
    assert len(state["gpus"]) == 2 and state["nvml_error"] is None and len(ranked) == 1
    assert count == 2 and version is not None
    assert fake.calls == ["init"]  # five readers, one nvmlInit, no shutdown yet
    nvml.close()
    nvml.close()  # a second close does nothing
    assert fake.calls == ["init", "shutdown"]


def test_after_close_the_next_reader_opens_a_new_session(fake):
    nvml.snapshot(processes=False, cpu_interval=None)
    nvml.close()
    nvml.snapshot(processes=False, cpu_interval=None)
    assert fake.calls == ["init", "shutdown", "init"]


def test_a_failed_init_is_a_reason_and_is_retried(monkeypatch, fake):
    broken = _fake(init_fails=True)
    monkeypatch.setitem(sys.modules, "pynvml", broken)
    with pytest.raises(nvml.NVMLUnavailable, match="kernel driver is not loaded"):
        nvml.session()
    snap = nvml.snapshot(processes=False, cpu_interval=None)
    assert snap.gpus == () and "kernel driver is not loaded" in snap.nvml_error
    assert broken.calls == ["init", "init"]  # not cached: a driver loaded later is found


def test_a_forked_child_opens_its_own_session(fake, monkeypatch):
    nvml.session()
    parent = os.getpid()
    monkeypatch.setattr(os, "getpid", lambda: parent + 1)  # as a fork's child sees it
    nvml.session()
    nvml.close()  # the child's shutdown
    monkeypatch.setattr(os, "getpid", lambda: parent)
    assert fake.calls == ["init", "init", "shutdown"]


def test_the_device_stats_callback_reads_through_the_session(fake, monkeypatch):
    from arignote.callbacks import device_stats
    from arignote.devices.info import GPUInfo

    gpu = GPUInfo(index=0, name="Fake GPU", pci_bus_id="0000:01:00.0", total_memory=16 << 30,
                  free_memory=15 << 30, capability=(8, 0), uuid="fake-0")
    box = types.SimpleNamespace(gpus=[gpu])
    monkeypatch.setattr(device_stats.inventory, "current_inventory", lambda: box)
    cb = device_stats.DeviceStatsMonitor()
    cb._nvml = cb._open_nvml([0])
    assert cb._read_utilization() == {0: 10.0}
    cb._close_nvml()
    nvml.snapshot(processes=False, cpu_interval=None)
    assert fake.calls == ["init"]
