"""Strategies: how ``fit`` spreads work over devices (contract in docs/architecture.md).

``strategy_for(devices)`` is the one resolution function:

- one device (and ``cpu.processes`` = 1, not under a multi-process torchrun) -> :class:`SingleDevice`;
- several GPUs (``device=all``, ``cuda0,cuda1``, ``free:2``) -> DDP over them with NCCL, one
  process per GPU;
- ``device=cpu`` with ``cpu.processes=N`` > 1 -> DDP with gloo over N CPU processes, each with
  ``cpu.threads`` (or cores / N) threads. Never chosen silently: on a 2-core box 2 processes x 1
  thread measured slower than 1 x 2 (benchmarks/RESULTS.md);
- under ``torchrun`` with ``WORLD_SIZE`` > 1 -> DDP over the processes torchrun started.

Placement contexts (``with arignote.device("dev1"):``) live in :mod:`arignote.parallel.placement`.

Example::

    >>> strategy_for(["cpu"]).world_size
    1
"""

from __future__ import annotations

import os
from typing import Any

from arignote import config
from arignote.config import ConfigError
from arignote.devices import Device
from arignote.parallel.env import DistEnv
from arignote.parallel.placement import gpus_per_replica, parse_contexts, placed_gpus
from arignote.parallel.placement import layer_device as _layer_device
from arignote.parallel.single import SingleDevice

__all__ = ["SingleDevice", "strategy_for", "check_layout", "layer_device", "placed_gpus"]


def _is_cuda(device: Any) -> bool:
    if hasattr(device, "is_cuda"):
        return bool(device.is_cuda)
    return str(device).startswith("cuda")


def _as_device(device: Any) -> Any:
    if isinstance(device, str):
        kind, _, index = device.partition(":")
        return Device(kind, int(index) if index else None)
    return device


def strategy_for(devices: list[Any]) -> Any:
    """The strategy for ``devices`` (:class:`arignote.devices.Device` objects, or ``"cpu"``).

    Bad combinations (several devices mixing cpu and cuda, ``cpu.processes`` < 1, GPUs with
    ``cpu.processes`` > 1) are errors naming the flags.
    """
    devices = [_as_device(d) for d in devices]
    processes = check_layout(devices)
    env = DistEnv.from_mapping(os.environ)
    replicas = len(devices)
    if replicas > 1 and all(_is_cuda(d) for d in devices):
        # placement contexts on k GPUs: each replica owns k of the named GPUs
        replicas = len(devices) // gpus_per_replica(parse_contexts(config.get("contexts")))
    multi = replicas > 1 or processes > 1 or (env is not None and env.world_size > 1)
    if not multi:
        return SingleDevice(devices[0])
    from arignote.parallel.ddp import data_parallel  # DDP's module loads only when fit spreads (import time)

    return data_parallel(devices, processes)


def check_layout(devices: list[Any]) -> int:
    """The ``cpu.processes`` count after checking it against ``devices`` (what :func:`strategy_for`
    and ``arignote config`` refuse, with the same messages); starts nothing."""
    if not devices:
        raise ConfigError("no device to train on; set device=auto, cpu or cuda")
    processes = int(config.get("cpu.processes"))
    if processes < 1:
        raise ConfigError(f"cpu.processes={processes} ({config.source('cpu.processes')}): need 1 or more")
    gpus = [d for d in devices if _is_cuda(d)]
    if gpus and len(gpus) != len(devices):
        named = ", ".join(map(str, devices))
        raise ConfigError(f"device names {named}: data parallel needs all GPUs or one cpu")
    if gpus and processes > 1:
        raise ConfigError(f"cpu.processes={processes} ({config.source('cpu.processes')}) applies to "
                          f"device=cpu; the device flag names GPUs ({', '.join(map(str, devices))}): "
                          "drop cpu.processes")
    if not gpus and len(devices) > 1:
        raise ConfigError("several cpu devices named: use device=cpu with cpu.processes=N "
                          "for N CPU processes")
    return processes


def layer_device(layer: Any) -> str | None:
    """The device a placed layer runs on (``"cuda:1"``), or None when it is not placed:
    what ``summary()`` shows in its Device column."""
    return _layer_device(layer)
