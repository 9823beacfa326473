"""Status records of training runs: what ``arignote dash`` and ``arignote smi`` know about each ``fit``.

Every ``fit`` on rank 0 keeps one small JSON record (the :class:`~arignote.callbacks.status.RunStatus`
callback writes it; flag ``share.status`` turns it off) in the *status directory*, ``runs/`` inside
the lease directory (``ARIGNOTE_LEASE_DIR``), created world-writable and sticky like the lease
directory itself so every user of a shared server writes there and nobody deletes another's files.

* ``run-<uid>-<pid>-<start ms>.json``: user, pid, command, devices, epoch/step of total, the
  latest and per-epoch logs, samples/s, ETA, start time and ``state`` (running, finished, failed,
  stopped). Written atomically (a temporary file renamed over it) at most every few seconds.
* A reader trusts a record only when the file's owner is the uid in its name (a record planted
  under someone else's name is reported, not shown as theirs). A record still saying ``running``
  whose process is gone is shown as ``gone``: killed (``kill -9``, SIGTERM, OOM killer) or crashed
  before it could write its end.
* Finished records stay for :data:`KEEP_SECONDS` (the dash lists them as recent runs); the next run
  of the same user removes its older ones.

No torch here: ``arignote smi`` and ``arignote dash`` read records without importing it.

Example::

    >>> from arignote.share import status
    >>> runs, problems = status.read_runs()                      # doctest: +SKIP
    >>> [(r["script"], r["state"], r["epoch"], r["epochs"]) for r in runs]   # doctest: +SKIP
    [('train.py', 'running', 3, 10)]
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import re
import socket
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from arignote.atomic_file import write_atomically
from arignote.share.leases import _alive, lease_dir, read_record, sticky_dir
from arignote.share.select import ShareError

__all__ = ["FORMAT", "KEEP_SECONDS", "INTERVAL", "status_dir", "record_path", "write_record", "read_runs",
           "clean_own", "plain", "jobs_by_pid", "job_text", "job_summary", "fmt_duration"]

FORMAT = "arignote-run/1"
KEEP_SECONDS = 24 * 3600.0  # ended records older than this are removed by their owner's next run
INTERVAL = 2.0  # seconds between two writes of a record during training (at most)
STATES = ("running", "finished", "failed", "stopped")
_NAME = re.compile(r"run-(\d+)-(\d+)-(\d+)\.json")


def status_dir(create: bool = True) -> Path:
    """``<lease dir>/runs``, created mode 1777 (sticky, world-writable) when missing.

    Raises ShareError when it is not a directory or is world-writable without the sticky bit.
    """
    path = lease_dir(create=create) / "runs"
    where = f"status directory {path} (runs/ in share.lease_dir / ARIGNOTE_LEASE_DIR)"
    return sticky_dir(path, where, create)


def record_path(directory: Path, pid: int, start: float) -> Path:
    """Where the record of the run started at ``start`` by ``pid`` lives (named by our uid)."""
    return directory / f"run-{os.getuid()}-{pid}-{int(start * 1000)}.json"


def plain(value: Any) -> Any:
    """A log value as JSON without NaN/Infinity (browsers refuse them): floats stay floats,
    non-finite ones become the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isfinite(number):
        return number
    return "NaN" if math.isnan(number) else ("Infinity" if number > 0 else "-Infinity")


def write_record(path: Path, record: Mapping[str, Any]) -> None:
    """Write ``record`` atomically: readers see the old or the new record, never half of one."""
    write_atomically(path, json.dumps(record, allow_nan=False, separators=(",", ":")), mode=0o644)


def clean_own(directory: Path, now: float | None = None, keep: float = KEEP_SECONDS) -> int:
    """Remove this user's records whose process is gone and that ended (or were last written) more
    than ``keep`` seconds ago. Returns how many were removed."""
    now = time.time() if now is None else now
    removed = 0
    for path in directory.glob(f"run-{os.getuid()}-*.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            last = float(data.get("ended") or data.get("updated") or 0)
            pid, start = int(data["pid"]), float(data["start"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            last, pid, start = os.lstat(path).st_mtime, -1, 0.0
        if now - last > keep and (pid < 0 or not _alive(pid, start)):
            with contextlib.suppress(OSError):
                path.unlink()
                removed += 1
    return removed


def _check(name: str, data: Any, owner: int) -> str | None:
    """Why a record cannot be trusted, or None."""
    m = _NAME.fullmatch(name)
    if not isinstance(data, dict):
        return "not a JSON object"
    if data.get("format") != FORMAT:
        return f"format {data.get('format')!r} is not {FORMAT}"
    missing = [k for k in ("pid", "start", "state", "user") if k not in data]
    if missing:
        return f"missing {', '.join(missing)}"
    if m is None or owner != int(m.group(1)) or data.get("pid") != int(m.group(2)):
        return f"file owner uid {owner} or pid does not match its name (a planted record)"
    if data["state"] not in STATES:
        return f"unknown state {data['state']!r}"
    return None


def _derive(data: dict[str, Any], me: str) -> dict[str, Any]:
    """The record as shown: a ``running`` record of a process that is gone becomes ``gone``."""
    run = dict(data)
    run["recorded_state"] = data["state"]
    if data["state"] == "running" and data.get("host", me) == me and not _alive(int(data["pid"]),
                                                                                float(data["start"])):
        run["state"] = "gone"
        run["error"] = (f"process {data['pid']} is gone without writing its end (killed, or crashed "
                        "outside Python)")
    return run


def read_runs(directory: Path | None = None, hours: float = KEEP_SECONDS / 3600, now: float | None = None
              ) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """(runs, problems): every run still running plus those that ended within the last ``hours``,
    newest first; and one ``{"file", "problem"}`` per record that cannot be read or trusted.

    Each run is its record (see :class:`~arignote.callbacks.status.RunStatus`) with ``file`` and
    ``recorded_state`` added; ``state`` is ``gone`` for a running record whose process has vanished.
    """
    if directory is None:
        try:
            directory = status_dir(create=False)
        except ShareError as exc:
            return [], [{"file": "", "problem": str(exc)}]
    now = time.time() if now is None else now
    me = socket.gethostname()
    runs, problems = [], []
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return [], []
    except OSError as exc:
        return [], [{"file": str(directory), "problem": f"cannot list: {exc.strerror}"}]
    for name in names:
        if not name.startswith("run-") or not name.endswith(".json"):
            continue
        path = directory / name
        try:
            owner, data = read_record(path, limit=8 << 20)
        except FileNotFoundError:
            continue  # removed between listing and reading
        except OSError as exc:
            why = "a symbolic link" if exc.errno == errno.ELOOP else exc.strerror or exc
            problems.append({"file": name, "problem": f"cannot be read: {why}"})
            continue
        except ValueError as exc:
            problems.append({"file": name, "problem": f"not valid JSON ({exc})"})
            continue
        why = _check(name, data, owner)
        if why is not None:
            problems.append({"file": name, "problem": why})
            continue
        run = _derive(data, me)
        run["file"] = name
        ended = run.get("ended") or (run.get("updated") if run["state"] == "gone" else None)
        if run["state"] != "running" and ended is not None and now - float(ended) > hours * 3600:
            continue
        runs.append(run)
    runs.sort(key=lambda r: -float(r.get("start") or 0))
    return runs, problems


def _ancestors(pid: int) -> list[int]:
    import psutil

    try:
        return [p.pid for p in psutil.Process(pid).parents()]
    except psutil.Error:
        return []


def jobs_by_pid(pids: Iterable[int], runs: Iterable[Mapping[str, Any]]) -> dict[int, Mapping[str, Any]]:
    """GPU process pid -> the running run it belongs to: the run's own pid, or a process it
    started (the other ranks of a data-parallel run)."""
    live = {int(r["pid"]): r for r in runs if r.get("state") == "running"}
    out: dict[int, Mapping[str, Any]] = {}
    if not live:
        return out
    for pid in pids:
        if pid in live:
            out[pid] = live[pid]
            continue
        for parent in _ancestors(pid):
            if parent in live:
                out[pid] = live[parent]
                break
    return out


def fmt_duration(seconds: Any) -> str:
    """``42s``, ``7m05s``, ``3h12m``, ``2d04h``; ``?`` when unknown."""
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or not math.isfinite(seconds):
        return "?"
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def job_text(run: Mapping[str, Any]) -> str:
    """One line for a run: ``train.py epoch 3/10 ETA 4m12s`` (what ``arignote smi`` shows)."""
    epoch, epochs = run.get("epoch"), run.get("epochs")
    parts = [str(run.get("script") or "?")]
    if isinstance(epoch, int) and isinstance(epochs, int):
        parts.append(f"epoch {epoch + 1}/{epochs}")
    if run.get("state") == "running":
        parts.append(f"ETA {fmt_duration(run.get('eta'))}")
    else:
        parts.append(str(run.get("state")))
    return " ".join(parts)


_SUMMARY = ("script", "user", "pid", "host", "state", "epoch", "epochs", "step", "steps", "eta",
            "samples_per_second", "start", "updated", "devices", "gpu_uuids", "command", "file")


def job_summary(run: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a run that ``arignote smi --json`` carries (no per-epoch history), plus
    ``text``: the line :func:`job_text` shows."""
    out = {k: run.get(k) for k in _SUMMARY}
    out["text"] = job_text(run)
    return out
