"""One memory plan: what model.summary() shows before fit is fit's plan without the training arrays
(which only fit knows), measured the same way, loss included."""

from __future__ import annotations

import numpy as np

from arignote.layers import Conv2D, Dense, Flatten
from arignote.models import Sequential
from arignote.training.memory_plan import summary_lines


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
    plan = model._memory_plan
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
