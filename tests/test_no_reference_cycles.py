"""A training step frees its activations and autograd graph by reference counting alone.

A reference cycle that reaches a step's tensors (an autograd Function keeping its own output on
``ctx``, a closure that calls itself over a list of activations) holds the whole graph until Python's
cyclic garbage collector runs; with big activations that is hundreds of MB a step, RSS that climbs
between collections and fresh pages (page faults) at every step. These tests run steps with the
collector disabled and ask it afterwards what it would have had to free: no tensor may be among it.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
import torch

from arignote import activations
from arignote.bench import zoo
from arignote.graph.node import nest_like
from arignote.layers.recurrent import conv_lstm_sequence as recurrence


def _cyclic_garbage(run) -> list:
    """What the cyclic collector finds after ``run()`` (the collector off while it runs)."""
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        run()
        gc.collect()
        found = list(gc.garbage)
    finally:
        gc.garbage.clear()
        gc.set_debug(0)
        if was_enabled:
            gc.enable()
    return found


def _tensors(objects: list) -> list:
    return [tuple(o.shape) for o in objects if isinstance(o, torch.Tensor)]


def test_the_check_sees_a_graph_held_by_a_cycle():
    # the broken outcome: an autograd Function that keeps its output on ctx (a cycle through grad_fn)
    class KeepsOutput(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            ctx.kept = y
            return y

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = torch.ones(3, requires_grad=True)

    def step():
        KeepsOutput.apply(x).sum().backward()

    assert (3,) in _tensors(_cyclic_garbage(step))


def test_conv_lstm_recurrence_is_freed_without_the_collector():
    spec = recurrence.Recurrence(2, (1, 1), activations.get("tanh"), activations.get("hard_sigmoid"),
                                 True, False)
    xc = torch.randn(3 * 4, 8, 5, 5, requires_grad=True)
    w = torch.randn(8, 2, 3, 3, requires_grad=True)
    h = torch.zeros(3, 2, 5, 5)
    refs = []

    def step():
        out, c = recurrence.run(xc, h, h, w, spec)
        refs.append(weakref.ref(out.grad_fn))
        (out.sum() + c.sum()).backward()

    assert _tensors(_cyclic_garbage(step)) == []
    assert refs[0]() is None  # the graph's node went with its last output
    assert w.grad is not None and float(w.grad.abs().sum()) > 0


def test_nest_like_makes_no_cycle():
    leaves = [torch.ones(2, requires_grad=True) * 2 for _ in range(3)]
    found = _cyclic_garbage(lambda: nest_like([0, (0, {"a": 0})], leaves))
    assert found == []
    assert nest_like([0, (0, {"a": 0})], [1, 2, 3]) == [1, (2, {"a": 3})]


@pytest.mark.parametrize("name", sorted(zoo.MODELS))
def test_a_zoo_models_training_step_leaves_no_cycle(name):
    model, x, y = zoo.build(name, zoo.arignote_api(), batch=2)
    model.train_on_batch(x, y)
    found = _cyclic_garbage(lambda: model.train_on_batch(x, y))
    assert _tensors(found) == []


def test_fit_evaluate_predict_leave_no_cycle():
    model, x, y = zoo.build("two_inputs", zoo.arignote_api(), batch=16)
    calls = [lambda: model.fit(x, y, batch_size=4, epochs=1, verbose=0, validation_split=0.25),
             lambda: model.evaluate(x, y, verbose=0), lambda: model.predict(x)]
    for call in calls:
        call()
        assert _tensors(_cyclic_garbage(call)) == []


def test_conv_lstm_training_keeps_its_memory_flat():
    # the symptom of the cycle: with the collector off, each step's graph (here ~1 MB) stayed behind
    from arignote.layers import ConvLSTM2D, Dense, Flatten
    from arignote.models import Sequential

    model = Sequential([ConvLSTM2D(4, (3, 3), padding="same", input_shape=(5, 8, 8, 1)), Flatten(), Dense(1)])
    model.compile("sgd", "mse")
    x, y = np.random.rand(8, 5, 8, 8, 1).astype("float32"), np.zeros((8, 1), "float32")
    model.train_on_batch(x, y)
    found = _cyclic_garbage(lambda: [model.train_on_batch(x, y) for _ in range(3)])
    assert _tensors(found) == []
