"""Status records of fits (issue 19): what the RunStatus callback writes, when, and how readers judge it."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time

import numpy as np
import psutil
import pytest

from arignote import config
from arignote.callbacks import EarlyStopping
from arignote.callbacks.status import RunStatus
from arignote.layers import Dense
from arignote.models import Sequential
from arignote.share import status
from status_helpers import env_for, kill, record_of, records, start_fit, wait_for


@pytest.fixture
def lease_dir(tmp_path, monkeypatch):
    path = tmp_path / "leases"
    monkeypatch.setenv("ARIGNOTE_LEASE_DIR", str(path))
    config.reload()
    yield path
    monkeypatch.delenv("ARIGNOTE_LEASE_DIR")
    config.reload()


def _model():
    model = Sequential([Dense(4, input_shape=(3,)), Dense(1)])
    model.compile("sgd", "mse", metrics=["mae"])
    return model


def _data(n=40):
    rng = np.random.default_rng(1)
    return rng.random((n, 3), dtype="float32"), rng.random((n, 1), dtype="float32")


# --------------------------------------------------------------------------- the callback in fit


def test_fit_writes_a_finished_record_with_history(lease_dir):
    x, y = _data()
    history = _model().fit(x, y, epochs=3, batch_size=8, verbose=0, validation_split=0.25)
    (rec,) = records(lease_dir)
    assert rec["format"] == "arignote-run/1" and rec["state"] == "finished" and rec["error"] is None
    assert rec["pid"] == os.getpid() and rec["uid"] == os.getuid() and rec["user"]
    assert rec["devices"] == ["cpu"] and rec["gpu_uuids"] == [] and rec["world_size"] == 1
    assert (rec["epoch"], rec["epochs"], rec["epochs_done"]) == (2, 3, 3)
    assert (rec["step"], rec["steps"], rec["batch_size"], rec["samples"]) == (4, 4, 8, 30)
    assert rec["eta"] == 0.0 and rec["samples_per_second"] > 0
    assert rec["start"] <= rec["updated"] and rec["ended"] >= rec["start"]
    assert rec["script"] and rec["command"]
    for key in ("loss", "mae", "val_loss", "val_mae"):
        assert rec["history"][key] == pytest.approx(history.history[key])
    assert len(rec["epoch_times"]) == 3
    name = f"run-{os.getuid()}-{os.getpid()}-{int(rec['start'] * 1000)}.json"
    assert [p.name for p in (lease_dir / "runs").iterdir()] == [name]  # no temporary file left behind
    assert oct((lease_dir / "runs").stat().st_mode & 0o7777) == "0o1777"


def test_flag_turns_records_off(lease_dir):
    x, y = _data()
    with config.override(share_status=False):
        _model().fit(x, y, epochs=1, batch_size=8, verbose=0)
    assert records(lease_dir) == []
    assert config.FLAGS["share.status"].default is True


def test_writes_are_rate_limited(lease_dir, monkeypatch):
    """Begin and end are written at once; in between at most one write per interval."""
    writes = []
    real = status.write_record
    monkeypatch.setattr(status, "write_record", lambda path, rec: (writes.append(dict(rec)), real(path, rec)))
    x, y = _data()
    _model().fit(x, y, epochs=3, batch_size=8, verbose=0, callbacks=[RunStatus(interval=3600)])
    # the explicit RunStatus replaces fit's own (one record per run): 2 writes (begin, end)
    assert [w["state"] for w in writes] == ["running", "finished"]
    writes.clear()
    with config.override(share_status=False):
        _model().fit(x, y, epochs=2, batch_size=8, verbose=0, callbacks=[RunStatus(interval=0)])
    # interval 0: begin + every batch (5 a epoch) + every epoch end + end
    assert len(writes) == 1 + 2 * 5 + 2 + 1
    steps = [w["step"] for w in writes[1:6]]
    assert steps == [1, 2, 3, 4, 5] and writes[3]["logs"]["loss"] > 0  # batch logs read at write time
    assert [w["epoch"] for w in writes[1:12]] == [0] * 6 + [1] * 5


def test_atomic_write_replaces_the_file(tmp_path, monkeypatch):
    path = tmp_path / "run-1-2-3.json"
    seen = []
    real = os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: (seen.append((os.path.basename(a), json.loads(
        open(a).read())["v"])), real(a, b)))
    status.write_record(path, {"v": 1})
    status.write_record(path, {"v": 2})
    assert [v for _, v in seen] == [1, 2]
    assert all(name.startswith(".run-1-2-3.json.") and name.endswith(".tmp") for name, _ in seen)
    assert json.loads(path.read_text()) == {"v": 2} and sorted(os.listdir(tmp_path)) == [path.name]
    assert oct(path.stat().st_mode & 0o777) == "0o644"  # other users' `arignote smi` read it


def test_eta_and_progress_mid_run(lease_dir):
    """At a mid-run write the ETA is the remaining steps at the measured pace."""
    snaps = []

    class Peek(RunStatus):
        def _write(self, now=None):
            super()._write(now)
            snaps.append(dict(self.record))

    x, y = _data()
    with config.override(share_status=False):
        _model().fit(x, y, epochs=2, batch_size=8, verbose=0, callbacks=[Peek(interval=0)])
    mid = snaps[3]  # epoch 0, step 3 of 5
    assert (mid["epoch"], mid["step"], mid["steps"]) == (0, 3, 5)
    elapsed = mid["updated"] - mid["start"]
    assert mid["eta"] == pytest.approx((5 - 3 + 5) * elapsed / 3, rel=0.01, abs=0.006)
    assert mid["samples_per_second"] == pytest.approx(24 / elapsed, rel=0.01)


def test_early_stop_is_stopped(lease_dir):
    x, y = _data()
    _model().fit(x, y, epochs=5, batch_size=8, verbose=0,
                 callbacks=[EarlyStopping(monitor="loss", patience=0, min_delta=10.0)])
    (rec,) = records(lease_dir)
    assert rec["state"] == "stopped" and rec["epochs_done"] == 2 and "stopped early" in rec["error"]


def test_plain_values_are_json_without_nan():
    assert [status.plain(v) for v in (1, 0.5, float("nan"), float("inf"), -math.inf, np.float32(2.5))] == [
        1.0, 0.5, "NaN", "Infinity", "-Infinity", 2.5]
    json.dumps([status.plain(float("nan"))], allow_nan=False)


# --------------------------------------------------------------------------- end states in real processes


@pytest.mark.slow
@pytest.mark.parametrize("mode, state, error", [
    ("raise", "failed", "RuntimeError: boom in batch 1"),
    ("interrupt", "stopped", "interrupted (Ctrl-C)"),
])
def test_exception_in_fit_is_recorded_at_exit(lease_dir, mode, state, error):
    proc = start_fit(env_for(lease_dir), epochs=3, mode=mode)
    proc.wait(timeout=120)
    err = proc.stderr.read()
    kill(proc)
    (rec,) = records(lease_dir)
    assert proc.returncode != 0, err
    assert rec["state"] == state and rec["error"] == error
    assert rec["epochs_done"] == 1 and len(rec["history"]["loss"]) == 1


@pytest.mark.slow
def test_killed_process_reads_as_gone(lease_dir):
    proc = start_fit(env_for(lease_dir), epochs=50, pause=0.05)
    try:
        wait_for(lambda: record_of(lease_dir, proc.pid), what="the run's first record")
        runs, problems = status.read_runs(lease_dir / "runs")
        assert [(r["pid"], r["state"]) for r in runs] == [(proc.pid, "running")] and problems == []
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        kill(proc)
    runs, _ = status.read_runs(lease_dir / "runs")
    assert [(r["pid"], r["state"], r["recorded_state"]) for r in runs] == [(proc.pid, "gone", "running")]
    assert "is gone" in runs[0]["error"]


# --------------------------------------------------------------------------- readers


def _write(folder, name, data, owner=None):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    if owner is not None:
        os.chown(path, owner, -1)
    return path


def _record(pid=None, state="running", start=None, **kw):
    if start is None:  # a record is younger than its process (else it reads as a reused pid)
        start = psutil.Process().create_time() + 0.5
    rec = {"format": status.FORMAT, "pid": os.getpid() if pid is None else pid, "start": start,
           "state": state, "user": "me", "host": os.uname().nodename, "script": "t.py", "epoch": 1,
           "epochs": 4, "eta": 75.0}
    rec.update(kw)
    return rec


def test_read_runs_reports_bad_records_and_keeps_good_ones(tmp_path):
    runs_dir = tmp_path / "runs"
    uid, me = os.getuid(), os.getpid()
    _write(runs_dir, f"run-{uid}-{me}-1.json", _record())
    _write(runs_dir, f"run-{uid}-{me}-2.json", "{not json")
    _write(runs_dir, f"run-{uid}-{me}-3.json", _record(state="exploded"))
    _write(runs_dir, f"run-{uid}-{me}-4.json", {"format": status.FORMAT, "pid": me})
    _write(runs_dir, f"run-{uid}-999-5.json", _record())  # pid in the name differs from the record's
    (runs_dir / f"run-{uid}-{me}-6.json").mkdir()  # unreadable
    os.mkfifo(runs_dir / f"run-{uid}-{me}-7.json")  # would block a naive reader forever
    secret = _write(tmp_path, "secret.json", _record())
    (runs_dir / f"run-{uid}-{me}-8.json").symlink_to(secret)  # a link to a file only root may read
    _write(runs_dir, "notes.txt", "ignored")
    runs, problems = status.read_runs(runs_dir)
    assert [(r["file"], r["state"]) for r in runs] == [(f"run-{uid}-{me}-1.json", "running")]
    got = {p["file"].split("-")[-1]: p["problem"] for p in problems}
    assert got["2.json"].startswith("not valid JSON")
    assert got["3.json"] == "unknown state 'exploded'"
    assert got["4.json"] == "missing start, state, user"
    assert "does not match its name" in got["5.json"]
    assert got["6.json"] == "cannot be read: Is a directory"
    assert got["7.json"] == "cannot be read: not a regular file"
    assert got["8.json"] == "cannot be read: a symbolic link"


@pytest.mark.skipif(os.getuid() != 0, reason="planting a file under another uid needs root (chown)")
def test_record_planted_under_another_uid_is_refused(tmp_path):
    _write(tmp_path / "runs", f"run-0-{os.getpid()}-1.json", _record(), owner=12345)
    runs, problems = status.read_runs(tmp_path / "runs")
    assert runs == [] and "planted" in problems[0]["problem"]


def test_ended_runs_older_than_the_window_are_left_out(tmp_path):
    runs_dir, uid, now = tmp_path / "runs", os.getuid(), time.time()
    _write(runs_dir, f"run-{uid}-{os.getpid()}-1.json", _record(state="finished", ended=now - 7200))
    _write(runs_dir, f"run-{uid}-{os.getpid()}-2.json", _record(state="failed", ended=now - 60, error="x"))
    runs, _ = status.read_runs(runs_dir, hours=1, now=now)
    assert [r["state"] for r in runs] == ["failed"]
    runs, _ = status.read_runs(runs_dir, hours=3, now=now)
    assert sorted(r["state"] for r in runs) == ["failed", "finished"]
    assert status.read_runs(runs_dir, hours=0, now=now)[0] == []


def test_clean_own_removes_old_ended_records_only(tmp_path):
    runs_dir, uid, now = tmp_path / "runs", os.getuid(), time.time()
    old = _write(runs_dir, f"run-{uid}-{os.getpid()}-1.json", _record(pid=2**22 + 1, state="finished",
                                                                       ended=now - 2 * 86400))
    recent = _write(runs_dir, f"run-{uid}-{os.getpid()}-2.json", _record(state="finished", ended=now - 60))
    live = _write(runs_dir, f"run-{uid}-{os.getpid()}-3.json", _record(updated=now - 2 * 86400))
    assert status.clean_own(runs_dir, now=now) == 1
    assert not old.exists() and recent.exists() and live.exists()  # live: our own process still runs


def test_jobs_by_pid_matches_the_run_and_its_children():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        run = _record(pid=os.getpid())
        ended = _record(pid=2**22 + 3, state="finished")
        jobs = status.jobs_by_pid([os.getpid(), child.pid, 1], [run, ended])
        assert jobs == {os.getpid(): run, child.pid: run}
    finally:
        child.kill()
        child.wait()


def test_job_text_and_durations():
    assert status.job_text(_record()) == "t.py epoch 2/4 ETA 1m15s"
    assert status.job_text(_record(state="gone")) == "t.py epoch 2/4 gone"
    assert status.job_text({"state": "running"}) == "? ETA ?"
    assert [status.fmt_duration(s) for s in (0, 42.4, 425, 11520, 187200, None, float("nan"))] == [
        "0s", "42s", "7m05s", "3h12m", "2d04h", "?", "?"]


def test_a_fit_that_raised_is_marked_failed_by_the_next_fit(lease_dir):
    x, y = _data()
    model = _model()

    class Boom(EarlyStopping):
        def on_epoch_end(self, epoch, logs=None):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        model.fit(x, y, epochs=2, batch_size=8, verbose=0, callbacks=[Boom()])
    assert [r["state"] for r in records(lease_dir)] == ["running"]
    model.fit(x, y, epochs=1, batch_size=8, verbose=0)
    states = sorted((r["state"], r["error"]) for r in records(lease_dir))
    assert states == [("failed", "an exception left fit (a later fit started)"), ("finished", None)]


@pytest.mark.multiproc
def test_data_parallel_fit_keeps_one_record_from_rank_0(lease_dir, tmp_path):
    from parallel_helpers import FIT_SCRIPT

    script = tmp_path / "train_ddp.py"
    script.write_text(FIT_SCRIPT)
    env = env_for(lease_dir)
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(key, None)
    proc = subprocess.run([sys.executable, str(script), str(tmp_path), "2", "2"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (rec,) = records(lease_dir)  # rank 1 writes none
    assert rec["world_size"] == 2 and rec["state"] == "finished" and rec["script"] == "train_ddp.py"
    assert len(rec["history"]["loss"]) == 2 and rec["devices"] == ["cpu"]
    history = json.loads((tmp_path / "history.json").read_text())["history"]
    assert rec["history"]["loss"] == pytest.approx(history["loss"])
