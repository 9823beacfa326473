"""The training loop: train/test steps, epochs, validation and callbacks, on one strategy.

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
import sys
from collections.abc import Iterator
from typing import Any

import torch

from arignote import random_state
from arignote.callbacks.base import RUNNING_LOSS, CallbackList, LazyLogs
from arignote.layers.penalties import Penalties
from arignote.parallel.sharding import reassemble_order
from arignote.training import compiled, fused_head
from arignote.training.compiled_grads import StableGrads
from arignote.training.data import ArrayData
from arignote.training.oom import STOPPED, OOMGuard, StepFns, batch_len

__all__ = ["Trainer"]


class Trainer:
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
        self._scaler_view: _ScalerView | None = None
        self._stale_grads = False  # gradients of a finished step, not yet released
        self._stop_request = False  # this rank's stop_training after the last finished batch
        self._loss_sum = torch.zeros((), dtype=_f64(self.device), device=self.device)
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

    # ------------------------------------------------------------------ accumulation on the device

    @property
    def metric_names(self) -> list[str]:
        return ["loss", *[m.name for m in self.model.metrics_list]]

    def reset_state(self) -> None:
        self._loss_sum.zero_()
        self._count = 0
        for m in self.model.metrics_list:
            m.reset()

    def _record(self, loss: torch.Tensor, y_true: Any, y_pred: torch.Tensor, n: int) -> None:
        self._loss_sum.add_(loss.detach(), alpha=n)
        self._count += n
        if self.model.metrics_list and y_true is not None:
            with torch.no_grad():
                for m in self.model.metrics_list:
                    m.update(y_true, y_pred.detach())

    def results(self, reduce: bool = True, buffers: bool = False,
                step: list | None = None) -> dict[str, float]:
        """Loss and metrics so far as floats: one device sync, and under data parallel one sum over
        the ranks of every (sum, count) pair, so each sample counts once whatever rank ran it.
        ``buffers``: average the module's floating buffers (BatchNorm statistics) over the ranks in
        the same reduction (DDP does not broadcast them: see DataParallel.wrap). ``step``: the
        records of one step (this rank's, never reduced): its own loss comes back as ``loss`` in
        the same transfer, and the mean so far as ``RUNNING_LOSS`` (a batch's logs, as Keras 2's).
        Names that repeat (two outputs of one shared layer, as Keras 2 names them) keep the last
        value: :meth:`result_values` has them all, in :attr:`metric_names` order."""
        loss, values, step_loss = self._gathered(reduce, buffers, step)
        out = {"loss": loss}
        for m, v in zip(self.model.metrics_list, values):
            out[m.name] = v
        if step:
            out[RUNNING_LOSS], out["loss"] = out["loss"], step_loss
        return out

    def result_values(self) -> list[float]:
        """:meth:`results` as a list in :attr:`metric_names` order, every entry even where two names
        are the same (what ``train_on_batch``/``test_on_batch`` return, as Keras 2's lists)."""
        loss, values, _ = self._gathered(True, False, None)
        return [loss, *values]

    def _gathered(self, reduce: bool, buffers: bool, step: list | None) -> tuple[float, list[float], float]:
        f64 = _f64(self.device)
        parts = [self._loss_sum.reshape(1).to(f64),
                 torch.tensor([float(self._count)], dtype=f64, device=self.device)]
        sizes = []
        for m in self.model.metrics_list:
            s = m.state().to(self.device, f64).reshape(-1)
            parts.append(s)
            sizes.append(s.numel())
        held = [b for b in self.model.module.buffers() if b.is_floating_point()] if buffers else []
        tail = [b.detach().reshape(-1).to(self.device, f64) for b in held]
        if step:  # the step's loss: its micro-batches' losses weighted by their rows
            rows = sum(r[3] for r in step)
            tail.append(sum(r[0].to(f64) * (r[3] / rows) for r in step).reshape(1))
        state = torch.cat(parts + tail)
        if reduce and self.world > 1:
            state = self.strategy.reduce(state)
            offset = sum(p.numel() for p in parts)
            with torch.no_grad():
                for b in held:
                    b.copy_(state[offset:offset + b.numel()].view_as(b).to(b.device, b.dtype) / self.world)
                    offset += b.numel()
        state = state.cpu()
        count = self.last_count = float(state[1])
        values, offset = [], 2
        for m, size in zip(self.model.metrics_list, sizes):
            values.append(float(m.result_from(state[offset:offset + size])))
            offset += size
        loss = float(state[0]) / count if count else float("nan")
        return loss, values, (float(state[-1]) if step else float("nan"))

    # ------------------------------------------------------------------ steps

    def _forward(self, xb: Any, yb: Any) -> tuple:
        loss, y_pred = self._train_now(xb, yb)
        return loss, self._with_masks(yb), y_pred, batch_len(xb)

    def _loss_and_pred(self, xb: Any, yb: Any) -> tuple[torch.Tensor, Any]:
        """The training forward: the (DDP) module, the loss and the layer penalties (compiled whole
        under jit_compile, its backward with it)."""
        with self.precision.autocast():
            loss, y_pred = self.head.loss_and_pred(self.net, xb, yb, self._loss_with_masks)
            loss = self.penalties.add_to(loss)
        return loss, y_pred

    def _loss_with_masks(self, yb: Any, y_pred: Any) -> torch.Tensor:
        return self.model.loss_fn(self._with_masks(yb), y_pred)

    def _eval_loss(self, xb: Any, yb: Any) -> tuple[torch.Tensor, Any]:
        """The evaluation forward: the bare module (no DDP hook), the loss and the penalties."""
        with self._eval_autograd(), self.precision.autocast():
            y_pred = self.model.module(xb)
            loss = self.penalties.add_to(self.model.loss_fn(self._with_masks(yb), y_pred))
        return loss.detach(), (y_pred.detach() if isinstance(y_pred, torch.Tensor) else y_pred)

    def _predict(self, xb: Any) -> Any:
        with self.precision.autocast():
            return self.model.module(xb)

    def _arm(self, handle: tuple) -> tuple:
        """Arm the strategy's gradient reduction for the backward of this forward (the step's last)."""
        return (self.strategy.reduce_next_backward(self.net, handle[0]), *handle[1:])

    def _backward(self, handle: tuple, weight: float) -> tuple:
        """Backward of one forward, gradients scaled by ``weight``; returns what :meth:`_record` takes
        (recorded once the whole step succeeded: an out-of-memory retry must not count twice)."""
        loss, yb, y_pred, n = handle
        if self._stale_grads:
            # the previous step's gradients are released here, just before the backward that
            # allocates new ones, so the allocator hands their memory straight back (releasing
            # them after the step instead let the forward take it: 5-10 % slower on the CPU CNN)
            self._release_grads()
        # the poisoned loss drives the backward only: the logs keep the loss as it was (inf stays inf)
        trained = _poisoned(loss) if self._poison else loss
        if trained.requires_grad:  # not when nothing is trained (model.trainable = False): Keras 2 then
            self.scaler.scale(trained if weight == 1.0 else trained * weight).backward()  # updates nothing
            self._settle_grads()
        return self._keep(loss.detach()), yb, self._keep(y_pred.detach()), n

    def _forward_backward(self, xb: Any, yb: Any, weight: float = 1.0) -> tuple:
        """One (micro-)batch, forward and backward (the batch-size search's trial step: eager under
        CUDA graphs, where each trial size would record a graph)."""
        self._train_now = self.sizes.trial(self._train_fn, self._loss_and_pred)
        return self._backward(self._forward(xb, yb), weight)

    def _zero_grad(self) -> None:
        """``zero_grad(set_to_none=True)`` of the optimizer's torch param groups, written out: the
        same effect as torch's ``Optimizer.zero_grad`` without its profiler range and dynamo guard
        (14 us a call on the CPU, against 1 us for these assignments; counted in
        tests/test_step_overhead.py)."""
        built = self.model.optimizer.torch
        for group in built.param_groups if built is not None else ():
            for p in group["params"]:
                p.grad = None
        self._stale_grads = False
        self._unsettle_grads()

    def _trained_params(self) -> Iterator[torch.Tensor]:
        built = self.model.optimizer.torch
        for group in built.param_groups if built is not None else ():
            yield from group["params"]

    def _zero_stable_grads(self) -> None:
        """Under CUDA graphs: the finished step's gradients zeroed in their stable buffers."""
        self.stable_grads.zero()
        self._stale_grads = False

    def _optimizer_step(self) -> None:
        """Apply the accumulated gradients (unscaled by the grad scaler); the next backward releases them."""
        opt = self.model.optimizer
        if self.scaler.is_enabled():
            view = self._scaler_view
            if view is None or view.optimizer is not opt:
                fused = self.compiled is not None and self.compiled.update_is_fused
                view = self._scaler_view = _ScalerView(opt, self._torch_step, fused_update=fused)
            self.scaler.unscale_(view)  # before clipping; finds inf/nan gradients on the device
            self.scaler.step(view)  # skips on inf/nan: inside a fused kernel, else after a host read
            self.scaler.update()
        else:
            opt.step(self._torch_step)
        self.penalties.constrain()
        self._stale_grads = True  # cleared (to None) by the next backward: see _backward

    def _grads_finite(self) -> bool:
        """Whether the (reduced) gradients are finite: one host sync, paid only with TerminateOnNaN.
        Every rank holds the same reduced gradients, so every rank decides the same."""
        grads = [p.grad for p in self.model.module.parameters() if p.grad is not None]
        if not grads or bool(torch.stack([torch.isfinite(g).all() for g in grads]).all()):
            return True
        self.model.stop_training = True
        if self.strategy.is_main:
            print("arignote: non-finite gradients: this update was skipped on every rank and training "
                  "stops (TerminateOnNaN)", file=sys.stderr)
        return False

    def train_step(self, xb: Any, yb: Any, rows: int | None = None, global_rows: int | None = None) -> bool:
        """One optimizer step on this rank's ``rows`` rows of a global batch of ``global_rows``
        (both None: the whole batch, one process; ``rows=0``: a padding row, weighted 0 and not
        counted). False when the ranks agreed to stop before the update."""
        if self.oom is None:
            self.new_oom_guard()
        check = self.skip_nonfinite and not self.scaler.is_enabled()
        self._fns.finite = self._grads_finite if check else None
        self._poison = check
        share = None if global_rows is None else (self.world if rows else 0, global_rows)
        self._train_now = self.sizes.pick("train", batch_len(xb), self._train_fn, self._loss_and_pred)
        records = self.oom.step(xb, yb, None, fns=self._fns, share=share)
        if records is STOPPED:
            return False
        self._step_records = records if rows != 0 else None
        if rows != 0:
            for record in records:
                self._record(*record)
        return True

    def new_oom_guard(self) -> None:
        """A fresh out-of-memory guard starting at ``accumulate`` micro-batches (at each ``fit``)."""
        self.oom = OOMGuard(accumulate=self.accumulate, strategy=self.strategy, device=self.device)

    def test_step(self, xb: Any, yb: Any) -> tuple:
        """One evaluation batch, recorded; returns its record (loss, targets, predictions, rows)."""
        # the bare module: no DDP hook in evaluation, so ranks may run different numbers of batches
        loss, y_pred = self.sizes.pick("evaluate", batch_len(xb), self._eval_fn, self._eval_loss)(xb, yb)
        record = (loss, self._with_masks(yb), y_pred, batch_len(xb))
        self._record(*record)
        return record

    def predict_step(self, xb: Any) -> torch.Tensor:
        return self._keep(self.sizes.pick("predict", batch_len(xb), self._predict_fn, self._predict)(xb))

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


class _ScalerView:
    """What ``GradScaler.step`` needs of an optimizer: the torch param groups to unscale, and a
    ``step`` that runs the arignote optimizer (clipping, decay, iteration count).

    With a fused torch optimizer (Adam/AdamW/SGD with ``fused=True``, which set
    ``_step_supports_amp_scaling``) the view says so too: ``GradScaler.step`` then hands it the
    device tensor ``found_inf`` instead of reading it on the host, and the fused kernel skips the
    update itself, so a ``mixed-fp16`` step has no host sync. A skipped step still counts in the
    arignote optimizer's ``iterations`` (its ``decay`` schedule advances, as a torch ``LRScheduler``
    stepped every iteration does); torch's own step count is restored by the kernel. Other
    optimizers (RMSprop, Adadelta, ...) keep GradScaler's host read of ``found_inf`` each step.

    >>> import torch
    >>> from arignote.optimizers import Adam
    >>> w = torch.nn.Parameter(torch.ones(2)); opt = Adam(); _ = opt.build([w])
    >>> _ScalerView(opt)._step_supports_amp_scaling == bool(opt.torch.defaults.get("fused"))
    True
    >>> _ScalerView(opt, torch_step=print)._step_supports_amp_scaling  # a traced update: host path
    False
    """

    def __init__(self, optimizer: Any, torch_step: Any = None, fused_update: bool = False) -> None:
        self.optimizer, self.torch_step = optimizer, torch_step
        self.param_groups = optimizer.torch.param_groups
        self.state = optimizer.torch.state
        # a compiled torch_step that traces the optimizer does so without GradScaler's attributes (host
        # path); one that runs torch's fused kernel as it is (``fused_update``) takes them as eager does
        self._step_supports_amp_scaling = (torch_step is None or fused_update) and bool(
            getattr(optimizer.torch, "_step_supports_amp_scaling", False))

    def step(self) -> None:
        found_inf = getattr(self, "found_inf", None)  # set (and deleted) by GradScaler.step: fused path
        if found_inf is None:
            self.optimizer.step(self.torch_step)
            return
        fused = self.optimizer.torch
        fused.grad_scale, fused.found_inf = getattr(self, "grad_scale", None), found_inf
        try:
            self.optimizer.step(self.torch_step)
        finally:
            del fused.grad_scale, fused.found_inf


def _poisoned(loss: torch.Tensor) -> torch.Tensor:
    """``loss`` times 1 when it is finite, times NaN when not (on the device, no host sync): a
    non-finite loss on any rank then gives non-finite gradients, which DDP's reduction hands to
    every rank, so each rank's own check of its reduced gradients skips the same update.

    >>> _poisoned(torch.tensor(2.0)).item(), _poisoned(torch.tensor(float("inf"))).isnan().item()
    (2.0, True)
    """
    d = loss.detach()
    return loss * (1 + (d - d))  # d - d: 0 when finite (times exactly 1), NaN for inf or NaN


def _same(tensor: Any) -> Any:
    return tensor


def _nothing() -> None:
    return None


def _f64(device: torch.device) -> torch.dtype:
    return torch.float64 if device.type != "mps" else torch.float32


def _due(epoch: int, freq: Any) -> bool:
    """Keras's ``validation_freq``: every ``freq`` epochs (an int), or at the listed epochs (1-based)."""
    if isinstance(freq, int):
        return (epoch + 1) % freq == 0
    return epoch + 1 in freq
