"""Data parallel pieces that need no process group: torchrun env, relaunch command, sharding
arithmetic, strategy selection, and the launcher's monitor against plain child processes."""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
import threading
import time

import pytest
import torch

from arignote import config
from arignote.config import ConfigError
from arignote.parallel import SingleDevice, strategy_for
from arignote.parallel.env import (
    DistEnv,
    child_environ,
    describe_exit,
    relaunch_command,
    restart_count,
    restart_environ,
)
from arignote.parallel.launcher import Launcher
from arignote.parallel.sharding import rank_weight, reassemble_order, row_range

FULL = {"RANK": "1", "LOCAL_RANK": "0", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "1",
        "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"}

# ---------------------------------------------------------------------------- torchrun environment


def test_no_torchrun_variables_means_launch_ourselves():
    assert DistEnv.from_mapping({"PATH": "/bin"}) is None


def test_full_torchrun_environment_is_adopted():
    env = DistEnv.from_mapping({**FULL, "TORCHELASTIC_RESTART_COUNT": "2",
                                "TORCHELASTIC_USE_AGENT_STORE": "True"})
    assert (env.rank, env.local_rank, env.world_size, env.local_world_size) == (1, 0, 2, 1)
    assert (env.master_addr, env.master_port, env.restart, env.agent_store) == ("10.0.0.1", 29500, 2, True)
    assert not env.is_main


def test_local_rank_and_size_default_to_global_ones():
    env = DistEnv.from_mapping({k: v for k, v in FULL.items() if not k.startswith("LOCAL")})
    assert (env.local_rank, env.local_world_size) == (1, 2)


@pytest.mark.parametrize("drop", ["MASTER_PORT", "MASTER_ADDR", "WORLD_SIZE"])
def test_partial_torchrun_environment_names_the_missing_variable(drop):
    env = {k: v for k, v in FULL.items() if k != drop}
    with pytest.raises(ConfigError, match=drop):
        DistEnv.from_mapping(env)


@pytest.mark.parametrize("change, match", [
    ({"RANK": "2"}, "0 <= RANK < WORLD_SIZE"),
    ({"RANK": "one"}, "RANK='one'"),
    ({"LOCAL_RANK": "3"}, "LOCAL_RANK"),
    ({"MASTER_PORT": "70000"}, "not a TCP port"),
])
def test_inconsistent_torchrun_environment_is_an_error(change, match):
    with pytest.raises(ConfigError, match=match):
        DistEnv.from_mapping({**FULL, **change})


def test_child_environment_carries_only_torchrun_variables():
    base = {"PATH": "/bin", "RANK": "7", "ARIGNOTE_FLAGS": "device=cpu"}
    env = child_environ(base, 1, 3, 4321)
    assert env["RANK"] == "1" and env["LOCAL_RANK"] == "1"
    assert env["WORLD_SIZE"] == env["LOCAL_WORLD_SIZE"] == "3"
    assert (env["MASTER_ADDR"], env["MASTER_PORT"]) == ("127.0.0.1", "4321")
    assert env["PATH"] == "/bin" and env["ARIGNOTE_FLAGS"] == "device=cpu"
    added = set(env) - set(base)
    assert added <= {"LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}


def test_restart_environment_counts_and_drops_rank_variables():
    env = restart_environ({**FULL, "HOME": "/root"}, 2)
    assert env["TORCHELASTIC_RESTART_COUNT"] == "2" and env["HOME"] == "/root"
    assert not set(env) & set(FULL)
    assert restart_count(env) == 2 and restart_count({}) == 0
    with pytest.raises(ConfigError, match="TORCHELASTIC_RESTART_COUNT"):
        restart_count({"TORCHELASTIC_RESTART_COUNT": "x"})


# ---------------------------------------------------------------------------- relaunch command


def test_relaunch_script_keeps_interpreter_options_and_makes_path_absolute():
    cmd = relaunch_command("/venv/python", ["python3", "-u", "-X", "dev", "train.py", "--lr", "0.1"],
                           ["train.py", "--lr", "0.1"], None, "/home/me")
    assert cmd == ["/venv/python", "-u", "-X", "dev", "/home/me/train.py", "--lr", "0.1"]


def test_relaunch_module_and_code():
    cmd = relaunch_command("/py", ["python", "-m", "pkg.train", "--x"], ["/src/pkg/train.py", "--x"],
                           "pkg.train", "/w")
    assert cmd == ["/py", "-m", "pkg.train", "--x"]
    cmd = relaunch_command("/py", ["python", "-c", "print(1)", "a"], ["-c", "a"], None, "/w")
    assert cmd == ["/py", "-c", "print(1)", "a"]


@pytest.mark.parametrize("argv, spec, what", [
    ([""], None, "interactive"),
    (["/usr/bin/pytest", "-q"], None, "pytest"),
    (["/x/_pytest/main.py"], "pytest.__main__", "pytest"),
    (["/x/ipykernel_launcher.py", "-f", "k.json"], None, "ipykernel"),
])
def test_programs_that_cannot_be_rerun_are_refused(argv, spec, what):
    with pytest.raises(ConfigError, match=f"(?s){what}.*torchrun --nproc-per-node"):
        relaunch_command("/py", ["python", *argv], argv, spec, "/w")


def test_describe_exit():
    assert describe_exit(-9) == "killed by SIGKILL (exit code -9)"
    assert describe_exit(3) == "exit code 3"


# ---------------------------------------------------------------------------- sharding arithmetic


@pytest.mark.parametrize("rows, world", [(16, 2), (17, 2), (5, 3), (1, 2), (0, 2), (12, 4)])
def test_row_ranges_cover_a_global_batch_once_in_order_and_weights_give_its_mean(rows, world):
    parts = [row_range(rows, world, r) for r in range(world)]
    assert [i for a, b in parts for i in range(a, b)] == list(range(rows))
    sizes = [b - a for a, b in parts]
    assert max(sizes) - min(sizes) <= 1
    if rows:
        # DDP averages over ranks: sum_r weight_r * mean_r / W is the mean over the global batch
        values = torch.arange(float(rows)) ** 2
        means = [values[a:b].mean() if b > a else torch.tensor(0.0) for a, b in parts]
        ddp = sum(rank_weight(b - a, rows, world) * m for (a, b), m in zip(parts, means)) / world
        assert torch.isclose(ddp, values.mean())


def test_predictions_are_put_back_in_input_order():
    totals, world = [5, 5, 1], 2
    rows = torch.arange(11)
    starts = [0, 5, 10]
    local = [torch.cat([rows[s + a:s + b] for s, t in zip(starts, totals)
                        for a, b in [row_range(t, world, r)]]) for r in range(world)]
    back = torch.cat([local[r][a:b] for r, a, b in reassemble_order(totals, world)])
    assert back.tolist() == list(range(11))


# ---------------------------------------------------------------------------- strategy selection


def test_one_cpu_process_is_single_device():
    s = strategy_for(["cpu"])
    assert isinstance(s, SingleDevice) and s.world_size == 1


@pytest.mark.parametrize("flags, devices, match", [
    ({}, ["cpu", "cuda:0"], "all GPUs or one cpu"),
    ({"cpu_processes": 2}, ["cuda:0", "cuda:1"], "drop cpu.processes"),
    ({}, [], "no device"),
])
def test_bad_combinations_are_errors(flags, devices, match):
    with config.override(**flags), pytest.raises(ConfigError, match=match):
        strategy_for(devices)


def test_cpu_processes_inside_pytest_is_refused_before_anything_starts():
    from arignote.parallel import ddp

    with config.override(cpu_processes=2), pytest.raises(ConfigError, match="pytest"):
        strategy_for(["cpu"])
    assert ddp.active() is None


def test_collectives_use_pytorchs_timeouts_unless_parallel_timeout_is_set():
    from arignote.parallel import ddp

    assert config.get("parallel.timeout") == 0 and ddp._timeout(0.0) == {}
    assert ddp._timeout(45.0) == {"timeout": datetime.timedelta(seconds=45)}


def test_zero_processes_refused_where_the_flag_is_set():
    # refused by the flag's own type, so `arignote config` and fit refuse them alike (exit 2)
    with pytest.raises(ConfigError, match="flag 'cpu.processes'.*must be > 0"):
        config.override(cpu_processes=0).__enter__()


# ---------------------------------------------------------------------------- launcher monitor


def _start_in_thread(launcher: Launcher) -> None:
    # from a non-main thread the launcher installs no signal handlers (pytest keeps its own)
    t = threading.Thread(target=launcher.spawn, args=(1,))
    t.start()
    t.join()


def test_monitor_names_the_failed_rank_and_stops_the_others(capfd):
    code = "import os, sys, time\nif os.environ['RANK'] == '2': time.sleep(0.3); sys.exit(3)\ntime.sleep(60)"
    exits: list[int] = []
    launcher = Launcher(3, [sys.executable, "-c", code], timeout=2.0, exit_fn=exits.append)
    start = time.monotonic()
    _start_in_thread(launcher)
    while not exits and time.monotonic() - start < 20:
        time.sleep(0.05)
    assert exits == [1]
    assert time.monotonic() - start < 10
    err = capfd.readouterr().err
    assert "rank 2" in err and "exit code 3" in err
    assert all(p.poll() is not None for p in launcher.children.values())  # rank 1 was stopped
    assert launcher.children[1].returncode == -15


def test_shutdown_waits_for_ranks_and_reports_a_non_zero_exit(capfd):
    code = "import os, sys, time\ntime.sleep(0.5)\nsys.exit(int(os.environ['RANK']) * 4)"
    exits: list[int] = []
    launcher = Launcher(2, [sys.executable, "-c", code], timeout=2.0, exit_fn=exits.append)
    launcher._finishing = True  # as at exit: a rank ending now is expected, only its code matters
    _start_in_thread(launcher)
    launcher.shutdown()
    assert exits == [1]
    assert "rank 1" in capfd.readouterr().err


def test_ranks_see_the_torchrun_variables_and_no_stdout():
    out = subprocess.run(
        [sys.executable, "-c", "import subprocess, sys\n"
         "from arignote.parallel.launcher import Launcher\n"
         "l = Launcher(2, [sys.executable, '-c', 'import os; print(os.environ[\"RANK\"]); "
         "os.write(2, (os.environ[\"WORLD_SIZE\"] + os.environ[\"MASTER_PORT\"]).encode())'], 5.0)\n"
         "l.spawn(4242)\n"],
        capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": "src"})
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""  # ranks' stdout is discarded: only rank 0 prints
    assert "24242" in out.stderr


# ---------------------------------------------------------------------------- SLURM srun adoption


def test_an_srun_step_is_adopted_from_slurms_variables():
    from arignote.parallel.env import first_host, from_slurm

    env = {"SLURM_PROCID": "5", "SLURM_STEP_NUM_TASKS": "6", "SLURM_LOCALID": "1", "SLURM_NODEID": "2",
           "SLURM_STEP_TASKS_PER_NODE": "2(x3)", "SLURM_STEP_NODELIST": "gpu[07-09]", "SLURM_JOB_ID": "123"}
    e = DistEnv.from_mapping(env)  # no torchrun variable: SLURM's are read
    assert (e.rank, e.world_size, e.local_rank, e.local_world_size) == (5, 6, 1, 2)
    assert (e.master_addr, e.master_port, e.is_main) == ("gpu07", 10123, False)
    assert DistEnv.from_mapping({**env, "MASTER_ADDR": "head", "MASTER_PORT": "29400"}).master_port == 29400
    # an sbatch script itself (no step of several tasks) is one process: not a data-parallel job
    assert from_slurm({"SLURM_PROCID": "0", "SLURM_NTASKS": "4", "SLURM_JOB_NODELIST": "gpu1"}) is None
    assert from_slurm({**env, "SLURM_STEP_NUM_TASKS": "1", "SLURM_PROCID": "0"}) is None
    assert first_host("n[1-4],m7") == "n1" and first_host("solo") == "solo"
    # torchrun's variables win when both are there (torchrun inside an allocation)
    both = {**env, "RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}
    assert DistEnv.from_mapping(both).world_size == 2
    with pytest.raises(ConfigError, match="SLURM_STEP_TASKS_PER_NODE"):
        from_slurm({**env, "SLURM_STEP_TASKS_PER_NODE": "two"})


@pytest.mark.multiproc
def test_two_srun_tasks_train_like_one_process(tmp_path):
    """What `srun --ntasks=2 python train.py` starts, with SLURM's variables faked."""
    import socket

    from parallel_helpers import PLAIN_SCRIPT, _pids, _write

    script = _write(tmp_path, "train.py", PLAIN_SCRIPT)
    single, job = tmp_path / "single", tmp_path / "job"
    single.mkdir()
    job.mkdir()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("SLURM_", "RANK", "WORLD_SIZE", "MASTER_"))}
    tasks = []
    for rank in range(2):
        env = {**base, "SLURM_PROCID": str(rank), "SLURM_LOCALID": str(rank), "SLURM_NODEID": "0",
               "SLURM_STEP_NUM_TASKS": "2", "SLURM_STEP_TASKS_PER_NODE": "2",
               "SLURM_STEP_NODELIST": "127.0.0.1", "MASTER_PORT": str(port), "SLURM_JOB_ID": "1"}
        tasks.append(subprocess.Popen([sys.executable, str(script), "train", str(job), "1"], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    one = subprocess.run([sys.executable, str(script), "train", str(single), "1"], capture_output=True,
                         text=True, timeout=120, env=base)
    outs = [t.communicate(timeout=180) for t in tasks]
    assert [t.returncode for t in tasks] == [0, 0], [o[1][-2000:] for o in outs]
    assert one.returncode == 0, one.stderr[-2000:]
    assert len(_pids(job)) == 2
    a, b = torch.load(single / "weights.pt"), torch.load(job / "weights.pt")
    for key in a:
        torch.testing.assert_close(b[key], a[key], rtol=1e-5, atol=1e-6)
