"""Heartbeats: which rank of a data-parallel job stopped answering, and at which step.

A collective that waits for a frozen rank (SIGSTOP, a hung NFS read, a deadlocked data loader) only
knows that *some* peer did not arrive. Every rank therefore runs a small thread that writes, once
a second, ``"<time> <optimizer steps done> <pid> <host>"`` under ``arignote/<restart>/hb/<rank>`` in
the job's rendezvous store (its own client connection, nothing on the device, nothing in the
training step: the step count comes from torch's global optimizer step hook). From these, rank 0:

- prints a notice when a rank's heartbeat is ``STALL_NOTICE`` seconds old (once per stall),
  naming the rank, its pid, its process state when it runs on this host (``stopped``: SIGSTOP'd)
  and the step it did not arrive at;
- adds the same diagnosis to the error that ends the job when a collective times out.

A rank whose heartbeat is fresh but whose step count is behind the others' is stuck in its own
code (a data loader, a callback); it is named the same way.

Example::

    >>> beats = {0: (100.0, 37, 11, "h"), 1: (69.2, 36, 12, "h")}
    >>> describe(beats, now=100.5, this_host="other")
    'rank 1 (pid 12 on h) did not arrive at optimizer step 38, where the other ranks wait: its last \
heartbeat was 31 s ago (after 36 steps)'
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import torch.distributed as dist
from torch.optim.optimizer import register_optimizer_step_post_hook

__all__ = ["Heartbeat", "describe", "STALL_NOTICE", "INTERVAL"]

INTERVAL = 1.0  # seconds between heartbeats
STALL_NOTICE = 10.0  # seconds without a heartbeat before rank 0 names the rank in a notice
_STALE = 3 * INTERVAL  # a heartbeat older than this counts as missed in a diagnosis

Beat = tuple[float, int, int, str]  # (time, optimizer steps done, pid, host)

_STATES = {"T": "stopped by a signal (SIGSTOP?)", "t": "stopped by a debugger",
           "D": "blocked in uninterruptible I/O", "Z": "exited (zombie)"}


class Heartbeat:
    """This rank's heartbeat thread, and (on rank 0) the watcher of the others'.

    ``store_host``/``store_port``: the job's TCPStore (a second client connection is opened so the
    thread never shares a socket with the process group).
    """

    def __init__(self, store_host: str, store_port: int, rank: int, world_size: int, restart: int = 0,
                 interval: float = INTERVAL, notice_after: float = STALL_NOTICE) -> None:
        self.rank, self.world_size = rank, world_size
        self.prefix = f"arignote/{restart}/hb/"
        self.interval, self.notice_after = interval, notice_after
        self.steps = 0
        self.host = socket.gethostname()
        self._client = dist.TCPStore(store_host, store_port, is_master=False,
                                     timeout=timedelta(seconds=max(5.0, 5 * interval)),
                                     wait_for_workers=False)
        self._lock = threading.Lock()
        self._noticed: set[int] = set()
        self.note = ""  # appended to a stall notice (the NCCL strategy says the notice is the diagnosis)
        self._hook = register_optimizer_step_post_hook(self._count)
        self._stop = threading.Event()
        self._beat()
        self._thread = threading.Thread(target=self._run, name="arignote-heartbeat", daemon=True)
        self._thread.start()

    def _count(self, optimizer: Any, args: Any, kwargs: Any) -> None:  # noqa: ARG002 - hook signature
        self.steps += 1

    def _beat(self) -> None:
        with self._lock:
            self._client.set(f"{self.prefix}{self.rank}",
                             f"{time.time():.3f} {self.steps} {os.getpid()} {self.host}")

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self._beat()
                if self.rank == 0:
                    self._watch()
            except (RuntimeError, OSError):  # the store is gone: the job is ending
                return

    def read(self) -> dict[int, Beat | None]:
        """Every rank's last heartbeat (None for a rank that never sent one)."""
        out: dict[int, Beat | None] = {}
        with self._lock:
            for r in range(self.world_size):
                key = f"{self.prefix}{r}"
                if not self._client.check([key]):
                    out[r] = None
                    continue
                t, steps, pid, host = self._client.get(key).decode().split(" ", 3)
                out[r] = (float(t), int(steps), int(pid), host)
        return out

    def _watch(self) -> None:
        beats, now = self.read(), time.time()
        beats[self.rank] = (now, self.steps, os.getpid(), self.host)
        late = {r for r, b in beats.items() if b is not None and now - b[0] > self.notice_after}
        new = late - self._noticed
        self._noticed = late
        text = describe(beats, now, self.host, only=new, stale=self.notice_after) if new else ""
        if text:
            print(f"arignote: {text}{self.note}", file=sys.stderr, flush=True)

    def diagnose(self) -> str:
        """The stalled rank(s) as one sentence, for the error that ends the job ('' when the
        heartbeats cannot tell, or the store is gone)."""
        try:
            beats, now = self.read(), time.time()
            beats[self.rank] = (now, self.steps, os.getpid(), self.host)  # this rank, up to date
            return describe(beats, now, self.host, stale=3 * self.interval)
        except (RuntimeError, OSError, ValueError):
            return ""

    def close(self) -> None:
        self._stop.set()
        self._hook.remove()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=2 * self.interval)


def describe(beats: Mapping[int, Beat | None], now: float, this_host: str,
             only: set[int] | None = None, stale: float = _STALE) -> str:
    """Which rank(s) stalled, from the heartbeats: a stale heartbeat, or a step count behind the
    others'. '' when every rank looks alive and at the same step. Steps are counted 1-based in the
    text: the ranks that did ``lead`` steps wait in step ``lead + 1``."""
    known = {r: b for r, b in beats.items() if b is not None}
    if not known:
        return ""
    lead = max(b[1] for b in known.values())
    parts = []
    for rank in sorted(beats):
        b = beats[rank]
        if only is not None and rank not in only:
            continue
        if b is None:
            parts.append(f"rank {rank} never sent a heartbeat")
            continue
        t, steps, pid, host = b
        age = now - t
        if age <= stale and steps >= lead:
            continue
        who = f"rank {rank} (pid {pid} on {host}"
        state = _process_state(pid) if host == this_host else None
        who += f", {state})" if state else ")"
        text = f"{who} did not arrive at optimizer step {lead + 1}, where the other ranks wait"
        if age > stale:
            text += f": its last heartbeat was {age:.0f} s ago (after {steps} steps)"
        else:
            text += (f": it is alive but has done {steps} steps (stuck in its own code: data loading, "
                     "a callback?)")
        parts.append(text)
    return "; ".join(parts)


def _process_state(pid: int) -> str | None:
    """What Linux says about a local process (/proc/<pid>/stat), when it is not simply running."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            stat = fh.read()
    except OSError:
        return "no longer running"
    state = stat[stat.rfind(")") + 2:][:1]
    return _STATES.get(state)
