"""Keras 2's ``utils.Progbar`` (``generic_utils.Progbar``): a progress bar for hand-written loops.

``update(current, values)`` sets the position, ``add(n, values)`` advances it; ``values`` are
``(name, value)`` pairs whose running mean (weighted by the steps they cover) is shown, except
``stateful_metrics``, shown as given. ``verbose=1`` redraws one line (on a terminal; elsewhere a
line per ``interval``), ``verbose=2`` prints one line when ``target`` is reached, 0 nothing.

Example::

    >>> import io
    >>> out = io.StringIO()
    >>> bar = Progbar(4, verbose=2, stream=out)
    >>> bar.add(2, [("loss", 1.0)]); bar.add(2, [("loss", 3.0)])
    >>> out.getvalue().split(" - ")[0], out.getvalue().split(" - ")[-1]
    ('4/4', 'loss: 2.0000\\n')
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from typing import Any, TextIO

__all__ = ["Progbar"]


class Progbar:
    """Keras 2.3 arguments; ``stream`` (default ``sys.stdout``) is ours."""

    def __init__(self, target: int | None, width: int = 30, verbose: int = 1, interval: float = 0.05,
                 stateful_metrics: Iterable[str] | None = None, stream: TextIO | None = None) -> None:
        self.target, self.width, self.verbose, self.interval = target, width, verbose, interval
        self.stateful_metrics = set(stateful_metrics or ())
        self.stream = stream if stream is not None else sys.stdout
        self._dynamic = bool(getattr(self.stream, "isatty", lambda: False)()) or "ipykernel" in sys.modules
        self._values: dict[str, list[float]] = {}
        self._seen = 0
        self._start = time.time()
        self._last_update = 0.0
        self._width_drawn = 0

    def update(self, current: int, values: Iterable[tuple[str, Any]] | None = None) -> None:
        """Move to step ``current``, folding ``values`` (for the steps since the last call) into the means."""
        for name, value in values or ():
            if name in self.stateful_metrics:
                self._values[name] = [float(value), 1.0]
            else:
                steps = max(current - self._seen, 1)
                total = self._values.setdefault(name, [0.0, 0.0])
                total[0] += float(value) * steps
                total[1] += steps
        self._seen = current
        now = time.time()
        done = self.target is not None and current >= self.target
        if self.verbose == 1:
            if not done and now - self._last_update < self.interval:
                return
            self._draw(current, now, done)
        elif self.verbose == 2 and done:
            self.stream.write(f"{self._count(current)} - {int(now - self._start)}s{self._metrics()}\n")
            self.stream.flush()
        self._last_update = now

    def add(self, n: int, values: Iterable[tuple[str, Any]] | None = None) -> None:
        """Advance by ``n`` steps."""
        self.update(self._seen + n, values)

    def _count(self, current: int) -> str:
        if self.target is None:
            return f"{current:7d}/Unknown"
        return f"{current:>{len(str(self.target))}}/{self.target}"

    def _metrics(self) -> str:
        parts = []
        for name, (total, count) in self._values.items():
            value = total / max(count, 1.0)
            shown = f"{value:.4f}" if abs(value) > 1e-3 or value == 0 else f"{value:.4e}"
            parts.append(f" - {name}: {shown}")
        return "".join(parts)

    def _draw(self, current: int, now: float, done: bool) -> None:
        line = self._count(current)
        if self.target is not None:
            filled = int(self.width * min(current, self.target) / self.target)
            bar = "=" * max(filled - 1, 0) + ((">" if current < self.target else "=") if filled else "")
            line += " [" + bar + "." * (self.width - len(bar)) + "]"
        elapsed = now - self._start
        per_step = elapsed / current if current else 0.0
        if done or self.target is None:
            line += f" - {int(elapsed)}s"
            line += f" {per_step * 1000:.0f}ms/step" if per_step < 1 else f" {per_step:.0f}s/step"
        else:
            line += f" - ETA: {int(per_step * (self.target - current))}s"
        line += self._metrics()
        if self._dynamic:
            pad = max(self._width_drawn - len(line), 0)
            self.stream.write("\r" + line + " " * pad + ("\n" if done else ""))
        else:
            self.stream.write(line + "\n")
        self._width_drawn = len(line)
        self.stream.flush()
