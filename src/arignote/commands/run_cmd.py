"""``arignote run``: lease N free GPUs, run a command on exactly those, release them when it ends.

The command sees ``CUDA_VISIBLE_DEVICES`` (the leased GPUs' nvidia-smi indices) and
``CUDA_DEVICE_ORDER=PCI_BUS_ID`` so CUDA numbers GPUs the way nvidia-smi does. The lease lock
descriptors are inherited by the command, so the GPUs stay leased while it runs even if this
wrapper is killed. SIGINT and SIGTERM sent to the wrapper are forwarded to the command (a Ctrl-C
typed in the terminal already reaches both, so it is not sent twice). Exit code: the command's
(128+N if a signal N killed it); 1 when the GPUs are not free (without ``--wait``) or the wait
timed out; 2 for bad arguments.

Inside a job that was already given GPUs (SLURM, a scheduler, a container) the inherited
``CUDA_VISIBLE_DEVICES`` (nvidia-smi indices or ``GPU-`` UUIDs) bounds the choice: only those
GPUs are leased, and asking for more than the job was given is an error naming the variable.

Example::

    $ arignote run --gpus 2 --min-free-memory 10GiB --max-utilization 20 --wait -- python train.py
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from dataclasses import replace

from arignote import config
from arignote.devices import nvml
from arignote.devices.identity import GPUIdentity, VisibleEntry, parse_visible_devices
from arignote.devices.nvml import SnapshotFormatError
from arignote.errors import ConfigError
from arignote.share import NoFreeGPUError, ShareError, acquire, parse_size, queue

HELP = "lease N free GPUs and run a command on them (CUDA_VISIBLE_DEVICES set), optionally waiting"

_SI_KERNEL = 0x80  # si_code of signals the kernel sends, e.g. the tty's SIGINT on Ctrl-C
_FORWARDED = (signal.SIGINT, signal.SIGTERM)


def add_arguments(parser) -> None:
    parser.add_argument("--gpus", type=int, default=1, metavar="N", help="how many GPUs to lease (default 1)")
    parser.add_argument("--min-free-memory", metavar="SIZE",
                        help="only GPUs with at least SIZE free: 10GiB, 512MiB, 25%% or 0.25 of the GPU, "
                             "4096 (MiB)")
    parser.add_argument("--max-utilization", type=float, metavar="PERCENT",
                        help="only GPUs at most PERCENT busy (0-100)")
    parser.add_argument("--wait", action="store_true",
                        help="wait until N GPUs pass the filters instead of failing at once")
    parser.add_argument("--timeout", type=float, metavar="SECONDS", help="with --wait, give up after SECONDS")
    parser.add_argument("--poll", type=float, default=2.0, metavar="SECONDS",
                        help="with --wait, seconds between checks (default 2)")
    parser.add_argument("--inventory", metavar="FILE",
                        help="read the GPUs from FILE, a JSON snapshot as `arignote smi --json` writes it, "
                             "instead of NVML (re-read at every check; for tests and dry runs)")
    parser.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- COMMAND...",
                        help="the command to run, after --")


def _bad(message: str) -> int:
    print(f"arignote run: {message}", file=sys.stderr)
    return 2


def _check(args) -> tuple[list[str], int]:
    """The command to run, or an exit code 2 after printing what is wrong."""
    command = list(args.argv)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        return [], _bad("no command given; write it after --, e.g. arignote run --gpus 1 -- python train.py")
    if args.gpus < 1:
        return [], _bad(f"--gpus {args.gpus}: ask for at least 1 GPU")
    if args.min_free_memory is not None:
        try:
            parse_size(args.min_free_memory)
        except ValueError as exc:
            return [], _bad(f"--min-free-memory: {exc}")
    if args.max_utilization is not None and not 0 <= args.max_utilization <= 100:
        return [], _bad(f"--max-utilization {args.max_utilization:g}: give a percentage from 0 to 100")
    if args.timeout is not None and not args.wait:
        return [], _bad("--timeout only makes sense with --wait")
    if args.timeout is not None and args.timeout < 0:
        return [], _bad(f"--timeout {args.timeout:g}: give seconds >= 0")
    if args.poll <= 0:
        return [], _bad(f"--poll {args.poll:g}: give seconds > 0")
    return command, 0


def within(snapshot, given: tuple[VisibleEntry, ...]):
    """``snapshot`` reduced to the GPUs ``given`` names (an nvidia-smi index, a UUID or a prefix of one,
    as CUDA accepts them); the others are not this job's to lease."""
    return replace(snapshot, gpus=tuple(g for g in snapshot.gpus
                                        if any(e.names(GPUIdentity.of(g)) for e in given)))


def _snapshot_source(args, given: tuple[VisibleEntry, ...] | None):
    """What acquire() reads: the inventory/NVML snapshot, reduced to the job's GPUs when
    ``CUDA_VISIBLE_DEVICES`` was inherited."""
    if given is None:
        return args.inventory
    def fresh():
        snap = nvml.load(args.inventory) if args.inventory is not None else nvml.snapshot(
            processes=False, cpu_interval=None)
        return within(snap, given)

    return fresh


def _lease(args, command: list[str]):
    """Acquire, telling the user once when it has to wait. Raises NoFreeGPUError/ShareError."""
    visible = config.environ("CUDA_VISIBLE_DEVICES")
    given = parse_visible_devices(visible, config.environ("CUDA_DEVICE_ORDER"))
    if given is not None and len(given) < args.gpus:
        raise ShareError(f"--gpus {args.gpus}: this job was given {len(given)} GPU(s) "
                         f"(CUDA_VISIBLE_DEVICES={visible!r}, inherited); arignote run leases only among "
                         "them: ask for fewer, or for more GPUs from the scheduler")
    kw = dict(min_free_memory=args.min_free_memory, max_utilization=args.max_utilization,
              snapshot=_snapshot_source(args, given), command=" ".join(command))
    try:
        return acquire(args.gpus, **kw)
    except NoFreeGPUError as exc:
        if not args.wait:
            raise
        print(f"arignote run: waiting: {exc.detail}", file=sys.stderr, flush=True)
    # the queue record lets `arignote dash` show who waits, for what and since when
    with queue.waiting(args.gpus, kw["command"], args.min_free_memory, args.max_utilization):
        return acquire(args.gpus, wait=True, timeout=args.timeout, poll=args.poll, **kw)


def should_forward(signo: int, si_code: int, same_group: bool) -> bool:
    """Forward SIGINT/SIGTERM to the command, except a terminal's Ctrl-C (sent by the kernel to the
    whole foreground process group) when the command shares our group: it already has that one."""
    if signo not in _FORWARDED:
        return False
    return not (signo == signal.SIGINT and si_code == _SI_KERNEL and same_group)


def _supervise(child: subprocess.Popen) -> int:
    """Wait for the child, forwarding SIGINT/SIGTERM (signals are blocked and read synchronously,
    so no handler runs at an awkward moment). Returns the shell-style exit code."""
    own_group = os.getpgid(child.pid) == os.getpgrp()
    while True:
        info = signal.sigtimedwait((*_FORWARDED, signal.SIGCHLD), 1.0)
        if child.poll() is not None:
            break
        if info is None or not should_forward(info.si_signo, info.si_code, own_group):
            continue
        try:
            os.kill(child.pid, info.si_signo)
        except ProcessLookupError:
            pass
    code = child.returncode
    return 128 - code if code < 0 else code


def _unblock() -> None:  # runs in the child between fork and exec
    signal.pthread_sigmask(signal.SIG_UNBLOCK, (*_FORWARDED, signal.SIGCHLD))


def run(args) -> int:
    command, code = _check(args)
    if code:
        return code
    try:
        lease = _lease(args, command)
    except SnapshotFormatError as exc:
        return _bad(str(exc))
    except (NoFreeGPUError, ShareError) as exc:
        print(f"arignote run: {exc}", file=sys.stderr)
        return 1
    except ConfigError as exc:  # indices in CUDA_VISIBLE_DEVICES under a fastest-first order (identity.py)
        return _bad(str(exc))
    with lease:
        env = dict(os.environ)  # the child's environment: ours plus the leased GPUs
        env.update(lease.environment())
        print(f"arignote run: leased GPU(s) {env['CUDA_VISIBLE_DEVICES']} "
              f"(CUDA_VISIBLE_DEVICES={env['CUDA_VISIBLE_DEVICES']}); running {' '.join(command)}",
              file=sys.stderr, flush=True)
        old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, (*_FORWARDED, signal.SIGCHLD))
        try:
            try:
                child = subprocess.Popen(command, env=env, pass_fds=lease.fds, preexec_fn=_unblock)
            except OSError as exc:
                print(f"arignote run: cannot start {command[0]!r}: {exc.strerror}", file=sys.stderr)
                return 127 if isinstance(exc, FileNotFoundError) else 126
            return _supervise(child)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
