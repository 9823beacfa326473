"""One memory plan: what model.summary() shows before fit is fit's plan without the training arrays
(which only fit knows), measured the same way, loss included; and fit runs the plan's forward passes
only when it shows the plan."""

from __future__ import annotations

import numpy as np
import pytest

from arignote.diagnostics.memory_plan import summary_lines
from arignote.layers import Conv2D, Dense, Flatten
from arignote.models import Sequential


def _model(loss: str) -> Sequential:
    model = Sequential()
    model.add(Conv2D(8, (3, 3), padding="same", activation="relu", input_shape=(8, 8, 1)))
    model.add(Flatten())
    model.add(Dense(10, activation="softmax"))
    model.compile(optimizer="adam", loss=loss)
    return model


def _row(text: str, name: str) -> str:
    return next(line for line in text.splitlines() if line.strip().startswith(name))


def test_summary_before_fit_is_fits_plan_without_the_data(capsys):
    model = _model("categorical_crossentropy")
    before = summary_lines(model, 64)
    x = np.random.default_rng(0).random((256, 8, 8, 1), dtype=np.float32)
    y = np.eye(10, dtype=np.float32)[np.arange(256) % 10]
    model.fit(x, y, batch_size=64, epochs=1, verbose=0)
    plan = model._memory_plan.measure()
    after = summary_lines(model)
    assert after.startswith(plan.render())  # after fit, summary shows fit's own plan
    for name in ("parameters", "gradients", "optimizer", "activations"):
        assert _row(before, name) == _row(after, name), name
    assert "at fit" in _row(before, "data") and plan.data == x.nbytes + y.nbytes
    total_before = plan.total - plan.data
    from arignote.sizes import format_mib

    assert format_mib(total_before) in _row(before, "total")


def test_sparse_targets_fall_back_to_the_forward_pass_alone():
    model = _model("sparse_categorical_crossentropy")
    text = summary_lines(model, 32)  # zeros shaped like the output are not class indices: no loss
    assert text.startswith("Memory plan for batch 32 on cpu:") and "activations" in text


def _forward_calls(verbose: int, summary: bool = False) -> int:
    model = _model("categorical_crossentropy")
    calls = []
    model.module.register_forward_hook(lambda *a: calls.append(1))
    x = np.random.default_rng(0).random((64, 8, 8, 1), dtype=np.float32)
    y = np.eye(10, dtype=np.float32)[np.arange(64) % 10]
    model.fit(x, y, batch_size=16, epochs=1, verbose=verbose)  # 4 steps, no validation
    if summary:
        model.summary()
    return len(calls)


@pytest.mark.parametrize("verbose, summary, passes",
                         [(0, False, 0), (2, False, 2), (0, True, 2), (2, True, 2)])
def test_fit_runs_the_plans_forward_passes_only_when_it_is_shown(verbose, summary, passes, capsys):
    assert _forward_calls(verbose, summary) == 4 + passes  # 4 training steps + the plan's 2 (once)
    shown = capsys.readouterr().out
    assert ("Memory plan: batch 16 needs about" in shown) == bool(verbose)
    assert ("Memory plan for batch 16 on cpu" in shown) == summary


def test_a_silent_fit_still_warns_when_the_counted_part_does_not_fit(monkeypatch, capsys):
    from arignote.diagnostics import memory_plan

    monkeypatch.setattr(memory_plan, "available_memory", lambda device: (1024, "memory.limit=1 cap"))
    calls = []
    model = _model("categorical_crossentropy")
    model.module.register_forward_hook(lambda *a: calls.append(1))
    x = np.zeros((16, 8, 8, 1), dtype=np.float32)
    model.fit(x, np.eye(10, dtype=np.float32)[np.arange(16) % 10], batch_size=16, epochs=1, verbose=0)
    err = capsys.readouterr().err
    assert "needs at least (activations not measured)" in err and "memory.limit=1 cap" in err
    assert len(calls) == 1  # the one training step: no measuring pass
    plan = model._memory_plan.counted
    assert not plan.measured and plan.activations == 0 and "not measured" in plan.render()
