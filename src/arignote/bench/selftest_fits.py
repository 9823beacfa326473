"""Small fits the ``arignote selftest`` items run, and the checks their judges share.

A run returns what it saw (losses, devices, strategies); the judges here turn it into problems.
Nothing here decides pass or fail by raising: see :mod:`arignote.bench.selftest_protocol`.

Example::

    >>> loss_problems([1.4, 1.2])
    []
    >>> loss_problems([1.4, float("nan")])
    ['loss is not finite: [1.4, nan]']
"""

from __future__ import annotations

import contextlib
import io
import math
from typing import Any

__all__ = ["fit", "banner", "strategy_probe", "loss_problems", "line_naming"]


def loss_problems(losses: list[float]) -> list[str]:
    """What is wrong with the epoch losses of a short fit (not finite, not going down)."""
    if not losses:
        return ["no epoch loss was recorded"]
    if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in losses):
        return [f"loss is not finite: {losses}"]
    if len(losses) > 1 and not losses[-1] < losses[0]:
        return [f"loss did not go down over {len(losses)} epochs: {losses}"]
    return []


def line_naming(lines: list[str], name: str) -> str | None:
    """The banner line that names ``name`` (on a GPU the device line is followed by the memory
    policy and TF32 lines, so it is not the last one), or None."""
    return next((ln for ln in lines if name in ln), None)


def fit(flags: dict[str, Any], kind: str = "mlp", epochs: int = 2, samples: int = 256,
        callbacks: list | None = None) -> tuple[Any, list[float]]:
    """A few training steps of a small model under ``flags``: ``(model, epoch losses)``."""
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote import config
    from arignote.datasets import synthetic
    from arignote.layers import Conv2D, Dense, Flatten, MaxPooling2D
    from arignote.models import Sequential
    from arignote.utils import to_categorical

    config.configure(**{"print_active_device": False, **flags})
    shape = (16, 16, 3) if kind == "cnn" else (32,)
    x, y = synthetic(shape=shape, classes=4, samples=samples, noise=0.3)
    model = Sequential()
    if kind == "cnn":
        model.add(Conv2D(8, (3, 3), padding="same", activation="relu", input_shape=shape))
        model.add(MaxPooling2D((2, 2)))
        model.add(Flatten())
    else:
        model.add(Dense(32, activation="relu", input_shape=shape))
    model.add(Dense(4, activation="softmax"))
    model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
    history = model.fit(x, to_categorical(y, 4), batch_size=32, epochs=epochs, verbose=0,
                        callbacks=callbacks or [])
    return model, [float(v) for v in history.history["loss"]]


def banner(device: str) -> list[str]:
    """The banner lines ``prepare`` prints for ``device``."""
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote import config
    from arignote.runtime import setup

    config.configure(device=device, print_active_device=True)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        setup.prepare(setup.configured_devices()[0])
    return out.getvalue().strip().splitlines()


def strategy_probe(seen: list[list[Any]]):
    """A callback recording [world size, collective backend] of the strategy fit runs on."""
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote.callbacks import Callback
    from arignote.parallel import ddp

    class Probe(Callback):
        def on_train_begin(self, logs=None):
            strategy = ddp.active()
            seen.append([strategy.world_size, strategy.backend] if strategy is not None else [1, "none"])

    return Probe()
