"""One holder of a fit's batch size and steps (training.inputs.Plan): the callbacks' Keras 2 params,
batch_size="auto", validation_batch_size and the memory plan all read it."""

from __future__ import annotations

import inspect

import numpy as np
import torch

from arignote import config
from arignote.callbacks import Callback
from arignote.models import Model
from arignote.training import inputs
from arignote.training.inputs import Plan

KERAS2_KEYS = {"batch_size", "epochs", "steps", "samples", "verbose", "do_validation", "metrics"}


class Seen(Callback):
    """The params at train begin and the rows of every train/test batch."""

    def __init__(self):
        super().__init__()
        self.params_at_begin, self.train_rows, self.test_rows = None, [], []

    def on_train_begin(self, logs=None):
        self.params_at_begin = dict(self.params)

    def on_train_batch_begin(self, batch, logs=None):
        self.train_rows.append(logs["size"])

    def on_test_batch_begin(self, batch, logs=None):
        self.test_rows.append(logs["size"])


def _fit(n=40, **kwargs):
    rng = np.random.default_rng(0)
    x, y = rng.random((n, 6)), rng.random((n, 3))
    seen = Seen()
    with config.override(device="cpu", print_active_device=False,
                         memory_oom_inject_above=kwargs.pop("inject", 0)):
        torch.manual_seed(0)
        model = Model(torch.nn.Sequential(torch.nn.Linear(6, 3)))
        model.compile("sgd", "mse", metrics=["mae"])
        model.fit(x, y, verbose=0, callbacks=[seen], **kwargs)
    return model, seen


def test_callbacks_params_have_keras2_keys_and_the_plans_values():
    model, seen = _fit(batch_size=16, epochs=2, validation_split=0.25)
    params = seen.params_at_begin
    assert KERAS2_KEYS <= set(params) and set(params) - KERAS2_KEYS == {"val_samples"}
    assert (params["batch_size"], params["steps"]) == (16, 2)
    assert (params["samples"], params["val_samples"]) == (30, 10)
    assert (params["epochs"], params["verbose"], params["do_validation"]) == (2, 0, True)
    assert params["metrics"] == ["loss", "mae", "val_loss", "val_mae"]
    assert seen.train_rows == [16, 14] * 2 and seen.test_rows == [10] * 2
    assert model.history.params == params and model._memory_plan.batch_size == 16


def test_batch_size_auto_sets_batch_and_steps_in_one_place():
    model, seen = _fit(batch_size="auto", epochs=1, inject=12)  # a batch above 12 rows "runs out"
    assert seen.params_at_begin["batch_size"] == 12 and seen.params_at_begin["steps"] == 4  # 40 rows
    assert seen.train_rows == [12, 12, 12, 4]
    assert model._memory_plan.batch_size == 12


def test_validation_batch_size_reaches_the_validation_pass():
    _, seen = _fit(batch_size=8, epochs=1, validation_data=(np.zeros((10, 6)), np.zeros((10, 3))),
                   validation_batch_size=4)
    assert seen.train_rows == [8] * 5 and seen.test_rows == [4, 4, 2]
    assert seen.params_at_begin["batch_size"] == 8 and seen.params_at_begin["do_validation"] is True


def test_the_plan_is_the_only_holder():
    plan = Plan(samples=100, steps=4, batch_size=32, validation_batch_size=50)
    plan.use_batch_size(10, 100)
    assert (plan.batch_size, plan.steps, plan.val_batch_size) == (10, 10, 50)
    fixed = Plan(steps_per_epoch=3, steps=3, batch_size=32)
    fixed.use_batch_size(10, 100)  # steps_per_epoch wins over the batch count
    assert fixed.steps == 3 and fixed.val_batch_size == 10
    # the parameters that went nowhere are gone
    assert list(inspect.signature(inputs.load).parameters) == ["plan", "trainer"]
    assert "use_multiprocessing" not in inspect.signature(inputs.check_queue_args).parameters
    assert not hasattr(_fit(batch_size=8, epochs=1)[0], "_last_batch_size")
