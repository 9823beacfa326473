"""Device snapshots rendered for people (rich tables, live view) and for scripts (JSON).

Pure functions of a :class:`~arignote.devices.nvml.Snapshot` plus the current leases, so every
layout is tested on fixtures; :func:`watch` is the only one that reads the machine. The layout
follows ``nvidia-smi``: one table per machine, GPUs in PCI order, then the process table.

Example::

    >>> from arignote import monitor
    >>> from arignote.devices import nvml
    >>> print(monitor.render_text(nvml.load("tests/fixtures/smi_4gpus.json")))   # doctest: +SKIP
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from arignote.devices.nvml import NA, Snapshot, to_dict
from arignote.share.status import job_summary, job_text, jobs_by_pid
from arignote.sizes import format_mib, format_used_total

if TYPE_CHECKING:  # rich loads only when a table is drawn: `smi --json` never pays for it
    from rich.console import Console, Group
    from rich.table import Table

__all__ = ["render", "render_text", "to_json", "host_line", "gpu_table", "process_table", "watch"]


def _pct(value: Any) -> str:
    return "n/a" if value is NA else f"{value:g}%"


def _memory(used: Any, total: Any) -> str:
    """``37888 / 40960 MiB`` as nvidia-smi's Memory-Usage column; n/a parts shown."""
    return format_used_total(None if used is NA else used, None if total is NA else total)


def _power(draw: Any, limit: Any) -> str:
    """``287/400W``, ``n/a`` when the board reports neither."""
    if draw is NA and limit is NA:
        return "n/a"
    return f"{'n/a' if draw is NA else f'{draw:.0f}'}/{_watts(limit)}"


def _watts(value: Any) -> str:
    return "n/a" if value is NA else f"{value:.0f}W"


def _lease_keys(snapshot: Snapshot) -> dict[str, int]:
    from arignote.share.leases import gpu_key  # no torch: share only needs nvml and config

    return {gpu_key(g): g.index for g in snapshot.gpus}


def _leases_by_index(snapshot: Snapshot, leases: Sequence[Any]) -> dict[int, list[Any]]:
    keys = _lease_keys(snapshot)
    out: dict[int, list[Any]] = {}
    for lease in leases:
        if lease.key in keys:
            out.setdefault(keys[lease.key], []).append(lease)
    return out


def _lease_text(lease: Any) -> str:
    since = time.strftime("%H:%M:%S", time.localtime(lease.start))
    return f"{lease.user} pid {lease.pid} since {since}"


def host_line(snapshot: Snapshot) -> str:
    """``CPU 37.5% of 64 threads (load 24.10)  RAM 131072 / 515891 MiB`` (``top``/``free`` in one line)."""
    h = snapshot.host
    cpu = f"CPU {_pct(h.cpu_percent)} of {h.cpu_count} threads"
    if h.load_average is not NA:
        cpu += f" (load {h.load_average:.2f})"
    return f"{cpu}  RAM {_memory(h.memory_used, h.memory_total)}"


def _title(snapshot: Snapshot) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(snapshot.time)) if snapshot.time else ""
    parts = [snapshot.hostname]
    if snapshot.driver_version is not NA:
        parts.append(f"driver {snapshot.driver_version}")
    if snapshot.cuda_driver_version is not NA:
        parts.append(f"CUDA {snapshot.cuda_driver_version}")
    if stamp:
        parts.append(stamp)
    return "  ".join(parts)


def gpu_table(snapshot: Snapshot, leases: Sequence[Any] = ()) -> Table:
    """The GPU rows of ``nvidia-smi`` plus who leases each GPU through arignote."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    table = Table(title=_title(snapshot), title_justify="left", expand=False, box=box.SIMPLE_HEAD,
                  pad_edge=False, show_edge=False, collapse_padding=True)
    for name, justify in (("GPU", "right"), ("Name", "left"), ("Bus-Id", "left"), ("Temp", "right"),
                          ("Power", "right"), ("Memory", "right"), ("Util", "right"), ("Lease", "left")):
        # readings never wrap (a bus id cut in two is useless); names and leases fold when narrow
        folds = name in ("Name", "Lease")
        table.add_column(name, justify=justify, no_wrap=not folds, overflow="fold",  # type: ignore[arg-type]
                         min_width={"Name": 8, "Lease": 16}.get(name))
    by_index = _leases_by_index(snapshot, leases)
    for g in snapshot.gpus:
        lease = ", ".join(_lease_text(x) for x in by_index.get(g.index, [])) or "-"
        table.add_row(
            str(g.index), Text(str(g.name)), Text(str(g.pci_bus_id)),
            "n/a" if g.temperature is NA else f"{g.temperature}C",
            _power(g.power_draw, g.power_limit),
            _memory(g.memory_used, g.memory_total),
            _pct(g.utilization_gpu),
            Text(lease),
        )
    return table


def _jobs(snapshot: Snapshot, runs: Sequence[Mapping[str, Any]]) -> dict[int, Mapping[str, Any]]:
    """GPU process pid -> its arignote run (status records, :mod:`arignote.share.status`)."""
    if not runs:
        return {}
    return jobs_by_pid({p.pid for g in snapshot.gpus for p in g.processes}, runs)


def process_table(snapshot: Snapshot, runs: Sequence[Mapping[str, Any]] = ()) -> Table:
    """``nvidia-smi``'s process table: GPU, PID, type, user, GPU memory, command line; and a Job
    column (script, epoch, ETA) when some process is an arignote run."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    table = Table(title="Processes", title_justify="left", expand=False, box=box.SIMPLE_HEAD,
                  pad_edge=False, show_edge=False, collapse_padding=True)
    jobs = _jobs(snapshot, runs)
    columns = [("GPU", "right"), ("PID", "right"), ("Type", "left"), ("User", "left"),
               ("GPU Mem", "right"), ("Command", "left")] + ([("Job", "left")] if jobs else [])
    for name, justify in columns:
        table.add_column(name, justify=justify, no_wrap=name not in ("Command", "Job"),  # type: ignore[arg-type]
                         overflow="fold", min_width=16 if name in ("Command", "Job") else None)
    for g in snapshot.gpus:
        for p in g.processes:
            job = [Text(job_text(jobs[p.pid]) if p.pid in jobs else "-")] if jobs else []
            table.add_row(str(g.index), str(p.pid), p.kind, Text(str(p.user)), format_mib(p.gpu_memory),
                          Text(str(p.command)), *job)
    if not table.rows:
        table.add_row("", "", "", "", "", "no running processes found")
    return table


def render(snapshot: Snapshot, leases: Sequence[Any] = (), processes: bool = True,
           runs: Sequence[Mapping[str, Any]] = ()) -> Group:
    """Everything ``arignote smi`` prints for one machine, as one rich renderable; ``runs`` (status
    records) name the job of each GPU process that is an arignote run."""
    from rich.console import Group
    from rich.text import Text

    parts: list[Any] = [Text(host_line(snapshot))]
    if snapshot.nvml_error:
        parts.append(Text(snapshot.nvml_error))
    if snapshot.gpus:
        parts.append(gpu_table(snapshot, leases))
        if processes:
            parts.append(process_table(snapshot, runs))
    elif not snapshot.nvml_error:
        parts.append(Text("no GPUs found by the NVIDIA driver"))
    return Group(*parts)


def render_text(snapshot: Snapshot, leases: Sequence[Any] = (), processes: bool = True,
                width: int = 140, runs: Sequence[Mapping[str, Any]] = ()) -> str:
    """:func:`render` as plain text (no colour), the way tests and log files see it."""
    from rich.console import Console

    console = Console(width=width, color_system=None, force_terminal=False, file=io.StringIO())
    console.print(render(snapshot, leases, processes, runs))
    return console.file.getvalue()  # type: ignore[attr-defined]


def to_json(snapshot: Snapshot, leases: Sequence[Any] = (), processes: bool = True,
            indent: int | None = 2, runs: Sequence[Mapping[str, Any]] = ()) -> str:
    """The snapshot as JSON (``nvml.from_json`` reads it back) plus, for scripts, a ``leases`` list,
    a ``job`` on each GPU process (its arignote run, else null) and ``runs``: every running run."""
    data = to_dict(snapshot)
    jobs = _jobs(snapshot, runs)
    for gpu in data["gpus"]:
        if not processes:
            gpu["processes"] = []
        for proc in gpu["processes"]:
            proc["job"] = job_summary(jobs[proc["pid"]]) if proc["pid"] in jobs else None
    data["leases"] = [asdict(x) for x in leases]
    data["runs"] = [job_summary(r) for r in runs if r.get("state") == "running"]
    return json.dumps(data, indent=indent)


def watch(read: Callable[[], tuple], interval: float = 2.0, processes: bool = True,
          console: Console | None = None, iterations: int | None = None) -> None:
    """Live view (``watch -n 2 nvidia-smi``): redraw every ``interval`` s until Ctrl-C.

    ``read`` returns a fresh ``(snapshot, leases)`` or ``(snapshot, leases, runs)``; ``iterations``
    bounds the loop (tests).
    """
    from rich.console import Console
    from rich.live import Live

    console = console or Console()
    count = 1
    try:
        with Live(render(*_parts(read(), processes)), console=console, auto_refresh=False) as live:
            while iterations is None or count < iterations:
                time.sleep(interval)
                live.update(render(*_parts(read(), processes)), refresh=True)
                count += 1
    except KeyboardInterrupt:
        pass


def _parts(read: tuple, processes: bool) -> tuple:
    """``render``'s arguments from what a ``watch`` reader returned (2 or 3 items)."""
    snap, leases, *rest = read
    return (snap, leases, processes, rest[0] if rest else ())
