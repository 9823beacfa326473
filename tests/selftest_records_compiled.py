"""Recorded outcomes of the compiled-step ``arignote selftest`` items (bench/selfchecks_compiled.py)
for their judges: ``RECORDS[item] = {"good": [...], "broken": {what broke: record}}``.

No GPU was here: the records are written from the runs' code (what a correct run and each broken
run would record), not measured. A broken record is a good one with what the breakage changes.
"""

from __future__ import annotations

from typing import Any


def broke(good: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**good, **changes}


_graphs = {"device": "cuda:0", "mode": "reduce-overhead", "backend": "inductor", "cudagraphs": True,
           "graphs_first_epoch": 3, "graphs_last_epoch": 3, "graph_replays": 3, "cudagraph_skips": 0,
           "launches": 6, "eager_launches": 41, "device_kernels": 19, "eager_device_kernels": 41,
           "weight_diff": 2.4e-7, "loss_diff": 1.2e-7, "losses": [1.41, 1.22, 1.09],
           "eager_losses": [1.41, 1.22, 1.09], "recorded_sizes": {"train": [32]}, "eager_batches": 3}

_one = {"max_diff": 3.0e-7, "compiled_calls": 40, "eager_calls": 0, "route": "compiled",
        "graphs_before_last": 4, "graphs_after": 4, "guarded": [3, 4, 5, 6, 7], "cudagraph_skips": 0,
        "state_copied": 0}
_optimizer = {"optimizers": {name: dict(_one) for name in
                             ("sgd-momentum", "adam", "rmsprop", "adagrad", "adadelta", "nadam")}}


def _opt(name: str, **changes: Any) -> dict[str, Any]:
    return {"optimizers": {**_optimizer["optimizers"], name: broke(_one, **changes)}}


_case = {"max_diff": 4.0e-7, "finite": True, "compiled_calls": 8, "eager_calls": 0, "k": 1,
         "cudagraphs": True, "grads_copied": 4, "recorded_sizes": {"train": [16]}, "error": None}
_split = broke(_case, k=4, recorded_sizes={"train": [8]})
_accumulate = {"cases": {"accumulate-2/adam": _case, "accumulate-2/sgd-momentum": _case,
                         "oom-split/adam": _split, "oom-split/sgd-momentum": _split}}


def _acc(key: str, **changes: Any) -> dict[str, Any]:
    return {"cases": {**_accumulate["cases"], key: broke(_accumulate["cases"][key], **changes)}}


_dp = {"world": 2, "backend": "nccl", "mode": "reduce-overhead", "route": "compiled",
       "calls": [[8, 0], [8, 0]], "steps": 8, "finite": True}

RECORDS = {
    "compiled-cuda-graphs": {"good": [_graphs], "broken": {
        "no replay": broke(_graphs, graph_replays=0),
        "not reduce-overhead": broke(_graphs, mode="default", cudagraphs=False),
        "recompiles every epoch": broke(_graphs, graphs_last_epoch=5),
        "cuda graphs skipped": broke(_graphs, cudagraph_skips=2),
        "no fewer launches": broke(_graphs, launches=41),
        "weights not eager's": broke(_graphs, weight_diff=3.1e-2),
        "weights NaN": broke(_graphs, weight_diff=float("nan")),
        "losses not eager's": broke(_graphs, loss_diff=0.2, losses=[1.41, 1.5, 1.9]),
        "partial batch recorded": broke(_graphs, recorded_sizes={"train": [8, 32]}),
    }},
    "compiled-optimizer": {"good": [_optimizer], "broken": {
        "host sync (torch's sync-debug error)": {"host_sync": "RuntimeError: called a synchronizing CUDA "
                                                 "operation", "optimizers": {}},
        "eager fallback": _opt("rmsprop", eager_calls=40, compiled_calls=0),
        "fused route": _opt("adam", route="fused"),
        "weights differ": _opt("nadam", max_diff=2.0e-3),
        "recompiles in the last epoch": _opt("adadelta", graphs_after=6),
        "nothing guarded": _opt("adagrad", guarded=[]),
        "cuda graphs skipped": _opt("sgd-momentum", cudagraph_skips=1),
        "nothing run": {"optimizers": {}},
    }},
    "compiled-accumulate": {"good": [_accumulate], "broken": {
        "gradients freed by the next generation (pytorch#169545)": _acc(
            "accumulate-2/adam", error="RuntimeError: Error: accessing gradient tensor output of CUDAGraphs "
            "that has been overwritten by a subsequent run."),
        "weights NaN": _acc("accumulate-2/sgd-momentum", max_diff=float("nan"), finite=False),
        "weights differ": _acc("oom-split/adam", max_diff=5.0e-2),
        "update eager": _acc("accumulate-2/adam", eager_calls=8, compiled_calls=0),
        "no CUDA graphs": _acc("oom-split/sgd-momentum", cudagraphs=False),
        "gradients left in the pool": _acc("accumulate-2/adam", grads_copied=0),
        "no split": _acc("oom-split/adam", k=1, recorded_sizes={"train": [32]}),
    }},
    "compiled-data-parallel": {"good": [_dp], "broken": {
        "eager fallback on every rank (heartbeat hook)": broke(_dp, calls=[[0, 8], [0, 8]]),
        "eager on rank 1": broke(_dp, calls=[[8, 0], [5, 3]]),
        "one process": broke(_dp, world=1, calls=[[8, 0]]),
        "gloo": broke(_dp, backend="gloo"),
        "no CUDA graphs": broke(_dp, mode="default"),
        "weights not finite": broke(_dp, finite=False),
    }},
}
