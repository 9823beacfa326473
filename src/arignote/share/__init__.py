"""Rules a shared GPU server can live by: pick free GPUs, lease them, never hand one out twice.

* :func:`select_gpus` ranks GPUs by free memory then utilization and returns the best ``n`` that
  pass the filters, skipping GPUs leased by other processes (selection only, nothing is locked).
* :func:`acquire` selects **and** leases atomically (an exclusive ``flock`` per GPU, released by
  the kernel when the process dies, even by ``kill -9``): a :class:`Lease` context manager.
* :func:`select_for_device_spec` is what ``device="free:N"`` calls: select + lease for the life of
  the process.
* :func:`current_leases` lists live leases (``arignote smi`` shows them).

Every function takes ``snapshot=``: a :class:`~arignote.devices.nvml.Snapshot`, the path of a JSON
snapshot (what ``arignote smi --json`` writes; the ``--inventory FILE`` of the CLI) or None for the
live machine through NVML.

Example::

    >>> import arignote
    >>> arignote.select_gpus(2, snapshot="tests/fixtures/smi_4gpus.json")   # doctest: +SKIP
    [1, 3]
    >>> with arignote.share.acquire(2, min_free_memory="10GiB", wait=True) as lease:  # doctest: +SKIP
    ...     train(devices=lease.indices)
"""

from __future__ import annotations

from typing import Any

from arignote.devices import nvml
from arignote.devices.identity import GPUIdentity
from arignote.devices.nvml import GPUSnapshot, Snapshot
from arignote.share.leases import (
    Lease,
    LeaseInfo,
    _source,
    acquire,
    busy_map,
    current_leases,
    gpu_key,
    lease_dir,
)
from arignote.share.select import NoFreeGPUError, ShareError, evaluate, explain, format_mib, parse_size, rank

__all__ = [
    "select_gpus",
    "acquire",
    "select_for_device_spec",
    "current_leases",
    "process_leases",
    "snapshot_from_inventory",
    "Lease",
    "LeaseInfo",
    "ShareError",
    "NoFreeGPUError",
    "parse_size",
    "format_mib",
    "lease_dir",
    "gpu_key",
]

# Leases taken by select_for_device_spec: held until the process exits.
_PROCESS_LEASES: list[Lease] = []


def _resolve(snapshot: Any) -> Snapshot:
    return _source(snapshot)()


def select_gpus(n: int, min_free_memory: Any = None, max_utilization: Any = None, snapshot: Any = None,
                exclude_leased: bool = True) -> list[int]:
    """The best ``n`` GPU indices (PCI order, as nvidia-smi numbers them), best first.

    ``min_free_memory``: a size (:mod:`arignote.sizes`): ``"10GiB"``, ``"50%"`` of each GPU, a bare
    number in MiB; ``max_utilization``: percent 0-100.
    A GPU whose reading is n/a does not pass a filter on that reading. With ``exclude_leased``
    GPUs leased by other processes are skipped. Raises :class:`NoFreeGPUError` listing every GPU
    and why it was skipped when fewer than ``n`` pass. Nothing is locked: use :func:`acquire`.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"number of GPUs must be a whole number >= 1, got {n!r}")
    snap = _resolve(snapshot)
    busy = busy_map(snap, current_leases()) if exclude_leased else {}
    candidates = evaluate(snap, min_free_memory, max_utilization, busy)
    chosen = rank(candidates)
    if len(chosen) < n:
        raise explain(n, snap, candidates)
    return chosen[:n]


def snapshot_from_inventory(inventory: Any) -> Snapshot:
    """A snapshot built from :class:`arignote.devices.Inventory`-like data (``.gpus`` of objects with
    index, name, pci_bus_id, uuid, total_memory, free_memory), for machines where NVML is missing
    but torch sees GPUs. Utilization is n/a there."""
    import socket
    import time

    gpus = tuple(
        GPUSnapshot(index=g.index, uuid=g.uuid or f"index-{g.index}", name=g.name, pci_bus_id=g.pci_bus_id,
                    memory_used=int(g.total_memory - g.free_memory), memory_total=int(g.total_memory))
        for g in inventory.gpus
    )
    return Snapshot(hostname=socket.gethostname(), time=time.time(), gpus=gpus)


def _visible_only(snap: Snapshot, inventory: Any) -> Snapshot:
    """Keep the NVML GPUs this process can use (those in torch's ``inventory``, matched by UUID or
    PCI bus id): under ``CUDA_VISIBLE_DEVICES`` NVML still lists every GPU of the machine."""
    from dataclasses import replace

    visible = list(getattr(inventory, "gpus", ()) or ())
    if not visible or not snap.gpus:
        return snap
    seen = [GPUIdentity.of(g) for g in visible]
    kept = tuple(g for g in snap.gpus if any(GPUIdentity.of(g).same_gpu(t) for t in seen))
    if not kept:
        raise ShareError("none of the GPUs NVML lists matches a GPU torch sees (by UUID or PCI bus id); "
                         "check CUDA_VISIBLE_DEVICES, or name the GPUs instead of free:N (device=cuda0)")
    return replace(snap, gpus=kept)


def _inherited(snap: Snapshot) -> list[int]:
    """GPUs leased by an ancestor of this process (e.g. the ``arignote run`` that started it): the
    lock descriptors were inherited, so they are already ours."""
    import psutil

    try:
        ancestors = {p.pid for p in psutil.Process().parents()}
    except psutil.Error:
        return []
    busy = busy_map(snap, [x for x in current_leases() if x.pid in ancestors], include_own=True)
    return [c.index for c in evaluate(snap) if c.index in busy]


def select_for_device_spec(n: int, inventory: Any = None) -> list[int]:
    """Resolve ``device="free:N"``: select and lease the best ``n`` GPUs for the life of the process.

    Uses live NVML readings when the driver answers (only GPUs in ``inventory``, the devices
    module's :class:`Inventory`, when given), else ``inventory`` itself. GPUs leased by an ancestor
    process (``arignote run``) are used first, without a new lease. Returns NVML (PCI-order)
    indices, ascending. Raises NoFreeGPUError.
    """
    def live() -> Snapshot:
        return _visible_only(nvml.snapshot(processes=False, cpu_interval=None), inventory)

    first = live()
    if not first.gpus and getattr(inventory, "gpus", None):
        first = snapshot_from_inventory(inventory)
        source: Any = first
    else:
        source = live
    inherited = _inherited(first)
    if len(inherited) >= n:
        return sorted(inherited[:n])
    lease = acquire(n, snapshot=source)
    _PROCESS_LEASES.append(lease)
    return sorted(lease.indices)


def process_leases() -> list[Lease]:
    """Leases this process took through :func:`select_for_device_spec` (held until exit)."""
    return [lease for lease in _PROCESS_LEASES if lease.held]
