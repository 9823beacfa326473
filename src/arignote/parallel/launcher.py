"""The script launcher: ``python train.py`` becomes rank 0 and starts ranks 1..N-1 itself.

Lightning's "script launcher" idea: the other ranks re-run the same command line with the
torchrun variables set (see :mod:`arignote.parallel.env`), reach ``fit`` and join the process
group. This module only manages processes; collectives live in :mod:`arignote.parallel.ddp`.

What the main process guarantees:

- A monitor thread polls the ranks every 50 ms. When one exits non-zero the job stops at once:
  the message names the rank and its exit code, the other ranks get SIGTERM (SIGKILL after a
  grace period), and the main process exits 1, or, when ``parallel.restarts`` allows, re-executes
  the whole job (``os.execve`` of the same command line, same pid, ``TORCHELASTIC_RESTART_COUNT``
  incremented) so ``BackupAndRestore`` resumes from the last finished epoch.
- An exception in the main process itself (rank 0) stops the ranks the same way.
- SIGINT (Ctrl-C) and SIGTERM stop every rank and exit 130 / 143. The ranks run in their own
  session, so a terminal's Ctrl-C reaches only the main process, which stops them in order.
- At exit the main process waits for the ranks (they end when their script ends) and reports
  any non-zero exit code (the job then exits 1).
- Ranks' stdout is discarded (only rank 0 prints); their stderr (tracebacks) is kept.

Example (what ``fit`` does through :func:`arignote.parallel.ddp.data_parallel`)::

    launcher = Launcher(world_size=2, command=[sys.executable, "/abs/train.py"], timeout=30.0)
    launcher.spawn(port=store.port)    # ranks 1..N-1 re-run train.py with RANK=1 ...
"""

from __future__ import annotations

import atexit
import io
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence

from arignote.parallel.env import child_environ, describe_exit, restart_environ

__all__ = ["Launcher", "watch_parent"]

_POLL = 0.05
_GRACE = 5.0  # seconds between SIGTERM and SIGKILL when stopping ranks


def _say(message: str) -> None:
    # torch's distributed excepthook points sys.stderr at a StringIO while it formats a traceback;
    # a message written then (and the process ended) would be lost, so go to the real stream.
    stream = sys.__stderr__ if isinstance(sys.stderr, io.StringIO) else sys.stderr
    print(message, file=stream, flush=True)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


class Launcher:
    """Starts, watches and stops ranks 1..N-1 of a job whose rank 0 is this process."""

    def __init__(self, world_size: int, command: Sequence[str], timeout: float, restarts: int = 0,
                 restart: int = 0, exit_fn: Callable[[int], None] = os._exit) -> None:
        self.world_size = int(world_size)
        self.command = list(command)
        self.timeout = float(timeout)
        self.restarts = int(restarts)
        self.restart = int(restart)
        self.children: dict[int, subprocess.Popen] = {}
        self._exit = exit_fn
        self._lock = threading.Lock()
        self._stopping = False
        self._finishing = False
        self._shut = False
        self._monitor: threading.Thread | None = None
        self._wake: tuple[int, int] | None = None
        self._old_wakeup_fd = -1
        self._old_handlers: dict[int, object] = {}
        self._old_excepthook = None
        self.diagnose: Callable[[], str] | None = None  # names a stalled rank (parallel.heartbeat module)

    # ------------------------------------------------------------------ start

    def spawn(self, port: int) -> None:
        """Start ranks 1..N-1 (rendezvous at 127.0.0.1:``port``) and begin watching them."""
        for rank in range(1, self.world_size):
            env = child_environ(os.environ, rank, self.world_size, port)
            self.children[rank] = subprocess.Popen(
                self.command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                start_new_session=True)
        self._install_handlers()
        self._monitor = threading.Thread(target=self._watch, name="arignote-rank-monitor", daemon=True)
        self._monitor.start()
        atexit.register(self.shutdown)

    def _install_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers can only be set from the main thread; the monitor still works
        r, w = os.pipe()
        os.set_blocking(r, False)
        os.set_blocking(w, False)
        self._wake = (r, w)
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._old_handlers[sig] = signal.signal(sig, self._on_signal)
        # The C-level handler writes the signal number here even while the main thread is busy
        # inside a collective, so the monitor thread can act at once.
        self._old_wakeup_fd = signal.set_wakeup_fd(w, warn_on_full_buffer=False)

    def install_excepthook(self) -> None:
        """Make an uncaught exception in this process stop the ranks (call it after
        ``init_process_group``, whose own hook then runs inside this one)."""
        self._old_excepthook = sys.excepthook
        sys.excepthook = self._excepthook

    @property
    def _grace(self) -> float:
        """Seconds between SIGTERM and SIGKILL: ``_GRACE``, shorter when parallel.timeout is."""
        return min(_GRACE, self.timeout) if self.timeout > 0 else _GRACE

    @property
    def _timeout_text(self) -> str:
        return (f"parallel.timeout={self.timeout:g}s" if self.timeout > 0
                else "PyTorch's collective timeout (parallel.timeout unset)")

    # ------------------------------------------------------------------ watching

    def _watch(self) -> None:
        while not self._stopping and not self._shut:
            if self._wake is not None:
                ready, _, _ = select.select([self._wake[0]], [], [], _POLL)
                if ready:
                    try:
                        data = os.read(self._wake[0], 64)
                    except BlockingIOError:
                        data = b""
                    for signum in data:
                        if signum in (signal.SIGINT, signal.SIGTERM):
                            self._stop_on_signal(signum)
            else:
                time.sleep(_POLL)
            failed = self.failed()
            if failed and not self._finishing:
                self.fail(self._failure_text(failed))

    def failed(self) -> list[tuple[int, int]]:
        """(rank, exit code) of every rank that has exited non-zero, in rank order."""
        out = []
        for rank, proc in self.children.items():
            code = proc.poll()
            if code not in (None, 0):
                out.append((rank, code))
        return out

    def _failure_text(self, failed: list[tuple[int, int]]) -> str:
        rank, code = min(failed, key=lambda rc: (rc[1] >= 0, rc[0]))  # a signal death is the likely cause
        text = f"arignote: rank {rank} (pid {self.children[rank].pid}) failed: {describe_exit(code)}"
        others = [f"rank {r} ({describe_exit(c)})" for r, c in failed if r != rank]
        if others:
            text += "; also " + ", ".join(others)
        return text

    # ------------------------------------------------------------------ stopping

    def stop_children(self, grace: float = _GRACE) -> None:
        """SIGTERM every live rank, SIGKILL whatever is left after ``grace`` seconds, reap them."""
        live = [p for p in self.children.values() if p.poll() is None]
        for proc in live:
            try:
                proc.terminate()
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        for proc in live:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def abort(self) -> None:
        """Stop the ranks without ending this process (rank 0 failed before training started)."""
        with self._lock:
            if self._stopping:
                return
            self._stopping = True
        self.stop_children(self._grace)

    def fail(self, message: str, restartable: bool = True) -> None:
        """Stop the job after a failure: stop the ranks, then restart it or exit 1 (never returns
        unless another thread is already stopping the job)."""
        with self._lock:
            if self._stopping:
                return
            self._stopping = True
        _say(message)
        _say("arignote: stopping the other ranks")
        self.stop_children(self._grace)
        if restartable and self.restart < self.restarts:
            nxt = self.restart + 1
            _say(f"arignote: restarting the job (restart {nxt} of {self.restarts}, "
                 "parallel.restarts); BackupAndRestore resumes from the last finished epoch")
            _flush()
            self._restore_wakeup()
            os.execve(self.command[0], self.command, restart_environ(os.environ, nxt))
        _flush()
        self._exit(1)

    def _stop_on_signal(self, signum: int) -> None:
        with self._lock:
            if self._stopping:
                return
            self._stopping = True
        name = signal.Signals(signum).name
        _say(f"arignote: {name} received; stopping ranks 1..{self.world_size - 1}")
        self.stop_children(self._grace)
        _flush()
        self._exit(128 + signum)

    def _on_signal(self, signum: int, frame: object) -> None:  # noqa: ARG002 - signal handler signature
        self._stop_on_signal(signum)

    def _excepthook(self, tp: type, value: BaseException, tb: object) -> None:
        # A dead rank often shows up first as an error in rank 0's collective: give the monitor
        # a moment to name it, then treat whatever is left as a failure of rank 0 itself.
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline and not self._stopping and not self.failed():
            time.sleep(_POLL)
        failed = self.failed()
        if failed:
            self.fail(self._failure_text(failed) + f" (rank 0 then raised {tp.__name__})")
        if self._stopping:  # the monitor thread is ending the process
            time.sleep(3600)
        (self._old_excepthook or sys.__excepthook__)(tp, value, tb)
        text = f"arignote: rank 0 (this process) failed with {tp.__name__}"
        cause = getattr(value, "__cause__", None)
        if (_in_collective(tb) or _collective_error(value)
                or (cause is not None and _in_collective(cause.__traceback__))):
            text += (f" in a collective: another rank stopped answering for {self._timeout_text} or left "
                     "the job")
            stalled = self.diagnose() if self.diagnose is not None else ""
            if stalled:
                text += f"; {stalled}"
        self.fail(text, restartable=not issubclass(tp, KeyboardInterrupt))

    def _restore_wakeup(self) -> None:
        if self._wake is not None and threading.current_thread() is threading.main_thread():
            signal.set_wakeup_fd(self._old_wakeup_fd)

    def shutdown(self) -> None:
        """At exit: wait for the ranks to finish their script; a non-zero exit fails the job."""
        if self._stopping or self._shut:
            return
        self._shut = True
        self._finishing = True
        for proc in self.children.values():
            proc.wait()
        failed = self.failed()
        if failed:
            self.fail(self._failure_text(failed), restartable=False)
        self._restore_wakeup()
        if threading.current_thread() is threading.main_thread():
            for sig, old in self._old_handlers.items():
                signal.signal(sig, old)  # type: ignore[arg-type]
        if self._old_excepthook is not None:
            sys.excepthook = self._old_excepthook


def _in_collective(tb: object) -> bool:
    """True when the traceback passes through torch.distributed (a collective or the store)."""
    marker = os.sep + os.path.join("torch", "distributed") + os.sep
    while tb is not None:
        if marker in tb.tb_frame.f_code.co_filename:  # type: ignore[attr-defined]
            return True
        tb = tb.tb_next  # type: ignore[attr-defined]
    return False


# what torch's C++ collectives put in the errors they raise where no Python frame of
# torch.distributed is on the stack (DDP's gradient all-reduce runs inside autograd's backward)
_COLLECTIVE_MARKERS = ("gloo", "NCCL", "ProcessGroup")
# torch.distributed's own error classes (named, so the launcher need not import torch)
_DIST_ERRORS = {"DistError", "DistBackendError", "DistNetworkError", "DistStoreError"}


def _collective_error(value: BaseException) -> bool:
    """True when ``value`` comes from a collective: torch's ``DistError`` family, or an error whose
    text names the collective backend (a gloo timeout in DDP's reducer is a plain RuntimeError).

    >>> _collective_error(RuntimeError("[../gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting"))
    True
    >>> _collective_error(ValueError("boom"))
    False
    """
    if any(kind.__name__ in _DIST_ERRORS for kind in type(value).__mro__):
        return True
    text = str(value)
    return any(marker in text for marker in _COLLECTIVE_MARKERS)


def watch_parent(rank: int, interval: float = 0.25) -> threading.Event:
    """In a rank started by a launcher (arignote's or torchrun's): exit when the launcher dies,
    so a killed main process never leaves orphans training on. Set the returned event to stop
    watching (before interpreter shutdown: a daemon thread still running then can abort the
    process while torch's C++ threads are torn down)."""
    parent = os.getppid()
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(interval):
            if os.getppid() != parent:
                _say(f"arignote: rank {rank}: the launching process (pid {parent}) is gone; exiting")
                _flush()
                os._exit(1)

    thread = threading.Thread(target=loop, name="arignote-parent-watch", daemon=True)
    thread.start()
    stop.thread = thread  # type: ignore[attr-defined]
    return stop
