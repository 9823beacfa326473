"""The ``arignote run --wait`` queue: one record per job waiting for GPUs, in the lease directory.

``queue-<uid>-<pid>.json`` holds who waits (user, pid, host), since when, for how many GPUs, with
which filters, and the command. :func:`waiting` writes it for the duration of the wait and removes
it when the lease is taken or the wait ends; a killed waiter's record is ignored by readers
(its pid is gone), and readers trust a record only when the file owner is the uid in its name.

Example::

    >>> from arignote.share import queue
    >>> with queue.waiting(2, "python train.py", min_free_memory="10GiB"):   # doctest: +SKIP
    ...     lease = acquire(2, min_free_memory="10GiB", wait=True)
    >>> queue.current_queue()                                                # doctest: +SKIP
    [{'user': 'alice', 'pid': 4242, 'gpus': 2, 'since': 1763726400.0, ...}]
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from arignote.atomic_file import write_atomically
from arignote.share.leases import _alive, _user, lease_dir, read_record

__all__ = ["waiting", "current_queue"]

_NAME = re.compile(r"queue-(\d+)-(\d+)\.json")


@contextlib.contextmanager
def waiting(gpus: int, command: str, min_free_memory: Any = None, max_utilization: Any = None,
            directory: Path | None = None) -> Iterator[Path]:
    """Record this process as waiting for ``gpus`` GPUs while the block runs."""
    directory = lease_dir() if directory is None else directory
    path = directory / f"queue-{os.getuid()}-{os.getpid()}.json"
    data = {"pid": os.getpid(), "uid": os.getuid(), "user": _user(), "host": socket.gethostname(),
            "since": time.time(), "gpus": gpus, "min_free_memory": min_free_memory,
            "max_utilization": max_utilization, "command": command}
    write_atomically(path, json.dumps(data), mode=0o644)
    try:
        yield path
    finally:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def current_queue(directory: Path | None = None, problems: list[dict[str, str]] | None = None
                  ) -> list[dict[str, Any]]:
    """Jobs waiting for GPUs on this host right now, longest-waiting first. A record that cannot
    be read or trusted is appended to ``problems`` (``{"file", "problem"}``) when a list is given."""
    directory = lease_dir(create=False) if directory is None else directory
    problems = [] if problems is None else problems
    me = socket.gethostname()
    try:
        names = sorted(n for n in os.listdir(directory) if n.startswith("queue-"))
    except FileNotFoundError:
        return []
    out = []
    for name in names:
        m = _NAME.fullmatch(name)
        if m is None:
            continue
        path = directory / name
        try:
            owner, data = read_record(path)
            pid, since = int(data["pid"]), float(data["since"])
        except FileNotFoundError:
            continue
        except OSError as exc:
            problems.append({"file": name, "problem": f"queue record cannot be read: {exc.strerror or exc}"})
            continue
        except (ValueError, KeyError, TypeError) as exc:
            problems.append({"file": name,
                             "problem": f"queue record is not valid ({type(exc).__name__}: {exc})"})
            continue
        if owner != int(m.group(1)) or pid != int(m.group(2)):
            problems.append({"file": name, "problem": "file owner or pid does not match its name (planted)"})
            continue
        if data.get("host", me) == me and not _alive(pid, since):
            continue  # a waiter killed before it could remove its record
        out.append(data)
    return sorted(out, key=lambda d: d["since"])
