"""The seed-style table, the JSON file and the PNG bar chart of a benchmark.

Pure functions over :class:`Run` records (no torch), so they are tested on fixture results.
Seconds per epoch is the median of the epochs after the first (the first warms up allocators
and cuDNN's autotuner) when there are several, else the one epoch; samples/s is training samples
per epoch-second (the epoch time includes validation, as Keras's log does).

Example::

    >>> runs = [Run("cpu", "arignote", 32, epoch_seconds=[50.0], samples=45000, device_name="EPYC"),
    ...         Run("cpu", "torch", 32, epoch_seconds=[55.0], samples=45000, device_name="EPYC")]
    >>> rows = table_rows(runs)
    >>> rows[0]["samples_per_sec"], rows[1]["vs_arignote"]
    (900.0, 1.1)
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from arignote.errors import ArignoteError

__all__ = ["Run", "seconds_per_epoch", "baseline", "table_rows", "render_table", "to_json", "chart_size",
           "write_chart", "ChartUnavailable", "format_bytes"]

RATIO_NOTE = ("time / arignote: the peer's seconds per epoch divided by arignote's in the same "
              "configuration, runs alternated (above 1.00x: arignote is faster)")


class ChartUnavailable(ArignoteError, RuntimeError):
    """matplotlib is missing: the chart is an optional extra (``pip install 'arignote[chart]'``)."""


@dataclass
class Run:
    """One (configuration, runner, batch size) run, or the reason it was skipped or failed."""

    config: str
    runner: str
    batch_size: int
    status: str = "ok"  # ok | skipped | failed
    reason: str = ""
    epoch_seconds: list[float] = field(default_factory=list)
    samples: int = 0
    device: str = ""
    device_name: str = ""
    peak_memory: int | None = None
    memory_kind: str = "RSS"  # RSS (host, whole process) or GPU (allocator peak)
    repeat: int = 0
    log: str = ""
    data: str = ""  # where the worker's data came from (CIFAR-10 path or synthetic)

    @property
    def ok(self) -> bool:
        return self.status == "ok" and bool(self.epoch_seconds)


def seconds_per_epoch(epoch_seconds: Sequence[float]) -> float:
    """Median epoch time, leaving out the warm-up epoch when there are several."""
    steady = list(epoch_seconds[1:]) if len(epoch_seconds) > 1 else list(epoch_seconds)
    return float(statistics.median(steady))


def format_bytes(n: int | None) -> str:
    if not n:
        return "n/a"
    if n >= 1 << 30:
        return f"{n / (1 << 30):.2f} GiB"
    return f"{n / (1 << 20):.0f} MiB"


def _group(runs: Iterable[Run]) -> dict[tuple[int, str, str], list[Run]]:
    """Successful runs keyed by (batch size, configuration, runner), in first-seen order."""
    groups: dict[tuple[int, str, str], list[Run]] = {}
    for r in runs:
        if r.ok:
            groups.setdefault((r.batch_size, r.config, r.runner), []).append(r)
    return groups


def table_rows(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """One row per (batch size, configuration, runner): repeats merged by their median.

    ``speedup`` is over the same runner's ``cpu`` configuration; ``vs_arignote`` is the peer's
    seconds per epoch over arignote's in the same configuration and batch size.
    """
    rows = []
    for (batch, cfg, runner), group in _group(runs).items():
        spe = statistics.median(seconds_per_epoch(r.epoch_seconds) for r in group)
        peaks = [r.peak_memory for r in group if r.peak_memory]
        rows.append({"batch_size": batch, "config": cfg, "runner": runner, "device": group[0].device,
                     "device_name": group[0].device_name, "seconds_per_epoch": round(spe, 4),
                     "samples_per_sec": round(group[0].samples / spe, 1) if spe > 0 else None,
                     "peak_memory": max(peaks) if peaks else None, "memory_kind": group[0].memory_kind,
                     "repeats": len(group)})
    index = {(r["batch_size"], r["config"], r["runner"]): r for r in rows}
    for row in rows:
        base = index.get((row["batch_size"], baseline([r["config"] for r in rows]), row["runner"]))
        row["speedup"] = round(base["seconds_per_epoch"] / row["seconds_per_epoch"], 2) if base else None
        ours = index.get((row["batch_size"], row["config"], "arignote"))
        row["vs_arignote"] = (round(row["seconds_per_epoch"] / ours["seconds_per_epoch"], 2)
                              if ours and row["runner"] != "arignote" else None)
    return rows


def baseline(config_names: Sequence[str]) -> str:
    """The configuration speedups are measured against: ``cpu``, else the first single-process
    CPU one (``cpu-1xT``) in the run."""
    names = list(dict.fromkeys(config_names))
    if "cpu" in names:
        return "cpu"
    return next((n for n in names if re.fullmatch(r"cpu-1x\d+", n)), "cpu")


def _fmt(value: Any, pattern: str, empty: str = "") -> str:
    return empty if value is None else pattern.format(value)


def render_table(runs: Sequence[Run], title: str = "") -> str:
    """The seed-style text table (one block per batch size), then what was skipped or failed and why."""
    rows = table_rows(runs)
    peers = any(r["runner"] != "arignote" for r in rows)
    head = ["configuration", "runner", "device", "s/epoch", "samples/s",
            f"speedup vs {baseline([r['config'] for r in rows])}", "peak memory"]
    if peers:
        head.append("time / arignote")
    lines = [title] if title else []
    for batch in sorted({r["batch_size"] for r in rows}):
        body = []
        last_cfg = None
        for r in (r for r in rows if r["batch_size"] == batch):
            cells = [r["config"] if r["config"] != last_cfg else "", r["runner"], r["device_name"],
                     f"{r['seconds_per_epoch']:.2f}", f"{r['samples_per_sec']:.0f}",
                     _fmt(r["speedup"], "{:.2f}x", "n/a"),
                     f"{format_bytes(r['peak_memory'])} {r['memory_kind']}" if r["peak_memory"] else "n/a"]
            if peers:
                cells.append(_fmt(r["vs_arignote"], "{:.2f}x", "-" if r["runner"] == "arignote" else "n/a"))
            last_cfg = r["config"]
            body.append(cells)
        widths = [max(len(h), *(len(c[i]) for c in body)) for i, h in enumerate(head)]
        lines += ["", f"batch size {batch}", _line(head, widths), _line(["-" * w for w in widths], widths)]
        lines += [_line(c, widths) for c in body]
    if not rows:
        lines.append("no configuration ran on this machine")
    notes = _not_run(runs)
    if notes:
        lines += ["", "not run:"] + [f"  {n}" for n in notes]
    if peers:
        lines += ["", RATIO_NOTE]
    return "\n".join(lines)


def _line(cells: Sequence[str], widths: Sequence[int]) -> str:
    right = {3, 4, 5, 7}  # numeric columns
    return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                     for i, (c, w) in enumerate(zip(cells, widths))).rstrip()


def _not_run(runs: Sequence[Run]) -> list[str]:
    seen: list[str] = []
    for r in runs:
        if r.status == "ok":
            continue
        who = r.config if r.runner == "arignote" or r.runner == "*" else f"{r.config} / {r.runner}"
        text = f"{who}: {r.status}: {r.reason}" + (f" (log: {r.log})" if r.log else "")
        if text not in seen:
            seen.append(text)
    return seen


def to_json(runs: Sequence[Run], meta: dict[str, Any]) -> dict[str, Any]:
    """Everything in one JSON-able dict: the settings (``meta``), the table rows and every run."""
    return {**meta, "table": table_rows(runs), "not_run": [asdict(r) for r in runs if r.status != "ok"],
            "runs": [dict(asdict(r), seconds_per_epoch=seconds_per_epoch(r.epoch_seconds))
                     for r in runs if r.ok],
            "ratio_note": RATIO_NOTE}


# --------------------------------------------------------------------------- chart

CHART_DPI = 100
_PANEL_INCHES = (9.0, 3.6)
_COLORS = {"arignote": "C0", "torch": "C1", "keras": "C2", "lightning": "C3"}


def chart_size(panels: int) -> tuple[int, int]:
    """Pixel (width, height) of the PNG for ``panels`` batch sizes."""
    return int(_PANEL_INCHES[0] * CHART_DPI), int((_PANEL_INCHES[1] * max(panels, 1) + 0.6) * CHART_DPI)


def write_chart(runs: Sequence[Run], path: str, title: str = "") -> tuple[int, int]:
    """Bar chart of seconds per epoch per configuration (one bar per runner, value on each bar),
    one panel per batch size; returns the PNG's pixel size. Raises :class:`ChartUnavailable`."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ChartUnavailable("the chart needs matplotlib: pip install 'arignote[chart]' "
                               "(the table and JSON were written)") from None
    rows = table_rows(runs)
    batches = sorted({r["batch_size"] for r in rows}) or [0]
    width, height = chart_size(len(batches))
    fig, axes = plt.subplots(len(batches), 1, squeeze=False,
                             figsize=(width / CHART_DPI, height / CHART_DPI), dpi=CHART_DPI)
    for ax, batch in zip(axes[:, 0], batches):
        sub = [r for r in rows if r["batch_size"] == batch]
        configs = list(dict.fromkeys(r["config"] for r in sub))
        runners = list(dict.fromkeys(r["runner"] for r in sub))
        bar = 0.8 / max(len(runners), 1)
        value = {(r["config"], r["runner"]): r["seconds_per_epoch"] for r in sub}
        # bars of one configuration sit side by side, centred on its tick
        present = {c: [rn for rn in runners if (c, rn) in value] for c in configs}
        for runner in runners:
            xs, ys = [], []
            for i, c in enumerate(configs):
                if (c, runner) in value:
                    j, k = present[c].index(runner), len(present[c])
                    xs.append(i + (j - (k - 1) / 2) * bar)
                    ys.append(value[(c, runner)])
            bars = ax.bar(xs, ys, bar * 0.95, label=runner, color=_COLORS.get(runner))
            ax.bar_label(bars, labels=[f"{y:.1f}s" if y >= 10 else f"{y:.2f}s" for y in ys], fontsize=8,
                         padding=2)
        ax.set_xticks(range(len(configs)), configs)
        ax.set_ylabel("seconds per epoch")
        ax.set_title(f"batch size {batch}" if batch else "no configuration ran", fontsize=10)
        # headroom above the tallest bar keeps the one-row legend clear of the value labels
        ax.margins(y=0.32 if len(runners) > 1 else 0.18)
        if len(runners) > 1:
            ax.legend(fontsize=8, loc="upper left", ncol=len(runners), frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=CHART_DPI)
    plt.close(fig)
    return width, height
