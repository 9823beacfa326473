"""What the dash page shows, as one JSON-ready dict: GPUs, leases, the queue, runs and problems.

Pure reading: NVML (or an ``--inventory`` file), the lease directory (leases and the
``run --wait`` queue) and the status directory (one record per ``fit``). Nothing here writes, and
nothing raises for bad input: a corrupt status record, an unreadable lease or an inventory that
cannot be read each become an entry of ``problems`` and the rest of the page still shows.

Example::

    >>> from arignote.dash.state import collect
    >>> state = collect(inventory="tests/fixtures/smi_4gpus.json")      # doctest: +SKIP
    >>> [g["index"] for g in state["gpus"]], state["no_gpu"]            # doctest: +SKIP
    ([0, 1, 2, 3], False)
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import asdict
from typing import Any

from arignote.devices import nvml
from arignote.devices.identity import uuid_key
from arignote.devices.snapshot import SnapshotFormatError
from arignote.monitor import host_line
from arignote.share import status
from arignote.share.leases import current_leases, gpu_key
from arignote.share.queue import current_queue
from arignote.share.select import ShareError

__all__ = ["FORMAT", "collect"]

FORMAT = "arignote-dash/1"


def _snapshot(inventory: str | os.PathLike[str] | None, problems: list[dict[str, str]]) -> nvml.Snapshot:
    if inventory is None:
        return nvml.snapshot(processes=True, cpu_interval=None)
    try:
        return nvml.load(inventory)
    except SnapshotFormatError as exc:
        problems.append({"file": os.fspath(inventory), "problem": str(exc)})
        return nvml.Snapshot(hostname=socket.gethostname(), time=time.time(),
                             nvml_error=f"the inventory file cannot be used: {exc}")


def _leases(problems: list[dict[str, str]]) -> list[Any]:
    """Live leases; a record that is unreadable twice in a row (not just being written) is a problem."""
    first: list[dict[str, str]] = []
    leases = current_leases(problems=first)
    if first:
        time.sleep(0.05)  # a holder writes its record just after taking the lock
        again: list[dict[str, str]] = []
        leases = current_leases(problems=again)
        problems.extend(again)
    return leases


def _gpu_indices(run: dict[str, Any], by_uuid: dict[str, int]) -> list[int]:
    out = []
    for uuid in run.get("gpu_uuids") or ():
        key = uuid_key(str(uuid))
        if key in by_uuid:
            out.append(by_uuid[key])
    return sorted(set(out))


def collect(inventory: str | os.PathLike[str] | None = None, hours: float = 12.0,
            now: float | None = None) -> dict[str, Any]:
    """The dash's state: ``gpus`` (with processes, their jobs and leases), ``leases``, ``queue``
    (with seconds waited), ``runs`` (running, newest first), ``recent`` (ended within ``hours``),
    ``problems`` (unreadable or untrusted files), ``no_gpu`` and ``nvml_error``."""
    now = time.time() if now is None else now
    problems: list[dict[str, str]] = []
    snap = _snapshot(inventory, problems)
    try:
        leases = _leases(problems)
        queue = current_queue(problems=problems)
    except ShareError as exc:
        leases, queue = [], []
        problems.append({"file": "", "problem": str(exc)})
    runs, run_problems = status.read_runs(hours=hours, now=now)
    problems.extend(run_problems)

    data = nvml.to_dict(snap)
    by_uuid = {uuid_key(g["uuid"]): g["index"] for g in data["gpus"] if g["uuid"]}
    by_key = {gpu_key(g): g.index for g in snap.gpus}
    jobs = status.jobs_by_pid([p["pid"] for g in data["gpus"] for p in g["processes"]], runs)
    lease_rows = []
    for info in leases:
        row = asdict(info)
        row["gpu"] = by_key.get(info.key)
        row["held_for"] = max(0.0, now - info.start)
        lease_rows.append(row)
    for run in runs:
        run["gpus"] = _gpu_indices(run, by_uuid)
        run["age"] = max(0.0, now - float(run.get("updated") or run["start"]))
    for gpu in data["gpus"]:
        gpu["leases"] = [row for row in lease_rows if row["gpu"] == gpu["index"]]
        for proc in gpu["processes"]:
            job = jobs.get(proc["pid"])
            proc["job"] = None if job is None else {"text": status.job_text(job), "file": job["file"]}
            if job is not None and gpu["index"] not in job["gpus"]:
                job["gpus"] = sorted({*job["gpus"], gpu["index"]})
    for entry in queue:
        entry["waiting"] = max(0.0, now - float(entry["since"]))
    return {
        "format": FORMAT,
        "time": now,
        "hostname": data["hostname"],
        "snapshot_time": data["time"],
        "host_line": host_line(snap),
        "driver_version": data["driver_version"],
        "cuda_driver_version": data["cuda_driver_version"],
        "nvml_error": data["nvml_error"],
        "no_gpu": not data["gpus"],
        "gpus": data["gpus"],
        "leases": lease_rows,
        "queue": queue,
        "runs": [r for r in runs if r["state"] == "running"],
        "recent": [r for r in runs if r["state"] != "running"],
        "hours": hours,
        "problems": problems,
    }
