"""Cross-process GPU leases: an exclusive ``flock`` per GPU, released by the kernel when the holder dies.

Layout of the lease directory (``share.lease_dir`` / ``ARIGNOTE_LEASE_DIR``, default
``<tmp>/arignote-leases``, created world-writable and sticky, mode 1777, like /tmp itself):

* ``gpu-<host>-<key>.lock``: the lock. ``key`` is the GPU's UUID (else its PCI bus id). Whoever
  first needs it creates it, mode 0644; afterwards everyone opens it **read-only and without
  O_CREAT** and takes ``flock(LOCK_EX | LOCK_NB)``. Read-only is enough for flock, and not using
  O_CREAT on an existing file matters: with ``fs.protected_regular`` (default on systemd distros)
  ``open(O_CREAT)`` of another user's file in a sticky world-writable directory fails with EACCES
  even when the mode would allow it. arignote never deletes lock files.
* ``gpu-<host>-<key>.<uid>.<pid>.json``: who holds it (pid, user, host, start time, command),
  written by the holder *after* it has the lock, removed on release. A dead holder's record stays
  behind; readers ignore it because its pid is gone (or was reused by a younger process).

Why nobody can steal or break a lease: flock cannot be taken from its holder by anyone (root
included) and the kernel drops it when the last descriptor closes, even after ``kill -9``; the
sticky bit stops other users from deleting or renaming the lock file to make a fresh one; records
are 0644 and named by their owner's uid, and readers ignore a record whose file owner does not
match that uid, so a forged record shows nothing. Known limit: the *creator* of a lock file (or
root) may delete it by hand; a process acquiring afterwards would lock a new file. arignote checks
at acquisition that the locked descriptor is still the file at that path.

Example::

    >>> from arignote.share import acquire
    >>> with acquire(2, min_free_memory="10GiB") as lease:      # doctest: +SKIP
    ...     lease.indices, lease.environment()["CUDA_VISIBLE_DEVICES"]
    ((3, 1), '1,3')
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import getpass
import json
import os
import random
import re
import socket
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arignote import config
from arignote.atomic_file import write_atomically
from arignote.devices import nvml
from arignote.devices.identity import uuid_key
from arignote.devices.nvml import NA, GPUSnapshot, Snapshot
from arignote.share.select import Candidate, NoFreeGPUError, ShareError, evaluate, explain

__all__ = ["LeaseInfo", "Lease", "lease_dir", "gpu_key", "current_leases", "busy_map", "acquire"]

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def sticky_dir(path: Path, where: str, create: bool, elsewhere: str = "") -> Path:
    """``path`` as a directory every user shares: created mode 1777 (world-writable, sticky: only a
    file's owner may delete it) when missing and ``create``; ShareError naming ``where`` when it is
    not a directory or is world-writable without the sticky bit (anyone could delete others' files).
    The lease directory and its ``runs/`` are both made by it."""
    if create and not path.exists():
        with contextlib.suppress(FileExistsError):
            path.mkdir(parents=True, mode=0o1777)
            os.chmod(path, 0o1777)  # mkdir's mode is filtered by the umask
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if create:
            raise
        return path
    tail = f" {elsewhere}" if elsewhere else ""
    if not stat.S_ISDIR(st.st_mode):
        raise ShareError(f"{where} is not a directory; remove it{tail}")
    if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
        raise ShareError(f"{where} is world-writable without the sticky bit, so anyone could delete "
                         f"others' files; run `chmod 1777 {path}`{tail}")
    return path


def lease_dir(create: bool = True) -> Path:
    """The lease directory; created mode 1777 when missing. Raises ShareError if it is unsafe
    (world-writable without the sticky bit: anyone could delete lock files) or unusable."""
    configured = config.get("share.lease_dir")
    path = Path(configured).expanduser() if configured else Path(tempfile.gettempdir()) / "arignote-leases"
    where = f"lease directory {path} (share.lease_dir / ARIGNOTE_LEASE_DIR)"
    sticky_dir(path, where, create, elsewhere="or point ARIGNOTE_LEASE_DIR elsewhere")
    if create and not os.access(path, os.W_OK | os.X_OK):
        raise ShareError(f"{where} is not writable by {_user()}; ask its owner to `chmod 1777 {path}`")
    return path


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def gpu_key(gpu: GPUSnapshot) -> str:
    """The stable name of a GPU in lease files: its UUID, else its PCI bus id, else its index."""
    if gpu.uuid is not NA and gpu.uuid:
        raw = uuid_key(gpu.uuid)
    elif gpu.pci_bus_id is not NA and gpu.pci_bus_id:
        raw = "pci-" + str(gpu.pci_bus_id)
    else:
        raw = f"index-{gpu.index}"
    return _SAFE.sub("_", raw)


def _stem(host: str, key: str) -> str:
    return f"gpu-{_SAFE.sub('_', host)}-{key}"


@dataclass(frozen=True)
class LeaseInfo:
    """A live lease as recorded by its holder (what ``arignote smi`` shows)."""

    key: str
    index: int
    pid: int
    user: str
    host: str
    start: float
    command: str
    uid: int


def _alive(pid: int, start: float) -> bool:
    """Is ``pid`` the process that wrote a record at ``start`` (not a later process reusing the pid)?"""
    import psutil

    try:
        created = psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return False
    except psutil.AccessDenied:
        return True
    return created <= start + 1.0


def read_record(path: Path, limit: int = 1 << 20) -> tuple[int, Any]:
    """(file owner uid, parsed JSON) of a record in a shared directory, read safely: a symlink is
    not followed, a FIFO or other non-regular file is refused without blocking, and a file over
    ``limit`` bytes is refused. Raises OSError (unreadable, refused) or ValueError (not JSON)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if st.st_size > limit:
            raise OSError(errno.EFBIG, f"larger than {limit // 1024} KiB")
        return st.st_uid, json.loads(fh.read(limit + 1).decode("utf-8"))


def current_leases(directory: Path | None = None, problems: list[dict[str, str]] | None = None
                   ) -> list[LeaseInfo]:
    """Leases held right now on this host, by any user (``nvidia-smi``'s process list, for leases).

    ``problems``: when a list is given, one ``{"file", "problem"}`` is appended for each record that
    cannot be read or trusted (``arignote dash`` shows them; selection ignores them)."""
    directory = lease_dir(create=False) if directory is None else directory
    me = socket.gethostname()
    out = []
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return []
    for name in names:
        m = re.fullmatch(r"gpu-.*\.(\d+)\.(\d+)\.json", name)
        if not m:
            continue
        path = directory / name
        try:
            owner, data = read_record(path)
            info = LeaseInfo(str(data["key"]), int(data["index"]), int(data["pid"]), str(data["user"]),
                             str(data["host"]), float(data["start"]), str(data["command"]), int(m.group(1)))
        except FileNotFoundError:
            continue  # removed right now
        except (OSError, ValueError, KeyError, TypeError) as exc:
            # being written right now, or broken: the lock is the truth
            if problems is not None:
                problems.append({"file": name, "problem": f"lease record cannot be read ({_why(exc)})"})
            continue
        if owner != info.uid or info.pid != int(m.group(2)):
            if problems is not None:
                problems.append({"file": name,
                                 "problem": "lease record's owner or pid does not match its name"})
            continue  # a record planted under someone else's uid: ignore it
        if info.host == me and not _alive(info.pid, info.start):
            continue
        out.append(info)
    return out


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    if isinstance(exc, ValueError):
        return f"not valid JSON: {exc}"
    return f"missing or bad field {exc}"


def _describe(info: LeaseInfo) -> str:
    since = time.strftime("%H:%M:%S", time.localtime(info.start))
    return f"leased by {info.user} (pid {info.pid}, since {since}: {info.command[:60]})"


def busy_map(snapshot: Snapshot, leases: Sequence[LeaseInfo], include_own: bool = False) -> dict[int, str]:
    """GPU index -> why it is taken, for leases held by other processes (own ones too if asked)."""
    by_key = {gpu_key(g): g.index for g in snapshot.gpus}
    out = {}
    for info in leases:
        if info.key in by_key and (include_own or info.pid != os.getpid()):
            out[by_key[info.key]] = _describe(info)
    return out


def _open_lock(path: Path) -> int:
    """A read-only descriptor on the lock file, creating it 0644 if missing (never O_CREAT on an
    existing file: see the module docstring)."""
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW
    while True:
        try:
            return os.open(path, flags)
        except FileNotFoundError:
            pass
        try:
            fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue  # someone created it between our two opens
        os.fchmod(fd, 0o644)
        return fd


def _try_lock(path: Path) -> tuple[int | None, str]:
    """(descriptor, "") when we now hold the lock, else (None, why)."""
    try:
        fd = _open_lock(path)
    except PermissionError:
        owner = os.lstat(path).st_uid
        return None, f"lease file {path} (uid {owner}) is not readable; its owner or root must remove it"
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None, "leased by another process"
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.ENOLCK, errno.EINVAL):
            raise ShareError(f"the file system of {path.parent} does not support flock; "
                             "point ARIGNOTE_LEASE_DIR at a local directory") from None
        raise
    try:
        same = os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        same = False
    if not same:  # the file was replaced while we locked it: our lock guards nothing
        os.close(fd)
        return None, "lease file replaced during acquisition"
    return fd, ""


class Lease:
    """GPUs held by this process until :meth:`release`, the end of a ``with`` block, or process exit.

    Garbage collection does not release a lease (the lock descriptors stay open), so a lease taken
    for the life of the process needs no reference kept.
    """

    def __init__(self, gpus: Sequence[GPUSnapshot], fds: Sequence[int], records: Sequence[Path],
                 directory: Path) -> None:
        self.gpus = tuple(gpus)
        self.indices = tuple(g.index for g in self.gpus)
        self.keys = tuple(gpu_key(g) for g in self.gpus)
        self.directory = directory
        self._fds = list(fds)
        self._records = list(records)

    @property
    def fds(self) -> tuple[int, ...]:
        """The lock descriptors (pass them to a child process to keep the lease while it runs)."""
        return tuple(self._fds)

    @property
    def held(self) -> bool:
        return bool(self._fds)

    def environment(self) -> dict[str, str]:
        """``CUDA_VISIBLE_DEVICES`` (PCI-order indices, ascending) and ``CUDA_DEVICE_ORDER=PCI_BUS_ID``."""
        return {"CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in sorted(self.indices)),
                "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}

    def release(self) -> None:
        """Remove our records, then unlock (idempotent)."""
        for record in self._records:
            with contextlib.suppress(FileNotFoundError):
                record.unlink()
        self._records = []
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)  # closing the last descriptor drops the flock
        self._fds = []

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"Lease(indices={self.indices}, held={self.held})"


def _write_record(directory: Path, stem: str, gpu: GPUSnapshot, key: str, command: str) -> Path:
    uid, pid = os.getuid(), os.getpid()
    path = directory / f"{stem}.{uid}.{pid}.json"
    for stale in directory.glob(f"{stem}.{uid}.*.json"):  # our user's leftovers from killed processes
        with contextlib.suppress(OSError):
            stale.unlink()
    data = {"key": key, "index": gpu.index, "uuid": None if gpu.uuid is NA else gpu.uuid, "pid": pid,
            "user": _user(), "host": socket.gethostname(), "start": time.time(), "command": command}
    # whole or absent: a reader (dash, another job choosing GPUs) never sees a half-written record
    write_atomically(path, json.dumps(data), mode=0o644)
    return path


def _source(snapshot: Snapshot | str | os.PathLike[str] | None) -> Callable[[], Snapshot]:
    """A function returning a fresh snapshot: fixed, re-read from an inventory file, a function
    returning one, or live NVML (None)."""
    if callable(snapshot):
        return snapshot
    if isinstance(snapshot, Snapshot):
        return lambda: snapshot
    if snapshot is not None:
        return lambda: nvml.load(snapshot)
    return lambda: nvml.snapshot(processes=False, cpu_interval=None)


def _command() -> str:
    """This process's command line as ps shows it (``python train.py --lr 0.1``)."""
    argv = getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv]
    return " ".join(os.path.basename(argv[0]) if i == 0 else a for i, a in enumerate(argv))


def _try_acquire(n: int, snap: Snapshot, fresh: Callable[[], Snapshot], directory: Path,
                 min_free_memory: Any, max_utilization: Any, command: str):
    """One attempt: lock the best candidates, re-check them on a fresh snapshot. Lease or reasons."""
    leases = current_leases(directory)
    candidates = evaluate(snap, min_free_memory, max_utilization, busy_map(snap, leases))
    held_by = busy_map(snap, leases, include_own=True)  # names the holder when a lock is taken
    reasons = {c.index: c.why for c in candidates if not c.ok}
    locked: list[tuple[GPUSnapshot, int]] = []
    for cand in candidates:
        if len(locked) == n:
            break
        if not cand.ok:
            continue
        fd, why = _try_lock(directory / (_stem(snap.hostname, gpu_key(cand.gpu)) + ".lock"))
        if fd is None:
            reasons[cand.index] = held_by.get(cand.index, why)
        else:
            locked.append((cand.gpu, fd))
    if len(locked) == n:
        # Lock, then re-check: the snapshot predates the locks, and a GPU's last holder may only
        # just have released it while its memory is still in use.
        recheck = {c.index: c for c in evaluate(fresh(), min_free_memory, max_utilization)}
        for gpu, fd in list(locked):
            now = recheck.get(gpu.index)
            if now is None or not now.ok:
                reasons[gpu.index] = now.why if now is not None else "gone from the snapshot"
                os.close(fd)
                locked.remove((gpu, fd))
    if len(locked) < n:
        for _, fd in locked:
            os.close(fd)
        return None, candidates, reasons
    gpus = [g for g, _ in locked]
    records = [_write_record(directory, _stem(snap.hostname, gpu_key(g)), g, gpu_key(g), command)
               for g in gpus]
    return Lease(gpus, [fd for _, fd in locked], records, directory), candidates, reasons


def acquire(n: int, min_free_memory: Any = None, max_utilization: Any = None, *, snapshot: Any = None,
            wait: bool = False, timeout: float | None = None, poll: float = 0.5,
            command: str | None = None) -> Lease:
    """Select and lock ``n`` GPUs atomically; never hands out a GPU another process has leased.

    ``snapshot``: a :class:`Snapshot`, an inventory file path (re-read at every poll), a function
    returning a Snapshot, or None for live NVML. Without ``wait`` raises :class:`NoFreeGPUError` at
    once, listing what is busy and why; with ``wait`` polls every ``poll`` seconds (with jitter)
    until ``timeout`` (None: forever).
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"number of GPUs must be a whole number >= 1, got {n!r}")
    if timeout is not None and timeout < 0:
        raise ValueError(f"timeout must be >= 0 seconds, got {timeout!r}")
    fresh = _source(snapshot)
    directory = lease_dir()
    command = _command() if command is None else command
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        snap = fresh()
        if n > len(snap.gpus):
            raise explain(n, snap, evaluate(snap, min_free_memory, max_utilization))
        lease, candidates, reasons = _try_acquire(n, snap, fresh, directory, min_free_memory,
                                                  max_utilization, command)
        if lease is not None:
            return lease
        merged = [Candidate(c.gpu, c.index not in reasons, reasons.get(c.index, "")) for c in candidates]
        if not wait or (deadline is not None and time.monotonic() >= deadline):
            err = explain(n, snap, merged)
            if wait:
                err = NoFreeGPUError(f"gave up after waiting {timeout:g} s; {err.detail}", err.reasons)
            raise err
        pause = poll * random.uniform(0.5, 1.5)  # jitter: queued jobs do not retry in lock-step
        if deadline is not None:
            pause = max(0.0, min(pause, deadline - time.monotonic()))
        time.sleep(pause)

