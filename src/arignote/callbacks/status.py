"""``RunStatus``: the small status record of a ``fit`` that ``arignote dash`` and ``arignote smi`` show.

``fit`` adds it on rank 0 unless the flag ``share.status`` is off. It keeps the record described in
:mod:`arignote.share.status` up to date: the epoch and step of the total, the latest batch logs and
one entry per epoch, samples/s and the ETA. Cost per step: a counter and a clock read; the file is
rewritten (atomically) at most every ``interval`` seconds, and only then are the batch logs read.

End states: ``finished`` (all epochs ran), ``stopped`` (a callback such as EarlyStopping ended it
early, or Ctrl-C), ``failed`` (an exception left ``fit``; written when the process exits).
A process killed outside Python leaves ``running`` behind, which readers show as ``gone``.

Example::

    >>> from arignote.callbacks.status import RunStatus
    >>> # fit adds it by itself (the fits below are sketches: no model here, so they are skipped)
    >>> model.fit(x, y, epochs=10)             # doctest: +SKIP
    >>> # or explicitly, e.g. with a slower rhythm:
    >>> model.fit(x, y, epochs=10, callbacks=[RunStatus(interval=10)])   # doctest: +SKIP
"""

from __future__ import annotations

import atexit
import contextlib
import os
import socket
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from arignote import config
from arignote.callbacks.base import Callback, running_view
from arignote.devices import inventory
from arignote.devices.identity import GPUIdentity
from arignote.share import status
from arignote.share.leases import _command, _user

__all__ = ["RunStatus"]

# records of fits in progress in this process, written as failed/stopped if the process exits
# first (path and record only: the callback, and so the model, is not kept alive by this)
_OPEN: dict[Path, tuple[dict[str, Any], dict[str, Any]]] = {}  # path -> (record, the fit's params)
_CLEANED: set[Path] = set()  # status directories this process already tidied (once per process)


def _finish(path: Path, record: dict[str, Any], state: str, error: str | None) -> None:
    record.update(state=state, error=error, ended=time.time(), updated=time.time(),
                  eta=0.0 if state == "finished" else None)
    status.write_record(path, record)


def _at_exit() -> None:
    exc = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
    for path, (record, _) in list(_OPEN.items()):
        if isinstance(exc, KeyboardInterrupt):
            state, error = "stopped", "interrupted (Ctrl-C)"
        elif exc is not None:
            state, error = "failed", f"{type(exc).__name__}: {exc}"[:500]
        else:
            state, error = "failed", "the process exited while fit was running (an exception left fit)"
        try:
            _finish(path, record, state, error)
        except (OSError, ValueError):
            pass  # nothing to tell anyone at exit; readers will show the run as gone
    _OPEN.clear()


atexit.register(_at_exit)


def _script() -> str:
    """The script's name as a person calls the job: ``train.py``, ``-m mypkg.train``, ``-c``."""
    argv = getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv]
    rest = argv[1:]
    while rest and rest[0].startswith("-") and rest[0] not in ("-m", "-c"):
        rest = rest[1 + (rest[0] in ("-X", "-W")):]
    if rest[:1] == ["-m"] and len(rest) > 1:
        return rest[1]
    if rest[:1] == ["-c"]:
        return "python -c"
    return os.path.basename(rest[0]) if rest else os.path.basename(argv[0])


class RunStatus(Callback):
    """Keeps this fit's status record in the shared status directory (rank 0 only).

    ``interval``: at least this many seconds between two writes during training (default
    :data:`arignote.share.status.INTERVAL`); the first and the last write happen at once.
    ``directory``: where to write (default ``runs/`` in the lease directory).
    """

    def __init__(self, interval: float | None = None,
                 directory: str | os.PathLike[str] | None = None) -> None:
        super().__init__()
        self.interval = status.INTERVAL if interval is None else float(interval)
        if not self.interval >= 0:
            raise ValueError(f"RunStatus: interval={interval!r} must be >= 0 seconds")
        self._directory = None if directory is None else Path(directory)
        self.path: Path | None = None
        self.record: dict[str, Any] = {}
        self._due = 0.0
        self._step = 0
        self._samples = 0
        self._steps_done = 0
        self._t0 = 0.0
        self._epoch_t0 = 0.0

    # ------------------------------------------------------------------ the record

    def _devices(self) -> tuple[list[str], list[str]]:
        module = getattr(self.model, "module", None)
        devices = sorted({str(p.device) for p in module.parameters()}) if module is not None else []
        uuids: list[str] = []
        if any(d.startswith("cuda") for d in devices):
            by_index = {g.index: g for g in inventory.current_inventory().gpus}
            for d in devices:
                g = by_index.get(int(d.partition(":")[2] or 0)) if d.startswith("cuda") else None
                if g is not None and g.uuid:
                    uuids.append(GPUIdentity.of(g).cuda_name)
        return devices or ["cpu"], uuids

    def _write(self, now: float | None = None) -> None:
        self.record["updated"] = time.time() if now is None else now
        self._due = time.monotonic() + self.interval
        try:
            status.write_record(self.path, self.record)
        except (OSError, ValueError) as exc:
            warnings.warn(f"arignote: status record {self.path} cannot be written ({exc}); "
                          "`arignote dash` will not show this run (share.status=false turns records off)",
                          RuntimeWarning, stacklevel=2)
            _OPEN.pop(self.path, None)
            self.path = None

    def _progress(self, logs: Any, write: bool = True) -> None:
        now = time.time()
        rec = self.record
        elapsed = max(now - self._t0, 1e-9)
        rec["step"] = self._step
        rec["samples_per_second"] = round(self._samples * rec.get("world_size", 1) / elapsed, 2)
        if logs is not None:
            shown = running_view(logs)  # the epoch's mean loss so far, as the progress bar shows it
            rec["logs"] = {k: status.plain(v) for k, v in shown.items() if k not in ("batch", "size")}
        steps, epochs = rec.get("steps"), rec.get("epochs")
        if isinstance(steps, int) and steps > 0 and self._steps_done:
            left = (epochs - rec["epoch"] - 1) * steps + max(0, steps - self._step)
            rec["eta"] = round(left * elapsed / self._steps_done, 2)
        elif rec["history"]:
            done = len(next(iter(rec["history"].values())))
            rec["eta"] = round((epochs - rec["epoch"] - 1) * elapsed / max(done, 1), 2)
        rec["updated"] = now
        if write:
            self._write(now)

    def _end(self, state: str, error: str | None = None) -> None:
        if self.path is None:
            return
        _OPEN.pop(self.path, None)
        try:
            _finish(self.path, self.record, state, error)
        except (OSError, ValueError) as exc:
            warnings.warn(f"arignote: status record {self.path} cannot be written ({exc})", RuntimeWarning,
                          stacklevel=2)

    # ------------------------------------------------------------------ hooks

    def on_train_begin(self, logs=None) -> None:
        try:
            directory = self._directory or status.status_dir()
            if directory not in _CLEANED:
                _CLEANED.add(directory)
                status.clean_own(directory)
        except (OSError, status.ShareError) as exc:
            warnings.warn(f"arignote: no status record for this run ({exc}); "
                          "share.status=false turns records off", RuntimeWarning, stacklevel=2)
            return
        start = time.time()
        devices, uuids = self._devices()
        strategy = getattr(self.model, "strategy", None)
        p = self.params
        self.path = status.record_path(directory, os.getpid(), start)
        self.record = {
            "format": status.FORMAT, "user": _user(), "uid": os.getuid(), "host": socket.gethostname(),
            "pid": os.getpid(), "start": start, "updated": start, "ended": None, "command": _command(),
            "script": _script(), "cwd": os.getcwd(), "devices": devices, "gpu_uuids": uuids,
            "visible_gpus": config.environ("CUDA_VISIBLE_DEVICES"),
            "world_size": int(getattr(strategy, "world_size", 1) or 1),
            "state": "running", "error": None, "epoch": 0, "epochs": p.get("epochs"), "step": 0,
            "steps": p.get("steps"), "batch_size": p.get("batch_size"), "samples": p.get("samples"),
            "samples_per_second": None, "eta": None, "logs": {}, "history": {}, "epoch_times": [],
        }
        self._t0 = start
        for path, (record, params) in list(_OPEN.items()):  # an earlier fit that never ended
            if params is not self.params:  # (not another RunStatus of this same fit)
                with contextlib.suppress(OSError, ValueError):
                    _finish(path, record, "failed", "an exception left fit (a later fit started)")
                _OPEN.pop(path, None)
        _OPEN[self.path] = (self.record, self.params)
        self._write()

    def on_epoch_begin(self, epoch, logs=None) -> None:
        if self.path is None:
            return
        self.record["epoch"] = epoch
        self._step = 0
        self._epoch_t0 = time.time()

    def on_train_batch_end(self, batch, logs=None) -> None:
        # the per-step cost: two adds, a clock read and a comparison
        self._step = batch + 1
        self._steps_done += 1
        self._samples += logs.get("size", 0) if logs is not None else 0
        if self.path is not None and time.monotonic() >= self._due:
            self._progress(logs)

    def on_epoch_end(self, epoch, logs=None) -> None:
        if self.path is None:
            return
        rec = self.record
        for key, value in (logs or {}).items():
            rec["history"].setdefault(key, []).append(status.plain(value))
        rec["epoch_times"].append(round(time.time() - self._epoch_t0, 3))
        rec["epochs_done"] = epoch + 1
        if time.monotonic() >= self._due:
            self._progress(None)

    def on_train_end(self, logs=None) -> None:
        if self.path is None:
            return
        self._progress(None, write=False)
        rec = self.record
        done = rec.get("epochs_done", 0)
        early = bool(getattr(self.model, "stop_training", False)) and done < (rec["epochs"] or 0)
        self._end("stopped" if early else "finished",
                  f"stopped early by a callback after epoch {done}" if early else None)
