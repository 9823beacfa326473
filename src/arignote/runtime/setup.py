"""Make a device ready: resolve the ``device`` flag, apply memory policy, cuDNN flags and threads,
and print the startup banner once per process on rank 0.

Example::

    >>> from arignote import config
    >>> from arignote.runtime.setup import configured_devices, prepare
    >>> with config.override(device="cpu", print_active_device=False):
    ...     [str(d) for d in configured_devices()], prepare("cpu")
    (['cpu'], None)
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from arignote import config
from arignote.config import ConfigError
from arignote.devices import DEVICE_ORDER, banner, cpu, cuda, fastpaths
from arignote.devices.identity import GPUIdentity
from arignote.devices.info import CPUInfo, Device, Inventory
from arignote.devices.inventory import current_inventory
from arignote.devices.spec import DeviceError, Selector, parse_spec, rank_by_free_memory, resolve
from arignote.runtime import memory
from arignote.runtime.precision import Precision

# what prepare() already did in this process
_state: dict[str, Any] = {"prepared": {}, "header_printed": False, "threads_set": False, "cudnn_set": False,
                          "fast_line": None}


def rank() -> int:
    """This process's rank from the torchrun ``RANK`` variable (0 when unset)."""
    raw = config.environ("RANK", "0") or "0"
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"RANK={raw!r} (environment) is not a whole number; unset it or fix the launcher") \
            from None


def _torch_index(gpu: Any, inventory: Inventory) -> int:
    """The torch index of an NVML GPU (NVML numbers all GPUs; torch only the visible ones)."""
    wanted = GPUIdentity.of(gpu)  # by UUID, else PCI bus id: never NVML's index (devices/identity.py)
    for g in inventory.gpus:
        if GPUIdentity.of(g).same_gpu(wanted):
            return g.index
    return -1  # resolve() reports it as a GPU this process cannot see


def default_selector(lease: bool = True) -> Selector:
    """``free:N`` selection: :func:`arignote.share.select_for_device_spec` (ranks by load and leases
    the GPUs for this process; ``lease=False``: :func:`arignote.share.select_gpus`, which only looks)
    when that module exists, else the GPUs with the most free memory."""
    try:
        # upward (KNOWN_UPWARD debt): device=free:N leases through share/'s policy
        from arignote.share import ShareError, select_for_device_spec, select_gpus
    except ImportError:
        return rank_by_free_memory

    def select(n: int, inventory: Inventory) -> list[int]:
        try:
            chosen = select_for_device_spec(n, inventory) if lease else select_gpus(n)
        except ShareError as exc:
            raise DeviceError(f"device=free:{n}: {exc}") from None
        # import time: NVML loads when device=free:N first picks GPUs
        from arignote.devices import nvml

        # share numbers GPUs as NVML does (all of them); torch only numbers the visible ones
        by_index = {g.index: g for g in nvml.snapshot(processes=False, cpu_interval=None).gpus}
        return [_torch_index(by_index[i], inventory) if i in by_index else i for i in chosen]

    return select


def configured_devices(inventory: Inventory | None = None, select: Selector | None = None,
                       lease: bool = True) -> list[Device]:
    """The devices the ``device`` flag names on this machine; :class:`DeviceError` names the fix.

    For ``free:N`` the GPUs are leased for this process (``lease=False`` only looks: listings).
    """
    spec_text = config.get("device")
    spec = parse_spec(spec_text)
    inv = inventory if inventory is not None else current_inventory(refresh=spec.kind == "free")
    try:
        return resolve(spec, inv, select or (default_selector(lease) if spec.kind == "free" else None))
    except DeviceError as exc:
        src = config.source("device")
        raise DeviceError(f"{exc} (device flag from {src})" if src != "default" else str(exc)) from None


def _as_device(device: Device | str, inventory: Inventory) -> Device:
    if isinstance(device, Device):
        return device
    devices = resolve(device, inventory)
    if len(devices) != 1:
        raise DeviceError(f"prepare({device!r}) names {len(devices)} devices; prepare them one at a time")
    return devices[0]


def _cudnn_enabled() -> bool:
    wanted = config.get("dnn.enabled")
    if wanted == "true" and not cuda.cudnn_available():
        raise ConfigError(f"dnn.enabled=true (from {config.source('dnn.enabled')}) but this torch has no "
                          "usable cuDNN; set dnn.enabled=auto or install a CUDA build of torch with cuDNN")
    return wanted != "false" and cuda.cudnn_available()


def prepare(device: Device | str, inventory: Inventory | None = None, layout: str | None = None):
    """Apply the flags to ``device`` once per process (and ``memory.host_cache`` to the process, once:
    :class:`HostMemory`); returns its
    :class:`~arignote.runtime.memory.MemoryPolicy` (None on CPU). Prints the banner lines not printed yet
    when ``print_active_device`` is on, rank 0;
    ``layout`` is the strategy's line (``data parallel: 2 processes x 1 thread (gloo)``).
    """
    HOST_MEMORY.ensure()
    inv = inventory if inventory is not None else current_inventory()
    dev = _as_device(device, inv)
    key = str(dev)
    if key in _state["prepared"]:
        return _state["prepared"][key]
    if not _state["threads_set"]:
        cpu.set_threads(config.get("cpu.threads"))
        _state["threads_set"] = True
    plan = None
    cudnn_on = True
    if dev.is_cuda:
        cudnn_on = _cudnn_enabled()
        tf32 = fastpaths.tf32(config.get, _capability(dev))
        # process-wide switches, applied at each new device from the flags as they are now, so the
        # banner below says what is in force (applied at the first GPU only, a later banner could say
        # "TF32 off" while TF32 was on); dnn.benchmark=auto: off until a fit decides (fast_paths)
        benchmark = config.get("dnn.benchmark") is True if not _state["cudnn_set"] else None
        _apply_switches(cudnn_on, tf32, benchmark)
        _state["cudnn_set"] = True
        plan = memory.plan_for(dev)
        memory.apply(plan, dev)
    _state["prepared"][key] = plan
    extra = [layout] if layout else []
    if dev.is_cuda:
        extra.append(fastpaths.tf32_line(tf32))
    if config.get("precision") != "fp32":
        extra.append("Precision " + Precision.from_config(dev).describe())
    extra.extend(banner.setting_notes([dev], config.get))
    if dev.is_cuda and DEVICE_ORDER.too_late:
        extra.append(DEVICE_ORDER.note())
    if config.get("print_active_device") and rank() == 0:
        if not dev.is_cuda:  # show the thread count cpu.threads just set
            info = CPUInfo(inv.cpu_name, cpu.threads(), inv.cpu_memory, inv.cpu_free_memory)
            dev = Device("cpu", None, info)
        text = banner.render([dev], banner.Versions.current(), {key: plan} if plan else None,
                             cudnn_enabled=cudnn_on, extra=extra, with_header=not _state["header_printed"])
        _state["header_printed"] = True
        print(text)
        sys.stdout.flush()
    return plan


def _apply_switches(cudnn_on: bool, tf32: fastpaths.Choice, benchmark: bool | None) -> None:
    """``dnn.enabled``, ``dnn.deterministic`` and the TF32 choice into torch's switches; cuDNN
    autotuning to ``benchmark`` (None: left as it is, a fit's choice)."""
    keep = cuda.cudnn_flags()[1] if benchmark is None else benchmark
    cuda.set_cudnn(cudnn_on, keep, config.get("dnn.deterministic"))
    cuda.set_tf32(*tf32.value)


def _capability(dev: Device) -> tuple[int, int] | None:
    return getattr(dev.info, "capability", None) if dev.is_cuda else None


def fast_paths(facts: fastpaths.FitFacts, inventory: Inventory | None = None) -> str:
    """Apply one fit's fast paths and return its banner line (:func:`fastpaths.fit_line`).

    Switches cuDNN autotuning for this fit, and ``dnn.enabled``, ``dnn.deterministic`` and ``tf32``
    as the flags are now (process-wide in torch, so each fit sets them), and prints
    the line on rank 0 when ``print_active_device`` is on, on a GPU, each time it changes. ``facts``
    may leave ``capability`` and ``cudnn_enabled`` out: they are read here.

    >>> with config.override(print_active_device=False):
    ...     fast_paths(fastpaths.FitFacts(device="cpu", has_conv=True, fixed_shapes=True))
    'fast paths: cuDNN autotune off (no cuDNN on cpu), channels-last (conv model)'
    """
    if facts.device_kind == "cuda":

        inv = inventory if inventory is not None else current_inventory()
        index = int(facts.device.partition(":")[2] or 0)
        gpu = next((g for g in inv.gpus if g.index == index), None)
        facts = replace(facts, capability=gpu.capability if gpu else facts.capability,
                        cudnn_enabled=_cudnn_enabled())
        tune = fastpaths.autotune(config.get, "cuda", facts.cudnn_enabled, facts.has_conv, facts.fixed_shapes)
        # every fit applies the flags as they are now (a configure() between fits takes effect)
        _apply_switches(facts.cudnn_enabled, fastpaths.tf32(config.get, facts.capability), tune.value)
    line = fastpaths.fit_line(config.get, facts)
    if (facts.device_kind == "cuda" and line != _state["fast_line"] and config.get("print_active_device")
            and rank() == 0):
        print(line)
        sys.stdout.flush()
        _state["fast_line"] = line
    return line


def reset() -> None:
    """Forget what :func:`prepare` did (tests): the banner prints again, flags are re-applied."""
    _state.update(prepared={}, header_printed=False, threads_set=False, cudnn_set=False, fast_line=None)


class HostMemory:
    """``memory.host_cache`` for this process: ``malloc`` keeps up to that many MiB of freed host
    memory for reuse (:func:`arignote.devices.cpu.keep_freed_memory`), the host-side counterpart of
    the CUDA caching allocator. :meth:`ensure` applies the flag as it is at the process's first
    training or inference call (``fit``, ``evaluate``, ``predict``, the batch methods: each model's
    first call prepares its device, :func:`prepare`) and the settings stay in force for the rest of
    the process; ``memory.host_cache=0`` then leaves glibc's own behaviour untouched.
    :func:`arignote.devices.release_host_memory` returns the kept memory to the OS.

    >>> policy = HostMemory(keep=lambda mib: mib > 0)
    >>> with config.override(memory_host_cache=0):
    ...     policy.ensure(), policy.ensure()
    (False, False)
    """

    def __init__(self, keep: Callable[[int], bool] = cpu.keep_freed_memory) -> None:
        self._keep = keep
        self.applied: bool | None = None  # None: not decided yet in this process

    def ensure(self) -> bool:
        """Apply ``memory.host_cache`` unless this process already decided; whether it is in force."""
        if self.applied is None:
            self.applied = self._keep(config.get("memory.host_cache"))
        return self.applied


# the process's one policy (malloc's settings are process-wide; reset() leaves it alone)
HOST_MEMORY = HostMemory()
