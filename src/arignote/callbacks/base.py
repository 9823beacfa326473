"""The Keras 2 callback interface: :class:`Callback`, :class:`CallbackList` and :class:`History`.

``fit`` orchestrates; everything with a side effect (printing, checkpoints, stats) is a callback.
Batch-level logs are *lazy* mappings: reading ``logs["loss"]`` synchronises with the device, so a
callback that never reads them costs nothing, and ``fit`` skips batch hooks nobody overrides.

Example::

    >>> class Count(Callback):
    ...     def on_epoch_end(self, epoch, logs=None):
    ...         print(epoch, sorted(logs))
    >>> cbs = CallbackList([Count()])
    >>> cbs.on_epoch_end(0, {"loss": 0.5})
    0 ['loss']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from arignote.metrics.names import Logs, as_logs, spellings

__all__ = ["Callback", "CallbackList", "History", "LazyLogs", "RUNNING_LOSS", "running_view"]


class Callback:
    """Base class of callbacks: override the hooks you need (Keras 2 names and arguments).

    ``self.model`` is the :class:`arignote.models.Model` being trained and ``self.params`` holds
    ``epochs``, ``steps``, ``samples``, ``batch_size``, ``verbose``, ``do_validation`` and ``metrics``.
    ``self.validation_data`` is, for a fit on arrays, Keras 2.3.1's list of the validation arrays
    ``[*inputs, *targets, *sample_weights]`` (``[]`` without validation data).
    """

    def __init__(self) -> None:
        self.model: Any = None
        self.params: dict[str, Any] = {}
        self.validation_data: Any = None  # fit's validation arrays, as Keras 2.3.1 sets them

    def set_model(self, model: Any) -> None:
        self.model = model

    def set_params(self, params: dict[str, Any]) -> None:
        self.params = params

    # training
    def on_train_begin(self, logs: Mapping[str, Any] | None = None) -> None: ...
    def on_train_end(self, logs: Mapping[str, Any] | None = None) -> None: ...
    def on_epoch_begin(self, epoch: int, logs: Mapping[str, Any] | None = None) -> None: ...
    def on_epoch_end(self, epoch: int, logs: Mapping[str, Any] | None = None) -> None: ...

    def on_train_batch_begin(self, batch: int, logs: Mapping[str, Any] | None = None) -> None:
        self.on_batch_begin(batch, logs)

    def on_train_batch_end(self, batch: int, logs: Mapping[str, Any] | None = None) -> None:
        self.on_batch_end(batch, logs)

    # Keras 2 spellings of the train-batch hooks
    def on_batch_begin(self, batch: int, logs: Mapping[str, Any] | None = None) -> None: ...
    def on_batch_end(self, batch: int, logs: Mapping[str, Any] | None = None) -> None: ...

    # evaluation (also the validation pass inside fit) and prediction
    def on_test_begin(self, logs: Mapping[str, Any] | None = None) -> None: ...
    def on_test_end(self, logs: Mapping[str, Any] | None = None) -> None: ...
    def on_test_batch_begin(self, batch: int, logs: Mapping[str, Any] | None = None) -> None: ...
    def on_test_batch_end(self, batch: int, logs: Mapping[str, Any] | None = None) -> None: ...
    def on_predict_begin(self, logs: Mapping[str, Any] | None = None) -> None: ...
    def on_predict_end(self, logs: Mapping[str, Any] | None = None) -> None: ...
    def on_predict_batch_begin(self, batch: int, logs: Mapping[str, Any] | None = None) -> None: ...
    def on_predict_batch_end(self, batch: int, logs: Mapping[str, Any] | None = None) -> None: ...


_BATCH_HOOKS = {
    "train_begin": ("on_train_batch_begin", "on_batch_begin"),
    "train_end": ("on_train_batch_end", "on_batch_end"),
    "test_begin": ("on_test_batch_begin",),
    "test_end": ("on_test_batch_end",),
    "predict_begin": ("on_predict_batch_begin",),
    "predict_end": ("on_predict_batch_end",),
}


def _overrides(cb: Callback, names: tuple[str, ...]) -> bool:
    """Whether ``cb`` has its own hook for any of ``names`` (a method of its class or, as
    LambdaCallback sets them, a function on the instance)."""
    for n in names:
        hook = getattr(cb, n, None)
        if getattr(hook, "__func__", hook) is not getattr(Callback, n):
            return True
    return False


class CallbackList:
    """Calls each hook on every callback, in order; batch hooks only on callbacks that override them.

    ``has_batch_hooks(kind)`` lets the loop skip building batch logs when nobody listens.
    """

    def __init__(self, callbacks: Iterable[Callback] | None = None, model: Any = None,
                 params: dict[str, Any] | None = None) -> None:
        self.callbacks = list(callbacks or [])
        self.params: dict[str, Any] = {}
        for cb in self.callbacks:
            if not isinstance(cb, Callback):
                raise TypeError(f"callbacks must be arignote.callbacks.Callback instances, got {cb!r}")
        if model is not None:
            self.set_model(model)
        if params is not None:
            self.set_params(params)
        self._listeners = {kind: [cb for cb in self.callbacks if _overrides(cb, names)]
                           for kind, names in _BATCH_HOOKS.items()}

    def __iter__(self) -> Iterator[Callback]:
        return iter(self.callbacks)

    def append(self, cb: Callback) -> None:
        self.callbacks.append(cb)
        for kind, names in _BATCH_HOOKS.items():
            if _overrides(cb, names):
                self._listeners[kind].append(cb)

    def set_model(self, model: Any) -> None:
        for cb in self.callbacks:
            cb.set_model(model)

    def set_params(self, params: dict[str, Any]) -> None:
        self.params = params  # the last ones given (fit updates a Sequence's steps after each epoch)
        for cb in self.callbacks:
            cb.set_params(params)

    def has_batch_hooks(self, kind: str) -> bool:
        """``kind`` is ``train``, ``test`` or ``predict``."""
        return bool(self._listeners[f"{kind}_begin"] or self._listeners[f"{kind}_end"])

    def _call(self, hook: str, *args: Any) -> None:
        for cb in self.callbacks:
            getattr(cb, hook)(*args)

    # Plain dicts of logs become metric_names.Logs, which answer both eras' names (acc / accuracy).
    def on_train_begin(self, logs=None): self._call("on_train_begin", as_logs(logs))
    def on_train_end(self, logs=None): self._call("on_train_end", as_logs(logs))
    def on_epoch_begin(self, epoch, logs=None): self._call("on_epoch_begin", epoch, as_logs(logs))
    def on_epoch_end(self, epoch, logs=None): self._call("on_epoch_end", epoch, as_logs(logs))
    def on_test_begin(self, logs=None): self._call("on_test_begin", as_logs(logs))
    def on_test_end(self, logs=None): self._call("on_test_end", as_logs(logs))
    def on_predict_begin(self, logs=None): self._call("on_predict_begin", logs)
    def on_predict_end(self, logs=None): self._call("on_predict_end", logs)

    def on_train_batch_begin(self, batch, logs=None):
        for cb in self._listeners["train_begin"]:
            cb.on_train_batch_begin(batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        for cb in self._listeners["train_end"]:
            cb.on_train_batch_end(batch, logs)

    def on_test_batch_begin(self, batch, logs=None):
        for cb in self._listeners["test_begin"]:
            cb.on_test_batch_begin(batch, logs)

    def on_test_batch_end(self, batch, logs=None):
        for cb in self._listeners["test_end"]:
            cb.on_test_batch_end(batch, logs)

    def on_predict_batch_begin(self, batch, logs=None):
        for cb in self._listeners["predict_begin"]:
            cb.on_predict_batch_begin(batch, logs)

    def on_predict_batch_end(self, batch, logs=None):
        for cb in self._listeners["predict_end"]:
            cb.on_predict_batch_end(batch, logs)

    # Keras 2 aliases
    on_batch_begin = on_train_batch_begin
    on_batch_end = on_train_batch_end


class LazyLogs(Mapping):
    """Batch logs whose metric values are computed (one device sync) only when read.

    ``fixed`` holds plain values (``batch``, ``size``); ``compute`` returns every metric as floats
    and is called at most once per LazyLogs object. As in Keras 2, a batch's ``loss`` is that
    batch's own loss and the metrics are running values over the epoch so far; ``compute`` may
    also return ``RUNNING_LOSS``, the mean loss over the epoch's batches so far, which
    :meth:`running` gives progress displays as ``loss`` (Keras's progress bar shows that average).

    Example::

        >>> logs = LazyLogs({"batch": 1, "size": 32}, lambda: {"loss": 0.25, RUNNING_LOSS: 0.5}, ("loss",))
        >>> logs["size"], logs["loss"], logs.running()["loss"], list(logs)
        (32, 0.25, 0.5, ['batch', 'size', 'loss'])
    """

    __slots__ = ("_fixed", "_compute", "_keys", "_values")

    def __init__(self, fixed: dict[str, Any], compute: Callable[[], dict[str, float]],
                 keys: Iterable[str]) -> None:
        self._fixed = fixed
        self._compute = compute
        self._keys = tuple(fixed) + tuple(k for k in keys if k not in fixed)
        self._values: dict[str, float] | None = None

    def __getitem__(self, key: str) -> Any:
        if key in self._fixed:
            return self._fixed[key]
        if key not in self._keys:
            # another era's spelling of a logged metric (acc for accuracy...)
            other = next((k for k in spellings(key) if k in self._keys), None)
            if other is None:
                raise KeyError(key)
            key = other
        return self._computed()[key]

    def _computed(self) -> dict[str, float]:
        if self._values is None:
            self._values = self._compute()
        return self._values

    def running(self) -> dict[str, Any]:
        """The logs as a progress display shows them: ``loss`` averaged over the epoch's batches
        so far instead of this batch's own."""
        out = dict(self)
        values = self._computed()
        if RUNNING_LOSS in values:
            out["loss"] = values[RUNNING_LOSS]
        return out

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        return f"LazyLogs({dict(self)!r})"


RUNNING_LOSS = "running loss"  # LazyLogs' entry for the epoch's mean loss so far (not a log key)


def running_view(logs: Any) -> Any:
    """What a progress display shows for ``logs``: :meth:`LazyLogs.running` for a fit's batch logs,
    ``logs`` itself otherwise (a dict a user passed)."""
    running = getattr(logs, "running", None)
    return running() if running is not None else logs


class History(Callback):
    """Records epoch logs: ``history.history["loss"]`` is a list with one float an epoch.

    ``fit`` adds one automatically and returns it (also available as ``model.history``).
    ``history`` answers both eras' metric names (``history.history['acc']`` finds ``accuracy``).
    ``epoch`` lists the epoch indices that ran (they start at ``initial_epoch`` or the resume point).
    """

    def __init__(self) -> None:
        super().__init__()
        self.epoch: list[int] = []
        self.history: dict[str, list[float]] = Logs()

    def on_train_begin(self, logs=None) -> None:
        self.epoch = []
        self.history = Logs()

    def on_epoch_end(self, epoch, logs=None) -> None:
        self.epoch.append(epoch)
        for key, value in (logs or {}).items():
            # the key as logged: 'mse' and 'mean_squared_error' (a name and a MeanSquaredError()
            # in compile) are two metrics here, as in Keras 2.3.1, not two spellings of one
            if not dict.__contains__(self.history, key):
                dict.__setitem__(self.history, key, [])
            dict.__getitem__(self.history, key).append(value)
