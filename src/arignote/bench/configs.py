"""The benchmark's configurations: the seeds' CPU / CUDA / cuDNN ladder and the CPU process settings.

A configuration is a name and the arignote flags it sets.  Whether this machine can run it is a
value (a reason string), not an exception: the report lists skipped configurations with the
reason.  ``cpu-PxT`` means P data-parallel CPU processes of T threads each.

Example::

    >>> from types import SimpleNamespace as NS
    >>> inv = NS(gpus=[], cpu_threads=2, cuda_reason="no NVIDIA driver")
    >>> print(" ".join(c.name for c in default_configs(inv)))
    cpu cuda-nodnn cuda cuda-benchmark cuda-fast cuda-compiled cuda-mixed all-gpus cpu-1x2 cpu-2x1
    >>> skip_reason(get("cuda", inv), inv)
    'needs a CUDA GPU (no NVIDIA driver)'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BenchConfig", "default_configs", "get", "parse", "skip_reason", "peer_skip_reason",
           "seeds_reference", "tf32_of", "PLAIN_GPU", "FAST_GPU", "SEEDS_ROWS"]


@dataclass(frozen=True)
class BenchConfig:
    """One row of the seed table: its name, what it means, and the arignote flags it sets."""

    name: str
    doc: str
    flags: dict[str, Any] = field(default_factory=dict)
    min_gpus: int = 0  # 0: a CPU configuration
    processes: int = 1  # data-parallel processes (CPU) or 0 for "one per GPU"
    threads: int = 0  # intra-op threads per process (0: torch's default)

    @property
    def is_gpu(self) -> bool:
        return self.min_gpus > 0

    @property
    def single_process(self) -> bool:
        return self.processes == 1


# the seeds' rows switch the fast defaults (devices/fastpaths.py) off, so each rung adds one thing
PLAIN_GPU = {"dnn.benchmark": False, "tf32": "off", "memory_format": "contiguous",
             "optimizer.impl": "foreach"}
FAST_GPU = {"dnn.benchmark": "auto", "tf32": "on", "memory_format": "auto", "optimizer.impl": "auto"}

_GPU_LADDER = [
    BenchConfig("cuda-nodnn", "one GPU, plain CUDA kernels (cuDNN off; the seeds' GPU row)",
                {"device": "cuda", "dnn.enabled": "false", **PLAIN_GPU}, min_gpus=1),
    BenchConfig("cuda", "one GPU with cuDNN (the seeds' GPU + cuDNN row), fast defaults off",
                {"device": "cuda", "dnn.enabled": "true", **PLAIN_GPU}, min_gpus=1),
    BenchConfig("cuda-benchmark", "one GPU, cuDNN + dnn.benchmark (autotuned algorithms)",
                {"device": "cuda", "dnn.enabled": "true", **PLAIN_GPU, "dnn.benchmark": True}, min_gpus=1),
    BenchConfig("cuda-fast", "one GPU, cuDNN + the fast defaults (autotune, TF32, channels-last, fused "
                "optimizer, device-resident arrays)", {"device": "cuda", "dnn.enabled": "true", **FAST_GPU},
                min_gpus=1),
    BenchConfig("cuda-compiled", "one GPU, cuDNN + fast defaults + compiled step (jit=on: torch.compile "
                "reduce-overhead, CUDA graphs)",
                {"device": "cuda", "dnn.enabled": "true", **FAST_GPU, "jit": "on"}, min_gpus=1),
    BenchConfig("cuda-mixed", "one GPU, cuDNN + fast defaults + mixed precision (fp16 autocast)",
                {"device": "cuda", "dnn.enabled": "true", **FAST_GPU, "precision": "mixed-fp16"},
                min_gpus=1),
    BenchConfig("all-gpus", "every GPU, data parallel (DDP over NCCL), cuDNN + fast defaults",
                {"device": "all", "dnn.enabled": "true", **FAST_GPU}, min_gpus=2, processes=0),
]

# the seeds' measured rows (Theano 0.9, the CIFAR-10 CNN, batch 32, 45,000 samples per epoch) and the
# configuration each one corresponds to
SEEDS_ROWS = (("cpu", "CPU", 152.0), ("cuda-nodnn", "GTX 1060, CUDA", 20.0),
              ("cuda", "GTX 1060, CUDA + cuDNN", 7.0))


def tf32_of(name: str) -> bool:
    """Whether configuration ``name`` runs with TF32 (the performance model's ``tf32``); a name
    that sets no ``tf32`` runs with the flag's default, on.

    >>> tf32_of("cuda"), tf32_of("cuda-fast")
    (False, True)
    """
    cfg = next((c for c in _GPU_LADDER if c.name == name), None)
    return (cfg.flags.get("tf32", "on") if cfg else "on") != "off"


def seeds_reference(model: str, batch_sizes: Any) -> list[str]:
    """The seeds' rows for reference under a table of the CNN at batch 32 (else nothing).

    >>> seeds_reference("cnn", [32])[1]
    '  cpu          CPU                       152 s/epoch'
    """
    if model != "cnn" or 32 not in list(batch_sizes):
        return []
    lines = ["the seeds, for reference (Theano 0.9, same CNN, batch 32, 45,000 samples per epoch):"]
    lines += [f"  {name:12} {what:24} {seconds:4.0f} s/epoch" for name, what, seconds in SEEDS_ROWS]
    return lines
_CPU_RE = re.compile(r"^cpu-(\d+)x(\d+)$")


def cpu_config(processes: int, threads: int) -> BenchConfig:
    """``cpu-PxT``: P data-parallel CPU processes (gloo) with T intra-op threads each."""
    if processes < 1 or threads < 1:
        raise ValueError(f"cpu-{processes}x{threads}: processes and threads must be at least 1")
    what = "one process" if processes == 1 else f"{processes} data-parallel processes (gloo)"
    return BenchConfig(f"cpu-{processes}x{threads}", f"CPU, {what} x {threads} thread(s)",
                       {"device": "cpu", "cpu.processes": processes, "cpu.threads": threads},
                       processes=processes, threads=threads)


def _cpu_variants(cores: int) -> list[BenchConfig]:
    """The process x thread splits worth showing on ``cores`` cores: 1xN, 2x(N/2), Nx1."""
    pairs = [(1, cores)]
    if cores >= 2:
        pairs += [(2, cores // 2), (cores, 1)]
    seen: list[tuple[int, int]] = []
    for pair in pairs:
        if pair not in seen:
            seen.append(pair)
    return [cpu_config(p, t) for p, t in seen]


# asked for by name only (--configs cpu,cpu-compiled): compiling the CNN with inductor takes minutes on
# a small CPU, more than --quick's budget; the epoch figure leaves it out only with --epochs 2 or more
_ON_REQUEST = [
    BenchConfig("cpu-compiled", "CPU, one process, compiled step (jit=on: torch.compile, inductor)",
                {"device": "cpu", "jit": "on"}),
]


def default_configs(inventory: Any) -> list[BenchConfig]:
    """Every configuration the bench knows for a machine like ``inventory`` (runnable or not)."""
    base = BenchConfig("cpu", "CPU, one process, torch's default threads", {"device": "cpu"})
    return [base, *_GPU_LADDER, *_cpu_variants(max(1, int(inventory.cpu_threads or 1)))]


def get(name: str, inventory: Any) -> BenchConfig:
    """The configuration called ``name`` (any ``cpu-PxT`` is accepted); a clear error lists the names."""
    for c in [*default_configs(inventory), *_ON_REQUEST]:
        if c.name == name:
            return c
    m = _CPU_RE.match(name)
    if m:
        return cpu_config(int(m.group(1)), int(m.group(2)))
    known = ", ".join(c.name for c in default_configs(inventory))
    raise ValueError(f"unknown configuration '{name}'; choose from: {known} (or any cpu-PxT)")


def parse(text: str | None, inventory: Any) -> list[BenchConfig]:
    """``--configs a,b`` -> configurations in the order given; None or empty -> all of them."""
    if not text:
        return default_configs(inventory)
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise ValueError("--configs is empty; give names such as cpu,cuda")
    out: list[BenchConfig] = []
    for name in names:
        c = get(name, inventory)
        if c not in out:
            out.append(c)
    return out


def skip_reason(config: BenchConfig, inventory: Any, cudnn: int | None = None,
                strategies: frozenset[str] = frozenset({"ddp"})) -> str | None:
    """Why ``config`` cannot run on ``inventory`` (None when it can).

    ``cudnn`` is the cuDNN version (None: absent); ``strategies`` says whether data-parallel
    training is available in this build (``"ddp"``).
    """
    gpus = list(inventory.gpus or [])
    if config.is_gpu:
        if not gpus:
            why = getattr(inventory, "cuda_reason", "") or "none found"
            return f"needs a CUDA GPU ({why})"
        if len(gpus) < config.min_gpus:
            return f"needs {config.min_gpus} GPUs, this machine has {len(gpus)}"
        if config.flags.get("dnn.enabled") == "true" and cudnn is None:
            return "needs cuDNN, which this torch build does not have"
    else:
        cores = int(inventory.cpu_threads or 1)
        need = config.processes * max(config.threads, 1)
        if need > cores:
            return f"needs {need} CPU threads ({config.processes}x{config.threads}), this machine has {cores}"
    if config.processes != 1 and "ddp" not in strategies:
        return "data-parallel training is not available in this arignote build"
    return None


def peer_skip_reason(runner: str, config: BenchConfig) -> str | None:
    """Why peer ``runner`` does not run ``config``: peers are compared on single-process settings."""
    if runner != "arignote" and not config.single_process:
        return f"{runner} is compared on single-process configurations only"
    if runner != "arignote" and config.flags.get("jit", "off") != "off":
        return f"{runner} runs its eager loop: compared on the eager configurations"
    return None
