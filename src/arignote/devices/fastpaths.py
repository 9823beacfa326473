"""The GPU fast paths as pure decisions: flags + the device + facts about the model and the data.

Each decision is a :class:`Choice` (what, and why in a few words), computed without torch or a GPU,
so every branch is tested on any machine with hand-written facts. ``runtime/setup.py`` applies
them (through ``devices/cuda.py``) and prints :func:`fit_line` in the banner; the optimizers ask
:func:`optimizer_impl`, the model :func:`memory_format`, the data sources :func:`pin_batches`.

========================  ==================  ===============================================
fast path                 flag                auto
========================  ==================  ===============================================
cuDNN autotuning          ``dnn.benchmark``   on for a convolutional model fed fixed-shape
                                              arrays; off for iterables (shapes may vary)
TensorFloat-32            ``tf32``            (default ``on``) matmuls and convolutions on
                                              compute capability >= 8.0
memory format             ``memory_format``   channels_last for models with 4-D conv kernels
fused optimizer step      ``optimizer.impl``  fused where torch has the kernel, else foreach
                                              on a GPU, the per-tensor loop on the CPU
pinned, async copies      (iterables)         batches from the host pinned, copied
                                              ``non_blocking`` to a GPU
========================  ==================  ===============================================

Example::

    >>> flags = {"dnn.benchmark": "auto", "tf32": "on", "memory_format": "auto", "optimizer.impl": "auto"}
    >>> facts = FitFacts(device="cuda:0", capability=(9, 0), has_conv=True, fixed_shapes=True,
    ...                  optimizer="Adam", optimizer_impl="fused", arrays_on_device=True)
    >>> print(fit_line(flags.get, facts).replace(", ", ",\\n  "))
    fast paths: cuDNN autotune on (fixed input shapes),
      channels-last (conv model),
      Adam fused,
      arrays on cuda:0 (index-gather batches)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from arignote.errors import ConfigError

__all__ = ["Choice", "FitFacts", "autotune", "tf32", "tf32_line", "memory_format", "optimizer_impl",
           "pin_batches", "fit_line", "FUSED_DEVICES", "TF32_CAPABILITY"]

Get = Callable[[str], Any]

# torch optimizers with a fused kernel, per device type (torch 2.13: fused Adam/AdamW/SGD/Adagrad on
# CUDA and CPU: torch/optim/adagrad.py documents `fused` as "CPU and CUDA only", checks parameters
# with _device_dtype_check_for_fused(p) without cuda_unsupported, and ATen registers
# _fused_adagrad_cuda_dispatch.h; RMSprop and Adadelta have none)
FUSED_DEVICES: dict[str, frozenset[str]] = {
    "Adam": frozenset({"cuda", "cpu"}), "AdamW": frozenset({"cuda", "cpu"}),
    "SGD": frozenset({"cuda", "cpu"}), "Adagrad": frozenset({"cuda", "cpu"}),
}
# TensorFloat-32 units exist from Ampere (compute capability 8.0) on
TF32_CAPABILITY = (8, 0)


@dataclass(frozen=True)
class Choice:
    """One decision: ``value`` (True/False or a name) and ``why`` (a few words for the banner)."""

    value: Any
    why: str


def _source(get: Get, name: str) -> str:
    """``dnn.benchmark=true`` for the messages (``get`` only gives values)."""
    value = get(name)
    return f"{name}={str(value).lower() if isinstance(value, bool) else value}"


# --------------------------------------------------------------------------- cuDNN autotuning


def autotune(get: Get, device_kind: str, cudnn_enabled: bool, has_conv: bool,
             fixed_shapes: bool | None) -> Choice:
    """``torch.backends.cudnn.benchmark`` for one fit (Theano's ``dnn.conv.algo_*=time_once``).

    Autotuning times every convolution algorithm on each new input shape and keeps the fastest:
    a win when shapes repeat (arrays: one batch size, plus the last partial batch), a loss when
    they keep changing. ``fixed_shapes``: True for arrays, False/None for iterables (unknown).

    >>> autotune({"dnn.benchmark": "auto"}.get, "cuda", True, True, False)
    Choice(value=False, why='input shapes may vary (an iterable)')
    """
    flag = get("dnn.benchmark")
    if device_kind != "cuda" or not cudnn_enabled:
        return Choice(False, "no cuDNN" if device_kind == "cuda" else f"no cuDNN on {device_kind}")
    if flag is True or flag is False:
        return Choice(flag, _source(get, "dnn.benchmark"))
    if not has_conv:
        return Choice(False, "no convolutions")
    if not fixed_shapes:
        return Choice(False, "input shapes may vary (an iterable)")
    return Choice(True, "fixed input shapes")


# --------------------------------------------------------------------------- TensorFloat-32


def tf32(get: Get, capability: tuple[int, int] | None) -> Choice:
    """``(matmul, conv)`` TensorFloat-32 switches for a GPU of compute ``capability``.

    ``on``: both (TensorFlow 2's default; 10-bit mantissa products, fp32 sums), ``off``: neither
    (full fp32), ``torch``: PyTorch's own defaults, convolutions on and matmuls off. Below 8.0 the
    GPU has no TF32 units and the switches change nothing (the banner says so).

    >>> tf32({"tf32": "torch"}.get, (8, 0))
    Choice(value=(False, True), why="PyTorch's default: conv only")
    """
    flag = get("tf32")
    value = {"on": (True, True), "off": (False, False), "torch": (False, True)}[flag]
    if capability is not None and tuple(capability) < TF32_CAPABILITY:
        return Choice(value, f"no TF32 units: compute capability {capability[0]}.{capability[1]} < 8.0")
    why = {"on": "matmul + conv", "off": "full fp32", "torch": "PyTorch's default: conv only"}[flag]
    return Choice(value, why)


def tf32_line(choice: Choice) -> str:
    """The banner's TF32 line (process-wide, printed with the device), naming the flag to change it.

    >>> tf32_line(Choice((True, True), "matmul + conv"))
    'TF32 on: float32 matmuls and convolutions (tf32=off for full fp32; PyTorch alone: convolutions only)'
    """
    matmul, conv = choice.value
    if choice.why.startswith("no TF32"):
        return f"TF32 n/a ({choice.why.split(': ', 1)[1]}): float32 runs in full precision"
    if matmul and conv:
        return ("TF32 on: float32 matmuls and convolutions (tf32=off for full fp32; PyTorch alone: "
                "convolutions only)")
    if not matmul and not conv:
        return "TF32 off: float32 matmuls and convolutions in full precision (tf32=on is faster)"
    return "TF32 on for convolutions only, PyTorch's default (tf32=on adds matmuls)"


# --------------------------------------------------------------------------- memory format


def memory_format(get: Get, has_conv: bool) -> Choice:
    """``channels_last`` or ``contiguous`` for a model's 4-D convolution kernels (and a wrapped
    module's image arrays).

    ``auto`` is channels_last for a model with 4-D conv kernels on any device: cuDNN (tensor cores)
    and oneDNN both have NHWC kernels, and Keras-layout ``(N, H, W, C)`` batches are already
    channels-last in memory once viewed as NCHW, so no copy is made. A model without 4-D kernels
    is left as it is.

    >>> memory_format({"memory_format": "auto"}.get, True).value
    'channels_last'
    """
    flag = get("memory_format")
    if flag != "auto":
        return Choice(flag, _source(get, "memory_format"))
    if not has_conv:
        return Choice("contiguous", "no 4-D convolution kernels")
    return Choice("channels_last", "conv model")


# --------------------------------------------------------------------------- optimizer step


def optimizer_impl(get: Get, optimizer: str, device_kinds: frozenset[str] | set[str],
                   all_float: bool) -> Choice:
    """``fused``, ``foreach`` or ``loop`` for torch optimizer class ``optimizer`` over parameters
    on ``device_kinds``; ``optimizer.impl=fused`` where torch has no such kernel is a ConfigError.

    ``auto``: fused where torch has a kernel for every parameter's device and all are floating
    point; else foreach (one multi-tensor kernel per operation) on a GPU, and the per-tensor loop
    on the CPU, where it measured faster (optimizers.py).

    >>> optimizer_impl({"optimizer.impl": "auto"}.get, "RMSprop", {"cuda"}, True).value
    'foreach'
    """
    flag = get("optimizer.impl")
    devices = frozenset(device_kinds)
    can_fuse = bool(devices) and devices <= FUSED_DEVICES.get(optimizer, frozenset()) and all_float
    if flag == "fused" and not can_fuse:
        where = "/".join(sorted(devices)) or "no device"
        has = sorted(FUSED_DEVICES.get(optimizer, ()))
        why = (f"torch has a fused {optimizer} only on {', '.join(has)}" if has
               else f"torch has no fused {optimizer}")
        if not all_float:
            why = "some parameters are not floating point"
        raise ConfigError(f"optimizer.impl=fused but {why} (parameters on {where}); "
                          "set optimizer.impl=auto or foreach")
    if flag != "auto":
        return Choice(flag, _source(get, "optimizer.impl"))
    if can_fuse:
        return Choice("fused", "torch has the kernel")
    if devices == {"cpu"}:
        return Choice("loop", "per-tensor loop on cpu")
    return Choice("foreach", f"no fused {optimizer} on {'/'.join(sorted(devices))}")


# --------------------------------------------------------------------------- data


def pin_batches(device_kind: str) -> bool:
    """Whether host batches are pinned and copied ``non_blocking`` (to a GPU only: the copy then
    overlaps the previous step's kernels).

    >>> pin_batches("cuda"), pin_batches("cpu")
    (True, False)
    """
    return device_kind == "cuda"


# --------------------------------------------------------------------------- the banner line


@dataclass(frozen=True)
class FitFacts:
    """What one fit brings: its device, the GPU's compute capability, the model and the data.

    ``optimizer_impl`` is what the built optimizer uses (``fused``/``foreach``/``loop``, None when
    there is none); ``arrays_on_device``: True arrays moved once, False arrays kept on the host
    (too big), None an iterable; ``loader_pins``: a DataLoader's own ``pin_memory`` (None: not a
    DataLoader).
    """

    device: str
    capability: tuple[int, int] | None = None
    has_conv: bool = False
    fixed_shapes: bool | None = None
    optimizer: str | None = None
    optimizer_impl: str | None = None
    arrays_on_device: bool | None = None
    cudnn_enabled: bool = True
    loader_pins: bool | None = None

    @property
    def device_kind(self) -> str:
        return self.device.split(":", 1)[0]


def fit_line(get: Get, facts: FitFacts) -> str:
    """The banner's ``fast paths:`` line for one fit: each fast path and whether it is on.

    >>> facts = FitFacts(device="cuda:1", capability=(7, 0), has_conv=False, fixed_shapes=None,
    ...                  optimizer="RMSprop", optimizer_impl="foreach", arrays_on_device=None)
    >>> print(fit_line({"dnn.benchmark": "auto", "memory_format": "auto"}.get, facts).replace(", ", ",\\n  "))
    fast paths: cuDNN autotune off (no convolutions),
      contiguous (no 4-D convolution kernels),
      RMSprop foreach,
      batches pinned + non_blocking to cuda:1
    """
    kind = facts.device_kind
    tune = autotune(get, kind, facts.cudnn_enabled, facts.has_conv, facts.fixed_shapes)
    parts = [f"cuDNN autotune {'on' if tune.value else 'off'} ({tune.why})"]
    fmt = memory_format(get, facts.has_conv)
    parts.append(f"{fmt.value.replace('_', '-')} ({fmt.why})")
    if facts.optimizer and facts.optimizer_impl:
        parts.append(f"{facts.optimizer} {facts.optimizer_impl}")
    if facts.arrays_on_device is True:
        parts.append(f"arrays on {facts.device} (index-gather batches)")
    elif facts.arrays_on_device is False:
        pinned = " pinned + non_blocking" if pin_batches(kind) else ""
        parts.append(f"arrays on the host (too big for {facts.device}), batches{pinned} to it")
    elif pin_batches(kind) and facts.loader_pins is False:
        parts.append(f"batches pinned by the loop + non_blocking to {facts.device} "
                     "(DataLoader(pin_memory=True) pins in the loader's thread instead)")
    elif pin_batches(kind):
        parts.append(f"batches pinned + non_blocking to {facts.device}")
    return "fast paths: " + ", ".join(parts)
