"""mixed-fp16 with a fused optimizer: GradScaler's skip decision stays on the device (issue 18 item 3).

The mechanism is counted (host reads per steady-state step, with the dispatch-mode recorder of
``arignote.bench.opcount``), and the device-side skip is checked against GradScaler's host path on
steps that overflow: the same steps are skipped, so the weights and the scale end equal.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import arignote
from arignote.bench.opcount import count_fit_step
from arignote.layers import Dense
from arignote.models import Sequential
from arignote.training import loop


def _model(optimizer: str) -> Sequential:
    torch.manual_seed(0)
    m = Sequential([Dense(16, activation="relu", input_shape=(20,)), Dense(1)])
    m.compile(optimizer, "mse")
    return m


def _data(n: int = 256):
    rng = np.random.default_rng(0)
    return rng.random((n, 20), dtype=np.float32), rng.random((n, 1), dtype=np.float32)


@pytest.mark.parametrize("optimizer, syncs", [("adam", 0), ("sgd", 0), ("rmsprop", 1)])
def test_host_reads_per_fp16_step(optimizer, syncs):
    x, y = _data()
    with arignote.override(precision="mixed-fp16"):
        model = _model(optimizer)
        assert model.optimizer is not None
        counted = count_fit_step(model, x, y, 32)
    # Adam and SGD are fused on the CPU and GPU (optimizer.impl=auto): no read; RMSprop has no fused
    # kernel, so GradScaler reads found_inf on the host once a step (documented in the README)
    assert counted.syncs == syncs, [op.name for op in counted.ops if op.sync]


def _train_overflowing(optimizer: str, device_skip: bool, monkeypatch) -> tuple[list, float, int]:
    """A loss scaled so large that the first fp16 backwards overflow: GradScaler skips those steps."""
    if not device_skip:
        original = loop._ScalerView.__init__

        def host_path(self, *args, **kwargs):
            original(self, *args, **kwargs)
            self._step_supports_amp_scaling = False

        monkeypatch.setattr(loop._ScalerView, "__init__", host_path)
    x, y = _data(128)
    with arignote.override(precision="mixed-fp16"):
        torch.manual_seed(0)
        m = Sequential([Dense(16, activation="relu", input_shape=(20,)), Dense(1)])
        m.compile(optimizer, lambda t, p: ((t - p) ** 2).mean() * 3e4)
        m.fit(x, y, batch_size=32, epochs=2, shuffle=False, verbose=0)
        scale = m._trainer.scaler.get_scale()
    monkeypatch.undo()
    return [w.copy() for w in m.get_weights()], scale, m.optimizer.iterations


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_device_skip_equals_host_skip_on_overflowing_steps(optimizer, monkeypatch):
    dev_w, dev_scale, dev_iters = _train_overflowing(optimizer, True, monkeypatch)
    host_w, host_scale, host_iters = _train_overflowing(optimizer, False, monkeypatch)
    for a, b in zip(dev_w, host_w):
        np.testing.assert_array_equal(a, b)
    assert dev_scale == host_scale < 65536.0  # steps were skipped (the scale halved)
    # the host path does not count a skipped step; the device path cannot know without a read
    assert dev_iters == 8 and host_iters < 8
