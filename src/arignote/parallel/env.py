"""The torchrun protocol, as plain data: who this process is and how to start its peers.

Only the standard torchrun variables cross between the launcher and the ranks (``RANK``,
``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``, and
``TORCHELASTIC_RESTART_COUNT`` for restarts); this module is the one place in arignote that
reads them. A job started by SLURM's ``srun`` (several tasks in the step) is adopted the same way
from SLURM's own variables (:func:`from_slurm`): ``SLURM_PROCID``, ``SLURM_STEP_NUM_TASKS``,
``SLURM_LOCALID``, ``SLURM_STEP_TASKS_PER_NODE``, and the first host of ``SLURM_STEP_NODELIST`` as
the master address (port: ``MASTER_PORT`` if set, else one derived from ``SLURM_JOB_ID``).
Everything here is pure, so it is tested without starting a process.

Example::

    >>> env = DistEnv.from_mapping({"RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2",
    ...                            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"})
    >>> env.rank, env.world_size, env.is_main
    (1, 2, False)
    >>> DistEnv.from_mapping({}) is None
    True
"""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from arignote.config import ConfigError

__all__ = ["DistEnv", "TORCHRUN_VARS", "alone_environ", "child_environ", "relaunch_command", "describe_exit",
           "restart_count", "from_slurm", "first_host"]

TORCHRUN_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
_REQUIRED = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
RESTART_VAR = "TORCHELASTIC_RESTART_COUNT"


def _whole(env: Mapping[str, str], name: str, default: int | None = None) -> int:
    raw = env.get(name)
    if raw is None:
        if default is None:
            raise ConfigError(f"torchrun variable {name} is missing; set RANK, WORLD_SIZE, MASTER_ADDR "
                              "and MASTER_PORT together (or unset them all to let arignote launch)")
        return default
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"torchrun variable {name}={raw!r} is not a whole number; fix the launcher "
                          "or unset the torchrun variables") from None


@dataclass(frozen=True)
class DistEnv:
    """This process's place in a job: global/local rank and size, and the rendezvous address."""

    rank: int
    local_rank: int
    world_size: int
    local_world_size: int
    master_addr: str
    master_port: int
    restart: int = 0
    agent_store: bool = False  # torchrun's agent hosts the TCPStore (all ranks are clients)

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @classmethod
    def from_mapping(cls, env: Mapping[str, str]) -> DistEnv | None:
        """The torchrun environment in ``env``, or None when no torchrun variable is set.

        A partial set (``RANK`` without ``MASTER_PORT``...) is an error naming what is missing.
        """
        if "RANK" not in env and "WORLD_SIZE" not in env:
            slurm = from_slurm(env)  # MASTER_ADDR/PORT may be the user's, for srun
            if slurm is not None or not any(name in env for name in _REQUIRED):
                return slurm
        rank = _whole(env, "RANK")
        world = _whole(env, "WORLD_SIZE")
        port = _whole(env, "MASTER_PORT")
        addr = env.get("MASTER_ADDR")
        if addr is None:
            _whole(env, "MASTER_ADDR")  # raises the missing-variable error
        local_world = _whole(env, "LOCAL_WORLD_SIZE", world)
        local_rank = _whole(env, "LOCAL_RANK", rank)
        if world < 1 or not 0 <= rank < world:
            raise ConfigError(f"torchrun variables RANK={rank} WORLD_SIZE={world} are inconsistent: "
                              "need 0 <= RANK < WORLD_SIZE")
        if not 0 <= local_rank < max(local_world, 1):
            raise ConfigError(f"torchrun variables LOCAL_RANK={local_rank} LOCAL_WORLD_SIZE={local_world} "
                              "are inconsistent: need 0 <= LOCAL_RANK < LOCAL_WORLD_SIZE")
        if not 0 < port < 65536:
            raise ConfigError(f"torchrun variable MASTER_PORT={port} is not a TCP port (1..65535)")
        return cls(rank, local_rank, world, local_world, str(addr), port, restart_count(env),
                   env.get("TORCHELASTIC_USE_AGENT_STORE") == "True")


def first_host(nodelist: str) -> str:
    """The first host of a SLURM node list (``node[07-09,12],gpu1`` -> ``node07``).

    >>> first_host("node[07-09,12],gpu1"), first_host("gpu1,gpu2"), first_host("a-[1-2]")
    ('node07', 'gpu1', 'a-1')
    """
    text = nodelist.strip()
    head, bracket, rest = text.partition("[")
    if not bracket or "," in head:
        return text.split(",")[0]
    first = rest.split("]")[0].split(",")[0].split("-")[0]
    return head + first


def _tasks_per_node(spec: str, node: int) -> int:
    """Tasks on node ``node`` of ``SLURM_STEP_TASKS_PER_NODE`` (``2(x3),1`` -> 2, 2, 2, 1)."""
    counts = []
    for part in spec.split(","):
        count, _, times = part.partition("(x")
        counts += [int(count)] * (int(times.rstrip(")")) if times else 1)
    return counts[min(node, len(counts) - 1)]


def from_slurm(env: Mapping[str, str]) -> DistEnv | None:
    """The job ``srun`` started (None outside an srun step of several tasks, e.g. in the batch
    script itself, whose one process must not wait for peers).

    >>> e = from_slurm({"SLURM_PROCID": "3", "SLURM_STEP_NUM_TASKS": "4", "SLURM_LOCALID": "1",
    ...                 "SLURM_STEP_TASKS_PER_NODE": "2(x2)", "SLURM_STEP_NODELIST": "gpu[4-5]",
    ...                 "SLURM_NODEID": "1", "SLURM_JOB_ID": "4242"})
    >>> e.rank, e.world_size, e.local_rank, e.local_world_size, e.master_addr, e.master_port
    (3, 4, 1, 2, 'gpu4', 14242)
    """
    if "SLURM_STEP_NUM_TASKS" not in env or "SLURM_PROCID" not in env:
        return None
    world = _whole(env, "SLURM_STEP_NUM_TASKS")
    if world < 2:
        return None
    rank = _whole(env, "SLURM_PROCID")
    local_rank = _whole(env, "SLURM_LOCALID", 0)
    node = _whole(env, "SLURM_NODEID", 0)
    spec = env.get("SLURM_STEP_TASKS_PER_NODE", str(world))
    try:
        local_world = _tasks_per_node(spec, node)
    except ValueError:
        raise ConfigError(f"SLURM_STEP_TASKS_PER_NODE={spec!r} is not a SLURM task count such as "
                          "'2(x3),1'") from None
    nodes = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST") or "127.0.0.1"
    port = _whole(env, "MASTER_PORT", 10000 + _whole(env, "SLURM_JOB_ID", 0) % 20000)
    if not 0 <= rank < world or not 0 <= local_rank < local_world:
        raise ConfigError(f"SLURM variables SLURM_PROCID={rank} SLURM_STEP_NUM_TASKS={world} "
                          f"SLURM_LOCALID={local_rank} ({local_world} task(s) on this node) are inconsistent")
    return DistEnv(rank, local_rank, world, local_world, env.get("MASTER_ADDR") or first_host(nodes), port,
                   restart_count(env))


def restart_count(env: Mapping[str, str]) -> int:
    """How many times this job was restarted (torchrun's ``TORCHELASTIC_RESTART_COUNT``, else 0)."""
    raw = env.get(RESTART_VAR, "0") or "0"
    try:
        return max(0, int(raw))
    except ValueError:
        raise ConfigError(f"{RESTART_VAR}={raw!r} (environment) is not a whole number; unset it") from None


def child_environ(base: Mapping[str, str], rank: int, world_size: int, port: int,
                  addr: str = "127.0.0.1") -> dict[str, str]:
    """The environment of rank ``rank`` started by arignote's launcher: ``base`` plus torchrun's
    variables (one machine, so local rank == rank)."""
    env = {k: v for k, v in base.items() if k not in TORCHRUN_VARS}
    env.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world_size),
               LOCAL_WORLD_SIZE=str(world_size), MASTER_ADDR=addr, MASTER_PORT=str(port))
    return env


def alone_environ(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` without what makes a process join a data parallel job (torchrun's variables, an
    ``srun`` step's task count): the environment of a one-process reference run started from a rank
    (``arignote selftest``'s data-parallel items compare against one).

    >>> alone_environ({"RANK": "1", "WORLD_SIZE": "2", "SLURM_PROCID": "1", "SLURM_STEP_NUM_TASKS": "2",
    ...                "PATH": "/bin"})
    {'PATH': '/bin'}
    """
    return {k: v for k, v in base.items() if k not in TORCHRUN_VARS + _SLURM_STEP_VARS}


_SLURM_STEP_VARS = ("SLURM_PROCID", "SLURM_STEP_NUM_TASKS")


def restart_environ(base: Mapping[str, str], restart: int) -> dict[str, str]:
    """The environment of the re-executed main process for restart number ``restart``."""
    env = {k: v for k, v in base.items() if k not in TORCHRUN_VARS}
    env[RESTART_VAR] = str(restart)
    return env


_NOT_A_SCRIPT = (
    "data parallel training re-runs this program once per extra rank, but {what}; put the training "
    "code in a script and run `python train.py`, or start the ranks yourself with "
    "`torchrun --nproc-per-node=N train.py`")
_HOSTS = ("pytest", "py.test", "_pytest", "ipykernel", "ipykernel_launcher", "IPython", "jupyter")


def relaunch_command(executable: str, orig_argv: Sequence[str], argv: Sequence[str],
                     main_spec_name: str | None, cwd: str) -> list[str]:
    """The command line that re-runs this program (Lightning's script-launcher idea).

    Built from ``sys.orig_argv`` so interpreter options (``-u``, ``-X``, ``-m module``, ``-c
    code``) are kept; the script path is made absolute so a ``chdir`` before ``fit`` is harmless.
    Interactive sessions and test runners cannot be re-run: that is an error naming the fix.

    >>> relaunch_command("/py", ["python", "-u", "train.py", "--epochs", "2"],
    ...                  ["train.py", "--epochs", "2"], None, "/work")
    ['/py', '-u', '/work/train.py', '--epochs', '2']
    """
    argv = list(argv)
    if not argv or argv[0] == "" or not orig_argv:
        raise ConfigError(_NOT_A_SCRIPT.format(what="this is an interactive session"))
    if argv[0] == "-":  # `python - < train.py`: the other ranks would find stdin already read
        raise ConfigError(_NOT_A_SCRIPT.format(what="the script was read from stdin (python -), which "
                                                    "cannot be read a second time"))
    host = os.path.basename(argv[0]).split(".")[0]
    spec_root = (main_spec_name or "").split(".")[0]
    if host in _HOSTS or spec_root in _HOSTS:
        what = f"the program is {spec_root or host}, not a training script"
        raise ConfigError(_NOT_A_SCRIPT.format(what=what))
    orig = list(orig_argv)
    start = len(orig) - len(argv)
    if start < 1:
        raise ConfigError(_NOT_A_SCRIPT.format(what="its command line cannot be recovered"))
    cmd = [executable, *orig[1:]]
    if argv[0] not in ("-c", "-m") and main_spec_name is None:
        cmd[start] = os.path.join(cwd, orig[start])  # the script; absolute paths stay as they are
    return cmd


def describe_exit(code: int) -> str:
    """``exit code 3`` or ``killed by SIGKILL (exit code -9)`` for a Popen return code."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name} (exit code {code})"
    return f"exit code {code}"
