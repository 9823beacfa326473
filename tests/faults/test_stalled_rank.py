"""Fault suite: a frozen (SIGSTOP'd) or lagging rank is named — which rank, which process, at which
optimizer step the others wait — by the heartbeats (arignote.parallel.heartbeat)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest
import torch
import torch.distributed as dist

from arignote.parallel import heartbeat
from arignote.parallel.heartbeat import Heartbeat, describe

STALL_SCRIPT = """
import os, signal, sys
import numpy as np, torch
import arignote
from arignote.callbacks import Callback
from arignote.layers import Dense
from arignote.models import Sequential

out = sys.argv[1]
# 15 s: long enough for start-up collectives on a loaded 2-core box, short for a test
arignote.configure(device="cpu", cpu_processes=2, parallel_timeout=15, print_active_device=False)
torch.manual_seed(0)
x = np.random.default_rng(0).normal(size=(256, 8)).astype("float32")
model = Sequential([Dense(8, activation="tanh", input_dim=8), Dense(1)])
model.compile("sgd", "mse")


class Freeze(Callback):
    epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        rank = self.model._trainer.strategy.rank
        open(os.path.join(out, f"pid.{rank}"), "w").write(str(os.getpid()))
        if rank == 1 and self.epoch == 1 and batch == 3:
            os.kill(os.getpid(), signal.SIGSTOP)   # frozen, not dead: only a timeout can tell


model.fit(x, x[:, :1], batch_size=32, epochs=3, verbose=0, callbacks=[Freeze()])
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return "\nState:\tZ" not in fh.read()
    except FileNotFoundError:
        return False


@pytest.mark.multiproc
@pytest.mark.slow
def test_a_frozen_rank_is_named_with_its_pid_state_and_step(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(STALL_SCRIPT)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    r = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True,
                       timeout=240, env=env)
    assert r.returncode == 1, r.stderr[-3000:]
    assert (tmp_path / "pid.1").exists(), r.stderr[-3000:]  # rank 1 reached training
    pid1 = int((tmp_path / "pid.1").read_text())
    # 256 samples, global batch 32: 8 steps per epoch; rank 1 froze before batch 3 of epoch 1, so
    # rank 0 did 11 steps and waits in step 12
    expected = (f"rank 1 (pid {pid1} on {socket.gethostname()}, stopped by a signal (SIGSTOP?)) did not "
                "arrive at optimizer step 12, where the other ranks wait: its last heartbeat was ")
    assert expected in r.stderr, r.stderr[-3000:]
    assert "in a collective: another rank stopped answering for parallel.timeout=15s" in r.stderr
    deadline = time.time() + 10
    while _alive(pid1) and time.time() < deadline:
        time.sleep(0.2)
    assert not _alive(pid1)  # the frozen rank was killed, not left behind


def test_describe_names_stale_and_lagging_ranks_and_nothing_when_all_agree():
    beats = {0: (100.0, 40, 10, "a"), 1: (99.5, 40, 11, "a"), 2: (60.0, 39, 12, "b"), 3: (99.8, 38, 13, "b")}
    text = describe(beats, now=100.0, this_host="elsewhere")
    assert text == ("rank 2 (pid 12 on b) did not arrive at optimizer step 41, where the other ranks wait: "
                    "its last heartbeat was 40 s ago (after 39 steps); rank 3 (pid 13 on b) did not arrive "
                    "at optimizer step 41, where the other ranks wait: it is alive but has done 38 steps "
                    "(stuck in its own code: data loading, a callback?)")
    assert describe({0: (100.0, 5, 1, "a"), 1: (99.0, 5, 2, "a")}, 100.0, "a") == ""
    assert describe({0: (100.0, 5, 1, "a"), 1: None}, 100.0, "a") == "rank 1 never sent a heartbeat"


def test_process_state_of_a_local_stopped_process():
    import signal

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        os.kill(child.pid, signal.SIGSTOP)
        deadline = time.time() + 5
        while heartbeat._process_state(child.pid) is None and time.time() < deadline:
            time.sleep(0.05)
        assert heartbeat._process_state(child.pid) == "stopped by a signal (SIGSTOP?)"
        text = describe({0: (100.0, 3, os.getpid(), "h"), 1: (50.0, 2, child.pid, "h")}, 100.0, "h")
        assert text.startswith(f"rank 1 (pid {child.pid} on h, stopped by a signal (SIGSTOP?)) did not")
    finally:
        child.kill()
        child.wait()
    assert heartbeat._process_state(child.pid) == "no longer running"


def test_heartbeats_count_optimizer_steps_and_rank0_gives_one_notice(capfd):
    store = dist.TCPStore("127.0.0.1", 0, 1, is_master=True, wait_for_workers=False)
    main = Heartbeat(store.host, store.port, 0, 2, interval=0.1, notice_after=0.5)
    other = Heartbeat(store.host, store.port, 1, 2, interval=0.1, notice_after=0.5)
    try:
        p = torch.nn.Parameter(torch.ones(2))
        opt = torch.optim.SGD([p], lr=0.1)
        for _ in range(3):
            p.grad = torch.ones(2)
            opt.step()
        time.sleep(0.4)
        beats = main.read()
        assert beats[0][1] == beats[1][1] == 3 and beats[1][2] == os.getpid()
        assert main.diagnose() == ""
        other.close()  # rank 1 goes silent
        time.sleep(1.5)
        err = capfd.readouterr().err
        assert err.count("arignote: rank 1 (pid") == 1, err  # one notice per stall, not one a second
        assert "did not arrive at optimizer step 4, where the other ranks wait: its last heartbeat was" in err
        assert main.diagnose().startswith("rank 1 (pid")
    finally:
        main.close()
        other.close()
