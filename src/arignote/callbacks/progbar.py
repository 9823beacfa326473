"""Keras-format training log: ``verbose=2`` one line an epoch, ``verbose=1`` a progress bar.

``verbose=2`` (and ``verbose=1`` when stdout is not a terminal)::

    Train on 45000 samples, validate on 5000 samples
    Epoch 1/25
    7s - loss: 1.8344 - acc: 0.3172 - val_loss: 1.4191 - val_acc: 0.4812 - 6431 samples/s

``verbose=1`` on a terminal redraws ``1024/45000 [>.....] - ETA: 12s - loss: ...`` at most ten
times a second; reading the batch logs then is the only device sync. Added by ``fit`` on rank 0.

Example::

    >>> import io
    >>> out = io.StringIO()
    >>> bar = ProgbarLogger(verbose=2, stream=out)
    >>> bar.set_params({"epochs": 2, "samples": 100, "metrics": ["loss"]})
    >>> bar.on_epoch_begin(0); bar.on_epoch_end(0, {"loss": 0.5})
    >>> out.getvalue().splitlines()[0]
    'Epoch 1/2'
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from typing import Any, TextIO

from arignote.callbacks.base import Callback, running_view

__all__ = ["ProgbarLogger", "format_values", "format_bar", "format_duration"]

_BAR_WIDTH = 30
_REDRAW_INTERVAL = 0.1  # seconds between redraws: at most ~10 a second


def format_duration(seconds: float) -> str:
    """Keras style: ``7s`` under a minute... and ``1:02:03`` past an hour.

    >>> format_duration(7.4), format_duration(75), format_duration(3723)
    ('7s', '75s', '1:02:03')
    """
    if seconds >= 3600:
        s = int(seconds)
        return f"{s // 3600}:{(s % 3600) // 60:02d}:{s % 60:02d}"
    return f"{int(seconds)}s"


def format_values(logs: Mapping[str, Any], keys: list[str]) -> str:
    """`` - loss: 0.1234 - acc: 0.9000`` for the float-valued ``keys`` present in ``logs``."""
    parts = []
    for key in keys:
        if key in logs:
            value = logs[key]
            if abs(value) > 1e-3 or value == 0:
                parts.append(f" - {key}: {value:.4f}")
            else:
                parts.append(f" - {key}: {value:.4e}")
    return "".join(parts)


def is_device_stat(key: str) -> bool:
    """Keys that :class:`~arignote.callbacks.device_stats.DeviceStatsMonitor` adds to the logs."""
    return key.endswith("_mib") or key.endswith("_utilization")


def format_device_stats(logs: Mapping[str, Any]) -> str:
    """`` - cuda0 peak 1234 MiB (reserved 2048 MiB), 87% util`` / `` - cpu peak RSS 412 MiB``."""
    parts = []
    for key in sorted(k for k in logs if k.endswith("_peak_allocated_mib")):
        dev = key[: -len("_peak_allocated_mib")]
        text = f"{dev} peak {logs[key]:.0f} MiB"
        if f"{dev}_peak_reserved_mib" in logs:
            text += f" (reserved {logs[dev + '_peak_reserved_mib']:.0f} MiB)"
        if f"{dev}_utilization" in logs:
            text += f", {logs[dev + '_utilization']:.0f}% util"
        parts.append(text)
    for key in ("cpu_peak_rss_mib", "cpu_process_peak_rss_mib"):
        if key in logs:
            parts.append(f"cpu peak RSS {logs[key]:.0f} MiB")
    return "".join(f" - {p}" for p in parts)


def format_bar(current: int, target: int | None) -> str:
    """``1024/45000 [>.............................]`` (Keras 2 layout, 30 characters wide).

    >>> format_bar(45000, 45000)
    '45000/45000 [==============================]'
    """
    if not target:
        return f"{current}/Unknown"
    digits = len(str(target))
    filled = int(_BAR_WIDTH * min(current, target) / target)
    bar = "=" * max(filled - 1, 0)
    if filled > 0:
        bar += ">" if current < target else "="
    else:
        bar += ">" if current < target else ""
    bar += "." * (_BAR_WIDTH - len(bar))
    return f"{current:>{digits}}/{target} [{bar}]"


class ProgbarLogger(Callback):
    """Prints the Keras-format log; ``count_mode`` is ``samples`` (arrays) or ``steps`` (iterables).

    Keras 2's arguments are ``(count_mode, stateful_metrics)``; ``verbose`` and ``stream`` are ours.

    ``stream`` defaults to ``sys.stdout``; the bar is only redrawn when the stream is a terminal.
    """

    def __init__(self, count_mode: str = "samples", stateful_metrics: Any = None, verbose: int = 1,
                 stream: TextIO | None = None) -> None:
        super().__init__()
        if count_mode not in ("samples", "steps"):
            raise ValueError(f"count_mode must be 'samples' or 'steps', got {count_mode!r}")
        self.count_mode = count_mode
        # Keras 2 averaged batch values itself except for these; the values shown here are the
        # loop's exact running means, so every metric is already shown as is.
        self.stateful_metrics = set(stateful_metrics or ())
        self.verbose = verbose
        self._stream = stream
        self._epoch_start = 0.0
        self._train_end: float | None = None
        self._seen = 0
        self._steps = 0
        self._last_draw = 0.0
        self._drawn_width = 0

    @property
    def stream(self) -> TextIO:
        return self._stream if self._stream is not None else sys.stdout

    def _interactive(self) -> bool:
        isatty = getattr(self.stream, "isatty", None)
        return self.verbose == 1 and bool(isatty and isatty())

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()

    def _keys(self) -> list[str]:
        return list(self.params.get("metrics") or [])

    def _target(self) -> int | None:
        return self.params.get("samples" if self.count_mode == "samples" else "steps")

    # ----------------------------------------------------------------- hooks

    def on_train_begin(self, logs=None) -> None:
        samples = self.params.get("samples")
        if self.verbose and samples and self.count_mode == "samples":
            line = f"Train on {samples} samples"
            if self.params.get("val_samples"):
                line += f", validate on {self.params['val_samples']} samples"
            self._write(line + "\n")

    def on_epoch_begin(self, epoch, logs=None) -> None:
        if self.verbose:
            self._write(f"Epoch {epoch + 1}/{self.params.get('epochs', epoch + 1)}\n")
        self._epoch_start = time.perf_counter()
        self._train_end = None
        self._seen = 0
        self._steps = 0
        self._last_draw = 0.0
        self._drawn_width = 0

    def on_train_batch_end(self, batch, logs=None) -> None:
        self._steps += 1
        self._seen += int(logs.get("size", 0)) if logs is not None else 0
        if not self._interactive():
            return
        now = time.perf_counter()
        if now - self._last_draw < _REDRAW_INTERVAL:
            return
        self._last_draw = now
        current = self._seen if self.count_mode == "samples" else self._steps
        target = self._target()
        elapsed = now - self._epoch_start
        line = format_bar(current, target)
        if target and current < target and current:
            line += f" - ETA: {format_duration(elapsed * (target - current) / current)}"
        else:
            line += f" - {format_duration(elapsed)}"
        if logs is not None:
            line += format_values(running_view(logs), [k for k in self._keys() if not k.startswith("val_")])
        self._redraw(line)

    def _redraw(self, line: str) -> None:
        pad = max(self._drawn_width - len(line), 0)
        self._write("\r" + line + " " * pad)
        self._drawn_width = len(line)

    def on_test_begin(self, logs=None) -> None:
        # fit syncs the training metrics before validating, so this is the end of training compute
        if self._train_end is None:
            self._train_end = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None) -> None:
        if not self.verbose:
            return
        now = time.perf_counter()
        logs = logs or {}
        train_time = (self._train_end or now) - self._epoch_start
        samples = self._seen or self.params.get("samples") or 0
        speed = f" - {samples / train_time:.0f} samples/s" if samples and train_time > 0 else ""
        keys = self._keys() or list(logs)
        values = format_values(logs, keys + [k for k in logs if k not in keys and not is_device_stat(k)])
        # fit's device-stats monitor keeps its figures in model.device_stats, out of the logs
        stats = getattr(self.model, "device_stats", None) or {}
        speed += format_device_stats({**stats, **logs})
        duration = format_duration(now - self._epoch_start)
        if self.verbose == 1:
            target = self._target()
            current = target if target else (self._seen if self.count_mode == "samples" else self._steps)
            line = f"{format_bar(current, target)} - {duration}{values}{speed}"
            if self._interactive():
                self._redraw(line)
                self._write("\n")
            else:
                self._write(line + "\n")
        else:
            self._write(f"{duration}{values}{speed}\n")
