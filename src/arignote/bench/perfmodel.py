"""A performance model of one training step on a named GPU, from counts made on any machine.

The seeds' goal is under 1 s per 45,000-sample epoch at batch 32: 1,407 steps, so at most
0.71 ms a step. Whether a GPU can do that is argued here on paper, from what
:mod:`arignote.bench.opcount` counts on the CPU (operators, FLOPs and bytes per step are the same
on every device) and a small table of GPU figures from the vendors' datasheets.

The model (every number below is an input you can change, not a measurement):

* **device time** of a step = the sum over its operators of
  ``max(flops / (peak * compute_efficiency), bytes / (bandwidth * memory_efficiency), min_kernel)``:
  a matmul or convolution runs on the tensor cores (TF32 for float32 when allowed, else the
  plain FP32 rate), everything else is bound by memory; no kernel takes less than ``min_kernel``;
* **host time** of an eager step = operators x ``host_per_op`` (PyTorch's dispatcher, autograd
  bookkeeping and the CUDA launch, per operator);
* **eager step** = ``max(host, device)`` when the step never waits for the GPU (the host runs
  ahead and the GPU queue overlaps), ``host + device`` when the step reads a value back (each
  host sync drains the queue);
* **CUDA-graph step** (``torch.compile(mode="reduce-overhead")``) = ``max(graph_launch, device)``:
  one replay replaces every launch; the kernel count is kept as an upper bound (Inductor's
  fusion only lowers it).

Example::

    >>> gpu = GPUS["H100 SXM"]
    >>> step = Prediction.of(ops=[(1e9, 1e6, True)], syncs=0, gpu=gpu)
    >>> round(step.device_ms, 3)
    0.005
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["GPU", "GPUS", "Assumptions", "Prediction", "find_gpu", "epoch_seconds", "TARGET_EPOCH_S",
           "SEEDS_EPOCH", "SEEDS_SAMPLES"]

TARGET_EPOCH_S = 1.0
SEEDS_SAMPLES = 45_000
# the seeds' measured seconds per epoch (shared/seeds, Theano 0.9 era): CPU, GTX 1060 CUDA, + cuDNN
SEEDS_EPOCH = {"cpu": 152.0, "gpu": 20.0, "gpu+cudnn": 7.0}


@dataclass(frozen=True)
class GPU:
    """Datasheet figures of one GPU (dense, no sparsity): FLOP/s and bytes/s."""

    name: str
    pattern: str  # a regular expression matched against torch's device name
    fp32: float
    tf32: float  # tensor-core rate for float32 matmuls (== fp32 where there are no TF32 tensor cores)
    bf16: float
    bandwidth: float
    source: str


GPUS = {g.name: g for g in (
    GPU("H100 SXM", r"H100(?!.*PCIe)", 67e12, 494.7e12, 989.4e12, 3.35e12,
        "NVIDIA H100 Tensor Core GPU datasheet (SXM5, dense)"),
    GPU("H100 PCIe", r"H100.*PCIe", 51.2e12, 378e12, 756e12, 2.0e12,
        "NVIDIA H100 Tensor Core GPU datasheet (PCIe, dense)"),
    GPU("A100 SXM 80GB", r"A100", 19.5e12, 156e12, 312e12, 2.039e12,
        "NVIDIA A100 Tensor Core GPU datasheet (SXM4 80GB, dense)"),
    GPU("V100 SXM2", r"V100", 15.7e12, 15.7e12, 125e12, 0.9e12,
        "NVIDIA Tesla V100 datasheet (SXM2; no TF32: float32 runs at the FP32 rate)"),
    GPU("RTX 4090", r"RTX 4090", 82.6e12, 82.6e12, 165.2e12, 1.008e12,
        "NVIDIA Ada Lovelace architecture whitepaper (GeForce RTX 4090, FP32 accumulate, dense)"),
    GPU("GTX 1060 6GB", r"GTX 1060", 4.375e12, 4.375e12, 4.375e12, 0.192e12,
        "NVIDIA GeForce GTX 1060 specifications (1280 cores x 2 x 1.708 GHz boost; 192 GB/s): "
        "the seeds' GPU"),
)}


def find_gpu(device_name: str) -> GPU | None:
    """The table entry for a torch device name (``torch.cuda.get_device_name()``), or None."""
    for gpu in GPUS.values():
        if re.search(gpu.pattern, device_name):
            return gpu
    return None


@dataclass(frozen=True)
class Assumptions:
    """The model's free parameters (seconds and fractions). Defaults are estimates, not measurements:
    ``arignote bench`` on a GPU prints predicted next to measured so they can be corrected."""

    compute_efficiency: float = 0.4  # small convolutions at batch 32 reach a fraction of peak
    memory_efficiency: float = 0.7
    min_kernel: float = 2.5e-6  # the shortest kernel plus the gap before the next one
    host_per_op: float = 8e-6  # eager PyTorch: dispatcher + autograd + cudaLaunchKernel per operator
    graph_launch: float = 20e-6  # one CUDA-graph replay
    tf32: bool = True  # float32 matmuls and convolutions on TF32 tensor cores (the `tf32` flag decides)


@dataclass(frozen=True)
class Prediction:
    """Predicted milliseconds of one step: device, host, eager and CUDA-graph."""

    gpu: str
    device_ms: float
    host_ms: float
    eager_ms: float
    graph_ms: float

    @classmethod
    def of(cls, ops: Iterable[tuple[float, float, bool]], syncs: int, gpu: GPU,
           assume: Assumptions = Assumptions()) -> Prediction:
        """``ops``: (flops, bytes, is_matmul) per operator of one step; ``syncs``: host reads in it."""
        peak_mm = gpu.tf32 if assume.tf32 else gpu.fp32
        device = host = 0.0
        for flops, nbytes, matmul in ops:
            compute = flops / ((peak_mm if matmul else gpu.fp32) * assume.compute_efficiency)
            memory = nbytes / (gpu.bandwidth * assume.memory_efficiency)
            device += max(compute, memory, assume.min_kernel)
            host += assume.host_per_op
        eager = host + device if syncs else max(host, device)
        graph = max(assume.graph_launch, device)
        return cls(gpu.name, device * 1e3, host * 1e3, eager * 1e3, graph * 1e3)


def epoch_seconds(step_ms: float, batch_size: int, samples: int = SEEDS_SAMPLES) -> float:
    """Seconds per epoch of ``samples`` at ``batch_size`` (the last partial batch counts as a step)."""
    steps = -(-samples // batch_size)
    return step_ms * steps / 1e3


def table(step_ops: Sequence[tuple[float, float, bool]], syncs: int, batch_size: int,
          gpus: Iterable[GPU] | None = None, assume: Assumptions = Assumptions()) -> list[dict]:
    """One row per GPU: predicted step and epoch times, eager and with CUDA graphs."""
    rows = []
    for gpu in gpus if gpus is not None else GPUS.values():
        p = Prediction.of(step_ops, syncs, gpu, assume)
        rows.append({"gpu": gpu.name, "device_ms": p.device_ms, "host_ms": p.host_ms, "eager_ms": p.eager_ms,
                     "graph_ms": p.graph_ms, "eager_epoch_s": epoch_seconds(p.eager_ms, batch_size),
                     "graph_epoch_s": epoch_seconds(p.graph_ms, batch_size), "source": gpu.source})
    return rows
