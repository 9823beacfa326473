"""``Model``: Keras 2's compile/fit/evaluate/predict around any ``torch.nn.Module``.

Example::

    >>> import numpy as np, torch
    >>> from arignote.models import Model
    >>> net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    >>> model = Model(net)
    >>> model.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"])
    >>> x, y = np.random.rand(32, 4).astype("float32"), np.random.randint(0, 3, 32)
    >>> loss, acc = model.evaluate(x, y, verbose=0)

(With a wrapped module, ``sparse_categorical_crossentropy`` and ``categorical_crossentropy``
expect probabilities, as in Keras: end the network with a softmax.)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from arignote import config
from arignote.callbacks.base import CallbackList, History
from arignote.callbacks.stopping import TerminateOnNaN
from arignote.models.generators import GeneratorMethods
from arignote.training import inputs
from arignote.training.loop import Trainer

__all__ = ["Model"]


class Model(GeneratorMethods):
    """Wrap ``module`` (a ``torch.nn.Module``) with the Keras 2 training API.

    Attributes: ``module`` (the torch module), ``device`` (``torch.device`` once placed),
    ``optimizer`` (an :mod:`arignote.optimizers` optimizer after ``compile``), ``history``,
    ``stop_training``, ``resume_epoch`` (set by BackupAndRestore through
    :meth:`load_training_state`), ``epochs_done``.
    """

    def __init__(self, module: torch.nn.Module | None = None, name: str | None = None) -> None:
        if module is not None and not isinstance(module, torch.nn.Module):
            raise TypeError(f"Model() wraps a torch.nn.Module, got {type(module).__name__}; "
                            "use Sequential([...]) for a stack of arignote layers")
        self.module = module
        self.name = name or (type(module).__name__.lower() if module is not None else "model")
        self.optimizer: Any = None
        self.loss: Any = None
        self.loss_fn: Any = None
        self.metrics_list: list[Any] = []
        self.metrics_names: list[str] = []
        self.stop_training = False
        self.resume_epoch: int | None = None
        self.epochs_done = 0
        self.history = History()
        self._trainer: Trainer | None = None
        self._placed = False
        self._compile_args: dict[str, Any] = {}
        self._metric_ids: list[Any] = []
        self._pending_optimizer_state: dict | None = None  # from load_model, applied once placed

    # ------------------------------------------------------------------ hooks for subclasses

    def _ensure_built(self, sample_shape: tuple | None) -> None:
        if self.module is None:
            raise ValueError("this Model wraps no module: pass one, Model(my_torch_module)")

    def expected_input_shape(self) -> tuple | None:
        """Per-sample input shape the model takes (None when unknown, e.g. a wrapped module)."""
        return None

    def _sample_output_shape(self) -> tuple | None:
        """Per-sample output shape (None when unknown or several outputs)."""
        return None

    @property
    def output_shape(self) -> Any:
        """Keras ``model.output_shape`` with the batch dim (None when unknown, e.g. a wrapped module)."""
        return None

    @property
    def _image_input(self) -> bool:
        """Whether 4-D inputs should be stored channels-last (wrapped modules with convolutions)."""
        return any(isinstance(m, torch.nn.Conv2d) for m in self.module.modules())

    # ------------------------------------------------------------------ compile and placement

    def compile(self, optimizer: Any = "rmsprop", loss: Any = None, metrics: Any = None,
                **kwargs: Any) -> None:
        """Choose the optimizer, loss and metrics (names, or arignote objects), Keras 2 style.

        Example: ``model.compile(optimizer=RMSprop(lr=1e-4), loss="categorical_crossentropy",
        metrics=["accuracy"])``.
        """
        from arignote import losses, optimizers
        from arignote import metrics as metrics_mod

        unsupported = sorted(k for k in kwargs if kwargs[k] is not None)
        if unsupported:
            raise TypeError(f"compile() does not support {', '.join(unsupported)}; "
                            "arguments: optimizer, loss, metrics")
        if loss is None:
            raise ValueError("compile() needs a loss, e.g. loss='categorical_crossentropy'")
        if isinstance(metrics, str):
            metrics = [metrics]
        self.loss = loss
        self.loss_fn = losses.get(loss)
        self.optimizer = optimizers.get(optimizer)
        # metrics resolve against the output shape ('acc' is binary for one output unit), known once built
        self.metrics_list = [metrics_mod.get(m, loss) for m in (metrics or [])]
        self._metric_ids = list(metrics or [])
        self.metrics_names = ["loss", *[m.name for m in self.metrics_list]]
        self._compile_args = {"optimizer": optimizer, "loss": loss, "metrics": list(metrics or [])}
        self._trainer = None
        if self._placed:
            self.optimizer.build(list(self.module.parameters()))

    @property
    def compiled(self) -> bool:
        return self.loss_fn is not None

    @property
    def strategy(self) -> Any:
        """The strategy ``fit`` trains with (``SingleDevice`` or data parallel); None before the first use.

        Callbacks ask it who writes files: ``model.strategy.is_main`` is True on rank 0 only.
        """
        return self._trainer.strategy if self._trainer is not None else None

    @property
    def is_main(self) -> bool:
        """True on the process that prints and writes files (rank 0, or the only process)."""
        strategy = self.strategy
        return True if strategy is None else bool(strategy.is_main)

    @property
    def device(self) -> torch.device | None:
        for p in self.module.parameters() if self.module is not None else ():
            return p.device
        return self._trainer.device if self._trainer is not None else None

    def _place(self, device: torch.device) -> None:
        from arignote.precision import dtype_of

        self.module.to(device=device, dtype=dtype_of())
        # convolution weights in channels-last memory format (NHWC kernels; cuDNN/oneDNN fast path)
        for m in self.module.modules():
            w = getattr(m, "weight", None)
            if isinstance(w, torch.nn.Parameter) and w.dim() == 4:
                m.to(memory_format=torch.channels_last)
        from arignote.parallel.placement import apply_placement  # layers under `with arignote.device(..)`

        apply_placement(self.module, getattr(self, "layers", ()), device)
        self._placed = True
        if self.optimizer is not None:
            self.optimizer.build(list(self.module.parameters()))
            if self._pending_optimizer_state is not None:
                self.optimizer.load_state_dict(self._pending_optimizer_state)
                self._pending_optimizer_state = None

    def _get_trainer(self, sample_shape: tuple | None = None, need_compile: bool = True) -> Trainer:
        if need_compile and not self.compiled:
            raise RuntimeError("the model must be compiled before training or evaluation: call "
                               "model.compile(optimizer='rmsprop', loss='categorical_crossentropy') first")
        self._ensure_built(sample_shape)
        if self.compiled and self._metric_ids:
            from arignote import metrics as metrics_mod

            out = self._sample_output_shape()
            self.metrics_list = [metrics_mod.get(m, self.loss, out) for m in self._metric_ids]
            self._metric_ids = []
        if self._trainer is None:
            from arignote import devices, parallel
            from arignote.precision import Precision

            chosen = devices.configured_devices()
            strategy = parallel.strategy_for(chosen)
            device = next((d for d in chosen if str(d.torch) == str(strategy.device)), chosen[0])
            devices.prepare(device, layout=getattr(strategy, "layout", None))
            precision = Precision.from_config(strategy.device)
            if not self._placed or self.device != strategy.device:
                self._place(strategy.device)
            self._trainer = Trainer(self, strategy, precision)
        return self._trainer

    # ------------------------------------------------------------------ training API

    def fit(self, x: Any = None, y: Any = None, batch_size: int | str | None = None, epochs: int = 1,
            verbose: int = 1, callbacks: list | None = None, validation_split: float = 0.0,
            validation_data: Any = None, shuffle: bool = True, initial_epoch: int = 0,
            steps_per_epoch: int | None = None, accumulate: int = 1,
            validation_batch_size: int | None = None, validation_steps: int | None = None,
            validation_freq: Any = 1, max_queue_size: int = 10, workers: int = 1,
            use_multiprocessing: bool = False) -> History:
        """Train for ``epochs`` epochs; returns the :class:`History` (also ``model.history``).

        ``x, y``: arrays (numpy or tensors; images channels-last ``(N, H, W, C)``), or ``x`` alone as
        a ``Sequence``, ``DataLoader``, generator or other iterable of ``(x, y)`` batches (a generator
        needs ``steps_per_epoch``, a validation generator ``validation_steps``). A ``Sequence``'s
        batches are visited in a shuffled order (``shuffle``), fetched ahead by ``workers`` threads
        (up to ``max_queue_size``), and split over the ranks under data parallel.
        ``validation_freq``: validate every N epochs, or at the listed (1-based) epochs.
        ``accumulate=k`` runs each batch as ``k`` micro-batches and one optimizer step (same
        gradients, ``1/k`` of the activation memory). ``batch_size="auto"`` searches the largest
        batch that fits the device (array data only). A step that runs out of memory is redone as
        micro-batches (``memory.on_oom``; issue 7).
        """
        if not self.compiled:
            self._get_trainer()  # raises the "compile first" error
        auto = isinstance(batch_size, str) and batch_size == "auto"  # issue 7: search the batch size
        batch_size = inputs.check_fit_args(None if auto else batch_size, epochs, initial_epoch, accumulate,
                                           steps_per_epoch)
        inputs.check_queue_args(validation_steps, validation_freq, max_queue_size, workers,
                                use_multiprocessing)
        plan = inputs.plan_fit(self, x, y, batch_size, validation_split, validation_data, steps_per_epoch)
        plan.val_steps, plan.workers, plan.max_queue_size = validation_steps, workers, max_queue_size
        trainer = self._get_trainer(plan.sample_shape)
        train, val = inputs.load(plan, trainer, validation_batch_size or batch_size)
        if steps_per_epoch is None and getattr(train, "length", None) is not None:
            plan.steps = train.length  # global batches: the same for any number of processes
        trainer.accumulate = accumulate
        trainer.new_oom_guard()
        if auto:
            from arignote.training.batch_size import trainer_batch_size

            batch_size = trainer_batch_size(trainer, train).batch
            plan.steps = steps_per_epoch or -(-train.n // batch_size)
        self._last_batch_size = batch_size
        from arignote.training import memory_plan

        self._memory_plan = memory_plan.trainer_plan(trainer, train, batch_size)  # model.summary() shows it
        memory_plan.announce(self._memory_plan, verbose=verbose, is_main=trainer.strategy.is_main)
        params = {"epochs": epochs, "steps": plan.steps, "samples": plan.samples,
                  "val_samples": plan.val_samples, "batch_size": batch_size, "verbose": verbose,
                  "do_validation": val is not None,
                  "metrics": trainer.metric_names
                  + ([f"val_{k}" for k in trainer.metric_names] if val is not None else [])}
        cbs = self._fit_callbacks(callbacks, verbose, plan, trainer)
        cblist = CallbackList(cbs, model=self, params=params)
        trainer.skip_nonfinite = any(isinstance(cb, TerminateOnNaN) for cb in cblist)
        trainer.fit(train, val, epochs=epochs, initial_epoch=initial_epoch, batch_size=batch_size,
                    shuffle=shuffle, steps_per_epoch=steps_per_epoch,
                    validation_batch_size=validation_batch_size or batch_size, callbacks=cblist,
                    validation_freq=validation_freq)
        return self.history

    def _fit_callbacks(self, callbacks: list | None, verbose: int, plan: Any, trainer: Trainer) -> list:
        """The user's callbacks with fit's defaults around them, each default only when the user did
        not pass one of its kind: a device-stats monitor first (its figures in the progress line),
        a ``ProgbarLogger`` (``verbose``, rank 0) and a ``History`` (last, as Keras 2)."""
        from arignote.callbacks.device_stats import DeviceStatsMonitor
        from arignote.callbacks.progbar import ProgbarLogger

        user = list(callbacks or [])
        cbs: list = [] if any(isinstance(cb, DeviceStatsMonitor) for cb in user) else [DeviceStatsMonitor()]
        if verbose and trainer.strategy.is_main and not any(isinstance(cb, ProgbarLogger) for cb in user):
            cbs.append(ProgbarLogger("samples" if plan.samples else "steps", verbose=verbose))
        history = next((cb for cb in user if isinstance(cb, History)), None)
        self.history = history if history is not None else History()
        cbs += user + ([] if history is not None else [self.history])
        if trainer.strategy.is_main and config.get("share.status"):  # issue 19: `arignote dash` shows the run
            from arignote.callbacks.status import RunStatus

            cbs.append(RunStatus())
        return cbs

    def evaluate(self, x: Any = None, y: Any = None, batch_size: int | None = None, verbose: int = 1,
                 callbacks: list | None = None, steps: int | None = None, max_queue_size: int = 10,
                 workers: int = 1, use_multiprocessing: bool = False) -> Any:
        """``[loss, *metrics]`` over the data (a scalar when the model has no metric, as Keras).
        ``workers``/``max_queue_size``: threads fetching a ``Sequence``'s batches ahead, as in fit."""
        batch_size = inputs.check_batch(batch_size)
        inputs.check_queue_args(None, 1, max_queue_size, workers, use_multiprocessing)
        plan = inputs.plan_eval(self, x, y, steps)
        plan.workers, plan.max_queue_size = workers, max_queue_size
        trainer = self._get_trainer(plan.sample_shape)
        data = inputs.load_eval(plan, trainer)
        cblist = CallbackList(callbacks or [], model=self, params={"verbose": verbose, "steps": steps})
        cblist.on_test_begin()
        logs = trainer.evaluate(data, batch_size, cblist)
        cblist.on_test_end(logs)
        if verbose:
            print(" - ".join(f"{k}: {v:.4f}" for k, v in logs.items()))
        values = [logs[k] for k in trainer.metric_names]
        return values[0] if len(values) == 1 else values

    def predict(self, x: Any, batch_size: int | None = None, verbose: int = 0,
                callbacks: list | None = None, steps: int | None = None, max_queue_size: int = 10,
                workers: int = 1, use_multiprocessing: bool = False) -> np.ndarray:
        """Model outputs for ``x`` as a numpy array (inference mode, batch by batch on the device)."""
        batch_size = inputs.check_batch(batch_size)
        inputs.check_queue_args(None, 1, max_queue_size, workers, use_multiprocessing)
        plan = inputs.plan_eval(self, x, None, steps, need_targets=False)
        plan.workers, plan.max_queue_size = workers, max_queue_size
        trainer = self._get_trainer(plan.sample_shape, need_compile=False)
        data = inputs.load_eval(plan, trainer)
        cblist = CallbackList(callbacks or [], model=self, params={"verbose": verbose, "steps": steps})
        cblist.on_predict_begin()
        out = trainer.predict(data, batch_size, cblist)
        cblist.on_predict_end()
        return out.float().numpy() if out.dtype in (torch.bfloat16, torch.float16) else out.numpy()

    def train_on_batch(self, x: Any, y: Any) -> Any:
        """One optimizer step on one batch (the global batch: each rank runs its rows under data
        parallel); returns its loss (and metrics) like ``evaluate``."""
        trainer, xb, yb, rows, total = self._one_batch(x, y)
        if trainer.world == 1:
            rows = total = None
        self.module.train()
        trainer.reset_state()
        trainer.train_step(xb, yb, rows, total)
        return self._scalars(trainer)

    def test_on_batch(self, x: Any, y: Any) -> Any:
        """Loss (and metrics) on one batch without updating the weights."""
        trainer, xb, yb, rows, _ = self._one_batch(x, y)
        was = self.module.training
        self.module.eval()
        trainer.reset_state()
        try:
            with torch.no_grad():  # not inference_mode: metric buffers created here are reused in training
                if rows:
                    trainer.test_step(xb, yb)
        finally:
            self.module.train(was)
        return self._scalars(trainer)

    def predict_on_batch(self, x: Any) -> np.ndarray:
        """Outputs for one batch (numpy)."""
        return self.predict(x, batch_size=max(1, len(x)))

    def _one_batch(self, x: Any, y: Any) -> tuple[Trainer, Any, Any, int, int]:
        plan = inputs.plan_eval(self, x, y, None)
        trainer = self._get_trainer(plan.sample_shape)
        data = inputs.load_eval(plan, trainer)
        xb, yb, rows, total = next(iter(data.rank_batches(None, max(1, data.n), trainer.world, trainer.rank)))
        return trainer, xb, yb, rows, total

    @staticmethod
    def _scalars(trainer: Trainer) -> Any:
        logs = trainer.results()
        values = [logs[k] for k in trainer.metric_names]
        return values[0] if len(values) == 1 else values

    # ------------------------------------------------------------------ weights and state

    def get_weights(self) -> list[np.ndarray]:
        """Parameters and buffers as numpy arrays (state_dict order for a wrapped module)."""
        self._ensure_built(None)
        return [t.detach().cpu().numpy().copy() for t in self.module.state_dict().values()]

    def set_weights(self, weights: list) -> None:
        """Load arrays in :meth:`get_weights`'s order and shapes."""
        self._ensure_built(None)
        state = self.module.state_dict()
        if len(weights) != len(state):
            raise ValueError(f"set_weights: the model has {len(state)} weight arrays, got {len(weights)}")
        new = {}
        for (key, old), w in zip(state.items(), weights):
            if tuple(np.shape(w)) != tuple(old.shape):
                raise ValueError(
                    f"set_weights: '{key}' has shape {tuple(old.shape)}, got {tuple(np.shape(w))}")
            new[key] = torch.as_tensor(np.asarray(w)).to(old.dtype)
        self.module.load_state_dict(new)

    def count_params(self) -> int:
        self._ensure_built(None)
        return sum(p.numel() for p in self.module.parameters())

    def save_weights(self, filepath: str) -> None:
        """Write the weights: Keras 2 HDF5 for ``.h5``/``.hdf5``/``.keras`` names, else a checkpoint."""
        from arignote.models import saving

        saving.save_weights(self, filepath)

    def load_weights(self, filepath: str, by_name: bool = False, skip_mismatch: bool = False) -> None:
        """Load weights written by :meth:`save_weights` or :meth:`save`, or by Keras 2 (HDF5; there also
        ``by_name=True`` and ``skip_mismatch=True`` as in Keras 2)."""
        from arignote.models import saving

        saving.load_weights(self, filepath, by_name=by_name, skip_mismatch=skip_mismatch)

    def save(self, filepath: str, include_optimizer: bool = True) -> None:
        """Architecture + weights + optimizer state in one file: Keras 2 HDF5 for ``.h5``/``.hdf5``/``.keras``
        names, arignote's checkpoint for any other."""
        from arignote.models import saving

        saving.save_model(self, filepath, include_optimizer=include_optimizer)

    def to_json(self, **kwargs: Any) -> str:
        """The architecture as Keras 2 JSON (``model_from_json`` rebuilds it, here or in Keras 2)."""
        from arignote.models import saving

        return saving.to_json(self, **kwargs)

    def training_state(self) -> dict[str, Any]:
        """What BackupAndRestore saves: module, optimizer and grad-scaler state, and ``epoch``
        (the number of finished epochs, i.e. the epoch to resume at)."""
        state: dict[str, Any] = {"module": self.module.state_dict(), "epoch": int(self.epochs_done)}
        if self.optimizer is not None and getattr(self.optimizer, "built", True):
            state["optimizer"] = self.optimizer.state_dict()
        if self._trainer is not None:
            state["scaler"] = self._trainer.scaler.state_dict()
        return state

    def load_training_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`training_state`; the next ``fit`` resumes at ``state['epoch']``."""
        self.module.load_state_dict(state["module"])
        if "optimizer" in state and self.optimizer is not None:
            self.optimizer.load_state_dict(state["optimizer"])
        if state.get("scaler") and self._trainer is not None:
            self._trainer.scaler.load_state_dict(state["scaler"])
        self.epochs_done = int(state.get("epoch", 0))
        self.resume_epoch = self.epochs_done

    def summary(self, print_fn: Any = None) -> None:
        from arignote.models import summary

        self._ensure_built(None)
        rows = summary.module_rows(self.module)
        total = sum(p.numel() for p in self.module.parameters())
        trainable = sum(p.numel() for p in self.module.parameters() if p.requires_grad)
        summary.print_summary(summary.render(rows, total, trainable, title=self.name), print_fn)
        from arignote.training.memory_plan import summary_lines

        summary.print_summary(summary_lines(self), print_fn)  # issue 7: the memory plan
