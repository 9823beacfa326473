"""Restarts (parallel.restarts + BackupAndRestore) and two torchrun nodes over loopback."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from parallel_helpers import FIT_SCRIPT, PLAIN_SCRIPT, _load, _pids, _run, _write

pytestmark = pytest.mark.multiproc


@pytest.mark.slow
def test_with_restarts_the_job_resumes_from_the_last_finished_epoch(tmp_path):
    script = _write(tmp_path, "train.py", FIT_SCRIPT)
    r = _run([str(script), str(tmp_path), "2", "4", "1"])
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "killed").exists()
    assert "rank 1" in r.stderr and "SIGKILL" in r.stderr
    assert "restarting the job (restart 1 of 1" in r.stderr
    # epochs 1-2 ran once (not redone from scratch), the restarted job finished epochs 3-4
    assert r.stdout.count("Epoch 1/4") == 1 and r.stdout.count("Epoch 2/4") == 1
    assert "Epoch 4/4" in r.stdout
    history, _ = _load(tmp_path)
    assert history["epoch"] == [2, 3]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_nodes_under_torchrun_over_loopback(tmp_path):
    script = _write(tmp_path, "train.py", PLAIN_SCRIPT)
    single, nodes = tmp_path / "single", tmp_path / "nodes"
    single.mkdir()
    nodes.mkdir()
    port = _free_port()
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes=2", "--nproc-per-node=1",
           "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}", "--rdzv-id=arignote-test",
           str(script), "train", str(nodes), "1"]
    agents = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
              for _ in range(2)]
    r = _run([str(script), "train", str(single), "1"], timeout=120)
    outs = [a.communicate(timeout=240) for a in agents]
    assert [a.returncode for a in agents] == [0, 0], [o[1][-2000:] for o in outs]
    assert r.returncode == 0, r.stderr
    assert len(_pids(nodes)) == 2  # rank 0 and rank 1 both ran
    import torch

    a = torch.load(single / "weights.pt")
    b = torch.load(nodes / "weights.pt")
    for key in a:
        torch.testing.assert_close(b[key], a[key], rtol=1e-5, atol=1e-6)
