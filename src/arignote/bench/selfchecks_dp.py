"""Self-test items for data parallel on GPUs (``arignote selftest``; most need 2 GPUs).

Each item runs in its own ``python -m arignote.bench.selfchecks NAME`` process; with several GPUs
fit re-runs that command for the other ranks, so every run function here runs on every rank and
only rank 0 reports. The one-process reference weights a data-parallel fit is compared with are
computed in a process of their own (:func:`reference_weights`): a reference fit run inside rank 1
would join rank 0's job (issue 28 W1: the reference of ``data-parallel-weights`` and
``data-parallel-oom`` joined the 2-GPU job on rank 1, whose capped second fit then waited for a
partner until the timeout). The same runs work on 2 gloo CPU processes
(``python -m arignote.bench.selfchecks_dp weights|oom cpu``; tests/test_selfchecks_dp.py).
Written without a GPU: none of the GPU items was run where it was written.

Example::

    >>> judge_dp_weights({"world_size": 2, "backend": "nccl", "want_backend": "nccl", "max_diff": 2e-7,
    ...                   "k": 1}).message
    "NCCL weights = one process's (max diff 2.0e-07)"
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np

from arignote.bench.selftest_fits import loss_problems
from arignote.bench.selftest_protocol import Verdict, verdict

__all__ = ["reference_weights", "dp_record", "judge_dp_weights", "judge_dp_oom", "run_dp_weights",
           "run_dp_oom", "sync_oom_job", "judge_sync_oom", "run_dp_oom_sync", "run_bf16_gpu",
           "judge_bf16_gpu",
           "run_preallocation_after_oom", "judge_preallocation_after_oom", "run_dp_with_placement",
           "judge_dp_with_placement"]

# the device flags of the one-process reference and of the 2-rank job, per device kind
LAYOUTS = {"gpu": ({"device": "cuda0"}, {"device": "cuda0,cuda1"}, "nccl"),
           "cpu": ({"device": "cpu"}, {"device": "cpu", "cpu.processes": 2, "cpu.threads": 1}, "gloo")}


def _data(n: int = 512, width: int = 64) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, width)).astype("float32"), rng.normal(size=(n, 8)).astype("float32")


def _model(width: int = 64, hidden: int = 256) -> Any:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    import torch

    from arignote.models import Model

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(width, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 8))
    model = Model(net)
    model.compile("sgd", "mse")
    return model


def _train(flags: dict[str, Any], batch: int = 128, hook: Any = None) -> Any:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    import torch

    from arignote import config

    config.configure(**{"print_active_device": False, "dnn.deterministic": True, **flags})
    x, y = _data()
    model = _model()
    if hook is not None:
        hook(model)
    torch.manual_seed(1)
    model.fit(x, y, batch_size=batch, epochs=2, shuffle=True, verbose=0)
    return model


def reference_weights(flags: dict[str, Any], timeout: float = 300.0) -> list[np.ndarray]:
    """The weights of :func:`_train` under ``flags`` in one process of its own, started without the
    data-parallel environment (``python -m arignote.bench.selfchecks_dp reference FLAGS OUT``)."""
    # loads the parallel package (torch.distributed) in the check's own process only
    from arignote.parallel.env import alone_environ

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "reference.npz")
        cmd = [sys.executable, "-m", "arignote.bench.selfchecks_dp", "reference", json.dumps(flags), out]
        proc = subprocess.run(cmd, env=alone_environ(os.environ), capture_output=True, text=True,
                              timeout=timeout)
        if proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise RuntimeError(f"the one-process reference fit failed (exit {proc.returncode}): {tail}")
        with np.load(out) as saved:
            return [saved[f"w{i}"] for i in range(len(saved.files))]


def _max_diff(a: list, b: list) -> float:
    return max(float(np.max(np.abs(np.asarray(u, dtype=float) - np.asarray(v, dtype=float))))
               for u, v in zip(a, b))


def dp_record(kind: str, hook: Any = None) -> dict[str, Any]:
    """Rank 0: the reference in its own process, then the 2-rank fit (rank 1 runs the fit only);
    the record of the 2-rank fit on this rank: world size, backend, its OOM guard's k, the largest
    weight difference from the reference."""
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote.runtime.setup import rank

    one_flags, two_flags, backend = LAYOUTS[kind]
    one = reference_weights(one_flags) if rank() == 0 else None
    two = _train(two_flags, hook=hook)
    strategy = two.strategy
    return {"world_size": strategy.world_size, "backend": strategy.backend, "want_backend": backend,
            "k": two._trainer.oom.k if two._trainer.oom is not None else 1,
            "max_diff": _max_diff(one, two.get_weights()) if one is not None else None}


def judge_dp_weights(record: dict[str, Any]) -> Verdict:
    problems = []
    if record["world_size"] != 2 or record["backend"] != record["want_backend"]:
        problems.append(f"the fit ran on {record['world_size']} {record['backend']} process(es), expected 2 "
                        f"{record['want_backend']}")
    if record["max_diff"] is None or record["max_diff"] >= 1e-4:
        problems.append(f"2-process weights differ from 1-process weights by {record['max_diff']}")
    diff = record["max_diff"] or 0.0
    return verdict(problems, f"{record['backend'].upper()} weights = one process's (max diff {diff:.1e})",
                   max_diff=record["max_diff"])


def judge_dp_oom(record: dict[str, Any]) -> Verdict:
    base = judge_dp_weights(record)
    problems = [] if base.ok else [base.message]
    if record["k"] <= 1:
        problems.insert(0, f"no out-of-memory happened on rank 1 (rank 0's k={record['k']}): the cap did not "
                           "bite, or the ranks did not agree on k")
    return verdict(problems, f"rank 1 ran out, every rank went to k={record['k']}, weights = one process's "
                   f"(max diff {record['max_diff'] or 0.0:.1e})", k=record["k"], max_diff=record["max_diff"])


def _cap_rank_1(model: Any) -> None:
    """On rank 1 (GPU): cap the allocator so that a step at the full local batch does not fit but a
    quarter of it does (measured with a trial step of the bare module first)."""
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    import torch

    from arignote.devices import cuda
    from arignote.runtime.setup import rank

    if rank() != 1:
        return
    dev = torch.device("cuda", 1)
    net = model.module.to(dev)
    x = torch.zeros((64, 64), device=dev)
    cuda.synchronize(1)
    base, _ = cuda.memory_in_use(1)
    cuda.reset_peak_memory(1)
    net(x).sum().backward()
    peak, _ = cuda.peak_memory(1)
    net.zero_grad(set_to_none=True)
    _, total = cuda.mem_get_info(1)
    reserved = cuda.memory_in_use(1)[1]
    cuda.set_memory_fraction(min(1.0, (reserved + 0.4 * (peak - base)) / total), 1)


def _inject_on_rank_1(model: Any) -> None:
    """On rank 1 (CPU): an injected out-of-memory above 32 samples (the local batch is 64)."""
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote import config
    from arignote.runtime.setup import rank

    if rank() == 1:
        config.configure(memory_oom_inject_above=32)


def run_dp_weights() -> dict[str, Any]:
    return dp_record("gpu")


def run_dp_oom() -> dict[str, Any]:
    return dp_record("gpu", hook=_cap_rank_1)


# A data-parallel job whose rank 1 runs out of memory in the backward of its 3rd step, while DDP is
# reducing the gradients: ``allocate`` asks the device's allocator for 64 TiB there (a real
# out-of-memory error from the CUDA caching allocator), ``raise`` raises torch's OutOfMemoryError
# itself (for the CPU, whose allocator's failure is no out-of-memory error to arignote).
SYNC_OOM_JOB = r"""
import sys
import numpy as np, torch
from arignote import config
from arignote.runtime.setup import rank
from arignote.models import Model

mode = sys.argv[1]
config.configure(print_active_device=False)
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
calls = [0]


def hook(grad):
    calls[0] += 1
    if rank() == 1 and calls[0] == 3:
        if mode == "allocate":
            torch.empty(1 << 46, dtype=torch.uint8, device=grad.device)
        raise torch.OutOfMemoryError("out of memory (raised by the self-test during the gradient sync)")
    return grad


net[0].weight.register_hook(hook)
m = Model(net)
m.compile("sgd", "mse")
x = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
m.fit(x, x[:, :1], batch_size=16, epochs=2, verbose=0)
"""

SYNC_OOM_ERROR = "rank 1: out of memory in the backward pass while the gradients were being reduced"


def sync_oom_job(device: str, mode: str, timeout: float = 300.0) -> dict[str, Any]:
    """Run :data:`SYNC_OOM_JOB` as a plain ``python job.py`` with ``ARIGNOTE_FLAGS=device=<device>``:
    its exit code, seconds, whether stderr carries the one error naming rank 1, and its last line."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "sync_oom.py")
        with open(path, "w") as fh:
            fh.write(SYNC_OOM_JOB)
        env = {**os.environ, "ARIGNOTE_FLAGS": f"device={device}"}
        started = time.monotonic()
        proc = subprocess.run([sys.executable, path, mode], env=env, capture_output=True, text=True,
                              timeout=timeout, cwd=tmp)
        seconds = time.monotonic() - started
    return {"returncode": proc.returncode, "seconds": round(seconds, 1),
            "named": SYNC_OOM_ERROR in proc.stderr,
            "last_line": (proc.stderr.strip().splitlines() or ["no output"])[-1]}


def judge_sync_oom(record: dict[str, Any]) -> Verdict:
    """A non-zero exit within a minute (nobody waits for a collective's timeout), with the one
    error naming rank 1 and where it ran out."""
    problems = []
    if record["returncode"] == 0:
        problems.append("the job went on after rank 1 ran out of memory in the gradient sync")
    if not record["named"]:
        problems.append(f"the job's error does not say so: {record['last_line']}")
    if record["seconds"] >= 60:
        problems.append(f"the job took {record['seconds']:.0f} s to stop: a rank waited for a collective's "
                        "timeout")
    return verdict(problems, f"rank 1 ran out during the gradient sync: every rank stopped in "
                   f"{record['seconds']:.0f} s with one error", seconds=record["seconds"])


def run_dp_oom_sync() -> dict[str, Any]:
    return sync_oom_job("cuda0,cuda1", "allocate")


def run_bf16_gpu() -> dict[str, Any]:
    model = _train({"device": "cuda0", "precision": "mixed-bf16"})
    return {"losses": [float(v) for v in model.history.history["loss"]]}


def judge_bf16_gpu(record: dict[str, Any]) -> Verdict:
    losses = record["losses"]
    return verdict(loss_problems(losses), f"bf16 loss {losses[0]:.3f} -> {losses[-1]:.3f}", losses=losses)


def run_preallocation_after_oom() -> dict[str, Any]:
    """memory.preallocate=0.5 still holds its block after an (injected) out-of-memory recovery."""
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote.devices import cuda

    model = _train({"device": "cuda0", "memory.preallocate": 0.5, "memory.oom_inject_above": 32})
    return {"k": model._trainer.oom.k, "reserved": cuda.memory_in_use(0)[1], "total": cuda.mem_get_info(0)[1]}


def judge_preallocation_after_oom(record: dict[str, Any]) -> Verdict:
    k, reserved, total = record["k"], record["reserved"], record["total"]
    problems = [] if k > 1 else ["the injected out-of-memory did not split the batch"]
    if reserved < 0.45 * total:
        problems.append(f"only {reserved >> 20} MiB reserved of {total >> 20} MiB after recovery")
    return verdict(problems, f"{reserved >> 20} MiB still reserved of {total >> 20} MiB after recovering at "
                   f"k={k}", reserved=reserved, k=k)


def run_dp_with_placement() -> dict[str, Any]:
    """Placement + data parallel on 4 GPUs: 2 replicas, each with its layers on its own 2 GPUs."""
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote import config
    from arignote.devices import current_inventory
    from arignote.layers import Dense
    from arignote.models import Sequential
    from arignote.parallel.placement import device

    config.configure(device="all", contexts="dev0->cuda0;dev1->cuda1", print_active_device=False)
    x, y = _data()
    model = Sequential()
    with device("dev0"):
        model.add(Dense(256, activation="tanh", input_shape=(64,)))
    with device("dev1"):
        model.add(Dense(8))
    model.compile("sgd", "mse")
    model.fit(x, y, batch_size=128, epochs=1, verbose=0)
    strategy = model.strategy
    return {"world_size": strategy.world_size, "rank": strategy.rank, "gpus": len(current_inventory().gpus),
            "where": sorted({str(p.device) for p in model.module.parameters()})}


def judge_dp_with_placement(record: dict[str, Any]) -> Verdict:
    n, world, where = record["gpus"], record["world_size"], record["where"]
    own = [f"cuda:{2 * record['rank'] + i}" for i in range(2)]
    problems = [] if world == n // 2 else [f"{world} replicas for {n} GPUs, expected {n // 2}"]
    if where != own:
        problems.append(f"replica {record['rank']}'s parameters on {where}, expected {own}")
    return verdict(problems, f"{world} replicas of 2 GPUs each, layers on each replica's own GPUs")


def main(argv: list[str]) -> int:
    """``reference FLAGS_JSON OUT.npz``: one fit, weights saved; ``weights|oom cpu|gpu``: the item's
    record printed on rank 0 (``@@selftest-record {...}``)."""
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote.runtime.setup import rank

    if len(argv) == 3 and argv[0] == "reference":
        weights = _train(json.loads(argv[1])).get_weights()
        np.savez(argv[2], **{f"w{i}": w for i, w in enumerate(weights)})
        return 0
    if len(argv) == 2 and argv[0] in ("weights", "oom") and argv[1] in LAYOUTS:
        hook = None if argv[0] == "weights" else {"gpu": _cap_rank_1, "cpu": _inject_on_rank_1}[argv[1]]
        record = dp_record(argv[1], hook=hook)
        if rank() == 0:
            print("@@selftest-record " + json.dumps(record), flush=True)
        return 0
    print("usage: python -m arignote.bench.selfchecks_dp reference FLAGS_JSON OUT.npz | "
          "{weights,oom} {cpu,gpu}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
