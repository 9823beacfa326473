"""DeviceStatsMonitor: memory peaks and mean GPU utilization in each epoch's logs and History."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import torch

from arignote import config, devices
from arignote.callbacks import Callback
from arignote.callbacks.device_stats import DeviceStatsMonitor, _reset_hwm
from arignote.models import Model


def _model() -> Model:
    model = Model(torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)))
    model.compile("sgd", "mse")
    return model


def _data(n=64):
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, 4)).astype("float32"), rng.normal(size=(n, 1)).astype("float32")


class Hog(Callback):
    """Holds ``mib`` MiB of touched memory during one epoch's training."""

    def __init__(self, epoch: int, mib: int) -> None:
        super().__init__()
        self.epoch, self.mib, self.block = epoch, mib, None

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == self.epoch:
            self.block = np.ones(self.mib * 1024 * 1024, dtype=np.uint8)

    def on_epoch_end(self, epoch, logs=None):
        if self.block is not None:
            self.block = None
            # memory.host_cache keeps freed memory resident (mmap off): hand it back, as a user would
            devices.release_host_memory()


def test_cpu_epoch_logs_carry_the_rss_peak_of_that_epoch():
    if not _reset_hwm():
        pytest.skip("this kernel does not allow resetting the RSS high-water mark")
    x, y = _data()
    # earlier tests' freed memory, kept resident by memory.host_cache, would serve Hog's block
    # without raising the RSS: hand it back first
    devices.release_host_memory()
    with config.override(device="cpu"):
        model = _model()
        # the monitor runs before Hog's on_epoch_end frees the block, after its on_epoch_begin
        history = model.fit(x, y, batch_size=16, epochs=3, verbose=0,
                            callbacks=[Hog(epoch=1, mib=120), DeviceStatsMonitor()])
    peaks = history.history["cpu_peak_rss_mib"]
    assert len(peaks) == 3 and all(p > 10 for p in peaks)
    assert peaks[1] > peaks[0] + 100 and peaks[1] > peaks[2] + 100  # the window resets every epoch
    assert not any(k.startswith("cuda") for k in history.history)


class FakeGPUStats(DeviceStatsMonitor):
    """Reports for cuda:0 and cuda:1 with NVML readings replaced by a script (CPU-only test)."""

    def __init__(self, readings, **kw):
        super().__init__(devices=["cuda:0", "cuda:1"], **kw)
        self.readings = readings
        self.opened = self.closed = 0

    def _open_nvml(self, indices):
        self.opened += 1
        return ("fake", {i: i for i in indices})

    def _read_utilization(self):
        return {i: float(v) for i, v in enumerate(self.readings)}

    def _close_nvml(self):
        self.closed += 1
        self._nvml = None


def test_gpu_keys_peaks_and_mean_utilization(monkeypatch):
    from arignote.devices import cuda

    peaks = {0: (3 * 2**20, 8 * 2**20), 1: (2**20, 2 * 2**20)}
    resets = []
    monkeypatch.setattr(cuda, "peak_memory", lambda i: peaks[i])
    monkeypatch.setattr(cuda, "reset_peak_memory", lambda i: resets.append(i))
    readings = [50, 10]
    cb = FakeGPUStats(readings, interval=0.01)
    cb.on_train_begin()
    assert cb._sampler is not None and cb._sampler.is_alive()
    logs = {"loss": 1.0}
    cb.on_epoch_begin(0)
    time.sleep(0.1)
    readings[0] = 100  # the second half of the epoch is busier
    time.sleep(0.1)
    cb.on_epoch_end(0, logs)
    assert resets == [0, 1]
    assert logs["cuda0_peak_allocated_mib"] == 3.0 and logs["cuda0_peak_reserved_mib"] == 8.0
    assert logs["cuda1_peak_allocated_mib"] == 1.0 and logs["cuda1_utilization"] == 10.0
    assert 60 < logs["cuda0_utilization"] < 90  # a mean over the epoch, not the last sample
    assert "cpu_peak_rss_mib" not in logs
    cb.on_train_end()
    assert cb._sampler is None and cb.closed == 1
    assert not any(t.name == "arignote-device-stats" for t in threading.enumerate())


def test_no_nvml_means_no_utilization_key(monkeypatch):
    from arignote.devices import cuda

    monkeypatch.setattr(cuda, "peak_memory", lambda i: (0, 0))
    monkeypatch.setattr(cuda, "reset_peak_memory", lambda i: None)

    class NoNVML(DeviceStatsMonitor):
        def _open_nvml(self, indices):
            return None

    cb = NoNVML(devices=["cuda:0"])
    cb.on_train_begin()
    logs = {}
    cb.on_epoch_begin(0)
    cb.on_epoch_end(0, logs)
    cb.on_train_end()
    assert sorted(logs) == ["cuda0_peak_allocated_mib", "cuda0_peak_reserved_mib"]


def test_short_epoch_still_gets_one_sample():
    cb = FakeGPUStats([42, 7], interval=60)  # the thread never samples on its own
    cb.on_train_begin()
    logs = {}
    cb._gpus = []  # utilization only
    cb.on_epoch_begin(0)
    cb.on_epoch_end(0, logs)
    cb.on_train_end()
    assert logs == {"cuda0_utilization": 42.0, "cuda1_utilization": 7.0}


def test_default_devices_are_the_model_parameters_devices():
    model = _model()
    cb = DeviceStatsMonitor()
    cb.set_model(model)
    assert cb._devices() == ["cpu"]


@pytest.mark.parametrize("bad", [0, -1.0])
def test_bad_interval(bad):
    with pytest.raises(ValueError, match="interval"):
        DeviceStatsMonitor(interval=bad)


@pytest.mark.gpu
def test_real_gpu_peak_memory_is_recorded():
    x, y = _data(256)
    with config.override(device="cuda0"):
        history = _model().fit(x, y, batch_size=64, epochs=2, verbose=0, callbacks=[DeviceStatsMonitor()])
    assert all(v > 0 for v in history.history["cuda0_peak_allocated_mib"])
    assert all(v >= a for v, a in zip(history.history["cuda0_peak_reserved_mib"],
                                      history.history["cuda0_peak_allocated_mib"]))
