"""NVML snapshots of the machine's GPUs and their processes, as plain data, without torch.

This is what ``arignote smi`` shows and what GPU selection (:mod:`arignote.share`) ranks. It talks
to the driver through ``pynvml`` (package ``nvidia-ml-py``) and never imports torch, so the smi
command starts in well under a second. A reading the driver does not support is :data:`NA` (renders
as ``n/a``, serialises as JSON ``null``), never an exception (nvitop's NA idea). When NVML cannot
load at all, :func:`snapshot` still returns the CPU/RAM part with ``gpus=()`` and ``nvml_error`` set.

NVML is opened once per process (:func:`session`: ``nvmlInit`` on first use, ``nvmlShutdown`` at
exit or :func:`close`), and every NVML reader of arignote goes through it: snapshots (smi, dash,
GPU leases), the inventory's free memory, ``arignote doctor`` and the device-stats callback. A
``--watch`` or a dashboard refresh does not pay NVML's start-up again.

GPU order is NVML's, which is PCI bus order, i.e. nvidia-smi's order and CUDA's order under
``CUDA_DEVICE_ORDER=PCI_BUS_ID``. The dataclasses and their JSON form live in
:mod:`arignote.devices.snapshot` and are re-exported here.

Example::

    >>> from arignote.devices import nvml
    >>> snap = nvml.snapshot()                       # nvidia-smi -q, in one call
    >>> text = nvml.to_json(snap)                    # what `arignote smi --json` prints
    >>> nvml.from_json(text) == snap                 # what `--inventory FILE` reads
    True
"""

from __future__ import annotations

import atexit
import os
import socket
import threading
import time
from typing import Any

# The data model and its JSON live in snapshot.py; re-exported so `nvml.Snapshot`, `nvml.load`...
# keep working for callers that only know this module.
from arignote.devices.snapshot import (
    FORMAT,
    NA,
    GPUProcess,
    GPUSnapshot,
    HostSnapshot,
    Snapshot,
    SnapshotFormatError,
    from_dict,
    from_json,
    load,
    to_dict,
    to_json,
)
from arignote.errors import ArignoteError

__all__ = [
    "session",
    "close",
    "NVMLUnavailable",
    "NA",
    "GPUProcess",
    "GPUSnapshot",
    "HostSnapshot",
    "Snapshot",
    "snapshot",
    "host_snapshot",
    "prime_cpu",
    "to_json",
    "from_json",
    "from_dict",
    "load",
    "to_dict",
    "SnapshotFormatError",
    "FORMAT",
]


# --------------------------------------------------------------------------- host (psutil)


_CPU_WINDOW: dict[str, Any] = {"start": None, "self": None}


def prime_cpu() -> None:
    """Start a CPU-use window now; the next :func:`host_snapshot` reports the use since then.

    ``arignote smi`` calls it first thing, so its own start-up is the sampling window and it needs
    no extra sleep (its own CPU time is subtracted, see :func:`host_snapshot`).
    """
    import psutil

    if _CPU_WINDOW["self"] is None:
        _CPU_WINDOW["self"] = psutil.Process()
    psutil.cpu_percent(interval=None)
    _CPU_WINDOW["self"].cpu_percent(interval=None)
    _CPU_WINDOW["start"] = time.monotonic()


def _cpu_percent(min_window: float) -> float:
    """Machine CPU use in % of all threads since the window started (at least ``min_window`` s),
    minus this process's own use, then start a new window."""
    import psutil

    if _CPU_WINDOW["start"] is None:
        prime_cpu()
    wait = min_window - (time.monotonic() - _CPU_WINDOW["start"])
    if wait > 0:
        time.sleep(wait)
    total = psutil.cpu_percent(interval=None)
    own = _CPU_WINDOW["self"].cpu_percent(interval=None) / (psutil.cpu_count() or 1)
    _CPU_WINDOW["start"] = time.monotonic()
    return round(max(0.0, total - own), 1)


def host_snapshot(cpu_interval: float | None = 0.05) -> HostSnapshot:
    """CPU and RAM use of the machine (``top``/``free`` in one reading).

    CPU use covers the time since :func:`prime_cpu` or the previous snapshot, at least
    ``cpu_interval`` seconds (None: no minimum), without this process's own CPU time.
    """
    import psutil

    cpu = _cpu_percent(cpu_interval or 0.0)
    mem = psutil.virtual_memory()
    try:
        load = round(os.getloadavg()[0], 2)
    except OSError:
        load = NA
    return HostSnapshot(
        cpu_count=psutil.cpu_count() or NA,
        cpu_percent=cpu,
        load_average=load,
        memory_used=int(mem.total - mem.available),
        memory_total=int(mem.total),
    )


# --------------------------------------------------------------------------- the NVML session


class NVMLUnavailable(ArignoteError, RuntimeError):
    """NVML cannot be used here; ``str()`` says why (no package, no driver, no permission)."""


_SESSION: dict[str, Any] = {"lib": None, "pid": None}
_SESSION_LOCK = threading.Lock()


def session() -> Any:
    """The ``pynvml`` module with NVML initialised: the first call of the process runs ``nvmlInit``,
    later ones reuse it (a forked child initialises its own); :func:`close` (registered at exit)
    shuts it down. Raises :class:`NVMLUnavailable` with the reason when NVML cannot load; the next
    call tries again (a driver loaded later is found).

    Example (needs an NVIDIA driver: skipped by the doctest run)::

        >>> pynvml = session()                      # doctest: +SKIP
        >>> pynvml.nvmlDeviceGetCount()             # doctest: +SKIP
        2
    """
    try:
        import pynvml  # the nvidia-ml-py package: optional where only a CPU is used
    except ImportError as exc:
        raise NVMLUnavailable("the nvidia-ml-py package (pynvml) is not installed") from exc
    with _SESSION_LOCK:
        if _SESSION["lib"] is pynvml and _SESSION["pid"] == os.getpid():
            return pynvml
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            raise NVMLUnavailable(_no_driver_reason(pynvml, exc)) from exc
        if _SESSION["pid"] is None:
            atexit.register(close)
        _SESSION.update(lib=pynvml, pid=os.getpid())
        return pynvml


def close() -> None:
    """Shut the session down (``nvmlShutdown``); the next :func:`session` opens a new one."""
    with _SESSION_LOCK:
        lib, pid = _SESSION["lib"], _SESSION["pid"]
        _SESSION["lib"] = None
        if lib is not None and pid == os.getpid():
            try:
                lib.nvmlShutdown()
            except lib.NVMLError:
                pass


# --------------------------------------------------------------------------- snapshots


def _no_driver_reason(pynvml: Any, exc: BaseException) -> str:
    """A one-line why for an NVML load failure, by error type (never by message text)."""
    if isinstance(exc, pynvml.NVMLError_LibraryNotFound):
        return ("libnvidia-ml.so.1 could not be loaded (no NVIDIA driver installed, or it is not "
                "visible in this container)")
    if isinstance(exc, pynvml.NVMLError_DriverNotLoaded):
        return "the NVIDIA kernel driver is not loaded (check `lsmod | grep nvidia`)"
    if isinstance(exc, pynvml.NVMLError_NoPermission):
        return "no permission to open the NVIDIA device files (/dev/nvidia*)"
    return f"NVML failed to initialise ({exc})"


def _reader(pynvml: Any):
    """``read(fn, *args)``: call an NVML query, NA when the driver does not support it."""

    def read(fn, *args):
        try:
            value = fn(*args)
        except pynvml.NVMLError:
            return NA
        if isinstance(value, bytes):  # older pynvml returns C strings undecoded
            value = value.decode(errors="replace")
        return NA if value is None else value

    return read


def _processes(pynvml: Any, handle: Any, read) -> tuple[GPUProcess, ...]:
    """Compute and graphics processes on one GPU, with user and command line from psutil."""
    import psutil

    rows: dict[int, GPUProcess] = {}
    for kind, query in (("C", pynvml.nvmlDeviceGetComputeRunningProcesses),
                        ("G", pynvml.nvmlDeviceGetGraphicsRunningProcesses)):
        found = read(query, handle)
        for info in found or ():
            pid = int(info.pid)
            memory = NA if info.usedGpuMemory is None else int(info.usedGpuMemory)
            if pid in rows:  # a process with both contexts: nvidia-smi shows "C+G"
                old = rows[pid]
                rows[pid] = GPUProcess(pid, old.user, old.gpu_memory, old.command, "C+G")
                continue
            user, command = NA, NA
            try:
                proc = psutil.Process(pid)
                user = proc.username()
                command = " ".join(proc.cmdline()) or proc.name()
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                pass  # another PID namespace or another user's hidden process: n/a, like nvitop
            rows[pid] = GPUProcess(pid, user, memory, command, kind)
    return tuple(rows[p] for p in sorted(rows))


def _gpu(pynvml: Any, index: int, processes: bool) -> GPUSnapshot:
    read = _reader(pynvml)
    handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    memory = read(pynvml.nvmlDeviceGetMemoryInfo, handle)
    util = read(pynvml.nvmlDeviceGetUtilizationRates, handle)
    pci = read(pynvml.nvmlDeviceGetPciInfo, handle)
    power = read(pynvml.nvmlDeviceGetPowerUsage, handle)  # milliwatts
    limit = read(pynvml.nvmlDeviceGetEnforcedPowerLimit, handle)
    bus_id = NA if pci is NA else pci.busId
    if isinstance(bus_id, bytes):
        bus_id = bus_id.decode()
    return GPUSnapshot(
        index=index,
        uuid=read(pynvml.nvmlDeviceGetUUID, handle),
        name=read(pynvml.nvmlDeviceGetName, handle),
        pci_bus_id=bus_id,
        temperature=read(pynvml.nvmlDeviceGetTemperature, handle, pynvml.NVML_TEMPERATURE_GPU),
        power_draw=NA if power is NA else power / 1000.0,
        power_limit=NA if limit is NA else limit / 1000.0,
        memory_used=NA if memory is NA else int(memory.used),
        memory_total=NA if memory is NA else int(memory.total),
        utilization_gpu=NA if util is NA else int(util.gpu),
        utilization_memory=NA if util is NA else int(util.memory),
        processes=_processes(pynvml, handle, read) if processes else (),
    )


def snapshot(processes: bool = True, cpu_interval: float | None = 0.05) -> Snapshot:
    """Read every GPU (``nvidia-smi -q``), its processes, and the host's CPU/RAM use.

    Never raises for a missing driver: the result then has ``gpus=()`` and
    ``nvml_error="no NVIDIA driver found: <why>"``.
    """
    host = host_snapshot(cpu_interval)
    base = dict(hostname=socket.gethostname(), time=time.time(), host=host)
    try:
        pynvml = session()
    except NVMLUnavailable as exc:
        return Snapshot(**base, nvml_error=f"no NVIDIA driver found: {exc}")
    try:
        read = _reader(pynvml)
        cuda = read(pynvml.nvmlSystemGetCudaDriverVersion)  # e.g. 12040 -> "12.4"
        count = pynvml.nvmlDeviceGetCount()
        gpus = tuple(_gpu(pynvml, i, processes) for i in range(count))
        return Snapshot(
            **base,
            driver_version=read(pynvml.nvmlSystemGetDriverVersion),
            cuda_driver_version=NA if cuda is NA else f"{cuda // 1000}.{cuda % 1000 // 10}",
            gpus=gpus,
        )
    except pynvml.NVMLError as exc:  # the driver went away mid-read (e.g. GPU fell off the bus)
        close()  # the next read starts a fresh session
        return Snapshot(**base, nvml_error=f"NVML error while reading the GPUs: {exc}")
