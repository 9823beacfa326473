"""The machine snapshot as plain data: host readings, GPUs, processes, and its JSON form.

:mod:`arignote.devices.nvml` fills it from the driver; ``arignote smi --json`` writes it and every
``--inventory FILE`` option reads it back, so selection, rendering and leasing are testable on any
machine. A reading the driver does not support is :data:`NA` (renders ``n/a``, JSON ``null``),
never an exception (nvitop's NA idea).

Example::

    >>> from arignote.devices.snapshot import GPUSnapshot, Snapshot, from_json, to_json
    >>> snap = Snapshot("box", 0.0, gpus=(GPUSnapshot(0, name="Test GPU", memory_total=2**34),))
    >>> from_json(to_json(snap)) == snap, snap.gpus[0].temperature
    (True, NA)
"""

from __future__ import annotations

import json
import os
import re
import socket
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from arignote.errors import ArignoteError

__all__ = [
    "NA",
    "FORMAT",
    "GPUProcess",
    "GPUSnapshot",
    "HostSnapshot",
    "Snapshot",
    "SnapshotFormatError",
    "to_dict",
    "to_json",
    "from_dict",
    "from_json",
    "load",
]

FORMAT = "arignote-snapshot/1"


class _NAType:
    """A reading the driver does not provide: falsy, renders as ``n/a``, JSON ``null``.

    One instance exists (:data:`NA`); compare with ``is NA``.
    """

    _instance: _NAType | None = None

    def __new__(cls) -> _NAType:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NA"

    def __str__(self) -> str:
        return "n/a"

    def __format__(self, spec: str) -> str:
        # keep only fill, alignment and width of a numeric spec such as ">8.1f"
        m = re.match(r"((?:.?[<>=^])?)(\d*)", spec)
        align, width = (m.group(1), m.group(2)) if m else ("", "")
        return format("n/a", align.replace("=", ">") + width)

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "NA"


NA: Any = _NAType()


class SnapshotFormatError(ArignoteError, ValueError):
    """An ``--inventory`` / JSON snapshot that is not usable; the message names the file and key."""


@dataclass(frozen=True)
class GPUProcess:
    """A process using a GPU (nvidia-smi's process table row). ``gpu_memory`` in bytes or NA."""

    pid: int
    user: Any = NA
    gpu_memory: Any = NA
    command: Any = NA
    kind: str = "C"  # C compute, G graphics (nvidia-smi's Type column)


@dataclass(frozen=True)
class GPUSnapshot:
    """One GPU's readings. Memory in bytes, power in watts, temperature in C, utilization in %."""

    index: int
    uuid: Any = NA
    name: Any = NA
    pci_bus_id: Any = NA
    temperature: Any = NA
    power_draw: Any = NA
    power_limit: Any = NA
    memory_used: Any = NA
    memory_total: Any = NA
    utilization_gpu: Any = NA
    utilization_memory: Any = NA
    processes: tuple[GPUProcess, ...] = ()

    @property
    def memory_free(self) -> Any:
        """Total minus used, in bytes (NA when either reading is missing)."""
        if self.memory_total is NA or self.memory_used is NA:
            return NA
        return max(0, self.memory_total - self.memory_used)


@dataclass(frozen=True)
class HostSnapshot:
    """CPU and RAM use of the machine (psutil). ``cpu_percent`` is over all threads, 0-100."""

    cpu_count: Any = NA
    cpu_percent: Any = NA
    load_average: Any = NA
    memory_used: Any = NA
    memory_total: Any = NA


@dataclass(frozen=True)
class Snapshot:
    """The machine at one instant: host readings, GPUs in PCI order, and why NVML failed (if it did)."""

    hostname: str
    time: float
    driver_version: Any = NA
    cuda_driver_version: Any = NA
    host: HostSnapshot = field(default_factory=HostSnapshot)
    gpus: tuple[GPUSnapshot, ...] = ()
    nvml_error: str | None = None


# --------------------------------------------------------------------------- JSON


def _plain(value: Any) -> Any:
    if value is NA:
        return None
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def to_dict(snap: Snapshot) -> dict[str, Any]:
    """The snapshot as JSON-ready data (NA -> None), with a ``format`` tag."""
    data = {"format": FORMAT}
    data.update(_plain(asdict(snap)))
    return data


def to_json(snap: Snapshot, indent: int | None = 2) -> str:
    """Serialise a snapshot (what ``arignote smi --json`` writes; :func:`from_json` reads it back)."""
    return json.dumps(to_dict(snap), indent=indent)


def _build(cls: type, data: Any, where: str, required: tuple[str, ...] = ()) -> Any:
    """A dataclass from a dict: None -> NA, unknown keys ignored, required keys checked."""
    if not isinstance(data, dict):
        raise SnapshotFormatError(f"{where}: expected a JSON object, got {type(data).__name__}")
    for key in required:
        if data.get(key) is None:
            raise SnapshotFormatError(f"{where}: missing '{key}' (see `arignote smi --json` for the format)")
    kwargs = {}
    for f in fields(cls):
        if f.name in data and f.name not in ("processes", "gpus", "host"):
            kwargs[f.name] = NA if data[f.name] is None else data[f.name]
    return cls(**kwargs)


def from_dict(data: Any, where: str = "snapshot") -> Snapshot:
    """Inverse of :func:`to_dict`; missing readings become NA, a missing GPU ``index`` is an error."""
    if not isinstance(data, dict):
        raise SnapshotFormatError(f"{where}: expected a JSON object with a 'gpus' list")
    fmt = data.get("format", FORMAT)
    if fmt != FORMAT:
        raise SnapshotFormatError(f"{where}: format '{fmt}' is not {FORMAT}; "
                                  "re-create it with `arignote smi --json`")
    raw_gpus = data.get("gpus", [])
    if not isinstance(raw_gpus, list):
        raise SnapshotFormatError(f"{where}: 'gpus' must be a list")
    gpus = []
    for n, raw in enumerate(raw_gpus):
        gpu = _build(GPUSnapshot, raw, f"{where}: gpus[{n}]", ("index",))
        procs = tuple(_build(GPUProcess, p, f"{where}: gpus[{n}].processes[{k}]", ("pid",))
                      for k, p in enumerate(raw.get("processes") or []))
        gpus.append(replace(gpu, processes=procs))
    indices = [g.index for g in gpus]
    if len(set(indices)) != len(indices):
        raise SnapshotFormatError(f"{where}: GPU indices {indices} repeat; each GPU needs its own index")
    host = _build(HostSnapshot, data.get("host") or {}, f"{where}: host")
    hostname = data.get("hostname") or socket.gethostname()
    return Snapshot(
        hostname=hostname,
        time=float(data.get("time") or 0.0),
        driver_version=NA if data.get("driver_version") is None else data["driver_version"],
        cuda_driver_version=NA if data.get("cuda_driver_version") is None else data["cuda_driver_version"],
        host=host,
        gpus=tuple(sorted(gpus, key=lambda g: g.index)),
        nvml_error=data.get("nvml_error"),
    )


def from_json(text: str, where: str = "snapshot") -> Snapshot:
    """Parse what :func:`to_json` wrote (or a hand-written inventory with at least GPU indices)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SnapshotFormatError(f"{where}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    return from_dict(data, where)


def load(path: str | os.PathLike[str]) -> Snapshot:
    """Read an ``--inventory FILE`` (a JSON snapshot as ``arignote smi --json`` writes it)."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise SnapshotFormatError(f"inventory file {os.fspath(path)!r} cannot be read: {exc.strerror}; "
                                  "write one with `arignote smi --json > FILE`") from None
    return from_json(text, f"inventory file {os.fspath(path)}")
