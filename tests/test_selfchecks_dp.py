"""The data-parallel selftest items' runs on 2 gloo CPU processes, judged by the items' own judges
(issue 28 W1): the one-process reference runs in a process of its own, so rank 1 does not fit it
inside rank 0's job, its injected out-of-memory happens and every rank agrees on k."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from arignote.bench import selfchecks_dp
from arignote.parallel.env import alone_environ

pytestmark = pytest.mark.multiproc


def _record(item: str, kind: str = "cpu") -> dict:
    proc = subprocess.run([sys.executable, "-m", "arignote.bench.selfchecks_dp", item, kind],
                          capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("@@selftest-record ")]
    assert len(lines) == 1, proc.stdout  # rank 0 reports, rank 1 does not
    return json.loads(lines[0].split(" ", 1)[1])


def test_dp_weights_on_gloo_equal_the_reference_computed_in_its_own_process():
    record = _record("weights")
    assert (record["world_size"], record["backend"], record["k"]) == (2, "gloo", 1)
    assert record["max_diff"] < 1e-6
    assert selfchecks_dp.judge_dp_weights(record).ok


def test_dp_oom_on_gloo_rank_1_runs_out_every_rank_splits_and_the_weights_stay():
    record = _record("oom")
    assert record["k"] == 2  # rank 0 reports k=2 although only rank 1 ran out: the ranks agreed
    verdict = selfchecks_dp.judge_dp_oom(record)
    assert verdict.ok, verdict.message
    assert verdict.message.startswith("rank 1 ran out, every rank went to k=2")


def test_the_reference_process_gets_no_data_parallel_environment(monkeypatch):
    env = {"RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "h",
           "MASTER_PORT": "29500", "SLURM_PROCID": "1", "SLURM_STEP_NUM_TASKS": "2", "HOME": "/root"}
    assert alone_environ(env) == {"HOME": "/root"}
    seen = {}

    def fake_run(cmd, env, **kw):
        seen["cmd"], seen["env"] = cmd, env
        return subprocess.CompletedProcess(cmd, 1, "", "boom\nRuntimeError: no GPU\n")

    monkeypatch.setattr(os, "environ", {**env})
    monkeypatch.setattr(subprocess, "run", fake_run)
    with pytest.raises(RuntimeError, match=r"reference fit failed \(exit 1\): RuntimeError: no GPU"):
        selfchecks_dp.reference_weights({"device": "cuda0"})
    assert seen["cmd"][1:4] == ["-m", "arignote.bench.selfchecks_dp", "reference"]
    assert "RANK" not in seen["env"] and seen["env"]["HOME"] == "/root"


def test_the_sync_oom_job_on_gloo_stops_every_rank_with_one_error():
    record = selfchecks_dp.sync_oom_job("cpu,cpu.processes=2", "raise", timeout=120)
    verdict = selfchecks_dp.judge_sync_oom(record)
    assert verdict.ok, (verdict.message, record)
    assert verdict.message.startswith("rank 1 ran out during the gradient sync: every rank stopped in")


@pytest.mark.gpu
@pytest.mark.parametrize("item", ["weights", "oom"])
def test_the_same_runs_on_two_gpus_with_nccl(item):
    """Written without a GPU (never run where it was written): the runs of data-parallel-weights and
    data-parallel-oom (a real out-of-memory on rank 1 under a capped allocator)."""
    from arignote.devices import cuda

    if cuda.device_count() < 2:
        pytest.skip(f"needs 2 GPUs, this machine has {cuda.device_count()}")
    record = _record(item, "gpu")
    verdict = (selfchecks_dp.judge_dp_weights if item == "weights" else selfchecks_dp.judge_dp_oom)(record)
    assert verdict.ok, (verdict.message, record)
