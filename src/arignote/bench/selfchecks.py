"""The items of ``arignote selftest``, each in a fresh process (``python -m arignote.bench.selfchecks NAME``).

A fresh process per item gives each memory policy, cuDNN switch and launcher its own CUDA context
and flags (they are process-wide in torch). Each item is a run (records numbers on the device) and
a pure judge (:mod:`arignote.bench.selftest_protocol`); the process prints ``@@selftest {"ok": ...,
"message": ..., "numbers": ..., "record": ...}``. Items that need GPUs this machine lacks are not
run: :func:`plan` says why.

Example::

    >>> from types import SimpleNamespace as NS
    >>> items = dict((c.name, why) for c, why in plan(NS(gpus=[], cuda_reason="no driver")))
    >>> items["train-cpu"], items["banner-gpu"], items["placement"]
    (None, 'needs a CUDA GPU (no driver)', 'needs 2 CUDA GPUs (no driver)')
"""

from __future__ import annotations

import json
import sys
from typing import Any

from arignote.bench import selfchecks_compiled as jit
from arignote.bench import selfchecks_cpu as cpu
from arignote.bench import selfchecks_dp as dp
from arignote.bench import selfchecks_fast as fast
from arignote.bench import selfchecks_gpu as gpu
from arignote.bench import selfchecks_placement as placed
from arignote.bench.selftest_protocol import (  # noqa: F401 - the runner, re-exported for the tests
    MARK,
    Check,
    Verdict,
    outcome_in_process,
    run_in_process,
    run_item,
)

CHECKS = [
    Check("banner-cpu", 0, "startup banner on the CPU", cpu.run_banner_cpu, cpu.judge_banner_cpu),
    Check("train-cpu", 0, "a few training steps on the CPU", cpu.run_train_cpu, cpu.judge_train_cpu),
    Check("data-parallel-cpu", 0, "data parallel over 2 CPU processes (gloo)", cpu.run_data_parallel_cpu,
          cpu.judge_data_parallel_cpu),
    Check("mixed-precision-cpu", 0, "training with precision=mixed-bf16 on the CPU",
          cpu.run_mixed_precision_cpu, cpu.judge_mixed_precision_cpu),
    Check("oom-split-cpu", 0, "an (injected) out-of-memory recovered by micro-batches", cpu.run_oom_split_cpu,
          cpu.judge_oom_split_cpu),
    Check("placement-cpu", 0, "placement contexts (both on the CPU)", cpu.run_placement_cpu,
          cpu.judge_placement_cpu),
    Check("banner-gpu", 1, "startup banner names the GPU", gpu.run_banner_gpu, gpu.judge_banner_gpu),
    Check("memory-preallocate", 1, "memory.preallocate=0.5 reserves half the GPU (checked with the driver)",
          gpu.run_memory_preallocate, gpu.judge_memory_preallocate),
    Check("memory-limit", 1, "memory.limit=0.25 caps the caching allocator (35% refused, 10% allowed)",
          gpu.run_memory_limit, gpu.judge_memory_limit),
    Check("memory-no-cache", 1, "memory.preallocate<0 returns freed memory to the driver",
          gpu.run_memory_no_cache, gpu.judge_memory_no_cache),
    Check("cudnn-off", 1, "training with dnn.enabled=false", gpu.run_cudnn_off, gpu.judge_cudnn),
    Check("cudnn-on", 1, "training with cuDNN", gpu.run_cudnn_on, gpu.judge_cudnn),
    Check("cudnn-benchmark", 1, "training with cuDNN + dnn.benchmark", gpu.run_cudnn_benchmark,
          gpu.judge_cudnn),
    Check("mixed-precision", 1, "precision=mixed-fp16: the trainer's scaler on, the step under fp16 autocast",
          gpu.run_mixed_precision, gpu.judge_mixed_precision),
    Check("train-each-gpu", 1, "a few training steps on every GPU", gpu.run_train_each_gpu,
          gpu.judge_train_each_gpu),
    Check("data-parallel-nccl", 2, "data parallel over all GPUs (NCCL)", gpu.run_data_parallel_gpu,
          gpu.judge_data_parallel_gpu),
    Check("placement", 2, "layers placed on two GPUs with contexts", gpu.run_placement, gpu.judge_placement),
    Check("out-of-memory", 1, "a real OOM under a small memory.limit, recovered by splitting",
          gpu.run_out_of_memory, gpu.judge_real_oom),
    Check("rnn-cudnn", 1, "LSTM, SimpleRNN, GRU(reset_after=True) fit on cuDNN without a warning, "
          "weights in one chunk",
          gpu.run_rnn_cudnn, gpu.judge_rnn_cudnn),
    # data parallel on GPUs (selfchecks_dp.py; written without a GPU, never run where they were written)
    Check("data-parallel-weights", 2, "NCCL data parallel ends with one process's weights (reference fitted "
          "in its own process)", dp.run_dp_weights, dp.judge_dp_weights),
    Check("data-parallel-oom", 2, "a real OOM on one of 2 GPUs: ranks agree, recover, same weights",
          dp.run_dp_oom, dp.judge_dp_oom),
    Check("data-parallel-oom-sync", 2, "a real OOM on one of 2 GPUs during the gradient sync: every rank "
          "stops within a minute with one error naming it", dp.run_dp_oom_sync, dp.judge_sync_oom),
    Check("mixed-bf16", 1, "training with precision=mixed-bf16 on a GPU", dp.run_bf16_gpu, dp.judge_bf16_gpu),
    Check("preallocate-after-oom", 1, "memory.preallocate still held after an OOM recovery",
          dp.run_preallocation_after_oom, dp.judge_preallocation_after_oom),
    Check("placement-data-parallel", 4, "placement contexts inside each data-parallel replica's GPUs",
          dp.run_dp_with_placement, dp.judge_dp_with_placement),
    Check("placement-memory-limit", 2, "memory.limit=0.25 on both GPUs of a placed model and its banner",
          placed.run_placement_memory_limit, placed.judge_placement_memory_limit),
    Check("placement-data-parallel-oom", 4, "placement + data parallel: rank 1 runs out, every replica "
          "splits and trains on", placed.run_placement_dp_oom, placed.judge_placement_dp_oom),
    # the fast paths took effect during a fit (selfchecks_fast.py; written without a GPU)
    Check("fast-autotune", 1, "cuDNN autotuning on for array data, off for an iterable (dnn.benchmark=auto)",
          fast.run_autotune, fast.judge_autotune),
    Check("fast-channels-last", 1, "every conv2d output of a CNN fit is channels-last",
          fast.run_channels_last, fast.judge_channels_last),
    Check("fast-fused-optimizer", 1, "Adam and Adagrad run torch's fused kernels on the GPU",
          fast.run_fused_optimizer, fast.judge_fused_optimizer),
    Check("fast-tf32", 1, "TF32 switches as the tf32 flag asks", fast.run_tf32, fast.judge_tf32),
    # compiled steps (selfchecks_compiled.py; written without a GPU)
    Check("compiled-cuda-graphs", 1, "jit=on: the step replays CUDA graphs, no recompile per epoch, eager's "
          "weights and losses", jit.run_cuda_graphs, jit.judge_cuda_graphs),
    Check("compiled-optimizer", 1, "jit=on, foreach updates: eager weights under lr changes and a reload, "
          "no host sync", jit.run_optimizer, jit.judge_optimizer),
    Check("compiled-accumulate", 1, "jit=on with accumulate=2 and an OOM split: eager weights, updates "
          "compiled, gradients out of the CUDA-graph pool", jit.run_accumulate, jit.judge_accumulate),
    Check("compiled-data-parallel", 2, "jit=on under NCCL data parallel with accumulate=2: every update "
          "compiled on each rank", jit.run_data_parallel, jit.judge_data_parallel),
    Check("no-host-sync", 1, "steps 2..N of a fit under torch.cuda.set_sync_debug_mode('error')",
          fast.run_no_host_sync, fast.judge_no_host_sync),
]


def plan(inventory: Any) -> list[tuple[Check, str | None]]:
    """Every item with the reason it cannot run on ``inventory`` (None: it runs)."""
    gpus = len(inventory.gpus or ())
    out = []
    for check in CHECKS:
        why = None
        if check.gpus > gpus:
            need = "a CUDA GPU" if check.gpus == 1 else f"{check.gpus} CUDA GPUs"
            why = (f"needs {need} ({inventory.cuda_reason or 'none found'})" if gpus == 0
                   else f"needs {check.gpus} GPUs, this machine has {gpus}")
        out.append((check, why))
    return out


def environment(inventory: Any) -> dict[str, Any]:
    """What a ``selftest.json`` record is compared by: versions of arignote, torch, CUDA, cuDNN,
    NCCL, the GPUs (name, capability, memory) and the CPU."""
    # loads torch: called by `arignote selftest --json` after the inventory (which loads it too)
    import platform

    import torch

    from arignote._version import __version__
    from arignote.devices import cuda

    return {"arignote": __version__, "torch": torch.__version__, "cuda": cuda.cuda_version(),
            "cudnn": cuda.cudnn_version(), "nccl": cuda.nccl_version(), "python": platform.python_version(),
            "cpu": inventory.cpu_name, "cpu_threads": inventory.cpu_threads,
            "cuda_reason": inventory.cuda_reason,
            "gpus": [{"index": g.index, "name": g.name, "capability": list(g.capability),
                      "total_memory": g.total_memory} for g in inventory.gpus]}


def main(argv: list[str]) -> int:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote.runtime import setup

    by_name = {c.name: c for c in CHECKS}
    if len(argv) != 1 or argv[0] not in by_name:
        print(f"usage: python -m arignote.bench.selfchecks {{{','.join(by_name)}}}", file=sys.stderr)
        return 2
    result = run_item(by_name[argv[0]])
    if setup.rank() == 0:
        print(MARK + json.dumps(result), flush=True)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
