"""``arignote selftest`` items for placement contexts on several GPUs (issue 28 C3, W4): each a run
(on the GPUs) and a pure judge. Written without a GPU: never run where it was written.

* ``placement-memory-limit`` (2 GPUs): ``memory.limit=0.25`` with layers on cuda:0 and cuda:1; the
  cap must hold on both (35% refused with the error naming the flag, 10% allowed) and the banner
  must name both GPUs' caps (it named cuda:0 only: W4).
* ``placement-data-parallel-oom`` (4 GPUs): 2 replicas of 2 GPUs each; rank 1 runs out of memory
  (injected above 32 samples: its local batch is 64) and takes part in the gradient reduction with
  a stand-in backward over parameters on two GPUs (it raised a device error: C3); every rank must
  agree on the split and train on.

Example::

    >>> judge_placement_dp_oom({"world_size": 2, "rank": 0, "gpus": 4, "k": 2, "where": ["cuda:0", "cuda:1"],
    ...                         "losses": [0.9, 0.8]}).message
    'rank 1 ran out; both replicas of 2 GPUs went to k=2 and trained on'
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

from arignote.bench.selfchecks_dp import _data
from arignote.bench.selfchecks_gpu import limit_probe, limit_problems
from arignote.bench.selftest_fits import loss_problems
from arignote.bench.selftest_protocol import Verdict, verdict

__all__ = ["run_placement_memory_limit", "judge_placement_memory_limit", "run_placement_dp_oom",
           "judge_placement_dp_oom"]


def _placed_model(hidden: int = 256) -> Any:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote.layers import Dense
    from arignote.models import Sequential
    from arignote.parallel.placement import device

    model = Sequential()
    with device("dev0"):
        model.add(Dense(hidden, activation="tanh", input_shape=(64,)))
    with device("dev1"):
        model.add(Dense(8))
    model.compile("sgd", "mse")
    return model


def run_placement_memory_limit() -> dict[str, Any]:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote import config
    from arignote.devices import cuda

    totals = [cuda.mem_get_info(i)[1] for i in (0, 1)]
    config.configure(device="cuda0", contexts="dev0->cuda0;dev1->cuda1", memory_limit=0.25,
                     print_active_device=True)
    x, y = _data()
    model = _placed_model()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        losses = model.fit(x, y, batch_size=128, epochs=2, verbose=0).history["loss"]
    return {"banner": out.getvalue().splitlines(), "losses": [float(v) for v in losses],
            "where": sorted({str(p.device) for p in model.module.parameters()}),
            "probes": {f"cuda:{i}": {"total": totals[i], **limit_probe(i, totals[i])} for i in (0, 1)}}


def judge_placement_memory_limit(record: dict[str, Any]) -> Verdict:
    problems = [] if record["where"] == ["cuda:0", "cuda:1"] else [f"parameters on {record['where']}"]
    for gpu, probe in sorted(record["probes"].items()):
        problems += limit_problems(probe, gpu)
        if not any(f"Capping {gpu} at" in ln for ln in record["banner"]):
            problems.append(f"the banner does not show {gpu}'s cap")
    problems += loss_problems(record["losses"])
    return verdict(problems, "memory.limit=0.25 holds on cuda:0 and cuda:1 of a placed model; the banner "
                   "names both caps", fractions=[p["fraction"] for _, p in sorted(record["probes"].items())])


def _inject_on_rank_1() -> None:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote import config
    from arignote.runtime.setup import rank

    if rank() == 1:
        config.configure(memory_oom_inject_above=32)


def run_placement_dp_oom() -> dict[str, Any]:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote import config
    from arignote.devices import current_inventory

    config.configure(device="all", contexts="dev0->cuda0;dev1->cuda1", print_active_device=False)
    _inject_on_rank_1()
    x, y = _data()
    model = _placed_model()
    losses = model.fit(x, y, batch_size=128, epochs=2, verbose=0).history["loss"]
    strategy = model.strategy
    return {"world_size": strategy.world_size, "rank": strategy.rank, "gpus": len(current_inventory().gpus),
            "k": model._trainer.oom.k if model._trainer.oom is not None else 1,
            "where": sorted({str(p.device) for p in model.module.parameters()}),
            "losses": [float(v) for v in losses]}


def judge_placement_dp_oom(record: dict[str, Any]) -> Verdict:
    n, world, where = record["gpus"], record["world_size"], record["where"]
    own = [f"cuda:{2 * record['rank'] + i}" for i in range(2)]
    problems = [] if world == n // 2 == 2 else [f"{world} replicas for {n} GPUs, expected 2"]
    if where != own:
        problems.append(f"replica {record['rank']}'s parameters on {where}, expected {own}")
    if record["k"] <= 1:
        problems.append(f"replica {record['rank']} did not split (k={record['k']}): rank 1's out-of-memory "
                        "was not agreed on")
    problems += loss_problems(record["losses"])
    return verdict(problems, f"rank 1 ran out; both replicas of 2 GPUs went to k={record['k']} and trained "
                   "on", k=record["k"])
