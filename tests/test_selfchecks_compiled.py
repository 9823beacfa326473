"""The compiled-step selftest items (bench/selfchecks_compiled.py): each judge passes the recorded
correct outcome and fails each broken one (tests/selftest_records_compiled.py); the runs' probes on
the CPU give records with every key the judges read; the host-sync error is torch's text only (W3).
"""

from __future__ import annotations

import json

import pytest

from arignote import config
from arignote.bench import selfchecks
from arignote.bench import selfchecks_compiled as jit
from arignote.bench.selftest_protocol import Check, Verdict, judge_record
from selftest_records_compiled import RECORDS

JUDGES = {"compiled-cuda-graphs": jit.judge_cuda_graphs, "compiled-optimizer": jit.judge_optimizer,
          "compiled-accumulate": jit.judge_accumulate, "compiled-data-parallel": jit.judge_data_parallel}
CASES = [(name, "good", i, rec) for name, recs in RECORDS.items() for i, rec in enumerate(recs["good"])]
CASES += [(name, "broken", why, rec) for name, recs in RECORDS.items() for why, rec in recs["broken"].items()]


@pytest.mark.parametrize(("name", "kind", "why", "record"), CASES,
                         ids=[f"{n}-{k}-{w}" for n, k, w, _ in CASES])
def test_the_judge_passes_a_correct_run_and_fails_a_broken_one(name, kind, why, record):
    record = json.loads(json.dumps(record))  # as the item's process hands it over
    result = judge_record(Check(name, 1, "", lambda: {}, JUDGES[name]), record)
    assert isinstance(result, Verdict) and result.message
    if kind == "good":
        assert result.ok, result.message
        json.dumps(result.numbers)
    else:
        assert not result.ok, f"{name}'s judge passed a broken run ({why}): {result.message}"


def test_every_item_is_registered_with_a_good_and_a_broken_record():
    names = {c.name: c.gpus for c in selfchecks.CHECKS}
    assert {n: names.get(n) for n in JUDGES} == {"compiled-cuda-graphs": 1, "compiled-optimizer": 1,
                                                 "compiled-accumulate": 1, "compiled-data-parallel": 2}
    assert all(RECORDS[n]["good"] and RECORDS[n]["broken"] for n in JUDGES)


@pytest.mark.parametrize("text, sync", [
    ("called a synchronizing CUDA operation", True),
    ("called a synchronizing CUDA operation\nException raised from warn_or_error_on_sync at ...", True),
    ("CUDA error: an illegal memory access was encountered", False),
    ("Error: accessing tensor output of CUDAGraphs that has been overwritten by a subsequent run.", False),
    ("CUDA out of memory. Tried to allocate 2.00 MiB", False),
])
def test_only_torch_s_sync_debug_error_counts_as_a_host_sync(text, sync):
    """W3: torch's text (c10/cuda/CUDAFunctions.cpp, warn_or_error_on_sync) and nothing else."""
    assert jit.is_host_sync_error(RuntimeError(text)) is sync


def test_run_optimizer_records_a_host_sync_and_raises_anything_else(monkeypatch):
    from arignote.devices import cuda

    switched = []
    monkeypatch.setattr(cuda, "set_sync_errors", switched.append)

    def syncs(*a, **k):
        raise RuntimeError("called a synchronizing CUDA operation")

    monkeypatch.setattr(jit, "optimizer_probe", syncs)
    record = jit.run_optimizer()
    assert record["host_sync"].startswith("RuntimeError: called a synchronizing") and switched == [False]
    assert not jit.judge_optimizer(record).ok

    def crashes(*a, **k):
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(jit, "optimizer_probe", crashes)
    with pytest.raises(RuntimeError, match="illegal memory access"):
        jit.run_optimizer()  # not called a host sync: the run's own failure (the protocol records it)


def test_cuda_graphs_probe_on_the_cpu_has_what_the_judge_reads():
    record = json.loads(json.dumps(jit.probe("cpu", backend="aot_eager")))
    verdict = jit.judge_cuda_graphs(record)
    assert record["weight_diff"] <= 1e-5 and record["loss_diff"] <= 1e-5  # compiled = eager on the CPU
    assert record["graphs_first_epoch"] == record["graphs_last_epoch"] == 2
    # on the CPU only the GPU-only parts fail: no CUDA graphs, no replay
    assert not verdict.ok and "expected reduce-overhead" in verdict.message and "replayed no CUDA graph" in \
        verdict.message and "weights" not in verdict.message and "losses" not in verdict.message


def test_accumulate_probe_on_the_cpu_matches_eager():
    with config.override(print_active_device=False):
        cases = jit.accumulate_probe("cpu", backend="aot_eager")
    assert set(cases) == {"accumulate-2/adam", "accumulate-2/sgd-momentum", "oom-split/adam",
                          "oom-split/sgd-momentum"}
    for key, f in cases.items():
        assert f["error"] is None and f["finite"] and f["max_diff"] <= 1e-5, (key, f)
        assert f["eager_calls"] == 0 and f["compiled_calls"] == 8
    assert cases["oom-split/adam"]["k"] == 4
    verdict = jit.judge_accumulate(json.loads(json.dumps({"cases": cases})))
    assert not verdict.ok and "did not run under CUDA graphs" in verdict.message  # the CPU's one failure
    assert "differ" not in verdict.message and "eager, " not in verdict.message


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(JUDGES))
def test_compiled_items_on_gpus(name):
    from arignote.devices import cuda

    if name == "compiled-data-parallel" and cuda.device_count() < 2:
        pytest.skip("needs 2 CUDA GPUs")
    ok, message = selfchecks.run_in_process(name, timeout=900)
    assert ok, message


