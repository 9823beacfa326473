"""``Model.fit``, ``evaluate`` and ``predict`` on arrays, a ``Sequence``, a generator or a
``DataLoader`` (a mixin of :class:`arignote.models.Model`): each checks Keras 2's arguments, packs
the data (:mod:`.fit_data`), plans the batches (:mod:`arignote.training.inputs`) and hands the loop
to the model's trainer (:mod:`.trainer_setup`) with the callbacks; the model holds no loop logic.

Example::

    >>> import numpy as np, torch
    >>> from arignote.models import Model
    >>> model = Model(torch.nn.Linear(4, 1))
    >>> model.compile("sgd", "mse")
    >>> x, y = np.ones((8, 4), "float32"), np.zeros((8, 1), "float32")
    >>> len(model.fit(x, y, epochs=2, verbose=0).history["loss"]), model.predict(x).shape
    (2, (8, 1))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from arignote.legacy import conversions as legacy_interfaces

if TYPE_CHECKING:
    from arignote.callbacks.base import History

# the training loop, its input checks, the callbacks, device setup and the memory plan are imported
# inside the methods: building a model does not pay for them (issue 32; tests/test_first_use_imports.py)

__all__ = ["FitEvaluatePredict"]


class FitEvaluatePredict:
    """``fit``, ``evaluate``, ``predict`` (``self`` is a :class:`~arignote.models.Model`)."""

    def fit(self, x: Any = None, y: Any = None, batch_size: int | str | None = None, epochs: int = 1,
            verbose: int = 1, callbacks: list | None = None, validation_split: float = 0.0,
            validation_data: Any = None, shuffle: bool | str = True, class_weight: Any = None,
            sample_weight: Any = None, initial_epoch: int = 0,
            steps_per_epoch: int | None = None, accumulate: int = 1,
            validation_batch_size: int | None = None, validation_steps: int | None = None,
            validation_freq: Any = 1, max_queue_size: int = 10, workers: int = 1,
            use_multiprocessing: bool = False, **kwargs: Any) -> History:
        """Train for ``epochs`` epochs; returns the :class:`History` (also ``model.history``).

        ``x, y``: arrays (numpy or tensors; images channels-last ``(N, H, W, C)``), or ``x`` alone as
        a ``Sequence``, ``DataLoader``, generator or other iterable of ``(x, y)`` batches (a generator
        needs ``steps_per_epoch``, a validation generator ``validation_steps``). A ``Sequence``'s
        batches are visited in a shuffled order (``shuffle``), fetched ahead by ``workers`` threads
        (processes with ``use_multiprocessing=True``; up to ``max_queue_size``), and split over the
        ranks under data parallel.
        ``shuffle``: arrays' rows in a new order every epoch (True), in order (False), or whole
        batches in a new order (``'batch'``, as Keras 2's ``batch_shuffle``).
        ``validation_freq``: validate every N epochs, or at the listed (1-based) epochs.
        ``sample_weight`` (one weight per sample, or per time step with ``compile(sample_weight_mode=
        'temporal')``; a list or dict per output), ``class_weight`` (``{class: weight}``, per output
        likewise) and ``validation_data=(x_val, y_val, val_sample_weight)`` weigh the loss as Keras
        2.3.1 does (:mod:`arignote.losses.weighting`); a generator may yield ``(x, y, sample_weight)``.
        ``accumulate=k`` runs each batch as ``k`` micro-batches and one optimizer step (same
        gradients, ``1/k`` of the activation memory). ``batch_size="auto"`` searches the largest
        batch that fits the device (array data only). A step that runs out of memory is redone as
        micro-batches (``memory.on_oom``; issue 7). Keras 1's ``nb_epoch`` still means ``epochs``
        (with Keras 2.3.1's warning; :mod:`arignote.legacy.conversions`).
        """
        # the training loop, callbacks, device setup and the memory plan load with the first fit (issue 32)
        from arignote.callbacks.base import CallbackList
        from arignote.callbacks.stopping import TerminateOnNaN
        from arignote.diagnostics import memory_plan
        from arignote.diagnostics.batch_size import trainer_batch_size
        from arignote.models.fit_setup import callback_validation_data, fit_callbacks, fit_facts
        from arignote.runtime import setup
        from arignote.training import batch_checks, inputs
        from arignote.training.checks import check_steps
        from arignote.training.data import is_array

        epochs = legacy_interfaces.fit_kwargs(kwargs, epochs, FitEvaluatePredict.fit)
        if not self.compiled:
            self._get_trainer()  # raises the "compile first" error
        auto = isinstance(batch_size, str) and batch_size == "auto"  # issue 7: search the batch size
        steps_per_epoch = check_steps(steps_per_epoch, "steps_per_epoch")  # len(x) / 32 runs ceil() steps
        validation_steps = check_steps(validation_steps, "validation_steps")
        batch_size = inputs.check_fit_args(None if auto else batch_size, epochs, initial_epoch, accumulate,
                                           steps_per_epoch)
        inputs.check_queue_args(validation_steps, validation_freq, max_queue_size, workers)
        w = self._sample_weights(x, y, sample_weight, class_weight)
        raw_x, raw_y, raw_validation = x, y, validation_data  # as given: callback.validation_data
        x, y = self._pack(x, y, targets=True)
        if isinstance(validation_data, (list, tuple)) and len(validation_data) in (2, 3) and (
                is_array(validation_data[0]) or isinstance(validation_data[0], (list, dict))):
            vw = self._sample_weights(validation_data[0], validation_data[1],
                                      validation_data[2] if len(validation_data) == 3 else None, None)
            layouts = self._packed_layouts()
            vx, vy = self._pack(validation_data[0], validation_data[1], targets=True)
            if self._packed_layouts() != layouts:  # one packed layout per fit (variable-length inputs)
                raise ValueError(f"validation_data: per-sample shapes {self._packed_layouts()} differ from "
                                 f"the training data's {layouts}; pad both to the same lengths")
            validation_data = (vx, vy, vw)
        plan = inputs.plan_fit(self, x, y, batch_size, validation_split, validation_data, steps_per_epoch,
                               w=w, class_weight=class_weight, validation_batch_size=validation_batch_size)
        inputs.check_stateful_samples(self, plan.samples, None if auto else batch_size)
        plan.val_steps, plan.workers, plan.max_queue_size = validation_steps, workers, max_queue_size
        plan.use_multiprocessing = use_multiprocessing
        trainer = self._get_trainer(plan.sample_shape)
        self._check_trainable_weights_consistency()
        train, val = inputs.load(plan, trainer)
        setup.fast_paths(fit_facts(self, trainer, train))
        if steps_per_epoch is None and getattr(train, "length", None) is not None:
            plan.steps = train.length  # global batches: the same for any number of processes
        trainer.accumulate = accumulate
        trainer.new_oom_guard()
        if auto:
            plan.use_batch_size(trainer_batch_size(trainer, train).batch, train.n)

        self._memory_plan = memory_plan.FitPlan.of(trainer, train, plan.batch_size)  # measured when shown
        memory_plan.announce(self._memory_plan, verbose=verbose, is_main=trainer.strategy.is_main)
        names = trainer.metric_names
        metrics = names + ([f"val_{k}" for k in names] if val is not None else [])
        cbs = fit_callbacks(self, callbacks, verbose, plan, trainer)
        cblist = CallbackList(cbs, model=self, params=plan.callback_params(epochs=epochs, verbose=verbose,
                                                                           metrics=metrics))
        given = callback_validation_data(self, raw_x, raw_y, sample_weight, class_weight, raw_validation,
                                         validation_split)
        for cb in cblist if given is not None else ():
            cb.validation_data = given  # Keras 2.3.1 sets it on every callback of the fit
        trainer.skip_nonfinite = any(isinstance(cb, TerminateOnNaN) for cb in cblist)
        if trainer.skip_nonfinite:
            batch_checks.let_nonfinite_through(train, val)
        with self._trainable_as_compiled():
            trainer.fit(train, val, plan, epochs=epochs, initial_epoch=initial_epoch, shuffle=shuffle,
                        callbacks=cblist, validation_freq=validation_freq)
        return self.history


    def evaluate(self, x: Any = None, y: Any = None, batch_size: int | None = None, verbose: int = 1,
                 sample_weight: Any = None, callbacks: list | None = None, steps: int | None = None,
                 max_queue_size: int = 10, workers: int = 1, use_multiprocessing: bool = False) -> Any:
        """``[loss, *metrics]`` over the data (a scalar when the model has no metric, as Keras).
        ``sample_weight``: as in :meth:`fit` (the loss is then ``sum(w * loss) / samples``).
        ``workers``/``max_queue_size``: threads fetching a ``Sequence``'s batches ahead, as in fit."""
        # the loop's input checks and the callbacks load with the first use (import time, issue 32)
        from arignote.callbacks.base import CallbackList
        from arignote.training import inputs
        from arignote.training.checks import check_steps

        batch_size = inputs.check_batch(batch_size)
        steps = check_steps(steps)
        inputs.check_queue_args(None, 1, max_queue_size, workers)
        w = self._sample_weights(x, y, sample_weight, None)
        x, y = self._pack(x, y, targets=True)
        plan = inputs.plan_eval(self, x, y, steps, w=w)
        inputs.check_stateful_samples(self, plan.samples, batch_size)
        plan.workers, plan.max_queue_size = workers, max_queue_size
        plan.use_multiprocessing = use_multiprocessing
        trainer = self._get_trainer(plan.sample_shape)
        data = inputs.load_eval(plan, trainer)
        cblist = CallbackList(callbacks or [], model=self, params={"verbose": verbose, "steps": steps})
        cblist.on_test_begin()
        logs = trainer.evaluate(data, batch_size, cblist)
        cblist.on_test_end(logs)
        if verbose:
            print(" - ".join(f"{k}: {v:.4f}" for k, v in logs.items()))
        values = trainer.last_values  # a list: two outputs may carry the same name (Keras 2's)
        return values[0] if len(values) == 1 else values

    def predict(self, x: Any, batch_size: int | None = None, verbose: int = 0,
                callbacks: list | None = None, steps: int | None = None, max_queue_size: int = 10,
                workers: int = 1, use_multiprocessing: bool = False) -> np.ndarray:
        """Model outputs for ``x`` as a numpy array (inference mode, batch by batch on the device); for
        0 samples, an empty ``(0, *output shape)`` array."""
        # the loop's input checks and the callbacks load with the first use (import time, issue 32)
        from arignote.callbacks.base import CallbackList
        from arignote.training import inputs
        from arignote.training.checks import check_steps

        batch_size = inputs.check_batch(batch_size)
        steps = check_steps(steps)
        inputs.check_queue_args(None, 1, max_queue_size, workers)
        x, _ = self._pack(x, None)
        out = inputs.empty_prediction(self, lambda shape: self._get_trainer(shape, need_compile=False), x)
        if out is None:  # (0 samples: (0, *output shape), no batch, no callback)
            plan = inputs.plan_eval(self, x, None, steps, need_targets=False)
            inputs.check_stateful_samples(self, plan.samples, batch_size, predicting=True)
            plan.workers, plan.max_queue_size = workers, max_queue_size
            plan.use_multiprocessing = use_multiprocessing
            trainer = self._get_trainer(plan.sample_shape, need_compile=False)
            data = inputs.load_eval(plan, trainer)
            cblist = CallbackList(callbacks or [], model=self, params={"verbose": verbose, "steps": steps})
            cblist.on_predict_begin()
            out = trainer.predict(data, batch_size, cblist)
            cblist.on_predict_end()
        out = out.float() if out.dtype in (torch.bfloat16, torch.float16) else out
        if self._is_graph and len(self.outputs) > 1:  # packed side by side: one array per output
            return [t.numpy() for t in self.module.packed_outputs().unpack(out)]
        return out.numpy()
