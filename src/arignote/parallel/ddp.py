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
3. ``init_process_group``: with PyTorch's collective timeouts (10 min NCCL, 30 min gloo), or
   ``parallel.timeout`` seconds when that flag is set. A slow rank-0 callback (a checkpoint upload)
   does not kill a healthy job; a rank that dies is still found within ~50 ms by the launcher.

Example::

    >>> s = data_parallel([Device("cpu")], processes=2)      # doctest: +SKIP
    >>> s.world_size, s.agree([0, 1])                         # doctest: +SKIP
    (2, [0, 1])
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import time
import weakref
from collections import Counter
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from arignote import config
from arignote.config import ConfigError
from arignote.devices import Device
from arignote.devices import cuda as cuda_api
from arignote.parallel.env import DistEnv, relaunch_command, restart_count
from arignote.parallel.flag_carrier import STEP_FLAGS, FlagCarrier
from arignote.parallel.heartbeat import Heartbeat
from arignote.parallel.launcher import Launcher, watch_parent
from arignote.parallel.placement import gpus_per_replica, parse_contexts, replica_gpus, set_replica_gpus

__all__ = ["Agreement", "Carried", "DataParallel", "data_parallel", "active", "STARTUP_TIMEOUT",
           "NCCL_STALL_NOTE", "stand_in_zero"]

STARTUP_TIMEOUT = 300.0  # seconds for every rank to reach fit (imports, data loading)
# what rank 0's stall notice adds under NCCL, whose watchdog ends the job at the collective's timeout
# without naming a rank (see DataParallel._missing_ranks)
NCCL_STALL_NOTE = ("; NCCL waits for it until the collective times out (parallel.timeout, else "
                   "PyTorch's 10 minutes), then its watchdog ends the job without naming a rank: this "
                   "notice is the diagnosis")
_state: dict[str, Any] = {"active": None}
_STALL_WAIT = 2.0  # seconds a rank whose collective failed looks for the other ranks' marks
_UNARMED = contextlib.nullcontext()  # a forward of a module that never arms DDP by itself
_DRAIN = 0.2  # seconds for gloo's worker threads to release the last collectives' tensors at exit


class DataParallel:
    """One replica of a DDP job: this process's rank, device and the collectives the loop uses.

    The protocol (docs/architecture.md): ``wrap`` (DDP), ``order`` (the epoch order, rank 0's torch
    RNG broadcast so a run seeded with ``torch.manual_seed`` sees the order a single process would),
    ``no_sync`` (DDP's, for every micro-batch but the last), ``reduce`` (a sum over ranks),
    ``agree`` (small integer flags, max over ranks, on the host: no device sync),
    ``agree_in_reduction`` (the per-step one: the flags travel inside DDP's gradient all-reduce of
    the armed backward, as the gradient of a parameter of their own:
    :mod:`arignote.parallel.flag_carrier`), ``agree_later`` (its fallback: the same started
    asynchronously on a gloo group of its own), ``stand_in_backward``, ``gather``,
    ``broadcast_seed``, ``barrier``, ``close``.

    ``collectives`` counts every collective this strategy ran from Python, by kind (``agree``,
    ``agree_later``, ``wait``, ``waited`` for a wait that found the reduction still running,
    ``reduce``, ``order``, ...): tests count them per step. DDP's bucket all-reduces run in its
    C++ reducer (tests count them as ``c10d.allreduce_`` operators). ``carried`` counts the
    agreements that travelled in a bucket.
    """

    def __init__(self, device: Any, env: DistEnv, backend: str, launcher: Launcher | None = None,
                 control: Any = None) -> None:
        self.arignote_device = device if hasattr(device, "torch") else None
        self.device: torch.device = device.torch if hasattr(device, "torch") else torch.device(device)
        self.env = env
        self.backend = backend
        self.launcher = launcher
        self.rank = env.rank
        self.world_size = env.world_size
        self.is_main = env.rank == 0
        self.control = control  # a gloo group of its own for host-side flags
        self.collectives: Counter[str] = Counter()  # collectives run so far, by kind (tests count them)
        self._reduced_checked: weakref.WeakSet = weakref.WeakSet()  # DDP modules checked once
        self.static_graph = False  # DDP's static_graph, set by wrap from parallel.static_graph
        # the step's flags ride in DDP's bucket all-reduce when the buckets are host memory (gloo);
        # on NCCL the bucket is GPU memory and reading the flags back would stall the host on the
        # device every step, so they keep their asynchronous host-side exchange (agree_later)
        self.carry_flags = backend == "gloo"
        self.carried = 0  # agreements that travelled inside a gradient bucket
        self._closed = False

    @property
    def agreements(self) -> int:
        """Blocking agreements so far (:meth:`agree`); the per-step ones are ``agree_later``."""
        return self.collectives["agree"]

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

    def wrap(self, module: torch.nn.Module, stepped: bool = False) -> torch.nn.Module:
        """DDP around ``module`` (already on ``self.device``); rank 0's weights are broadcast.

        Buffers are not broadcast in every forward (``forward_sync_buffers=False``): that collective
        would sit inside micro-batches that may run out of memory on one rank only; the loop
        averages floating buffers (BatchNorm statistics) over the ranks at each epoch's end instead.
        The flags ``parallel.bucket_view`` (on: gradients are views into DDP's buckets),
        ``parallel.static_graph`` and ``parallel.find_unused_parameters`` (off) are DDP's options
        of those names (docs/architecture.md says when each is valid).

        ``stepped=True`` (the trainer's): the module is trained by the loop's step, which arms the
        reduction itself (:meth:`reduce_next_backward`), so DDP's forward never arms it; and where
        the step's flags ride in the buckets (gloo), DDP wraps a
        :class:`~arignote.parallel.flag_carrier.FlagCarrier` around ``module``: one more
        parameter, whose gradient carries them. Without it (a hand-written loop) it is plain DDP.
        """
        self.static_graph = config.get("parallel.static_graph")  # the step's guard checks its needs
        spread = len({p.device for p in module.parameters()}) > 1  # placement contexts
        ids = [self.device.index] if self.device.type == "cuda" and not spread else None
        if stepped and self.carry_flags:
            module = FlagCarrier(module, self.rank, self.world_size, STEP_FLAGS)
        net = DistributedDataParallel(
            module, device_ids=ids, forward_sync_buffers=False,
            gradient_as_bucket_view=config.get("parallel.bucket_view"),
            static_graph=self.static_graph,
            find_unused_parameters=config.get("parallel.find_unused_parameters"))
        if stepped:
            # every forward unarmed, as inside DDP's no_sync() (set once here rather than around each
            # forward: two nn.Module attribute writes a forward); the step arms the reducer for its
            # last backward itself (reduce_next_backward)
            net.require_backward_grad_sync = False
        return net

    def order(self, n: int, epoch: int, shuffle: bool) -> torch.Tensor:  # noqa: ARG002 - protocol
        """The epoch's order of ``n`` samples (or batches), the same on every rank (host tensor)."""
        if not shuffle:
            return torch.arange(n)
        perm = torch.randperm(n) if self.is_main else torch.empty(n, dtype=torch.int64)
        perm = perm.to(self._comm_device)
        self.collectives["order"] += 1
        self._collective("the epoch order", dist.broadcast, perm, src=0)
        return perm.cpu()

    def no_sync(self, net: torch.nn.Module) -> Any:
        """DDP's ``no_sync()``: the forward does not arm the gradient reduction, so gradients of the
        backward that follows accumulate locally (a module from ``wrap(stepped=True)`` is always
        so: nothing to do)."""
        if isinstance(net, DistributedDataParallel) and net.require_backward_grad_sync:
            return net.no_sync()
        return _UNARMED

    def reduce_next_backward(self, net: torch.nn.Module, loss: torch.Tensor) -> torch.Tensor:
        """Arm DDP's reducer for the backward of ``loss`` (returned: the loss to run it from), after
        a forward run under :meth:`no_sync`: what DDP's own forward does when it syncs
        (``prepare_for_forward``/``prepare_for_backward``; with ``find_unused_parameters`` DDP walks
        the graph of ``loss`` for the parameters that take no part in it, else it needs nothing).
        With a flag carrier the returned loss carries the step's flags into the reduction
        (:meth:`FlagCarrier.attach`). The loop runs
        every forward unarmed and arms only once the ranks agreed to go on: an armed forward that
        is then abandoned (out of memory on another rank, a stop) would leave the reducer expecting
        a backward, and the next micro-batch's backward would start a reduction on one rank only."""
        if not isinstance(net, DistributedDataParallel):
            return loss
        carrier = _carrier(net)
        if carrier is not None:
            loss = carrier.attach(loss)
        net.reducer.prepare_for_forward()
        net.require_forward_param_sync = True
        search = net.find_unused_parameters and not net.static_graph
        net.reducer.prepare_for_backward([loss] if search else [])
        return loss

    def reduce(self, tensor: torch.Tensor) -> torch.Tensor:
        """The sum over ranks of ``tensor`` (a new tensor on the tensor's device)."""
        out = tensor.detach().to(self._comm_device, copy=True)
        self.collectives["reduce"] += 1
        self._collective("the metrics reduction", dist.all_reduce, out, op=dist.ReduceOp.SUM)
        return out.to(tensor.device)

    def agree(self, flags: list[int]) -> list[int]:
        """The maximum over ranks of each flag (stop, out-of-memory, ...): one small all-reduce of a
        host tensor on a gloo group, so the device is never waited for. It blocks until every rank
        sent its flags: the loop calls it at epoch ends only; a step uses :meth:`agree_later`."""
        self.collectives["agree"] += 1
        t = torch.tensor(flags, dtype=torch.int64)
        self._collective(f"agreement {self.agreements}", dist.all_reduce, t, op=dist.ReduceOp.MAX,
                         group=self.control)
        return t.tolist()

    def agree_later(self, flags: list[int]) -> Agreement:
        """:meth:`agree` started now (an asynchronous all-reduce of a host tensor); its
        :meth:`Agreement.wait` gives the maxima. The step starts it after its last forward and
        waits after the backward, so the exchange travels while the backward (and DDP's gradient
        buckets) run instead of holding every rank at a rendezvous."""
        self.collectives["agree_later"] += 1
        t = torch.tensor(flags, dtype=torch.int64)
        what = f"step agreement {self.collectives['agree_later']}"
        work = self._collective(what, dist.all_reduce, t, op=dist.ReduceOp.MAX, group=self.control,
                                async_op=True)
        return Agreement(t, work, self, what)

    def agree_in_reduction(self, net: torch.nn.Module, flags: list[int]) -> Carried | Agreement:
        """The step's agreement (maxima over ranks, like :meth:`agree`) carried by the next armed
        backward of ``net`` (:meth:`reduce_next_backward` or :meth:`stand_in_backward`): the flags
        are the gradient of the :class:`~arignote.parallel.flag_carrier.FlagCarrier`'s parameter,
        averaged by DDP with the model's gradients, and read after that backward, so the step runs
        no collective of its own. Call it before the armed backward on every rank; ``wait()`` after it.

        Falls back to :meth:`agree_later` where the buckets cannot carry them: an NCCL job
        (``carry_flags`` off: the bucket is device memory, and reading it back would stall the host
        on the device every step), a module that is not DDP, or a DDP module with a comm hook of
        the user's (it could reduce the block inexactly: compression)."""
        carrier = _carrier(net)
        if carrier is None or getattr(net, "_comm_hooks", None):  # DDP keeps registered hooks there
            return self.agree_later(flags)
        carrier.send(flags)
        self.carried += 1
        return Carried(carrier)

    def stand_in_backward(self, net: torch.nn.Module) -> None:
        """Take part in this step's gradient reduction without a batch (a rank whose forward ran
        out of memory; the others run :meth:`reduce_next_backward` and their last backward): the
        start of DDP's forward (on its second iteration DDP rebuilds its buckets, a collective),
        the arming, and zero gradients for every trained parameter, so DDP's buckets fill and
        reduce as on the other ranks. The step is then
        redone everywhere (the agreement says so), so the reduced values are never used."""
        if not isinstance(net, DistributedDataParallel):
            return
        with net.no_sync():
            net._pre_forward()  # what the skipped forward did: lazy init, the one bucket rebuild
        zero = stand_in_zero([p for p in net.parameters() if p.requires_grad])
        self.reduce_next_backward(net, zero).backward()

    def check_reduced(self, net: torch.nn.Module) -> None:
        """After the first reduced backward: a trained parameter without a gradient took no part in
        the loss, so DDP (``find_unused_parameters`` off) never finished that reduction and would
        fail at the next step with advice the user cannot follow. Say which parameters, and the
        fixes. Every rank runs the same model, so every rank raises the same error."""
        if not isinstance(net, DistributedDataParallel) or net in self._reduced_checked:
            return
        self._reduced_checked.add(net)
        if net.find_unused_parameters or net.static_graph:
            return
        unused = [name for name, p in _inner(net).named_parameters() if p.requires_grad and p.grad is None]
        if unused:
            shown = ", ".join(unused[:8]) + (f" and {len(unused) - 8} more" if len(unused) > 8 else "")
            raise ConfigError(
                f"data parallel: {len(unused)} trained parameter(s) took no part in the loss ({shown}), "
                "so DDP cannot finish reducing the gradients. Freeze them (layer.trainable = False, or "
                "param.requires_grad_(False)) or remove them; or set parallel.find_unused_parameters=true "
                "(DDP then searches every step's graph for them, a little slower)")

    def gather(self, tensor: torch.Tensor) -> list[torch.Tensor]:
        """Every rank's ``tensor`` in rank order; first dimensions may differ, and a rank with no
        rows may pass any empty tensor (shape and dtype come from the ranks that have rows)."""
        meta = [None] * self.world_size
        self._collective("gathering predictions", dist.all_gather_object, meta,
                         (tuple(tensor.shape), tensor.dtype), group=self.control)
        full = [m for m in meta if m[0] and m[0][0]]
        shape, dtype = full[0] if full else meta[self.rank]
        rows = max(m[0][0] if m[0] else 0 for m in meta)
        padded = torch.zeros((rows, *shape[1:]), dtype=dtype, device=self._comm_device)
        if len(tensor):
            padded[:len(tensor)] = tensor.to(self._comm_device)
        parts = [torch.empty_like(padded) for _ in range(self.world_size)]
        dist.all_gather(parts, padded)
        return [p[:m[0][0] if m[0] else 0].to(tensor.device) for p, m in zip(parts, meta)]

    def broadcast_seed(self, draw: Any) -> int:
        """``draw()`` on rank 0 (e.g. a seed from its torch RNG), the same value on every rank."""
        t = torch.tensor([int(draw()) if self.is_main else 0], dtype=torch.int64)
        self._collective("the shuffle seed", dist.broadcast, t, src=0, group=self.control)
        return int(t)

    def barrier(self) -> None:
        self._collective("a barrier", dist.barrier, group=self.control)

    def _collective(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Run a collective; when it fails (a timeout, a peer gone) raise an error that names the
        ranks that did not arrive, not only the one that waited."""
        try:
            return fn(*args, **kwargs)
        except RuntimeError as exc:  # DistBackendError, DistStoreError, gloo/NCCL timeouts
            raise RuntimeError(self._missing_ranks(what, exc)) from exc

    def _missing_ranks(self, what: str, exc: BaseException, wait: float = _STALL_WAIT) -> str:
        """Every rank whose collective fails marks itself in the rendezvous store and looks, for
        ``wait`` seconds, for the others' marks: a rank without one never reached a collective.

        This runs where a timed-out collective raises in Python: gloo, and the control group's
        collectives. An NCCL collective that times out never does: torch's watchdog thread tears
        the process down (``TORCH_NCCL_ASYNC_ERROR_HANDLING``, default 3 ``SkipCleanUp``: "tear down
        process without cleaning up NCCL communicators", ``ProcessGroupNCCL.hpp``), so under NCCL
        the heartbeat's stall notice (:data:`NCCL_STALL_NOTE`) is the diagnosis."""
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        text = f"rank {self.rank}: {what} failed ({first})"
        store = getattr(self, "_store", None)
        if store is None:
            return text
        prefix = f"arignote/{self.env.restart}/stalled/"
        try:
            store.set(f"{prefix}{self.rank}", what)
            deadline = time.monotonic() + wait
            others = [r for r in range(self.world_size) if r != self.rank]
            while True:
                missing = [r for r in others if not store.check([f"{prefix}{r}"])]
                if not missing or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
        except Exception:  # noqa: BLE001 - the store went with a dead rank 0: say what we know
            return text + "; the rendezvous store is gone too (rank 0 died?)"
        if not missing:
            return text + "; every rank reached a collective (they disagree on which: a rank ran other code)"
        ranks = ", ".join(map(str, missing))
        return (text + f"; rank{'s' if len(missing) > 1 else ''} {ranks} did not arrive (stuck or dead: "
                "see its stderr)")

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


class Agreement:
    """A :meth:`DataParallel.agree_later` in flight: :meth:`wait` gives the flags' maxima.

    The strategy counts ``wait`` for every wait and ``waited`` for one that found the exchange
    still running (the rank then really waited for another)."""

    def __init__(self, flags: torch.Tensor, work: Any, owner: DataParallel, what: str) -> None:
        self.flags, self.work, self.owner, self.what = flags, work, owner, what

    def wait(self) -> list[int]:
        counts = self.owner.collectives
        counts["wait"] += 1
        if not self.work.is_completed():
            counts["waited"] += 1
        self.owner._collective(self.what, self.work.wait)
        return self.flags.tolist()


class Carried:
    """A :meth:`DataParallel.agree_in_reduction` whose flags travel in the armed backward's bucket
    all-reduce: :meth:`wait` (after that backward; nothing left to wait for) gives the maxima."""

    def __init__(self, carrier: FlagCarrier) -> None:
        self.carrier = carrier

    def wait(self) -> list[int]:
        return self.carrier.received()


def _carrier(net: torch.nn.Module) -> FlagCarrier | None:
    """The flag carrier DDP wraps in ``net`` (see :meth:`DataParallel.wrap`), or None."""
    inner = getattr(net, "module", None) if isinstance(net, DistributedDataParallel) else None
    return inner if isinstance(inner, FlagCarrier) else None


def _inner(net: DistributedDataParallel) -> torch.nn.Module:
    """The user's module inside ``net`` (without the flag carrier)."""
    carrier = _carrier(net)
    return carrier.module if carrier is not None else net.module


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
    """This rank's GPU (with placement contexts: the first of the GPUs it owns, the others set in
    :func:`arignote.parallel.placement.set_replica_gpus`)."""
    key = "arignote/devices"
    per = gpus_per_replica(configured_placement())
    if launching:
        # rank 0 chose the GPUs (free:N may pick differently in another process): share its choice
        store.set(key, ",".join(str(d.index) for d in devices))
        indices = [d.index for d in devices]
        chosen = devices[0]
    elif store.check([key]):
        indices = [int(i) for i in store.get(key).decode().split(",")]
        chosen = Device("cuda", indices[env.rank * per])
    elif len(devices) >= env.local_world_size * per:
        indices = [d.index for d in devices]
        chosen = devices[env.local_rank * per]
    else:
        raise ConfigError(
            f"torchrun started {env.local_world_size} processes on this node but the device flag "
            f"names {len(devices)} GPU(s) ({', '.join(str(d) for d in devices)}): use device=all or list "
            f"{env.local_world_size} GPUs, or match --nproc-per-node")
    if per > 1:
        rank = env.local_rank if not launching and not store.check([key]) else env.rank
        set_replica_gpus(replica_gpus(indices, per, rank))
    cuda_api.set_device(chosen.index)
    return chosen


def stand_in_zero(params: list[torch.Tensor]) -> torch.Tensor:
    """0 times a sum touching one element of each of ``params``, on the first one's device: its
    backward gives every parameter a (zero) gradient, which fills DDP's buckets.

    Under placement contexts a replica's parameters sit on several GPUs, and ``torch.stack`` needs
    them on one device (``torch/_refs/__init__.py``: ``stack`` is ``cat`` of unsqueezed tensors, and
    ``cat`` runs ``utils.check_same_device(*tensors, allow_cpu_scalar_tensors=False)``): one stack
    per device, then each device's sum copied to the first device (a differentiable copy, as a
    placed model's forward makes). Issue 28 C3: one stack over cuda:0 and cuda:1 raised a device
    error, not an out-of-memory, on the rank that ran out; the others waited in NCCL.

    >>> stand_in_zero([torch.ones(2, requires_grad=True), torch.ones(3, requires_grad=True)])
    tensor(0., grad_fn=<MulBackward0>)
    """
    home = params[0].device
    per_device: dict[torch.device, list[torch.Tensor]] = {}
    for p in params:
        per_device.setdefault(p.device, []).append(p.reshape(-1)[:1].sum())
    sums = [torch.stack(parts).sum().to(home) for parts in per_device.values()]
    total = sums[0]
    for s in sums[1:]:
        total = total + s
    return total.mul(0)


def data_parallel(devices: list[Any], processes: int = 1) -> DataParallel:
    """Join this process's data parallel job (creating it from a plain script) and return its
    strategy. ``devices``: several GPUs, or ``[cpu]`` with ``processes`` > 1 gloo processes."""
    if _state["active"] is not None:
        return _state["active"]
    timeout = float(config.get("parallel.timeout"))  # 0: PyTorch's defaults
    on_gpu = any(getattr(d, "is_cuda", False) for d in devices)
    env = DistEnv.from_mapping(os.environ)
    launching = env is None
    launcher = watcher = None
    if launching:
        # with placement contexts each replica owns several GPUs
        world = len(devices) // gpus_per_replica(configured_placement()) if on_gpu else processes
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
                                rank=env.rank, world_size=env.world_size, **_timeout(timeout))
        # host-side flags on their own gloo group: a step's agreement, in flight while DDP's buckets
        # (and the bucket rebuild of its second forward) use the default group, never pairs with
        # one of those on a rank that took another path (a stand-in backward)
        control = dist.new_group(backend="gloo", **_timeout(timeout))
    except BaseException:
        if launcher is not None:
            launcher.abort()  # never leave ranks waiting for a rank 0 that gave up
        raise
    if launcher is not None:
        launcher.install_excepthook()
    heartbeat = Heartbeat(store.host, store.port, env.rank, env.world_size, env.restart)  # names a stall
    if backend == "nccl":
        heartbeat.note = NCCL_STALL_NOTE
    if launcher is not None:
        launcher.diagnose = heartbeat.diagnose
    strategy = DataParallel(device, env, backend, launcher, control)
    strategy._heartbeat = heartbeat
    strategy._store = store  # keep the store (rank 0 hosts it) alive as long as the group
    strategy._watcher = watcher
    _state["active"] = strategy
    atexit.register(strategy.close)
    return strategy


def configured_placement() -> dict[str, str]:
    """The ``contexts`` flag as written (absolute: before it is made relative to a replica)."""
    return parse_contexts(config.get("contexts"))


def _timeout(seconds: float) -> dict[str, Any]:
    """``timeout=`` for the process group: only when ``parallel.timeout`` is set (else PyTorch's)."""
    return {"timeout": timedelta(seconds=seconds)} if seconds > 0 else {}


def _check_torchrun(env: DistEnv, on_gpu: bool, processes: int) -> None:
    """Under torchrun the process count is torchrun's; say so when the flag disagrees."""
    if not on_gpu and processes > 1 and processes != env.local_world_size and env.rank == 0:
        print(f"note: cpu.processes={processes} ({config.source('cpu.processes')}) is ignored under "
              f"torchrun, which started {env.local_world_size} process(es) per node", file=sys.stderr)
