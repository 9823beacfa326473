"""A small stand-in for arignote's Model that implements the callback contract, and a driver that
calls the hooks in the order ``fit`` does (so callbacks are tested without training)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from arignote import checkpoint
from arignote.callbacks import CallbackList, LazyLogs


class FakeOptimizer:
    """A torch optimizer behind the ``lr`` property, like arignote.optimizers."""

    def __init__(self, params, lr: float) -> None:
        self.torch = torch.optim.SGD(params, lr=lr, momentum=0.9)

    @property
    def lr(self) -> float:
        return self.torch.param_groups[0]["lr"]

    @lr.setter
    def lr(self, value: float) -> None:
        for group in self.torch.param_groups:
            group["lr"] = float(value)


class FakeModel:
    def __init__(self, lr: float = 0.1, is_main: bool = True) -> None:
        torch.manual_seed(0)
        self.module = torch.nn.Linear(3, 2)
        self.optimizer = FakeOptimizer(self.module.parameters(), lr)
        self.stop_training = False
        self.resume_epoch = None
        self.is_main = is_main
        self.saved: list[tuple[str, str]] = []  # (kind, path)

    def get_weights(self) -> list[np.ndarray]:
        return [p.detach().numpy().copy() for p in self.module.parameters()]

    def set_weights(self, weights) -> None:
        with torch.no_grad():
            for p, w in zip(self.module.parameters(), weights):
                p.copy_(torch.as_tensor(w))

    def bump(self, value: float) -> None:
        """Set every weight to ``value`` (so tests can tell epochs apart)."""
        with torch.no_grad():
            for p in self.module.parameters():
                p.fill_(value)

    def save(self, path: str) -> None:
        self.saved.append(("model", path))
        checkpoint.save(path, {"kind": "model", "weights": self.get_weights()})

    def save_weights(self, path: str) -> None:
        self.saved.append(("weights", path))
        checkpoint.save(path, {"kind": "weights", "weights": self.get_weights()})

    def training_state(self) -> dict[str, Any]:
        return {"module": self.module.state_dict(), "optimizer": self.optimizer.torch.state_dict()}

    def load_training_state(self, state: dict[str, Any]) -> None:
        self.module.load_state_dict(state["module"])
        self.optimizer.torch.load_state_dict(state["optimizer"])


def drive(model: FakeModel, callbacks: list, epoch_logs: list[dict],
          batch_logs: list[list[dict]] | None = None, weights: list[float] | None = None) -> list[int]:
    """Run the hooks as fit does for ``len(epoch_logs)`` epochs; ``weights[e]`` is the value every
    weight takes during epoch ``e``. Returns the epochs that ran."""
    cbs = CallbackList(callbacks, model=model, params={"epochs": len(epoch_logs), "verbose": 0})
    model.stop_training = False
    model.resume_epoch = None
    cbs.on_train_begin()
    start = model.resume_epoch or 0
    ran = []
    for epoch in range(start, len(epoch_logs)):
        cbs.on_epoch_begin(epoch)
        if weights is not None:
            model.bump(weights[epoch])
        for step, values in enumerate((batch_logs or [[]] * len(epoch_logs))[epoch]):
            fixed = {"batch": step, "size": 4}
            cbs.on_train_batch_begin(step, fixed)
            cbs.on_train_batch_end(step, LazyLogs(fixed, lambda v=values: dict(v), tuple(values)))
            if model.stop_training:
                break
        logs = dict(epoch_logs[epoch])
        cbs.on_epoch_end(epoch, logs)
        ran.append(epoch)
        if model.stop_training:
            break
    cbs.on_train_end()
    return ran
