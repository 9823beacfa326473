"""``DeviceStatsMonitor``: each epoch's device memory peaks and GPU load.

``fit`` always runs one with ``into_logs=False``: the figures go to ``model.device_stats`` (a dict,
the last epoch's figures) and into the progress line, and ``History``/CSV logs keep only Keras
keys (``loss``, metrics, ``val_*``, ``lr``). Pass ``DeviceStatsMonitor()`` yourself (opt-in) to have
them in every epoch's logs too, and so in ``History`` and CSV files. The keys, for every device the
model's parameters live on:

* ``cuda{i}_peak_allocated_mib`` / ``cuda{i}_peak_reserved_mib``: the peak memory torch's
  allocator had allocated / reserved on GPU ``i`` during the epoch (``torch.cuda.max_memory_*``,
  reset at each epoch start through :mod:`arignote.devices.cuda`);
* ``cuda{i}_utilization``: the mean GPU utilization in % over the epoch (nvidia-smi's
  ``utilization.gpu``), sampled by a background thread through NVML; only where NVML answers;
* ``cpu_peak_rss_mib``: on CPU, this process's resident-memory high-water mark during the epoch
  (Linux ``VmHWM``, reset at each epoch start through ``/proc/self/clear_refs``). Where the kernel
  does not allow the reset the key is ``cpu_process_peak_rss_mib``: the peak since process start.

Example::

    >>> from arignote.callbacks.device_stats import DeviceStatsMonitor
    >>> history = model.fit(x, y, epochs=2)                                      # doctest: +SKIP
    >>> model.device_stats                                                       # doctest: +SKIP
    {'cpu_peak_rss_mib': 415.0}
    >>> history = model.fit(x, y, epochs=2, callbacks=[DeviceStatsMonitor()])   # doctest: +SKIP
    >>> history.history["cpu_peak_rss_mib"]                                      # doctest: +SKIP
    [412.3, 415.0]
"""

from __future__ import annotations

import contextlib
import re
import resource
import threading
from collections.abc import Iterable
from typing import Any

from arignote.callbacks.base import Callback
from arignote.devices import cuda, inventory
from arignote.devices.identity import GPUIdentity

__all__ = ["DeviceStatsMonitor"]

_MIB = 1024 * 1024


def _read_hwm_kib() -> int | None:
    """VmHWM of this process in KiB (Linux), None elsewhere."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            m = re.search(r"^VmHWM:\s+(\d+)\s+kB", fh.read(), re.M)
    except OSError:
        return None
    return int(m.group(1)) if m else None


def _reset_hwm() -> bool:
    """Start a new RSS high-water-mark window (``echo 5 > /proc/self/clear_refs``, Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
    except OSError:
        return False
    return _read_hwm_kib() is not None


class _Sampler(threading.Thread):
    """Polls ``read()`` (GPU index -> utilization %) every ``interval`` s; sums per epoch window."""

    def __init__(self, read: Any, interval: float) -> None:
        super().__init__(name="arignote-device-stats", daemon=True)
        self.read, self.interval = read, interval
        self.stop_event = threading.Event()
        self.lock = threading.Lock()
        self.sums: dict[int, float] = {}
        self.counts: dict[int, int] = {}

    def sample(self) -> None:
        values = self.read()
        with self.lock:
            for index, value in values.items():
                self.sums[index] = self.sums.get(index, 0.0) + value
                self.counts[index] = self.counts.get(index, 0) + 1

    def run(self) -> None:
        while not self.stop_event.wait(self.interval):
            self.sample()

    def take(self) -> dict[int, float]:
        """Mean per GPU since the last call (a final sample if the window had none), then reset."""
        if not self.counts:
            self.sample()
        with self.lock:
            means = {i: self.sums[i] / self.counts[i] for i in self.counts if self.counts[i]}
            self.sums, self.counts = {}, {}
        return means


class DeviceStatsMonitor(Callback):
    """Per-device memory peaks and mean GPU utilization of every epoch: in ``model.device_stats``
    and, with ``into_logs=True`` (the default when you pass one), in the epoch's logs.

    ``interval``: seconds between NVML utilization samples. ``devices``: the devices to report
    (``"cuda:0"``, ``torch.device`` ...); default: every device holding the model's parameters.
    ``utilization``: sample GPU utilization with a background NVML thread (``fit``'s own monitor
    does not). The progress line shows the figures whichever way they are kept.
    """

    def __init__(self, interval: float = 0.5, devices: Iterable[Any] | None = None,
                 into_logs: bool = True, utilization: bool = True) -> None:
        super().__init__()
        if not interval > 0:
            raise ValueError(f"DeviceStatsMonitor: interval={interval!r} must be > 0 seconds")
        self.interval = float(interval)
        self.into_logs = bool(into_logs)
        self.utilization = bool(utilization)
        self._wanted = None if devices is None else [str(d) for d in devices]
        self._gpus: list[int] = []
        self._cpu = False
        self._rss_resets = False
        self._sampler: _Sampler | None = None
        self._nvml: Any = None

    # ------------------------------------------------------------------ which devices

    def _devices(self) -> list[str]:
        if self._wanted is not None:
            return self._wanted
        module = getattr(self.model, "module", None)
        params = module.parameters() if module is not None else ()
        found = sorted({str(p.device) for p in params})
        return found or ["cpu"]

    @staticmethod
    def _cuda_index(name: str) -> int | None:
        m = re.fullmatch(r"cuda(?::(\d+))?", name)
        if not m:
            return None
        return int(m.group(1) or 0)

    # ------------------------------------------------------------------ NVML (overridable in tests)

    def _open_nvml(self, indices: list[int]) -> Any:
        """Handles of the GPUs (torch indices) through the process's NVML session, or None when NVML
        is absent."""
        # import time: NVML and its snapshot model load when a GPU's utilization is first read
        from arignote.devices import nvml

        try:
            pynvml = nvml.session()
        except nvml.NVMLUnavailable:
            return None
        infos = {g.index: g for g in inventory.current_inventory().gpus}
        handles = {}
        for i in indices:
            info = infos.get(i)
            with contextlib.suppress(pynvml.NVMLError):
                if info is not None and info.uuid:
                    handles[i] = pynvml.nvmlDeviceGetHandleByUUID(GPUIdentity.of(info).cuda_name)
                elif info is not None and info.pci_bus_id:
                    handles[i] = pynvml.nvmlDeviceGetHandleByPciBusId(info.pci_bus_id)
        return (pynvml, handles) if handles else None

    def _read_utilization(self) -> dict[int, float]:
        pynvml, handles = self._nvml
        out = {}
        for index, handle in handles.items():
            with contextlib.suppress(pynvml.NVMLError):  # unsupported reading: no sample, no key
                out[index] = float(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)
        return out

    def _close_nvml(self) -> None:
        self._nvml = None  # the handles only: the session stays open for the process (devices/nvml.py)

    # ------------------------------------------------------------------ hooks

    def on_train_begin(self, logs=None) -> None:
        names = self._devices()
        self._gpus = [i for i in map(self._cuda_index, names) if i is not None]
        self._cpu = "cpu" in names
        if self._gpus and self.utilization:
            self._nvml = self._open_nvml(self._gpus)
            if self._nvml is not None:
                self._sampler = _Sampler(self._read_utilization, self.interval)
                self._sampler.start()

    def on_epoch_begin(self, epoch, logs=None) -> None:
        if self._gpus:
            for i in self._gpus:
                cuda.reset_peak_memory(i)
        if self._sampler is not None:
            self._sampler.take()  # drop samples taken between epochs (validation of the last one)
        if self._cpu:
            self._rss_resets = _reset_hwm()

    def on_epoch_end(self, epoch, logs=None) -> None:
        figures = self._figures()
        if self.model is not None:
            self.model.device_stats = figures
        if self.into_logs and logs is not None:
            logs.update(figures)

    def _figures(self) -> dict[str, float]:
        logs: dict[str, float] = {}
        if self._gpus:
            for i in self._gpus:
                allocated, reserved = cuda.peak_memory(i)
                logs[f"cuda{i}_peak_allocated_mib"] = allocated / _MIB
                logs[f"cuda{i}_peak_reserved_mib"] = reserved / _MIB
        if self._sampler is not None:
            for i, mean in sorted(self._sampler.take().items()):
                logs[f"cuda{i}_utilization"] = mean
        if self._cpu:
            kib = _read_hwm_kib() if self._rss_resets else None
            if kib is not None:
                logs["cpu_peak_rss_mib"] = kib / 1024
            else:  # ru_maxrss is KiB on Linux: the peak since the process started
                logs["cpu_process_peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return logs

    def on_train_end(self, logs=None) -> None:
        if self._sampler is not None:
            self._sampler.stop_event.set()
            self._sampler.join(timeout=5)
            self._sampler = None
        self._close_nvml()
