"""The items of ``arignote selftest``, each in a fresh process (``python -m arignote.bench.selfchecks NAME``).

A fresh process per item gives each memory policy, cuDNN switch and launcher its own CUDA context
and flags (they are process-wide in torch).  An item returns a one-line detail when it passes and
raises when it fails; the process prints ``@@selftest {"ok": ..., "detail": ...}``.  Items that
need GPUs this machine lacks are not run: :func:`plan` says why.

Example::

    >>> from types import SimpleNamespace as NS
    >>> items = dict((c.name, why) for c, why in plan(NS(gpus=[], cuda_reason="no driver")))
    >>> items["train-cpu"], items["banner-gpu"], items["placement"]
    (None, 'needs a CUDA GPU (no driver)', 'needs 2 CUDA GPUs (no driver)')
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from arignote.bench import selfchecks_compiled as jit
from arignote.bench.selfchecks_dp import (
    bf16_gpu,
    dp_out_of_memory,
    dp_out_of_memory_in_sync,
    dp_preallocation_after_oom,
    dp_weights,
    dp_with_placement,
)
from arignote.bench.selfchecks_fast import (
    autotune_gpu,
    channels_last_gpu,
    fused_optimizer_gpu,
    no_host_sync_gpu,
    tf32_gpu,
)

MARK = "@@selftest "
MiB = 1 << 20


class CheckFailed(AssertionError):
    """A self-test item found the wrong value; the message says which."""


@dataclass(frozen=True)
class Check:
    name: str
    gpus: int  # GPUs needed (0: runs anywhere)
    doc: str
    fn: Callable[[], str]


def _expect(cond: bool, message: str) -> None:
    if not cond:
        raise CheckFailed(message)


def _mib(n: float) -> str:
    return f"{n / MiB:.0f} MiB"


# --------------------------------------------------------------------------- helpers


def _fit(flags: dict[str, Any], kind: str = "mlp", epochs: int = 2, samples: int = 256,
         callbacks: list | None = None):
    """A few training steps of a small model under ``flags``; returns (model, history)."""
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote import config
    from arignote.datasets import synthetic
    from arignote.layers import Conv2D, Dense, Flatten, MaxPooling2D
    from arignote.models import Sequential
    from arignote.utils import to_categorical

    config.configure(**{"print_active_device": False, **flags})
    shape = (16, 16, 3) if kind == "cnn" else (32,)
    x, y = synthetic(shape=shape, classes=4, samples=samples, noise=0.3)
    model = Sequential()
    if kind == "cnn":
        model.add(Conv2D(8, (3, 3), padding="same", activation="relu", input_shape=shape))
        model.add(MaxPooling2D((2, 2)))
        model.add(Flatten())
    else:
        model.add(Dense(32, activation="relu", input_shape=shape))
    model.add(Dense(4, activation="softmax"))
    model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
    history = model.fit(x, to_categorical(y, 4), batch_size=32, epochs=epochs, verbose=0,
                        callbacks=callbacks or [])
    losses = history.history["loss"]
    _expect(all(v == v and abs(v) != float("inf") for v in losses), f"loss is not finite: {losses}")
    _expect(losses[-1] < losses[0], f"loss did not go down over {epochs} epochs: {losses}")
    return model, history


def _banner(device: str) -> list[str]:
    """The banner lines ``prepare`` prints for ``device``."""
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote import config, devices

    config.configure(device=device, print_active_device=True)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        devices.prepare(devices.configured_devices()[0])
    text = out.getvalue().strip()
    _expect(bool(text), "prepare() printed no banner")
    return text.splitlines()


def _line_naming(lines: list[str], name: str) -> str:
    """The banner line that names ``name`` (on a GPU the device line is followed by the memory
    policy and TF32 lines, so it is not the last one)."""
    line = next((ln for ln in lines if name in ln), None)
    _expect(line is not None, f"the banner does not name {name}: {lines!r}")
    return line


# --------------------------------------------------------------------------- CPU items


def banner_cpu() -> str:
    return _line_naming(_banner("cpu"), "device cpu")


def train_cpu() -> str:
    model, history = _fit({"device": "cpu"}, kind="cnn")
    _expect(str(model.device) == "cpu", f"model on {model.device}, expected cpu")
    return f"CNN, loss {history.history['loss'][0]:.3f} -> {history.history['loss'][-1]:.3f} on cpu"


def _strategy_probe(seen: list[tuple[int, str]]):
    """A callback recording (world size, collective backend) of the strategy fit runs on."""
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote.callbacks import Callback
    from arignote.parallel import ddp

    class Probe(Callback):
        def on_train_begin(self, logs=None):
            strategy = ddp.active()
            seen.append((strategy.world_size, strategy.backend) if strategy is not None else (1, "none"))

    return Probe()


def data_parallel_cpu() -> str:
    seen: list[tuple[int, str]] = []
    _fit({"device": "cpu", "cpu.processes": 2, "cpu.threads": 1}, callbacks=[_strategy_probe(seen)])
    _expect(seen == [(2, "gloo")], f"expected 2 gloo processes, the strategy reported {seen}")
    return "2 CPU processes (gloo), loss went down"


def mixed_precision_cpu() -> str:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote.precision import Precision

    _fit({"device": "cpu", "precision": "mixed-bf16"}, kind="cnn")
    text = Precision.from_config("cpu").describe()
    _expect("bfloat16" in text, f"precision policy is {text!r}")
    return text


def oom_split_cpu() -> str:
    """The out-of-memory recovery path, with an injected OOM (a CPU has no allocator cap)."""
    out = io.StringIO()
    with contextlib.redirect_stderr(out):  # the split notice goes to stderr
        _fit({"device": "cpu", "memory.oom_inject_above": 8, "memory.on_oom": "split"})
    notice = next((ln for ln in out.getvalue().splitlines() if "out of memory at batch 32" in ln), "")
    _expect(bool(notice), f"no split notice after an injected OOM; printed: {out.getvalue()[-300:]!r}")
    return "injected OOM at batch 32 -> " + notice.split(";", 1)[1].strip().split(" with ")[0]


def _train_placed(device: str, contexts: str, hidden: int) -> Any:
    """Two Dense layers under two placement contexts, trained for 2 epochs; returns the model."""
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    import arignote
    from arignote import config
    from arignote.datasets import synthetic
    from arignote.layers import Dense
    from arignote.models import Sequential
    from arignote.utils import to_categorical

    config.configure(device=device, print_active_device=False, contexts=contexts)
    model = Sequential()
    with arignote.device("dev0"):
        model.add(Dense(hidden, activation="relu", input_shape=(32,)))
    with arignote.device("dev1"):
        model.add(Dense(4, activation="softmax"))
    model.compile(loss="categorical_crossentropy", optimizer="adam")
    x, y = synthetic(shape=(32,), classes=4, samples=256, noise=0.3)
    loss = model.fit(x, to_categorical(y, 4), batch_size=32, epochs=2, verbose=0).history["loss"]
    _expect(loss[-1] < loss[0], f"loss did not go down: {loss}")
    return model


def placement_cpu() -> str:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote.parallel.placement import layer_device

    model = _train_placed("cpu", "dev0->cpu;dev1->cpu", hidden=32)
    placed = [layer_device(layer) for layer in model.layers]
    _expect(placed == ["cpu", "cpu"], f"layers placed on {placed}")
    return "contexts dev0/dev1 -> cpu: layers placed, trained"


# --------------------------------------------------------------------------- GPU items


def banner_gpu() -> str:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote.devices import current_inventory

    lines = _banner("cuda0")
    return _line_naming(lines, current_inventory().gpus[0].name)


def memory_preallocate() -> str:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote import config, devices
    from arignote.devices import cuda

    free0, total = cuda.mem_get_info(0)  # creates the CUDA context before measuring
    config.configure(device="cuda0", print_active_device=False, memory_preallocate=0.5)
    devices.prepare("cuda:0")
    free1, _ = cuda.mem_get_info(0)
    _, reserved = cuda.memory_in_use(0)
    want = 0.5 * total
    _expect(reserved >= 0.95 * want, f"reserved {_mib(reserved)}, expected about {_mib(want)}")
    _expect(free0 - free1 >= 0.9 * want,
            f"the driver sees only {_mib(free0 - free1)} taken, expected about {_mib(want)}")
    return f"reserved {_mib(reserved)} of {_mib(total)}; driver free {_mib(free0)} -> {_mib(free1)}"


def memory_limit() -> str:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    import torch

    from arignote import config, devices, memory
    from arignote.devices import cuda

    _, total = cuda.mem_get_info(0)
    config.configure(device="cuda0", print_active_device=False, memory_limit=0.25)
    devices.prepare("cuda:0")
    fraction = cuda.memory_fraction(0)
    _expect(abs(fraction - 0.25) < 0.01, f"per-process cap is {fraction}, expected 0.25")
    try:
        with memory.oom_explained("cuda:0"):
            block = torch.empty(int(0.35 * total), dtype=torch.uint8, device="cuda:0")
    except torch.OutOfMemoryError as exc:
        _expect("memory.limit=0.25 (from code)" in str(exc),
                f"the out-of-memory error does not name the flag: {str(exc)[-160:]!r}")
    else:
        del block
        raise CheckFailed("allocating 35% of the GPU succeeded under memory.limit=0.25")
    cuda.empty_cache()
    ok = torch.empty(int(0.1 * total), dtype=torch.uint8, device="cuda:0")
    del ok
    return f"cap {fraction:.2f} of {_mib(total)}: 35% refused with OutOfMemoryError, 10% then allocated"


def memory_no_cache() -> str:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    import torch

    from arignote import config, devices
    from arignote.devices import cuda

    cuda.mem_get_info(0)
    config.configure(device="cuda0", print_active_device=False, memory_preallocate=-1)
    devices.prepare("cuda:0")
    free0, _ = cuda.mem_get_info(0)
    block = torch.empty(512 * MiB, dtype=torch.uint8, device="cuda:0")
    del block
    free1, _ = cuda.mem_get_info(0)
    _, reserved = cuda.memory_in_use(0)
    _expect(not cuda.caching_enabled(), "the caching allocator is still on under memory.preallocate<0")
    _expect(reserved == 0, f"{_mib(reserved)} still reserved after the free (caching should be off)")
    _expect(abs(free0 - free1) < 64 * MiB, f"driver free {_mib(free0)} -> {_mib(free1)} after alloc/free")
    return f"512 MiB allocated and freed: back to the driver (free {_mib(free0)} -> {_mib(free1)})"


def _cudnn(enabled: str, benchmark: bool) -> str:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote.devices import cuda

    _fit({"device": "cuda0", "dnn.enabled": enabled, "dnn.benchmark": benchmark}, kind="cnn")
    flags = cuda.cudnn_flags()
    _expect(flags[0] == (enabled == "true") and flags[1] == benchmark,
            f"cuDNN switches (enabled, benchmark) are {flags[:2]}, expected {(enabled == 'true', benchmark)}")
    return f"CNN trained with cudnn.enabled={flags[0]}, benchmark={flags[1]}"


def cudnn_off() -> str:
    return _cudnn("false", False)


def cudnn_on() -> str:
    return _cudnn("true", False)


def cudnn_benchmark() -> str:
    return _cudnn("true", True)


def mixed_precision() -> str:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote.precision import Precision

    _fit({"device": "cuda0", "precision": "mixed-fp16"}, kind="cnn")
    precision = Precision.from_config("cuda:0")
    _expect(precision.scaler.is_enabled(), "mixed-fp16 on a GPU has no enabled grad scaler")
    return precision.describe()


def train_each_gpu() -> str:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    import torch

    from arignote.devices import current_inventory

    done = []
    for gpu in current_inventory().gpus:
        model, _ = _fit({"device": f"cuda{gpu.index}"})
        _expect(model.device == torch.device(f"cuda:{gpu.index}"), f"model on {model.device}")
        done.append(f"cuda:{gpu.index}")
    return "trained on " + ", ".join(done)


def data_parallel_gpu() -> str:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote.devices import cuda, current_inventory

    seen: list[tuple[int, str]] = []
    _fit({"device": "all"}, callbacks=[_strategy_probe(seen)])
    n = len(current_inventory().gpus)
    _expect(seen == [(n, "nccl")], f"expected {n} NCCL processes, the strategy reported {seen}")
    return f"DDP over {n} GPUs with NCCL {cuda.nccl_version()}"


def placement() -> str:
    model = _train_placed("cuda0", "dev0->cuda0;dev1->cuda1", hidden=64)
    where = sorted({str(p.device) for p in model.module.parameters()})
    _expect(where == ["cuda:0", "cuda:1"], f"parameters on {where}, expected cuda:0 and cuda:1")
    return "layers on cuda:0 and cuda:1, gradients flowed across"


def out_of_memory() -> str:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote import config
    from arignote.diagnostics.oom_selftest import selftest_real_oom

    config.configure(device="cuda0", print_active_device=False)
    ok, detail = selftest_real_oom("cuda:0")
    _expect(ok, detail)
    return detail


CHECKS = [
    Check("banner-cpu", 0, "startup banner on the CPU", banner_cpu),
    Check("train-cpu", 0, "a few training steps on the CPU", train_cpu),
    Check("data-parallel-cpu", 0, "data parallel over 2 CPU processes (gloo)", data_parallel_cpu),
    Check("mixed-precision-cpu", 0, "training with precision=mixed-bf16 on the CPU", mixed_precision_cpu),
    Check("oom-split-cpu", 0, "an (injected) out-of-memory recovered by micro-batches", oom_split_cpu),
    Check("placement-cpu", 0, "placement contexts (both on the CPU)", placement_cpu),
    Check("banner-gpu", 1, "startup banner names the GPU", banner_gpu),
    Check("memory-preallocate", 1, "memory.preallocate=0.5 reserves half the GPU (checked with the driver)",
          memory_preallocate),
    Check("memory-limit", 1, "memory.limit=0.25 caps the process (35% refused, 10% allowed)", memory_limit),
    Check("memory-no-cache", 1, "memory.preallocate<0 returns freed memory to the driver", memory_no_cache),
    Check("cudnn-off", 1, "training with dnn.enabled=false", cudnn_off),
    Check("cudnn-on", 1, "training with cuDNN", cudnn_on),
    Check("cudnn-benchmark", 1, "training with cuDNN + dnn.benchmark", cudnn_benchmark),
    Check("mixed-precision", 1, "training with precision=mixed-fp16", mixed_precision),
    Check("train-each-gpu", 1, "a few training steps on every GPU", train_each_gpu),
    Check("data-parallel-nccl", 2, "data parallel over all GPUs (NCCL)", data_parallel_gpu),
    Check("placement", 2, "layers placed on two GPUs with contexts", placement),
    Check("out-of-memory", 1, "a real OOM under a small memory.limit, recovered by splitting", out_of_memory),
    # data parallel on GPUs (selfchecks_dp.py; written without a GPU, never run where they were written)
    Check("data-parallel-weights", 2, "NCCL data parallel ends with one process's weights", dp_weights),
    Check("data-parallel-oom", 2, "a real OOM on one of 2 GPUs: ranks agree, recover, same weights",
          dp_out_of_memory),
    Check("data-parallel-oom-sync", 2, "a real OOM on one of 2 GPUs during the gradient sync: every rank "
          "stops within a minute with one error naming it", dp_out_of_memory_in_sync),
    Check("mixed-bf16", 1, "training with precision=mixed-bf16 on a GPU", bf16_gpu),
    Check("preallocate-after-oom", 1, "memory.preallocate still held after an OOM recovery",
          dp_preallocation_after_oom),
    Check("placement-data-parallel", 4, "placement contexts inside each data-parallel replica's GPUs",
          dp_with_placement),
    # the fast paths took effect during a fit (selfchecks_fast.py; written without a GPU)
    Check("fast-autotune", 1, "cuDNN autotuning on for array data, off for an iterable (dnn.benchmark=auto)",
          autotune_gpu),
    Check("fast-channels-last", 1, "every conv2d output of a CNN fit is channels-last", channels_last_gpu),
    Check("fast-fused-optimizer", 1, "Adam runs torch's fused kernel on the GPU", fused_optimizer_gpu),
    Check("fast-tf32", 1, "TF32 switches as the tf32 flag asks", tf32_gpu),
    # run + judge (bench/selfchecks_compiled.py), through jit.legacy until the selftest protocol is merged
    Check("compiled-cuda-graphs", 1, "jit=on: the step replays CUDA graphs, no recompile per epoch, eager's "
          "weights and losses", jit.legacy(jit.run_cuda_graphs, jit.judge_cuda_graphs)),
    Check("compiled-optimizer", 1, "jit=on, foreach updates: eager weights under lr changes and a reload, "
          "no host sync", jit.legacy(jit.run_optimizer, jit.judge_optimizer)),
    Check("compiled-accumulate", 1, "jit=on with accumulate=2 and an OOM split: eager weights, updates "
          "compiled, gradients out of the CUDA-graph pool",
          jit.legacy(jit.run_accumulate, jit.judge_accumulate)),
    Check("compiled-data-parallel", 2, "jit=on under NCCL data parallel with accumulate=2: every update "
          "compiled on each rank", jit.legacy(jit.run_data_parallel, jit.judge_data_parallel)),
    Check("no-host-sync", 1, "steps 2..N of a fit under torch.cuda.set_sync_debug_mode('error')",
          no_host_sync_gpu),
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


def run_in_process(name: str, timeout: float) -> tuple[bool, str]:
    """Run check ``name`` in a fresh interpreter (``python -m arignote.bench.selfchecks NAME``):
    ``(passed, detail)``. The one runner of ``arignote selftest`` and of the ``gpu``-marked tests.

    Example::

        >>> run_in_process("train-cpu", timeout=300)
        (True, 'CNN, loss 1.386 -> 1.371 on cpu')
    """
    cmd = [sys.executable, "-m", "arignote.bench.selfchecks", name]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, f"timed out after {timeout:.0f} s"
    for line in proc.stdout.splitlines():
        if line.startswith(MARK):
            msg = json.loads(line[len(MARK):])
            return bool(msg["ok"]), msg["detail"]
    tail = [ln for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
    return False, f"exit code {proc.returncode}: {tail[-1] if tail else 'no output'}"


def main(argv: list[str]) -> int:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote import devices

    by_name = {c.name: c for c in CHECKS}
    if len(argv) != 1 or argv[0] not in by_name:
        print(f"usage: python -m arignote.bench.selfchecks {{{','.join(by_name)}}}", file=sys.stderr)
        return 2
    try:
        detail, ok = by_name[argv[0]].fn(), True
    except Exception as exc:  # an item's failure of any kind is its result  # noqa: BLE001
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        detail, ok = f"{type(exc).__name__}: {first}", False
    if devices.rank() == 0:
        print(MARK + json.dumps({"ok": ok, "detail": detail}), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
