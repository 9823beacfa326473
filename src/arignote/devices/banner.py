"""The startup banner as a pure function of devices, memory plans and versions (Theano's spirit).

Example::

    >>> from arignote.devices import GPUInfo, Device
    >>> from arignote.devices.banner import Versions, render
    >>> gpu = GPUInfo(0, "NVIDIA A100-SXM4-80GB", "0000:07:00.0", 81559 << 20, 81000 << 20, (8, 0))
    >>> print(render([Device("cuda", 0, gpu)], Versions("0.1.0", "2.13.0", "12.8", 91000)))
    arignote 0.1.0 on torch 2.13.0, CUDA 12.8, cuDNN 91000
    Mapped cuda:0 to NVIDIA A100-SXM4-80GB (0000:07:00.0), 81559 MiB, 81000 MiB free
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from arignote._version import __version__
from arignote.devices.info import CPUInfo, Device
from arignote.sizes import format_mib


@dataclass(frozen=True)
class Versions:
    """Versions the banner and ``arignote doctor`` show; None where the build has none."""

    arignote: str
    torch: str
    cuda: str | None = None
    cudnn: int | None = None
    nccl: str | None = None

    @classmethod
    def current(cls) -> Versions:
        # torch: the banner's text is built without it for `arignote config` (which imports this module)
        import torch

        from arignote.devices import cuda

        return cls(__version__, torch.__version__.split("+")[0], cuda.cuda_version(),
                   cuda.cudnn_version(), cuda.nccl_version())


def header(versions: Versions, cudnn_enabled: bool = True) -> str:
    """``arignote 0.1.0 on torch 2.13.0, CUDA 12.8, cuDNN 91000`` or ``... (CPU build)``."""
    line = f"arignote {versions.arignote} on torch {versions.torch}"
    if versions.cuda is None:
        return line + " (CPU build)"
    line += f", CUDA {versions.cuda}"
    if versions.cudnn is not None:
        line += f", cuDNN {versions.cudnn}" + ("" if cudnn_enabled else " (disabled by dnn.enabled=false)")
    else:
        line += ", no cuDNN"
    return line


def device_line(device: Device) -> str:
    """``Mapped cuda:0 to <name> (<pci>), <total> MiB, <free> MiB free``; on the CPU
    ``device cpu: <model>, N threads``."""
    if device.is_cuda:
        pci = f" ({device.pci_bus_id})" if device.pci_bus_id else ""
        return (f"Mapped {device} to {device.name}{pci}, {format_mib(device.total_memory)}, "
                f"{format_mib(device.free_memory)} free")
    info = device.info
    threads = ""
    if isinstance(info, CPUInfo):
        threads = f", {info.threads} thread{'' if info.threads == 1 else 's'}"
    return f"device cpu: {device.name}{threads}"


def setting_notes(devices: Sequence[Device], get: Callable[[str], Any]) -> list[str]:
    """One note per flag that cannot take effect on ``devices`` (``get`` reads a flag, e.g.
    :func:`arignote.config.get`): what ``fit``'s banner and ``arignote config`` both say.

    >>> setting_notes([Device("cpu")], {"precision": "mixed-fp16"}.get)[0][:40]
    'note: precision=mixed-fp16 on cpu: float'
    """
    if any(d.is_cuda for d in devices):
        return []
    notes = []
    if get("precision") == "mixed-fp16":
        notes.append("note: precision=mixed-fp16 on cpu: float16 autocast runs but is slow on most CPUs "
                     "and its gradient scaling guards against nothing there; precision=mixed-bf16 is "
                     "the CPU's reduced-precision mode")
    if get("memory.preallocate") or get("memory.limit"):
        notes.append("note: memory.preallocate and memory.limit apply to GPUs only; nothing to do on cpu")
    if get("dnn.benchmark") is True or get("dnn.deterministic") or get("dnn.enabled") == "true":
        notes.append("note: the dnn.* flags switch cuDNN on GPUs; nothing to do on cpu")
    if get("tf32") != "on":
        notes.append(f"note: tf32={get('tf32')} switches TensorFloat-32 on GPUs; nothing to do on cpu")
    return notes


def render(devices: Sequence[Device], versions: Versions, plans: Mapping[str, object] | None = None,
           *, cudnn_enabled: bool = True, extra: Sequence[str] = (), with_header: bool = True) -> str:
    """The banner: the version header, one line per device and its memory plan, then ``extra`` lines.

    The CPU device shares the header line (``... (CPU build) · device cpu: AMD EPYC, 2 threads``).
    ``plans`` maps ``str(device)`` to a :class:`~arignote.runtime.memory.MemoryPolicy` (its ``text`` is
    shown).
    """
    lines: list[str] = []
    uses_gpu = any(d.is_cuda for d in devices)
    head = header(versions, cudnn_enabled or not uses_gpu) if with_header else ""
    for device in devices:
        if not device.is_cuda:
            head = f"{head} · {device_line(device)}" if head else device_line(device)
            continue
        lines.append(device_line(device))
        plan = (plans or {}).get(str(device))
        if plan is not None:
            lines.extend(getattr(plan, "text", ()))
    if head:
        lines.insert(0, head)
    lines.extend(extra)
    return "\n".join(lines)
