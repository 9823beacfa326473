"""GPU selection over snapshot fixtures, and flock leases exercised by real processes on CPU."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from arignote import config, share
from arignote.devices.nvml import NA
from arignote.share import NoFreeGPUError, ShareError, parse_size, select_gpus
from share_helpers import FOUR_GPUS, GIB, child_env, gpu, holder_result, snap, start_holder, write


@pytest.fixture
def lease_dir(tmp_path, monkeypatch):
    path = tmp_path / "leases"
    monkeypatch.setenv("ARIGNOTE_LEASE_DIR", str(path))
    config.reload()
    return path


# --------------------------------------------------------------------------- sizes


def test_min_free_memory_reads_every_size_form(lease_dir):
    # one size grammar (arignote.sizes): GiB, MiB, a bare number in MiB, a fraction or % of each GPU
    s = snap(gpu(0, used_gib=35), gpu(1, used_gib=20), gpu(2, used_gib=2))  # 40 GiB GPUs
    for need in ("15GiB", "15360MiB", 15360, "30%", 0.3):
        assert select_gpus(2, min_free_memory=need, snapshot=s) == [2, 1], need
    with pytest.raises(NoFreeGPUError):
        select_gpus(2, min_free_memory="60%", snapshot=s)
    for bad in ("10XB", "GiB", "-1GiB", "", True, -5, float("nan")):
        with pytest.raises(ValueError, match="GiB|negative|finite"):
            parse_size(bad)


# --------------------------------------------------------------------------- selection (pure)


def test_ranks_by_free_memory_then_utilization_then_index(lease_dir):
    s = snap(gpu(0, used_gib=10), gpu(1, used_gib=1, util=50), gpu(2, used_gib=1, util=5),
             gpu(3, used_gib=1, util=5))
    assert select_gpus(4, snapshot=s) == [2, 3, 1, 0]
    assert select_gpus(1, snapshot=s) == [2]


def test_unknown_utilization_ranks_after_known_on_equal_memory(lease_dir):
    s = snap(gpu(0, util=NA), gpu(1, util=90))
    assert select_gpus(2, snapshot=s) == [1, 0]


def test_filters_memory_and_utilization(lease_dir):
    s = snap(gpu(0, used_gib=35), gpu(1, used_gib=5, util=80), gpu(2, used_gib=20, util=10),
             gpu(3, used_gib=2))
    assert select_gpus(2, min_free_memory="15GiB", snapshot=s) == [3, 1]
    assert select_gpus(2, min_free_memory="15GiB", max_utilization=20, snapshot=s) == [3, 2]
    assert select_gpus(1, max_utilization=0, snapshot=s) == [3]
    with pytest.raises(NoFreeGPUError) as err:
        select_gpus(3, min_free_memory="15GiB", max_utilization=20, snapshot=s)
    msg = str(err.value)
    assert "asked for 3 GPU(s), 2 of 4 free" in msg
    assert "GPU 0 (Test GPU): 5120 MiB free < 15360 MiB asked" in msg
    assert "GPU 1 (Test GPU): utilization 80% > 20% allowed" in msg
    assert err.value.reasons.keys() == {0, 1}


def test_na_readings_fail_the_filter_that_needs_them(lease_dir):
    s = snap(gpu(0, util=NA), gpu(1, used_gib=NA))
    assert select_gpus(2, snapshot=s) == [0, 1]  # no filters: both usable
    with pytest.raises(NoFreeGPUError, match=r"GPU 0 .*utilization n/a"):
        select_gpus(2, max_utilization=50, snapshot=s)
    with pytest.raises(NoFreeGPUError, match=r"GPU 1 .*free memory n/a"):
        select_gpus(1, min_free_memory="1GiB", max_utilization=50, snapshot=s)


def test_nothing_free_and_too_many_asked(lease_dir):
    s = snap(gpu(0, used_gib=39.5), gpu(1, used_gib=39.9))
    with pytest.raises(NoFreeGPUError) as err:
        select_gpus(1, min_free_memory="1GiB", snapshot=s)
    assert "0 of 2 free" in str(err.value) and "--wait" in str(err.value)
    with pytest.raises(NoFreeGPUError, match="this machine has only 2 GPU"):
        select_gpus(3, snapshot=s)
    with pytest.raises(NoFreeGPUError, match="has none"):
        select_gpus(1, snapshot=snap())


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_select_rejects_bad_counts(lease_dir, bad):
    with pytest.raises(ValueError, match="whole number"):
        select_gpus(bad, snapshot=snap(gpu(0)))
    with pytest.raises(ValueError, match="whole number"):
        share.acquire(bad, snapshot=snap(gpu(0)))


def test_select_rejects_bad_utilization(lease_dir):
    with pytest.raises(ValueError, match="percentage"):
        select_gpus(1, max_utilization=120, snapshot=snap(gpu(0)))


def test_select_reads_an_inventory_file(lease_dir):
    # fixture: GPU 1 and 3 are idle (40 GiB free); 3 has n/a utilization so 1 ranks first
    assert select_gpus(2, snapshot=str(FOUR_GPUS)) == [1, 3]
    assert select_gpus(1, max_utilization=40, min_free_memory="20GiB", snapshot=FOUR_GPUS) == [1]


# --------------------------------------------------------------------------- leases in one process


def test_acquire_leases_and_releases(lease_dir):
    s = snap(gpu(0), gpu(1, used_gib=5), gpu(2))
    with share.acquire(2, snapshot=s, command="train.py") as lease:
        assert lease.indices == (0, 2)
        assert lease.environment() == {"CUDA_VISIBLE_DEVICES": "0,2", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
        live = share.current_leases()
        assert sorted(x.index for x in live) == [0, 2]
        assert {x.pid for x in live} == {os.getpid()} and live[0].command == "train.py"
        # a second acquisition (another lock descriptor) never gets a leased GPU, even in-process
        with share.acquire(1, snapshot=s) as other:
            assert other.indices == (1,)
            with pytest.raises(NoFreeGPUError, match=r"GPU 0 .*leased by"):
                share.acquire(1, snapshot=s)
    assert not lease.held and share.current_leases() == []
    assert share.acquire(3, snapshot=s).indices == (0, 2, 1)


def test_lease_dir_default_is_sticky_world_writable(tmp_path, monkeypatch):
    monkeypatch.delenv("ARIGNOTE_LEASE_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    config.reload()
    path = share.lease_dir()
    assert path == tmp_path / "arignote-leases"
    assert stat.S_IMODE(path.stat().st_mode) == 0o1777
    with share.acquire(1, snapshot=snap(gpu(0))):
        files = {p.name: stat.S_IMODE(p.stat().st_mode) for p in path.iterdir()}
    assert files and all(mode == 0o644 for mode in files.values())
    assert any(name.endswith(".lock") for name in files) and any(name.endswith(".json") for name in files)


def test_lease_dir_from_config_flag(tmp_path):
    with config.override(share_lease_dir=str(tmp_path / "flagdir")):
        assert share.lease_dir() == tmp_path / "flagdir"


def test_unsafe_or_bad_lease_dir_is_a_clear_error(tmp_path, monkeypatch):
    unsafe = tmp_path / "open"
    unsafe.mkdir()
    os.chmod(unsafe, 0o777)
    monkeypatch.setenv("ARIGNOTE_LEASE_DIR", str(unsafe))
    config.reload()
    with pytest.raises(ShareError, match="sticky bit.*chmod 1777"):
        share.acquire(1, snapshot=snap(gpu(0)))
    afile = tmp_path / "afile"
    afile.write_text("x")
    monkeypatch.setenv("ARIGNOTE_LEASE_DIR", str(afile))
    config.reload()
    with pytest.raises(ShareError, match="not a directory"):
        share.lease_dir()


def test_stale_record_of_a_dead_process_is_ignored(lease_dir):
    s = snap(gpu(0))
    lease = share.acquire(1, snapshot=s)
    record = next(lease_dir.glob("*.json"))
    data = json.loads(record.read_text())
    lease.release()
    # a record left behind by a killed process whose pid is now unused
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True)
    pid = int(dead.stdout)
    data["pid"] = pid
    (lease_dir / record.name.replace(f".{os.getpid()}.json", f".{pid}.json")).write_text(json.dumps(data))
    assert share.current_leases() == []
    assert share.acquire(1, snapshot=s).indices == (0,)


def test_select_for_device_spec_leases_for_the_process(lease_dir):
    from arignote.share import _PROCESS_LEASES

    class Info:  # the devices module's GPUInfo, as select_for_device_spec reads it
        def __init__(self, index, free):
            self.index, self.name, self.pci_bus_id = index, "Test GPU", f"0000:0{index}:00.0"
            self.uuid, self.total_memory, self.free_memory = f"test-{index}", 40 * GIB, free

    class Inventory:
        gpus = (Info(0, 5 * GIB), Info(1, 30 * GIB), Info(2, 20 * GIB))

    from arignote.devices import nvml

    if nvml.snapshot(processes=False, cpu_interval=None).gpus:
        pytest.skip("NVML sees real GPUs here; this test covers the inventory path")
    before = len(_PROCESS_LEASES)
    try:
        assert share.select_for_device_spec(2, Inventory()) == [1, 2]
        assert share.select_for_device_spec(1, Inventory()) == [0]
        assert len(share.process_leases()) == before + 2
        with pytest.raises(NoFreeGPUError):
            share.select_for_device_spec(1, Inventory())
    finally:
        for lease in _PROCESS_LEASES[before:]:
            lease.release()
        del _PROCESS_LEASES[before:]


def test_visible_only_matches_uuid_or_bus_id():
    from arignote.share import _visible_only

    class Info:
        def __init__(self, uuid, bus):
            self.uuid, self.pci_bus_id = uuid, bus

    class Inventory:  # torch sees GPU 1 (by uuid, without the GPU- prefix) and GPU 3 (by bus id)
        gpus = (Info("test-0001", "0000:99:00.0"), Info("", "0000:04:00.0"))

    s = snap(gpu(0), gpu(1), gpu(2), gpu(3))
    assert [g.index for g in _visible_only(s, Inventory()).gpus] == [1, 3]
    assert _visible_only(s, None) is s

    class Nothing:
        gpus = (Info("other", "0000:77:00.0"),)

    with pytest.raises(ShareError, match="matches a GPU torch sees"):
        _visible_only(s, Nothing())


# --------------------------------------------------------------------------- real processes


@pytest.mark.multiproc
def test_leased_gpu_is_skipped_for_other_processes(lease_dir, tmp_path):
    inv = write(tmp_path / "inv.json", snap(gpu(0), gpu(1, used_gib=10)))
    holder = start_holder(lease_dir, inv)
    try:
        assert holder_result(holder) == {"indices": [0]}
        assert select_gpus(1, snapshot=inv) == [1]
        assert select_gpus(2, snapshot=inv, exclude_leased=False) == [0, 1]
        with pytest.raises(NoFreeGPUError) as err:
            share.acquire(2, snapshot=inv)
        assert "GPU 0 (Test GPU): leased by" in str(err.value) and f"pid {holder.pid}" in str(err.value)
        assert [(x.index, x.pid) for x in share.current_leases()] == [(0, holder.pid)]
    finally:
        holder.stdin.close()
        holder.wait(10)
    assert share.current_leases() == []
    assert share.acquire(2, snapshot=inv).indices == (0, 1)


@pytest.mark.multiproc
@pytest.mark.parametrize("procs, gpus, each", [(2, 1, 1), (8, 4, 1), (3, 5, 2)])
def test_processes_acquiring_at_once_never_share(lease_dir, tmp_path, procs, gpus, each):
    inv = write(tmp_path / "inv.json", snap(*(gpu(i) for i in range(gpus))))
    go = tmp_path / "go"
    holders = [start_holder(lease_dir, inv, each, str(go)) for _ in range(procs)]
    try:
        for h in holders:
            assert h.stdout.readline().strip() == "ready"
        go.touch()  # everyone acquires at the same instant
        results = [holder_result(h) for h in holders]
        won = [r["indices"] for r in results if "indices" in r]
        taken = [i for indices in won for i in indices]
        assert len(taken) == len(set(taken)), f"a GPU was handed out twice: {won}"
        assert len(won) == min(procs, gpus // each)  # every lease that could be granted was
        assert all(len(w) == each for w in won)
        assert all("busy" in r for r in results if "indices" not in r)
    finally:
        for h in holders:
            h.stdin.close()
        for h in holders:
            h.wait(10)


QUEUED = r"""
import json, sys, time
from arignote import share
lease = share.acquire(1, snapshot=sys.argv[1], wait=True, poll=0.02)
start = time.time()
time.sleep(0.25)
end = time.time()
lease.release()
print(json.dumps([lease.indices[0], start, end]), flush=True)
"""


@pytest.mark.multiproc
@pytest.mark.slow
def test_waiting_processes_take_turns_without_overlap(lease_dir, tmp_path):
    inv = write(tmp_path / "inv.json", snap(gpu(0), gpu(1)))
    procs = [subprocess.Popen([sys.executable, "-c", QUEUED, str(inv)], stdout=subprocess.PIPE, text=True,
                              env=child_env(lease_dir)) for _ in range(6)]
    spans = [json.loads(p.communicate(timeout=60)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    for index in (0, 1):
        mine = sorted((s, e) for i, s, e in spans if i == index)
        for (_, end), (start, _) in zip(mine, mine[1:]):
            assert start >= end, f"GPU {index} held by two processes at once: {mine}"
    assert {i for i, _, _ in spans} == {0, 1}


@pytest.mark.multiproc
def test_sigkill_frees_the_gpu_at_once(lease_dir, tmp_path):
    inv = write(tmp_path / "inv.json", snap(gpu(0)))
    holder = start_holder(lease_dir, inv)
    assert holder_result(holder) == {"indices": [0]}
    with pytest.raises(NoFreeGPUError, match="leased by"):
        share.acquire(1, snapshot=inv)
    holder.send_signal(signal.SIGKILL)
    holder.wait(10)
    t0 = time.monotonic()
    assert len(list(lease_dir.glob("*.json"))) == 1  # the dead holder's record is left, and ignored
    assert share.current_leases() == []
    with share.acquire(1, snapshot=inv) as lease:  # no wait: the kernel already dropped the lock
        assert lease.indices == (0,)
        assert [x.pid for x in share.current_leases()] == [os.getpid()]  # stale record replaced
    assert time.monotonic() - t0 < 1.0


INHERIT = r"""
import os, subprocess, sys
from arignote import share
lease = share.acquire(1, snapshot=sys.argv[1])
child = '''
import sys
from arignote import share
class Info:
    index, name, pci_bus_id, uuid, total_memory, free_memory = 0, "g", "0:1", "test-0000", 1 << 35, 1 << 35
class Inventory:
    gpus = (Info(),)
print(share.select_for_device_spec(1, Inventory()), len(share.process_leases()))
'''
sys.exit(subprocess.call([sys.executable, "-c", child], pass_fds=lease.fds))
"""


@pytest.mark.multiproc
def test_child_of_a_lease_holder_uses_the_inherited_lease(lease_dir, tmp_path):
    # what `arignote run -- python train.py` with device=free:1 inside does
    inv = write(tmp_path / "inv.json", snap(gpu(0)))
    out = subprocess.run([sys.executable, "-c", INHERIT, str(inv)], capture_output=True, text=True,
                         env=child_env(lease_dir), timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[0]", "0"]  # GPU 0, and no new lease taken


# --------------------------------------------------------------------------- other users


NOBODY = 65534


def _as_nobody(fn) -> int:
    """Run ``fn`` in a forked child switched to uid/gid 65534; its return value is the exit code."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        code = 99
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            code = fn()
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


@pytest.fixture
def shared_dir(monkeypatch):
    """A lease dir other users can reach (pytest's tmp_path is private to root)."""
    if os.geteuid() != 0:
        pytest.skip("simulating another user needs root (to switch uid in a child)")
    base = Path(tempfile.mkdtemp(prefix="arignote-test-"))
    os.chmod(base, 0o755)
    monkeypatch.setenv("ARIGNOTE_LEASE_DIR", str(base / "leases"))
    config.reload()
    yield base
    subprocess.run(["rm", "-rf", str(base)], check=True)


def test_another_user_cannot_steal_or_break_a_lease(shared_dir):
    s = snap(gpu(0), gpu(1))
    lease = share.acquire(1, snapshot=s)  # root holds GPU 0
    directory = share.lease_dir()
    lock = next(directory.glob("*.lock"))
    record = next(directory.glob("*.json"))

    def attack() -> int:
        config.reload()
        failures = 0
        try:  # 1. cannot lease it: GPU 1 is the only one handed out
            with share.acquire(1, snapshot=s) as mine:
                failures += mine.indices != (1,)
            share.acquire(2, snapshot=s)
            failures += 1
        except NoFreeGPUError:
            pass
        for action in (lock.unlink, record.unlink,  # 2. sticky dir: cannot delete root's files
                       lambda: lock.rename(directory / "moved"),
                       lambda: open(record, "w").close()):  # 3. 0644: cannot rewrite the record
            try:
                action()
                failures += 1
            except PermissionError:
                pass
        # 4. a planted record claiming uid 0 is ignored by readers
        fake = directory / record.name.replace(f".0.{os.getppid()}.json", ".0.1.json")
        data = json.loads(record.read_text())
        fake.write_text(json.dumps({**data, "pid": 1, "index": 1, "key": data["key"]}))
        failures += any(x.pid == 1 for x in share.current_leases())
        return failures

    try:
        assert _as_nobody(attack) == 0
        assert lock.exists() and record.exists()
        with pytest.raises(NoFreeGPUError):
            share.acquire(2, snapshot=s)
    finally:
        lease.release()


def test_another_user_can_lease_a_free_gpu_whose_lock_file_root_created(shared_dir):
    # The lock file exists and belongs to root: the other user opens it read-only, without O_CREAT
    # (which fs.protected_regular would refuse in a sticky world-writable directory).
    s = snap(gpu(0))
    share.acquire(1, snapshot=s).release()
    lock = next(share.lease_dir().glob("*.lock"))
    assert lock.stat().st_uid == 0

    def lease_it() -> int:
        config.reload()
        with share.acquire(1, snapshot=s) as lease:
            leases = share.current_leases()
            return 0 if lease.indices == (0,) and [x.uid for x in leases] == [NOBODY] else 1

    assert _as_nobody(lease_it) == 0
    assert share.current_leases() == []
