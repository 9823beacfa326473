"""Probes that watch a real fit: which fast paths took effect (issue 18; ``arignote selftest``).

* :class:`ConvLayouts`: every ``conv2d`` output seen by a ``TorchFunctionMode`` (a forward hook on a
  Keras layer would see the NHWC view, not the kernel's output), channels-last or not;
* :class:`Recorder`: a value (the cuDNN autotune switch) read at the start of each training batch;
* :class:`SyncGuard`: ``torch.cuda.set_sync_debug_mode("error")`` from the second training step to
  the last, so a host sync in the step raises; on a CPU, :class:`HostSyncCounter` is the switch and
  counts what would sync there instead: reads back to the host (``.item()``, ``bool(t)``) and
  operators with data-dependent output sizes (``nonzero``, boolean-mask indexing, ``unique``);
* :func:`observe_fit`: a small CNN fit with all of them.

They run on a CPU as well (tests/test_fastpaths.py); :mod:`arignote.bench.selfchecks_fast` turns
them into selftest items on a GPU.

Example::

    >>> w = torch.randn(4, 3, 3, 3).contiguous(memory_format=torch.channels_last)
    >>> with ConvLayouts() as seen:
    ...     _ = torch.nn.functional.conv2d(torch.randn(2, 3, 8, 8), w)
    >>> seen.outputs
    [True]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from arignote import config
from arignote.callbacks import Callback
from arignote.callbacks.status import RunStatus
from arignote.datasets import synthetic
from arignote.devices import cuda, current_inventory
from arignote.devices.fastpaths import FitFacts
from arignote.layers import Conv2D, Dense, Flatten, MaxPooling2D
from arignote.models import Sequential
from arignote.utils import to_categorical

__all__ = ["ConvLayouts", "HostSyncCounter", "Recorder", "SyncGuard", "observe_fit"]


class ConvLayouts(TorchFunctionMode):
    """Inside the block, records for every 2-D convolution whether its output is channels-last."""

    _CONVS = {torch.nn.functional.conv2d, torch.conv2d}

    def __init__(self) -> None:
        super().__init__()
        self.outputs: list[bool] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func in self._CONVS and isinstance(out, torch.Tensor) and out.dim() == 4:
            self.outputs.append(out.is_contiguous(memory_format=torch.channels_last))
        return out


class HostSyncCounter(TorchDispatchMode):
    """While switched on, counts the operators that make the host wait for a GPU: the reads back to
    the host (``aten._local_scalar_dense``: what ``.item()``, ``float(t)``, ``bool(t)`` run) and the
    operators whose output size depends on the data (``nonzero``, so boolean-mask indexing,
    ``masked_select``, ``unique``), which on a GPU must copy that size back before returning.
    ``set_sync_debug_mode("error")`` raises on all of them there; on a CPU they cost nothing, so this
    counter is what makes a CPU run see them. ``switch(on)`` has
    :func:`arignote.devices.cuda.set_sync_errors`'s signature. (A blocking host-to-GPU copy, the
    other kind, needs a GPU to be seen: there is no second device on a CPU.)

    >>> counter = HostSyncCounter()
    >>> counter.switch(True); _ = torch.ones(2).sum().item(); t = torch.arange(4.0); _ = t[t > 1]
    >>> counter.switch(False)
    >>> counter.syncs, counter.seen, counter.ops > 1
    (2, ['_local_scalar_dense', 'index'], True)
    """

    # aten operators that synchronise with a CUDA device (their output size or value goes to the host)
    SYNCING = frozenset({"_local_scalar_dense", "nonzero", "masked_select", "_unique", "_unique2",
                         "unique_dim", "unique_consecutive", "unique_dim_consecutive"})
    # indexing operators that run nonzero on a boolean mask index (below the dispatcher: not seen above)
    MASK_INDEXING = frozenset({"index", "index_put", "index_put_", "_index_put_impl_"})

    def __init__(self) -> None:
        super().__init__()
        self.syncs = self.ops = 0
        self.seen: list[str] = []  # the syncing operators, in order
        self.on = False

    def switch(self, on: bool) -> None:
        if on and not self.on:
            self.__enter__()
        elif self.on and not on:
            self.__exit__(None, None, None)
        self.on = on

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops += 1
        name = func.__name__.split(".", 1)[0]
        if name in self.SYNCING or (name in self.MASK_INDEXING and _has_mask(args)):
            self.syncs += 1
            self.seen.append(name)
        return func(*args, **(kwargs or {}))


def _has_mask(args: tuple) -> bool:
    """Whether an ``aten.index``/``index_put`` call indexes with a boolean (or uint8) mask."""
    indices = args[1] if len(args) > 1 and isinstance(args[1], (list, tuple)) else ()
    return any(isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in indices)


class Recorder(Callback):
    """Reads ``read()`` (e.g. the cuDNN autotune switch) at the start of each training batch."""

    def __init__(self, read: Callable[[], Any]) -> None:
        super().__init__()
        self.read, self.values = read, []

    def on_train_batch_begin(self, batch, logs=None):
        self.values.append(self.read())


class SyncGuard(Callback):
    """Switches host-sync errors on (``switch(True)``) from training batch ``first`` to the end of
    the last batch of the epoch, so steps 2..N must run without a host sync; off again at the end
    of every epoch and of training (before the epoch's one sync at its log point)."""

    def __init__(self, switch: Callable[[bool], None], first: int = 1) -> None:
        super().__init__()
        self.switch, self.first, self.on, self.guarded = switch, first, False, []

    def _set(self, on: bool) -> None:
        if on != self.on:
            self.switch(on)
            self.on = on

    def on_train_batch_begin(self, batch, logs=None):
        if batch >= self.first:
            self._set(True)
            self.guarded.append(batch)

    def on_train_batch_end(self, batch, logs=None):
        steps = (self.params or {}).get("steps")
        if steps is not None and batch >= steps - 1:
            self._set(False)

    def on_epoch_end(self, epoch, logs=None):
        self._set(False)

    def on_train_end(self, logs=None):
        self._set(False)


# --------------------------------------------------------------------------- one observed fit


def _cnn(optimizer: str = "adam") -> Sequential:
    model = Sequential()
    model.add(Conv2D(8, (3, 3), padding="same", activation="relu", input_shape=(16, 16, 3)))
    model.add(Conv2D(8, (3, 3), padding="same", activation="relu"))
    model.add(MaxPooling2D((2, 2)))
    model.add(Flatten())
    model.add(Dense(4, activation="softmax"))
    model.compile(loss="categorical_crossentropy", optimizer=optimizer, metrics=["accuracy"])
    return model


def observe_fit(flags: dict[str, Any], device: str, iterable: bool = False, sync_guard: bool = False,
                samples: int = 256, batch_size: int = 32, sync_switch: Callable[[bool], None] | None = None,
                optimizer: str = "adam") -> tuple[FitFacts, dict[str, Any]]:
    """Fit a small CNN on ``device`` under ``flags`` (arrays, or a list of batches with
    ``iterable``) and return ``(facts, seen)``: what the decisions need
    (:func:`arignote.bench.selfchecks_fast.expected`) and what the probes saw: ``benchmark``,
    ``tf32``, ``channels_last``, ``fused``, plus ``conv_outputs`` (channels-last per conv call) and
    ``guarded`` (the batches run under host-sync errors). ``sync_switch``: what ``sync_guard`` turns
    on for steps 2..N (default :func:`arignote.devices.cuda.set_sync_errors`; on a CPU,
    :meth:`HostSyncCounter.switch`). ``optimizer``: the Keras name compiled with (``adagrad``...)."""
    config.configure(**{"print_active_device": False, "device": device, **flags})
    x, y = synthetic(shape=(16, 16, 3), classes=4, samples=samples, noise=0.3)
    y = to_categorical(y, 4)
    model = _cnn(optimizer)
    data: Any = [(x[i:i + batch_size], y[i:i + batch_size]) for i in range(0, samples, batch_size)]
    recorder = Recorder(lambda: cuda.cudnn_flags()[1])
    guard = SyncGuard(sync_switch or cuda.set_sync_errors)
    # the run-status record reads the batch logs every 2 s (a log point, a host read by design): a
    # slow machine would reach one inside the guarded steps; the guard is about the step itself
    callbacks = [recorder, guard, RunStatus(interval=3600.0)] if sync_guard else [recorder]
    with ConvLayouts() as layouts:
        if iterable:
            model.fit(data, epochs=1, verbose=0, callbacks=callbacks)
        else:
            model.fit(x, y, batch_size=batch_size, epochs=1, verbose=0, callbacks=callbacks)
    dev = model.device
    gpus = current_inventory().gpus if dev.type == "cuda" else ()
    gpu = next((g for g in gpus if g.index == (dev.index or 0)), None)
    facts = FitFacts(str(dev), gpu.capability if gpu else None, has_conv=True, fixed_shapes=not iterable,
                     optimizer=type(model.optimizer.torch).__name__,
                     cudnn_enabled=dev.type == "cuda" and cuda.cudnn_available()
                     and config.get("dnn.enabled") != "false")
    seen = {"benchmark": all(recorder.values) if recorder.values else None,
            "tf32": cuda.tf32_state(),
            "channels_last": bool(layouts.outputs) and all(layouts.outputs),
            "fused": bool(model.optimizer.torch.defaults.get("fused")),
            "conv_outputs": layouts.outputs, "guarded": guard.guarded}
    return facts, seen
