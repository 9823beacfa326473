"""The trainer's running loss and metrics, summed on the device as the batches run and read back in
one transfer (under data parallel: one sum over the ranks) when a log needs them (mixed into
:class:`~arignote.training.loop.Trainer`).

Example::

    >>> from arignote.layers import Dense
    >>> from arignote.models import Sequential
    >>> m = Sequential([Dense(1, input_dim=2)]); m.compile("sgd", "mse", metrics=["mae"])
    >>> t = m._get_trainer((2,)); t.reset_state()
    >>> _ = t.test_step(torch.zeros(4, 2), torch.ones(4, 1))  # predicts the bias, 0, for targets 1
    >>> t.result_values(), t.last_count  # loss (mse) and mae over the 4 samples
    ([1.0, 1.0], 4.0)
"""

from __future__ import annotations

from typing import Any

import torch

from arignote.callbacks.base import RUNNING_LOSS

__all__ = ["RunningTotals", "sum_dtype"]


class RunningTotals:
    """Loss and metric sums of the batches so far; ``self`` is a
    :class:`~arignote.training.loop.Trainer` (its ``__init__`` makes ``_loss_sum`` and ``_count``)."""

    model: Any
    strategy: Any
    device: torch.device
    world: int
    _loss_sum: torch.Tensor
    _count: int
    last_count: float

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
        f64 = sum_dtype(self.device)
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


def sum_dtype(device: torch.device) -> torch.dtype:
    """The dtype of the running sums on ``device``: float64, float32 on MPS (which has no float64)."""
    return torch.float64 if device.type != "mps" else torch.float32
