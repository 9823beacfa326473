"""Data parallel training: DistributedDataParallel over gloo (CPU processes) or NCCL (GPUs).

:func:`data_parallel` joins (or, from a plain ``python train.py``, creates) the job and returns
the :class:`DataParallel` strategy the loop talks to (contract in docs/architecture.md). It is
created once per process and reused by every later ``fit``/``evaluate``.

Joining, in order:

1. Under torchrun (``RANK``... set) adopt that environment; otherwise this process is rank 0: it
   opens the rendezvous store on a free port of 127.0.0.1 and starts ranks 1..N-1 with the
   :class:`~arignote.parallel.launcher.Launcher`.
2. A start-up handshake on the store (every rank marks itself ready and waits for all, up to
   ``STARTUP_TIMEOUT`` seconds: other ranks may still be importing torch or loading data).
3. ``init_process_group(timeout=parallel.timeout)``: from then on a collective that waits longer
   than ``parallel.timeout`` seconds for a peer raises instead of hanging.

Example::

    >>> s = data_parallel([Device("cpu")], processes=2)      # doctest: +SKIP
    >>> s.world_size, s.local_batch(128)                      # doctest: +SKIP
    (2, 64)
"""

from __future__ import annotations

import atexit
import os
import sys
import time
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from arignote import config
from arignote.config import ConfigError
from arignote.parallel.env import DistEnv, relaunch_command, restart_count
from arignote.parallel.heartbeat import Heartbeat
from arignote.parallel.launcher import Launcher, watch_parent
from arignote.parallel.sharding import epoch_permutation, local_batch_size, shard_of

__all__ = ["DataParallel", "data_parallel", "active", "STARTUP_TIMEOUT"]

STARTUP_TIMEOUT = 300.0  # seconds for every rank to reach fit (imports, data loading)
_state: dict[str, Any] = {"active": None}
_DRAIN = 0.2  # seconds for gloo's worker threads to release the last collectives' tensors at exit


class DataParallel:
    """One replica of a DDP job: this process's rank, device and the collectives the loop uses.

    ``shard`` gives every rank the same epoch order (rank 0's torch RNG, broadcast, so a run
    seeded with ``torch.manual_seed`` sees the order a single process would) and a strided,
    padded share of it (see :mod:`arignote.parallel.sharding`).
    """

    def __init__(self, device: Any, env: DistEnv, backend: str, launcher: Launcher | None = None) -> None:
        self.arignote_device = device if hasattr(device, "torch") else None
        self.device: torch.device = device.torch if hasattr(device, "torch") else torch.device(device)
        self.env = env
        self.backend = backend
        self.launcher = launcher
        self.rank = env.rank
        self.world_size = env.world_size
        self.is_main = env.rank == 0
        self._closed = False

    def __repr__(self) -> str:
        return f"DataParallel(rank={self.rank}, world_size={self.world_size}, device='{self.device}', " \
               f"backend='{self.backend}')"

    @property
    def layout(self) -> str:
        """The banner's line for the job: ``data parallel: 2 processes x 1 thread (gloo)`` on the CPU,
        ``data parallel: 4 processes, one GPU each (nccl)`` on GPUs."""
        if self.device.type == "cuda":
            return f"data parallel: {self.world_size} processes, one GPU each ({self.backend})"
        n = torch.get_num_threads()
        threads = f"{n} thread{'' if n == 1 else 's'}"
        return f"data parallel: {self.world_size} processes x {threads} ({self.backend})"

    def wrap(self, module: torch.nn.Module) -> torch.nn.Module:
        """DDP around ``module`` (already on ``self.device``); rank 0's weights are broadcast."""
        spread = len({p.device for p in module.parameters()}) > 1  # placement contexts
        ids = [self.device.index] if self.device.type == "cuda" and not spread else None
        return DistributedDataParallel(module, device_ids=ids)

    def shard(self, n: int, epoch: int, shuffle: bool, seed: int | None) -> torch.Tensor:
        """This rank's sample indices of the epoch, in order (a LongTensor on the device)."""
        if shuffle and seed is None:  # rank 0's global RNG decides, as in a single process
            perm = torch.randperm(n) if self.is_main else torch.empty(n, dtype=torch.int64)
            perm = perm.to(self._comm_device)
            dist.broadcast(perm, src=0)
        else:
            perm = epoch_permutation(n, epoch, shuffle, seed)
        return shard_of(perm, self.rank, self.world_size).to(self.device)

    def local_batch(self, global_batch: int) -> int:
        return local_batch_size(global_batch, self.world_size)

    def all_reduce_mean(self, tensor: torch.Tensor) -> torch.Tensor:
        """The mean over ranks of ``tensor`` (a new tensor on the tensor's device)."""
        out = tensor.detach().to(self._comm_device, copy=True)
        dist.all_reduce(out, op=dist.ReduceOp.SUM)
        return out.div_(self.world_size).to(tensor.device)

    def agree_max(self, value: int) -> int:
        t = torch.tensor([int(value)], dtype=torch.int64, device=self._comm_device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return int(t.item())

    def broadcast_object(self, obj: Any) -> Any:
        box = [obj]
        dist.broadcast_object_list(box, src=0, device=self._comm_device)
        return box[0]

    def barrier(self) -> None:
        dist.barrier()

    def teardown(self) -> None:
        """End of one ``fit``: nothing to release (the group lives until the process exits, so a
        later ``fit``/``evaluate`` reuses it); see :meth:`close`."""

    def close(self) -> None:
        """Leave the process group (at exit); rank 0 then waits for the other ranks."""
        if self._closed:
            return
        self._closed = True
        if getattr(self, "_heartbeat", None) is not None:
            self._heartbeat.close()
        watcher = getattr(self, "_watcher", None)
        if watcher is not None:
            watcher.set()
            watcher.thread.join()
        if dist.is_initialized():
            dist.destroy_process_group()
            # gloo's worker threads free a finished collective's tensors after the caller has moved
            # on; a Python-owned tensor needs the GIL, and a thread that asks for it once the
            # interpreter is finalizing is unwound by pthread_exit, which aborts the process
            # (SIGABRT, "terminate called without an active exception"). Let them finish now.
            time.sleep(_DRAIN)
        if self.launcher is not None:
            self.launcher.shutdown()

    @property
    def _comm_device(self) -> torch.device:
        return self.device if self.backend == "nccl" else torch.device("cpu")


def active() -> DataParallel | None:
    """The data parallel strategy of this process, if it joined a job."""
    return _state["active"]


def _threads_per_process(processes: int) -> int:
    explicit = config.get("cpu.threads")
    if explicit:
        return explicit
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    return max(1, cores // max(1, processes))


def _store(env: DistEnv, launching: bool) -> dist.TCPStore:
    startup = timedelta(seconds=STARTUP_TIMEOUT)
    if launching:
        return dist.TCPStore("127.0.0.1", 0, env.world_size, is_master=True, timeout=startup,
                             wait_for_workers=False)
    host = env.rank == 0 and not env.agent_store  # else torchrun's agent (or rank 0) hosts it
    return dist.TCPStore(env.master_addr, env.master_port, env.world_size, is_master=host,
                         timeout=startup, wait_for_workers=False, multi_tenant=host)


def _handshake(store: dist.TCPStore, env: DistEnv) -> None:
    prefix = f"arignote/{env.restart}/ready/"
    store.set(f"{prefix}{env.rank}", "1")
    keys = [f"{prefix}{r}" for r in range(env.world_size)]
    try:
        store.wait(keys, timedelta(seconds=STARTUP_TIMEOUT))
    except dist.DistStoreError:
        missing = [r for r in range(env.world_size) if not store.check([f"{prefix}{r}"])]
        raise RuntimeError(f"rank {env.rank}: ranks {missing} did not reach fit within {STARTUP_TIMEOUT:g}s "
                           "(check their stderr; they run the same script)") from None


def _gpu_device(devices: list[Any], env: DistEnv, store: dist.TCPStore, launching: bool) -> Any:
    from arignote.devices import Device
    from arignote.devices import cuda as cuda_api

    key = "arignote/devices"
    if launching:
        # rank 0 chose the GPUs (free:N may pick differently in another process): share its choice
        store.set(key, ",".join(str(d.index) for d in devices))
        chosen = devices[0]
    elif store.check([key]):
        indices = [int(i) for i in store.get(key).decode().split(",")]
        chosen = Device("cuda", indices[env.rank])
    elif len(devices) >= env.local_world_size:
        chosen = devices[env.local_rank]
    else:
        raise ConfigError(
            f"torchrun started {env.local_world_size} processes on this node but the device flag "
            f"names {len(devices)} GPU(s) ({', '.join(str(d) for d in devices)}): use device=all or list "
            f"{env.local_world_size} GPUs, or match --nproc-per-node")
    cuda_api.set_device(chosen.index)
    return chosen


def data_parallel(devices: list[Any], processes: int = 1) -> DataParallel:
    """Join this process's data parallel job (creating it from a plain script) and return its
    strategy. ``devices``: several GPUs, or ``[cpu]`` with ``processes`` > 1 gloo processes."""
    if _state["active"] is not None:
        return _state["active"]
    timeout = float(config.get("parallel.timeout"))
    if timeout <= 0:
        raise ConfigError("parallel.timeout=0: data parallel training needs a positive bound in seconds "
                          "(default 30)")
    on_gpu = any(getattr(d, "is_cuda", False) for d in devices)
    env = DistEnv.from_mapping(os.environ)
    launching = env is None
    launcher = watcher = None
    if launching:
        world = len(devices) if on_gpu else processes
        main = sys.modules.get("__main__")
        spec = getattr(main, "__spec__", None)
        command = relaunch_command(sys.executable, getattr(sys, "orig_argv", []), sys.argv,
                                   getattr(spec, "name", None), os.getcwd())
        restart = restart_count(os.environ)
        env = DistEnv(0, 0, world, world, "127.0.0.1", 0, restart)
        store = _store(env, launching=True)
        env = DistEnv(0, 0, world, world, "127.0.0.1", store.port, restart)
        launcher = Launcher(world, command, timeout, config.get("parallel.restarts"), restart)
    else:
        _check_torchrun(env, on_gpu, processes)
        store = _store(env, launching=False)
        watcher = watch_parent(env.rank)
    if on_gpu:
        device = _gpu_device(devices, env, store, launching)
        backend = "nccl"
    else:
        device = devices[0]
        backend = "gloo"
        torch.set_num_threads(_threads_per_process(env.local_world_size))
    if launcher is not None:
        launcher.spawn(store.port)
    try:
        _handshake(store, env)
        dist.init_process_group(backend, store=dist.PrefixStore(f"arignote/{env.restart}/pg", store),
                                rank=env.rank, world_size=env.world_size, timeout=timedelta(seconds=timeout))
    except BaseException:
        if launcher is not None:
            launcher.abort()  # never leave ranks waiting for a rank 0 that gave up
        raise
    if launcher is not None:
        launcher.install_excepthook()
    heartbeat = Heartbeat(store.host, store.port, env.rank, env.world_size, env.restart)  # names a stall
    if launcher is not None:
        launcher.diagnose = heartbeat.diagnose
    strategy = DataParallel(device, env, backend, launcher)
    strategy._heartbeat = heartbeat
    strategy._store = store  # keep the store (rank 0 hosts it) alive as long as the group
    strategy._watcher = watcher
    _state["active"] = strategy
    atexit.register(strategy.close)
    return strategy


def _check_torchrun(env: DistEnv, on_gpu: bool, processes: int) -> None:
    """Under torchrun the process count is torchrun's; say so when the flag disagrees."""
    if not on_gpu and processes > 1 and processes != env.local_world_size and env.rank == 0:
        print(f"note: cpu.processes={processes} ({config.source('cpu.processes')}) is ignored under "
              f"torchrun, which started {env.local_world_size} process(es) per node", file=sys.stderr)
