"""The ``run --wait`` queue records (issue 19): written while waiting, removed after, read with care."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from arignote import config
from arignote.share import current_leases, queue
from share_helpers import child_env, gpu, holder_result, snap, start_holder, write
from status_helpers import wait_for


@pytest.fixture
def lease_dir(tmp_path, monkeypatch):
    path = tmp_path / "leases"
    monkeypatch.setenv("ARIGNOTE_LEASE_DIR", str(path))
    config.reload()
    yield path
    monkeypatch.delenv("ARIGNOTE_LEASE_DIR")
    config.reload()


def test_waiting_writes_then_removes_its_record(lease_dir):
    before = time.time()
    with queue.waiting(2, "python train.py", "10GiB", 20) as path:
        assert path.name == f"queue-{os.getuid()}-{os.getpid()}.json"
        (entry,) = queue.current_queue()
        assert (entry["pid"], entry["gpus"], entry["command"]) == (os.getpid(), 2, "python train.py")
        assert (entry["min_free_memory"], entry["max_utilization"]) == ("10GiB", 20)
        assert before <= entry["since"] <= time.time() and entry["user"]
    assert queue.current_queue() == [] and not path.exists()


def test_queue_skips_dead_waiters_and_reports_bad_records(lease_dir):
    lease_dir.mkdir(mode=0o1777)
    uid = os.getuid()
    dead = {"pid": 2**22 + 9, "since": time.time(), "gpus": 1, "command": "x", "user": "u",
            "host": os.uname().nodename}
    (lease_dir / f"queue-{uid}-{2**22 + 9}.json").write_text(json.dumps(dead))
    (lease_dir / f"queue-{uid}-{os.getpid()}.json").write_text("{half")
    (lease_dir / f"queue-{uid}-1.json").write_text(json.dumps(dict(dead, pid=7)))  # pid differs from name
    problems: list = []
    assert queue.current_queue(problems=problems) == []
    got = sorted((p["file"], p["problem"].split(" (")[0]) for p in problems)
    assert got == [(f"queue-{uid}-1.json", "file owner or pid does not match its name"),
                   (f"queue-{uid}-{os.getpid()}.json", "queue record is not valid")]


def test_unreadable_lease_record_is_reported(lease_dir):
    lease_dir.mkdir(mode=0o1777)
    (lease_dir / f"gpu-box-abc.{os.getuid()}.{os.getpid()}.json").mkdir()
    (lease_dir / f"gpu-box-def.{os.getuid()}.{os.getpid()}.json").write_text("{")
    os.mkfifo(lease_dir / f"gpu-box-fifo.{os.getuid()}.{os.getpid()}.json")  # must not block smi or run
    problems: list = []
    assert current_leases(problems=problems) == []
    assert sorted(p["problem"] for p in problems) == [
        "lease record cannot be read (Is a directory)",
        "lease record cannot be read (not a regular file)",
        "lease record cannot be read (not valid JSON: Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1))"]
    assert current_leases() == []  # selection keeps ignoring them silently


@pytest.mark.slow
def test_run_wait_is_in_the_queue_while_it_waits(lease_dir, tmp_path):
    inv = write(tmp_path / "one.json", snap(gpu(0)))
    holder = start_holder(lease_dir, inv)
    assert holder_result(holder) == {"indices": [0]}
    command = [sys.executable, "-m", "arignote", "run", "--wait", "--poll", "0.2", "--inventory", str(inv),
               "--", sys.executable, "-c", "print('ran')"]
    waiter = subprocess.Popen(command, env=child_env(lease_dir), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        entry = wait_for(lambda: next(iter(queue.current_queue(lease_dir)), None), what="the queue record")
        assert entry["pid"] == waiter.pid and entry["gpus"] == 1
        assert entry["command"] == f"{sys.executable} -c print('ran')"
        holder.stdin.close()  # release: the waiter gets the GPU, runs, and leaves the queue
        holder.wait(10)
        out, err = waiter.communicate(timeout=60)
        assert waiter.returncode == 0 and out.strip() == "ran", err
        assert queue.current_queue(lease_dir) == []
        assert not list(lease_dir.glob("queue-*"))
    finally:
        for p in (holder, waiter):
            if p.poll() is None:
                p.kill()
            p.wait()
