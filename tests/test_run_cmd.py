"""``arignote run``: leases, CUDA_VISIBLE_DEVICES, --wait, exit codes and signal forwarding."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from arignote import cli, config, share
from share_helpers import child_env, gpu, holder_result, snap, start_holder, write

SHOW_ENV = ("import json, os, sys; print(json.dumps({k: os.environ.get(k) for k in "
            "('CUDA_VISIBLE_DEVICES', 'CUDA_DEVICE_ORDER')})); sys.exit(int(sys.argv[1]))")


@pytest.fixture
def lease_dir(tmp_path, monkeypatch):
    path = tmp_path / "leases"
    monkeypatch.setenv("ARIGNOTE_LEASE_DIR", str(path))
    config.reload()
    return path


def arignote(lease_dir, *args, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "arignote", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=child_env(lease_dir), **kw)


def test_child_sees_exactly_the_leased_gpus_and_its_exit_code_comes_back(lease_dir, tmp_path, capfd):
    inv = write(tmp_path / "inv.json",
                snap(gpu(0, used_gib=30), gpu(1), gpu(2, used_gib=10), gpu(3, util=90)))
    # through cli.main in this process: `--` and the command's own options reach the child intact
    code = cli.main(["run", "--gpus", "2", "--max-utilization", "50", "--inventory", str(inv), "--",
                     sys.executable, "-c", SHOW_ENV, "7"])
    out, err = capfd.readouterr()
    assert code == 7
    assert json.loads(out) == {"CUDA_VISIBLE_DEVICES": "1,2", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    assert "leased GPU(s) 1,2" in err
    assert share.current_leases() == []  # released when the command ended


def test_command_killed_by_a_signal_gives_128_plus_n(lease_dir, tmp_path):
    inv = write(tmp_path / "inv.json", snap(gpu(0)))
    p = arignote(lease_dir, "run", "--inventory", str(inv), "--", sys.executable, "-c",
                 "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGKILL


@pytest.mark.parametrize("args, message", [
    (["--min-free-memory", "10XB"], "10XB"),
    (["--gpus", "0"], "at least 1"),
    (["--max-utilization", "101"], "0 to 100"),
    (["--timeout", "5"], "only makes sense with --wait"),
    (["--wait", "--timeout", "-1"], "seconds >= 0"),
    (["--inventory", "/nonexistent/inv.json"], "cannot be read"),
])
def test_bad_input_exits_2_naming_the_culprit(lease_dir, capfd, args, message):
    code = cli.main(["run", *args, "--", "true"])
    assert code == 2
    assert message in capfd.readouterr().err


def test_missing_command_exits_2(lease_dir, tmp_path, capfd):
    inv = write(tmp_path / "inv.json", snap(gpu(0)))
    assert cli.main(["run", "--inventory", str(inv)]) == 2
    assert "no command given" in capfd.readouterr().err


def test_unknown_command_exits_127(lease_dir, tmp_path, capfd):
    inv = write(tmp_path / "inv.json", snap(gpu(0)))
    assert cli.main(["run", "--inventory", str(inv), "--", "no-such-command-xyz"]) == 127
    assert "cannot start 'no-such-command-xyz'" in capfd.readouterr().err
    assert share.current_leases() == []


@pytest.mark.multiproc
def test_busy_without_wait_fails_at_once_listing_the_holder(lease_dir, tmp_path, capfd):
    inv = write(tmp_path / "inv.json", snap(gpu(0), gpu(1, used_gib=39)))
    holder = start_holder(lease_dir, inv)
    try:
        assert holder_result(holder) == {"indices": [0]}
        t0 = time.monotonic()
        code = cli.main(["run", "--min-free-memory", "2GiB", "--inventory", str(inv), "--", "true"])
        err = capfd.readouterr().err
        assert code == 1 and time.monotonic() - t0 < 5
        assert "GPU 0 (Test GPU): leased by" in err and f"pid {holder.pid}" in err
        assert "GPU 1 (Test GPU): 1024 MiB free < 2048 MiB asked" in err
        code = cli.main(["run", "--wait", "--timeout", "0.3", "--poll", "0.05", "--inventory", str(inv),
                         "--min-free-memory", "2GiB", "--", "true"])
        assert code == 1 and "gave up after waiting 0.3 s" in capfd.readouterr().err
    finally:
        holder.stdin.close()
        holder.wait(10)


@pytest.mark.multiproc
def test_wait_starts_when_the_lease_is_released(lease_dir, tmp_path):
    inv = write(tmp_path / "inv.json", snap(gpu(0)))
    stamp = tmp_path / "started"
    holder = start_holder(lease_dir, inv)
    assert holder_result(holder) == {"indices": [0]}
    run = arignote(lease_dir, "run", "--wait", "--poll", "0.05", "--inventory", str(inv), "--",
                   sys.executable, "-c", f"import time; open({str(stamp)!r}, 'w').write(repr(time.time()))")
    try:
        time.sleep(1.5)
        assert run.poll() is None and not stamp.exists()  # still queued behind the holder
        released = time.time()
        holder.stdin.close()
        holder.wait(10)
        _, err = run.communicate(timeout=30)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 0, err
    assert "waiting: asked for 1 GPU(s), 0 of 1 free" in err
    assert float(stamp.read_text()) >= released


@pytest.mark.multiproc
def test_wait_rereads_the_inventory_until_memory_frees(lease_dir, tmp_path):
    inv = write(tmp_path / "inv.json", snap(gpu(0, used_gib=39)))
    run = arignote(lease_dir, "run", "--wait", "--poll", "0.05", "--min-free-memory", "10GiB",
                   "--inventory", str(inv), "--", sys.executable, "-c", SHOW_ENV, "0")
    time.sleep(1.0)
    assert run.poll() is None
    write(inv, snap(gpu(0, used_gib=1)))  # the other job finished
    out, err = run.communicate(timeout=30)
    assert run.returncode == 0, err
    assert json.loads(out)["CUDA_VISIBLE_DEVICES"] == "0"


CHILD = r"""
import signal, sys, time
ready, log = sys.argv[1], sys.argv[2]
def on_term(signum, frame):
    open(log, "w").write(signal.Signals(signum).name)
    sys.exit(7)
signal.signal(signal.SIGTERM, on_term)
signal.signal(signal.SIGINT, on_term)
open(ready, "w").close()
time.sleep(60)
sys.exit(1)
"""


@pytest.mark.multiproc
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signals_are_forwarded_and_the_lease_is_held_meanwhile(lease_dir, tmp_path, sig):
    inv = write(tmp_path / "inv.json", snap(gpu(0), gpu(1)))
    ready, log = tmp_path / "ready", tmp_path / "log"
    run = arignote(lease_dir, "run", "--gpus", "2", "--inventory", str(inv), "--",
                   sys.executable, "-c", CHILD, str(ready), str(log))
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert run.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        leases = share.current_leases()
        assert sorted(x.index for x in leases) == [0, 1] and {x.pid for x in leases} == {run.pid}
        run.send_signal(sig)
        run.communicate(timeout=30)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 7  # the command's own exit code, after it handled the signal
    assert log.read_text() == sig.name
    assert share.current_leases() == []


@pytest.mark.multiproc
def test_lease_outlives_a_killed_wrapper_while_the_command_runs(lease_dir, tmp_path):
    inv = write(tmp_path / "inv.json", snap(gpu(0)))
    ready, log = tmp_path / "ready", tmp_path / "log"
    run = arignote(lease_dir, "run", "--inventory", str(inv), "--", sys.executable, "-c", CHILD,
                   str(ready), str(log))
    deadline = time.monotonic() + 30
    while not ready.exists():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    run.kill()
    run.wait(10)
    # the command still runs on GPU 0 and holds the inherited lock: nobody else gets that GPU
    with pytest.raises(share.NoFreeGPUError):
        share.acquire(1, snapshot=inv)
    orphans = [p for p in psutil.process_iter(["cmdline"]) if str(ready) in (p.info["cmdline"] or [])]
    assert orphans
    for proc in orphans:
        proc.kill()
    time.sleep(0.2)
    with share.acquire(1, snapshot=inv) as lease:
        assert lease.indices == (0,)


def test_forwarding_rule():
    from arignote.commands.run_cmd import should_forward

    SI_USER, SI_KERNEL = 0, 0x80
    assert should_forward(signal.SIGTERM, SI_USER, True) and should_forward(signal.SIGTERM, SI_KERNEL, True)
    assert should_forward(signal.SIGINT, SI_USER, True)  # `kill -INT <wrapper>`: only we got it
    assert not should_forward(signal.SIGINT, SI_KERNEL, True)  # Ctrl-C: the command got it too
    assert should_forward(signal.SIGINT, SI_KERNEL, False)
    assert not should_forward(signal.SIGCHLD, SI_USER, True)


# Counts the SIGINTs it receives (read synchronously, so two are not merged into one handler call).
COUNTING = r"""
import signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
open(sys.argv[1], "w").close()
hits = 0
while signal.sigtimedwait({signal.SIGINT}, 30 if hits == 0 else 0.5) is not None:
    hits += 1
sys.exit(10 + hits)
"""


@pytest.mark.multiproc
def test_ctrl_c_in_a_terminal_reaches_the_command_and_its_exit_code_returns(lease_dir, tmp_path):
    import pty

    inv = write(tmp_path / "inv.json", snap(gpu(0)))
    ready = tmp_path / "ready"
    pid, master = pty.fork()
    if pid == 0:  # pragma: no cover - child: the wrapper, in the pty's foreground process group
        os.environ.update(child_env(lease_dir))
        os.execv(sys.executable, [sys.executable, "-m", "arignote", "run", "--inventory", str(inv), "--",
                                  sys.executable, "-c", COUNTING, str(ready)])
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert time.monotonic() < deadline
            time.sleep(0.02)
        os.write(master, b"\x03")  # the tty sends SIGINT to the whole foreground group
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(master)
    # 11: the command saw SIGINT (once; a duplicate may merge with it, see test_forwarding_rule)
    # and the wrapper survived its own SIGINT to return the command's code
    assert os.waitstatus_to_exitcode(status) == 11


# ---------------------------------------------------------------------------- inherited CUDA_VISIBLE_DEVICES


def test_an_inherited_cuda_visible_devices_bounds_the_lease(lease_dir, tmp_path, capfd, monkeypatch):
    # a SLURM job given GPUs 2 and 3 of a 4-GPU box; GPU 1 (free, idle) is someone else's
    inv = write(tmp_path / "inv.json", snap(gpu(0, used_gib=30), gpu(1), gpu(2, used_gib=10), gpu(3)))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    show = [sys.executable, "-c", SHOW_ENV, "0"]
    code = cli.main(["run", "--gpus", "1", "--inventory", str(inv), "--", *show])
    out, _ = capfd.readouterr()
    assert code == 0 and json.loads(out)["CUDA_VISIBLE_DEVICES"] == "3"  # the freer of the job's two
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-test-0002")  # UUIDs (a prefix is enough, as CUDA)
    code = cli.main(["run", "--gpus", "1", "--inventory", str(inv), "--", *show])
    out, _ = capfd.readouterr()
    assert code == 0 and json.loads(out)["CUDA_VISIBLE_DEVICES"] == "2"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    code = cli.main(["run", "--gpus", "3", "--inventory", str(inv), "--", *show])
    _, err = capfd.readouterr()
    assert code == 1 and "given 2 GPU(s) (CUDA_VISIBLE_DEVICES='2,3', inherited)" in err


def test_the_inherited_cuda_visible_devices_is_read_as_cuda_reads_it():
    from arignote.devices.identity import parse_visible_devices

    def given(value):
        found = parse_visible_devices(value)
        return None if found is None else [str(e) for e in found]

    assert given(None) is None and given("") == [] and given("-1") == []
    assert given("0,-1,2") == ["0"]  # CUDA ignores everything after an invalid entry
    assert given(" 1, 3 ") == ["1", "3"]


def test_inherited_indices_under_a_fastest_first_order_are_refused(lease_dir, tmp_path, capfd, monkeypatch):
    """Issue 28 W8: CUDA reads CUDA_VISIBLE_DEVICES' indices in the CUDA_DEVICE_ORDER numbering; under
    FASTEST_FIRST that is not nvidia-smi's (NVML, PCI bus order), so index 2 may be another GPU."""
    inv = write(tmp_path / "inv.json", snap(gpu(0), gpu(1), gpu(2), gpu(3)))
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "FASTEST_FIRST")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    show = [sys.executable, "-c", SHOW_ENV, "0"]
    code = cli.main(["run", "--gpus", "1", "--inventory", str(inv), "--", *show])
    _, err = capfd.readouterr()
    assert code == 2 and "CUDA_DEVICE_ORDER=FASTEST_FIRST" in err and "GPU-" in err and "PCI_BUS_ID" in err
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-test-0002")  # UUIDs mean the same GPU in any order
    code = cli.main(["run", "--gpus", "1", "--inventory", str(inv), "--", *show])
    out, _ = capfd.readouterr()
    assert code == 0 and json.loads(out)["CUDA_VISIBLE_DEVICES"] == "2"
