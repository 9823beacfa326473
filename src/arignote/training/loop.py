"""The training loop: epochs, validation and callbacks, on one strategy (:class:`Trainer`); its
per-batch steps are :mod:`~arignote.training.batch_steps`, its running loss and metrics
:mod:`~arignote.training.running_totals`.

The hot path per batch is: this rank's rows of the global batch (sliced on the device), forward
under autocast, loss, scaled backward, optimizer step, and a few device ops that accumulate the
loss and the metrics. Nothing reads a value back to the host until a log point (epoch end, a
progress-bar redraw, or a callback that reads the batch logs).

Under data parallel the module trained is the DDP-wrapped one, always: its gradient buckets are
reduced while the backward runs. A step is run by the out-of-memory guard
(:class:`~arignote.training.oom.OOMGuard`) as ``k`` micro-batches (``accumulate``, raised on out of
memory), every forward under ``no_sync()``; after the last forward the step's small agreement
(the out-of-memory decision and the stop requests of every rank) is handed to the strategy, DDP is
armed for the last backward, whose gradient all-reduce carries it, and it is read after that
backward, before the update: exactly one gradient reduction per optimizer step and no collective
of the step's own, no rank ever waits alone in a collective, no blocking rendezvous inside the step.

Example::

    >>> from arignote.models import Sequential
    >>> from arignote.layers import Dense
    >>> import numpy as np
    >>> m = Sequential([Dense(1, input_dim=2)]); m.compile("sgd", "mse")
    >>> h = m.fit(np.zeros((8, 2), "float32"), np.zeros((8, 1), "float32"), verbose=0)
    >>> list(h.history)
    ['loss']
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Iterator
from typing import Any

import torch

from arignote import random_state
from arignote.callbacks.base import CallbackList, LazyLogs
from arignote.layers.penalties import Penalties
from arignote.parallel.sharding import reassemble_order
from arignote.training import compiled, fused_head
from arignote.training.batch_steps import BatchSteps
from arignote.training.compiled_grads import StableGrads
from arignote.training.data import ArrayData
from arignote.training.oom import OOMGuard, StepFns
from arignote.training.running_totals import RunningTotals, sum_dtype
from arignote.training.scaler_view import ScalerView

__all__ = ["Trainer"]

_ScalerView = ScalerView  # its name here before the split (tests patch it as loop._ScalerView)


class Trainer(BatchSteps, RunningTotals):
    """Runs ``fit``/``evaluate``/``predict`` of one compiled model on one strategy.

    ``model`` provides ``module`` (the torch module), ``loss_fn(y_true, y_pred)``, ``metrics_list``
    (metric objects), ``optimizer`` and ``stop_training``/``resume_epoch``; ``precision`` provides
    ``autocast()`` and ``scaler`` (a ``torch.amp.GradScaler``, disabled when not needed).
    ``skip_nonfinite`` (set by ``fit`` when a ``TerminateOnNaN`` is among the callbacks): a step whose
    loss is not finite on some rank is applied on no rank (its gradients are made non-finite, and
    the reduced gradients, the same on every rank, are checked before the update; the callback
    then stops training).
    """

    def __init__(self, model: Any, strategy: Any, precision: Any) -> None:
        self.model = model
        self.strategy = strategy
        self.world, self.rank = strategy.world_size, strategy.rank
        self.device: torch.device = strategy.device
        self.precision = precision
        self.scaler = precision.scaler
        self.net = strategy.wrap(model.module, stepped=True)  # DDP under data parallel; trained through
        self.penalties = Penalties(model.module)  # regularizers / add_loss / constraints of the layers
        self.accumulate = 1
        self.skip_nonfinite = False
        self.oom: OOMGuard | None = None
        self._scaler_view: ScalerView | None = None
        self._stale_grads = False  # gradients of a finished step, not yet released
        self._stop_request = False  # this rank's stop_training after the last finished batch
        self._loss_sum = torch.zeros((), dtype=sum_dtype(self.device), device=self.device)
        self._step_records: list | None = None  # the last training step's (its batch logs' loss)
        self._count = 0
        self.last_count = 0.0  # samples behind the last results(), over all ranks
        self.last_values: list[float] = []  # the last evaluate's loss and metrics, in metric_names order
        # compile(jit_compile=...) / the jit flag: the step's arithmetic through torch.compile
        plan, notes = compiled.resolve(getattr(model, "jit_compile", None), self.device)
        self.compiled: compiled.CompiledSteps | None = None
        # a custom loss taking K.gradients with respect to graph tensors (WGAN-GP's penalty) needs
        # autograd in evaluation too, as Keras 2's one graph had it: chosen once, not per batch
        self._eval_autograd = (torch.enable_grad if getattr(model.module, "grad_slots", None)
                               else contextlib.nullcontext)
        self._train_fn, self._eval_fn, self._predict_fn = self._loss_and_pred, self._eval_loss, self._predict
        self._train_now = self._train_fn  # this step's training forward (see train_step)
        self._keep = _same
        self._torch_step = None  # the torch optimizer's own step
        self.sizes: compiled.AllSizes = compiled.AllSizes()  # under CUDA graphs: which batches run compiled
        # a finished step's gradients are released (set to None) before the next backward; under CUDA
        # graphs they stay in stable buffers instead (training/compiled_grads.py: accumulation)
        self._release_grads, self._settle_grads, self._unsettle_grads = self._zero_grad, _nothing, _nothing
        self.stable_grads: StableGrads | None = None
        if plan is not None:
            steps = compiled.CompiledSteps(plan, self._train_fn, self._eval_fn, self._predict_fn,
                                           model.optimizer)
            self.compiled = steps
            self._train_fn, self._eval_fn, self._predict_fn = steps.train, steps.evaluate, steps.predict
            self._keep, self._torch_step = steps.keep, steps.optimizer_step
            self.sizes = steps.sizes
            compiled.announce(plan, notes, self.device, strategy.is_main)
            if plan.cudagraphs:
                grads = self.stable_grads = StableGrads(self._trained_params)
                self._release_grads, self._settle_grads = self._zero_stable_grads, grads.settle
                self._unsettle_grads = grads.unsettle
        self._fns = StepFns(self._forward, self._backward, self._optimizer_step, self._zero_grad,
                            no_sync=lambda: strategy.no_sync(self.net),
                            arm=self._arm,
                            stand_in=lambda: strategy.stand_in_backward(self.net),
                            reduced=lambda: strategy.check_reduced(self.net),
                            stop=lambda: self._stop_request,
                            carry=lambda flags: strategy.agree_in_reduction(self.net, flags))
        self._poison = False  # TerminateOnNaN: a non-finite loss makes non-finite gradients
        # targets + the output masks of their forward (Keras 2.3.1 weighs loss and metrics by them)
        masks = getattr(model, "_mask_targets", None)
        self._with_masks = (masks() if masks is not None else None) or _same
        # the training forward of a softmax/sigmoid classifier: its cross-entropy from the logits
        # (not with output masks, which weigh the loss, nor under jit_compile, which fuses by itself)
        fuse = self.compiled is None and self._with_masks is _same
        self.head = fused_head.for_model(model) if fuse else fused_head.PlainHead()

    # ------------------------------------------------------------------ batches

    def _train_batches(self, data: Any, epoch: int, batch_size: int, shuffle: bool | str,
                       steps: int | None) -> Iterator[tuple[Any, Any, int, int]]:
        """This rank's rows of each global batch of the epoch: ``(x, y, rows, global rows)``."""
        if isinstance(data, ArrayData):
            # shuffle=False over one whole pass: the rows in order, as slices (views, nothing copied)
            order = None if not shuffle and steps is None else \
                self._epoch_order(data.n, epoch, shuffle, steps, batch_size)
            return data.rank_batches(order, batch_size, self.world, self.rank)
        order = self._epoch_order(len(data), epoch, shuffle, steps, 1) if data.indexable else None
        return data.rank_batches(order, self.world, self.rank, epoch=epoch)

    def _epoch_order(self, n: int, epoch: int, shuffle: bool | str, steps: int | None,
                     per_step: int) -> torch.Tensor:
        """The epoch's order of samples (arrays) or batches (a Sequence), the same on every rank;
        an epoch of ``steps`` steps may take more than one pass over the data."""
        order = self._one_pass(n, epoch, shuffle, per_step)
        if steps is not None:
            passes = math.ceil(steps / max(1, math.ceil(n / per_step)))
            if passes > 1:
                more = [self._one_pass(n, epoch, shuffle, per_step) for _ in range(1, passes)]
                order = torch.cat([order, *more])
            order = order[:steps * per_step]
        return order

    def _one_pass(self, n: int, epoch: int, shuffle: bool | str, per_step: int) -> torch.Tensor:
        """One pass over ``n`` samples. ``shuffle='batch'`` (Keras 2's ``batch_shuffle``, meant for
        HDF5 arrays read in slices): the whole batches of ``per_step`` rows in a shuffled order, each
        batch's rows contiguous and in order, the incomplete last batch at the end.

        >>> from arignote.parallel.single import SingleDevice
        >>> t = Trainer.__new__(Trainer); t.strategy = SingleDevice("cpu"); _ = torch.manual_seed(1)
        >>> t._one_pass(7, 0, "batch", 3).tolist()
        [3, 4, 5, 0, 1, 2, 6]
        """
        if shuffle == "batch" and per_step > 1:
            blocks = n // per_step
            starts = self.strategy.order(blocks, epoch, True) * per_step
            whole = (starts[:, None] + torch.arange(per_step)).reshape(-1)
            return torch.cat([whole, torch.arange(blocks * per_step, n)])
        return self.strategy.order(n, epoch, bool(shuffle))

    def _eval_batches(self, data: Any, batch_size: int) -> Iterator[tuple[Any, Any, int, int]]:
        if isinstance(data, ArrayData):
            return data.rank_batches(None, batch_size, self.world, self.rank)
        return data.rank_batches(None, self.world, self.rank)

    # ------------------------------------------------------------------ loops

    def fit(self, train: Any, val: Any, plan: Any, **kwargs: Any) -> None:
        """Run the epochs (:meth:`_epochs`); ``memory.host_cache`` is already in force (applied once per
        process when the model's device was prepared: :class:`arignote.runtime.setup.HostMemory`). Dropout
        masks, noise and the shuffle order follow torch's RNG, seeded here from numpy's unless the user
        seeded torch (:mod:`arignote.random_state`), as Keras 2 runs followed ``numpy.random.seed``."""
        random_state.follow_numpy()
        self._epochs(train, val, plan, **kwargs)

    def _epochs(self, train: Any, val: Any, plan: Any, *, epochs: int, initial_epoch: int,
                shuffle: bool | str, callbacks: CallbackList, validation_freq: Any = 1) -> None:
        """The epochs of a fit; ``plan`` (:class:`arignote.training.inputs.Plan`) holds its batch
        sizes and steps."""
        model = self.model
        batch_size, steps_per_epoch = plan.batch_size, plan.steps_per_epoch
        model.stop_training = False
        model.epoch_interrupted = False
        callbacks.on_train_begin()
        # a resume point set by load_training_state (before fit, or by BackupAndRestore in
        # on_train_begin) wins over initial_epoch, once
        start = model.resume_epoch if model.resume_epoch is not None else initial_epoch
        model.resume_epoch = None
        self.sizes.begin("train")
        keys = self.metric_names
        single = self.world == 1
        logs: dict[str, float] = {}
        for epoch in range(start, epochs):
            model.module.train()
            self.reset_state()
            self._stop_request = False
            callbacks.on_epoch_begin(epoch)
            listen = callbacks.has_batch_hooks("train")
            batch_values = self._batch_results
            interrupted = False
            batches = self._train_batches(train, epoch, batch_size, shuffle, steps_per_epoch)
            for step, (xb, yb, rows, total) in enumerate(batches):
                if single and self._stop_request:  # set during the previous batch: stop before this one
                    interrupted = True
                    break
                if listen:
                    fixed = {"batch": step, "size": total}  # the global batch, as one process sees it
                    callbacks.on_train_batch_begin(step, fixed)
                if not self.train_step(xb, yb, None if single else rows, None if single else total):
                    interrupted = True  # a rank asked to stop after the previous batch: all stop here
                    break
                if listen:
                    callbacks.on_train_batch_end(step, LazyLogs(fixed, batch_values, keys))
                self._stop_request = model.stop_training
            logs = self.results(buffers=not single)
            if self.last_count == 0:
                raise ValueError("the training data yielded no batch this epoch; check the data or "
                                 "steps_per_epoch")
            if not interrupted and val is not None and _due(epoch, validation_freq):
                callbacks.on_test_begin()  # and the test batch hooks, as Keras 2.3.1
                val_logs = self.evaluate(val, plan.val_batch_size, callbacks)
                callbacks.on_test_end(val_logs)
                logs.update({f"val_{k}": v for k, v in val_logs.items()})
            if self.compiled is not None:
                self.compiled.check_recompile_limit(self.strategy.is_main)
            model.epoch_interrupted = interrupted
            if not interrupted:
                model.epochs_done = epoch + 1
            callbacks.on_epoch_end(epoch, logs)
            if steps_per_epoch is None and getattr(train, "indexable", False):
                # Keras 2.3.1 recounts a Sequence's batches after each epoch (its length may change)
                plan.steps = len(train)
                callbacks.set_params({**callbacks.params, "steps": plan.steps})
            if single:
                stop = model.stop_training
            else:
                stop, fatal = self.strategy.agree([int(bool(model.stop_training)), self.oom.fatal])
                self.oom.check_fatal(fatal)
            if stop or interrupted:
                break
        if self._stale_grads:  # nothing needs the last step's gradients after training
            self._zero_grad()
        callbacks.on_train_end(logs)

    def _batch_results(self) -> dict[str, float]:
        """A batch's logs (this rank's): the last step's own loss, as Keras 2 logs it (a LossHistory
        callback's list), the metrics over the epoch so far (Keras 2's are running values too),
        and the running loss for progress displays (:meth:`LazyLogs.running`)."""
        return self.results(reduce=False, step=self._step_records)

    def evaluate(self, data: Any, batch_size: int, callbacks: CallbackList | None) -> dict[str, float]:
        """Loss and metrics over ``data`` in eval mode without autograd; under data parallel every
        sample is counted once, on the rank that ran it, and the sums are added over the ranks."""
        module = self.model.module
        was_training = module.training
        module.eval()
        self.reset_state()
        self.sizes.begin("evaluate")
        listen = callbacks is not None and callbacks.has_batch_hooks("test")
        keys = self.metric_names
        try:
            with torch.no_grad():  # not inference_mode: metric buffers created here are reused in training
                for step, (xb, yb, rows, _) in enumerate(self._eval_batches(data, batch_size)):
                    if rows == 0:
                        continue  # another rank has every row of this (last, small) batch
                    if listen:
                        fixed = {"batch": step, "size": rows}
                        callbacks.on_test_batch_begin(step, fixed)
                    record = self.test_step(xb, yb)
                    if listen:
                        logs = functools.partial(self.results, reduce=False, step=[record])
                        callbacks.on_test_batch_end(step, LazyLogs(fixed, logs, keys))
            self.last_values = self.result_values()  # every value, even under a repeated name
            if self.last_count == 0:
                raise ValueError("the evaluation data yielded no batch")
            return dict(zip(keys, self.last_values))
        finally:
            module.train(was_training)

    def predict(self, data: Any, batch_size: int, callbacks: CallbackList | None) -> torch.Tensor:
        """Outputs for every sample of ``data`` in input order, concatenated on the host (under data
        parallel each rank predicts its rows and every rank returns all of them)."""
        module = self.model.module
        was_training = module.training
        module.eval()
        outs, totals = [], []
        self.sizes.begin("predict")
        listen = callbacks is not None and callbacks.has_batch_hooks("predict")
        try:
            with torch.no_grad():  # not inference_mode: metric buffers created here are reused in training
                for step, (xb, _, rows, total) in enumerate(self._eval_batches(data, batch_size)):
                    totals.append(total)
                    if rows == 0:
                        continue
                    if listen:
                        callbacks.on_predict_batch_begin(step, {"batch": step, "size": rows})
                    out = self.predict_step(xb)
                    outs.append(out)
                    if listen:
                        callbacks.on_predict_batch_end(step, {"batch": step, "size": rows, "outputs": out})
        finally:
            module.train(was_training)
        if not totals:
            raise ValueError("the prediction data yielded no batch")
        if self.world == 1:
            return torch.cat(outs).cpu()
        local = torch.cat(outs) if outs else torch.empty(0)
        parts = [p.cpu() for p in self.strategy.gather(local)]
        return torch.cat([parts[r][a:b] for r, a, b in reassemble_order(totals, self.world)])


def _same(tensor: Any) -> Any:
    return tensor


def _nothing() -> None:
    return None


def _due(epoch: int, freq: Any) -> bool:
    """Keras's ``validation_freq``: every ``freq`` epochs (an int), or at the listed epochs (1-based)."""
    if isinstance(freq, int):
        return (epoch + 1) % freq == 0
    return epoch + 1 in freq
