"""One step of the trainer on one batch: the forward (training, evaluation, prediction), the scaled
backward, the optimizer update and the release of the finished step's gradients, run by the
out-of-memory guard (:class:`~arignote.training.oom.OOMGuard`) through ``StepFns`` (mixed into
:class:`~arignote.training.loop.Trainer`; the epochs around the steps are in
:mod:`arignote.training.loop`).

Example::

    >>> import torch
    >>> from arignote.layers import Dense
    >>> from arignote.models import Sequential
    >>> m = Sequential([Dense(1, input_dim=2)]); m.compile("sgd", "mse")
    >>> t = m._get_trainer((2,))
    >>> t.train_step(torch.ones(4, 2), torch.zeros(4, 1)), tuple(t.predict_step(torch.ones(3, 2)).shape)
    (True, (3, 1))
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import torch

from arignote.training.oom import STOPPED, OOMGuard, batch_len
from arignote.training.scaler_view import ScalerView

__all__ = ["BatchSteps"]


class BatchSteps:
    """The per-batch methods of the trainer; ``self`` is a :class:`~arignote.training.loop.Trainer`
    (its ``__init__`` chooses the forward functions, eager or compiled, and the gradient release)."""

    model: Any
    strategy: Any

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
                view = self._scaler_view = ScalerView(opt, self._torch_step, fused_update=fused)
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


def _poisoned(loss: torch.Tensor) -> torch.Tensor:
    """``loss`` times 1 when it is finite, times NaN when not (on the device, no host sync): a
    non-finite loss on any rank then gives non-finite gradients, which DDP's reduction hands to
    every rank, so each rank's own check of its reduced gradients skips the same update.

    >>> _poisoned(torch.tensor(2.0)).item(), _poisoned(torch.tensor(float("inf"))).isnan().item()
    (2.0, True)
    """
    d = loss.detach()
    return loss * (1 + (d - d))  # d - d: 0 when finite (times exactly 1), NaN for inf or NaN
