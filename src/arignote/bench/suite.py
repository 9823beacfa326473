"""Plan and run a benchmark: every (batch size, configuration, runner) in its own worker process.

Runs of one configuration alternate the runners (``arignote, torch, keras, ...`` then the reverse
order on the next repeat), so a slow drift of the machine does not favour one side.  What this
machine cannot run becomes a skipped :class:`~arignote.bench.report.Run` carrying the reason.

Example::

    >>> from types import SimpleNamespace as NS
    >>> inv = NS(gpus=[], cpu_threads=2, cuda_reason="no NVIDIA driver")
    >>> plan = SuitePlan(model="mlp", n_train=512, n_val=64, epochs=1, batch_sizes=[32],
    ...             configs=["cpu", "cuda"], runners=["arignote", "torch"])
    >>> [(j.config, j.runner, j.status) for j in schedule(plan, inv, peer_missing={})]
    [('cpu', 'arignote', 'ok'), ('cpu', 'torch', 'ok'), ('cuda', '*', 'skipped')]
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from arignote.bench import configs as configs_mod
from arignote.bench.report import Run, format_bytes, seconds_per_epoch
from arignote.bench.worker import MARK

__all__ = ["SuitePlan", "schedule", "execute", "Progress"]


@dataclass
class SuitePlan:
    """What to measure: model, data sizes, epochs, batch sizes, configuration names, runners."""

    model: str = "cnn"
    n_train: int = 45000
    n_val: int = 5000
    epochs: int = 1
    batch_sizes: Sequence[int] = (32,)
    configs: Sequence[str] | None = None  # None: every configuration
    runners: Sequence[str] = ("arignote",)
    data: str = "auto"
    repeats: int = 1


def schedule(plan: SuitePlan, inventory: Any, peer_missing: dict[str, str | None], cudnn: int | None = None,
             strategies: frozenset[str] = frozenset({"ddp"})) -> list[Run]:
    """The runs in execution order; runs this machine cannot do come back already ``skipped``."""
    chosen = configs_mod.parse(",".join(plan.configs) if plan.configs else None, inventory)
    out: list[Run] = []
    for batch in plan.batch_sizes:
        for cfg in chosen:
            why = configs_mod.skip_reason(cfg, inventory, cudnn, strategies)
            if why:
                out.append(Run(cfg.name, "*", batch, status="skipped", reason=why))
                continue
            for rep in range(plan.repeats):
                order = list(plan.runners) if rep % 2 == 0 else list(reversed(plan.runners))
                for runner in order:
                    why = peer_missing.get(runner) or configs_mod.peer_skip_reason(runner, cfg)
                    out.append(Run(cfg.name, runner, batch, status="skipped" if why else "ok",
                                   reason=why or "", repeat=rep, samples=plan.n_train))
    return out


class Progress:
    """One status line: redrawn in place on a terminal (with a seconds counter while a run is
    going, see :meth:`ticking`), one line per event otherwise."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._width = 0
        self._text = ""
        self._since = 0.0
        self._lock = threading.Lock()

    def update(self, text: str, final: bool = False) -> None:
        with self._lock:
            self._text, self._since = ("", 0.0) if final else (text, self._since or time.monotonic())
            self._draw(text, final)

    def _draw(self, text: str, final: bool) -> None:
        if self.tty:
            pad = max(self._width - len(text), 0)
            self.stream.write("\r" + text + " " * pad + ("\n" if final else ""))
            self._width = 0 if final else len(text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    @contextlib.contextmanager
    def ticking(self, interval: float = 1.0) -> Iterator[None]:
        """While the block runs, redraw the current line with the seconds elapsed (terminals only)."""
        stop = threading.Event()

        def tick() -> None:
            while not stop.wait(interval):
                with self._lock:
                    if self._text:
                        self._draw(f"{self._text} · {time.monotonic() - self._since:.0f}s", False)

        thread = threading.Thread(target=tick, daemon=True) if self.tty else None
        if thread:
            thread.start()
        try:
            yield
        finally:
            stop.set()
            if thread:
                thread.join()


def _child_env(runner: str) -> dict[str, str]:
    env = dict(os.environ)
    if runner == "keras":
        env["KERAS_BACKEND"] = "torch"  # read by keras at import time, hence a process per run
    return env


def run_one(run: Run, plan: SuitePlan, log_path: Path, progress: Callable[[str], None]) -> Run:
    """Start a worker for ``run``, follow its messages, fill in the times and peak memory."""
    spec = {"runner": run.runner, "model": plan.model, "config": run.config, "batch_size": run.batch_size,
            "epochs": plan.epochs, "n_train": plan.n_train, "n_val": plan.n_val, "data": plan.data}
    cmd = [sys.executable, "-m", "arignote.bench.worker", json.dumps(spec)]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {}
    start: dict[str, Any] = {}
    with open(log_path, "w", encoding="utf-8") as log:
        log.write("$ " + " ".join(cmd[:3]) + f" '{cmd[3]}'\n")
        log.flush()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=_child_env(run.runner), bufsize=1)
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            if not line.startswith(MARK):
                continue
            msg = json.loads(line[len(MARK):])
            if msg["event"] == "start":
                start = msg
                progress(f"training on {msg['device_name']}")
            elif msg["event"] == "epoch":
                progress(f"epoch {msg['epoch'] + 1}/{plan.epochs} {msg['seconds']:.1f}s")
            elif msg["event"] == "result":
                result = msg
        code = proc.wait()
    run.log = str(log_path)
    if code != 0 or not result:
        run.status = "failed"
        run.reason = f"exit code {code}: {_last_line(log_path)}"
        return run
    run.device, run.device_name = start.get("device", ""), start.get("device_name", "")
    run.epoch_seconds = [float(s) for s in result["epoch_seconds"]]
    gpu = result.get("peak_gpu")
    run.peak_memory, run.memory_kind = (gpu, "GPU") if gpu else (result["peak_rss"], "RSS")
    run.data = start.get("data", "")
    return run


def _last_line(path: Path) -> str:
    lines = [ln.strip() for ln in path.read_text(encoding="utf-8", errors="replace").splitlines()
             if ln.strip() and not ln.startswith(MARK)]
    return lines[-1][:300] if lines else "no output"


def execute(plan: SuitePlan, runs: list[Run], out_dir: Path, progress: Progress) -> list[Run]:
    """Run the scheduled ``runs`` one after the other (skipped ones pass through)."""
    todo = [r for r in runs if r.status == "ok"]
    for n, run in enumerate(todo, 1):
        label = f"[{n}/{len(todo)}] {run.config} · {run.runner} · batch {run.batch_size}"
        progress.update(f"{label} · starting")
        log = out_dir / "logs" / f"{n:02d}-{run.config}-{run.runner}-b{run.batch_size}.log"
        with progress.ticking():
            run_one(run, plan, log, lambda text, label=label: progress.update(f"{label} · {text}"))
        if run.ok:
            spe = seconds_per_epoch(run.epoch_seconds)
            progress.update(f"{label} · {spe:.2f} s/epoch, {plan.n_train / spe:.0f} samples/s, "
                            f"peak {format_bytes(run.peak_memory)} {run.memory_kind}", final=True)
        else:
            progress.update(f"{label} · FAILED ({run.reason}; log {run.log})", final=True)
    return runs
