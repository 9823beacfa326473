"""Placement contexts: the ``contexts`` flag, ``with arignote.device(...)``, moving layers and
activations, and the summary's Device column (on CPU: contexts may map to cpu)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import arignote
from arignote import config
from arignote.config import ConfigError
from arignote.layers import Conv2D, Dense, Flatten
from arignote.models import Sequential
from arignote.parallel import layer_device
from arignote.parallel.placement import apply_placement, current_context, parse_contexts


def test_parse_contexts():
    assert parse_contexts("dev0->cuda0;dev1->cuda:1; d2 -> gpu3 ;cpu_side->cpu;") == {
        "dev0": "cuda:0", "dev1": "cuda:1", "d2": "cuda:3", "cpu_side": "cpu"}
    assert parse_contexts("") == {}


@pytest.mark.parametrize("text, match", [
    ("dev0=cuda0", "not name->device"),
    ("dev0->tpu0", "'tpu0' is not a device"),
    ("0dev->cpu", "not a context name"),
    ("a->cpu;a->cuda0", "defined twice"),
])
def test_bad_contexts_are_errors(text, match):
    with pytest.raises(ConfigError, match=match):
        parse_contexts(text)


def test_unknown_context_lists_the_configured_ones():
    with config.override(contexts="dev0->cpu;dev1->cuda1"):
        listed = r"device\('dev9'\): unknown context.*dev0 \(cpu\), dev1 \(cuda:1\)"
        with pytest.raises(ConfigError, match=listed):
            with arignote.device("dev9"):
                pass
    with pytest.raises(ConfigError, match="no placement contexts are configured.*contexts=dev0->cuda0"):
        with arignote.device("dev0"):
            pass


def test_device_block_marks_layers_added_inside_it():
    with config.override(contexts="dev0->cpu;dev1->cpu"):
        m = Sequential()
        m.add(Dense(4, input_dim=3))
        with arignote.device("dev1") as dev:
            assert dev == "cpu" and current_context() == "dev1"
            m.add(Dense(2))
        assert current_context() is None
        assert [layer.device_context for layer in m.layers] == [None, "dev1"]
        assert [layer_device(layer) for layer in m.layers] == [None, "cpu"]


def _pair(placed: bool):
    torch.manual_seed(3)
    m = Sequential()
    with arignote.device("dev0") if placed else _null():
        m.add(Conv2D(4, (3, 3), activation="relu", input_shape=(6, 6, 2)))
    with arignote.device("dev1") if placed else _null():
        m.add(Flatten())
        m.add(Dense(3, activation="softmax"))
    m.compile("sgd", "categorical_crossentropy", metrics=["acc"])
    return m


class _null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def test_placed_model_trains_like_the_unplaced_one():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(48, 6, 6, 2)).astype("float32")
    y = np.eye(3, dtype="float32")[rng.integers(0, 3, 48)]
    with config.override(device="cpu", contexts="dev0->cpu;dev1->cpu", print_active_device=False):
        plain, placed = _pair(False), _pair(True)
        h1 = plain.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=False)
        h2 = placed.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=False)
        assert placed.module._arignote_output_hook is not None  # placement was applied
        lines: list[str] = []
        placed.summary(print_fn=lines.append)
    for a, b in zip(plain.get_weights(), placed.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert h1.history["loss"] == pytest.approx(h2.history["loss"], rel=1e-6)
    text = "\n".join(lines)
    assert "Device" in text and text.count("cpu") >= 3


def test_apply_placement_moves_activations_and_is_idempotent():
    seen: list[torch.device] = []

    class Probe(torch.nn.Linear):
        device_context = None

        def forward(self, x):
            seen.append(x.device)
            return super().forward(x)

    a, b = Probe(2, 2), Probe(2, 2)
    b.device_context = "side"
    model = torch.nn.Sequential(a, b)
    with config.override(contexts="side->cpu"):
        assert apply_placement(model, [a, b], "cpu") is True
        assert apply_placement(model, [a, b], "cpu") is True  # hooks replaced, not stacked
        assert len(b._forward_pre_hooks) == 1 and len(model._forward_hooks) == 1
        out = model(torch.ones(1, 2))
        out.sum().backward()
    assert seen == [torch.device("cpu")] * 2 and a.weight.grad is not None
    assert apply_placement(torch.nn.Sequential(), [torch.nn.Linear(1, 1)], "cpu") is False


@pytest.mark.gpu
def test_layers_run_on_their_gpu_and_gradients_flow_back():
    with config.override(device="cuda0", contexts="dev0->cuda0;dev1->cpu", print_active_device=False):
        m = Sequential()
        m.add(Dense(8, input_dim=4))
        with arignote.device("dev1"):
            m.add(Dense(2))
        m.compile("sgd", "mse")
        x = np.ones((8, 4), "float32")
        m.fit(x, np.zeros((8, 2), "float32"), batch_size=4, verbose=0)
        assert next(m.layers[0].parameters()).device.type == "cuda"
        assert next(m.layers[1].parameters()).device.type == "cpu"
        assert m.predict(x).shape == (8, 2)


# ----------------------------------------------------------------------------- placement + data parallel


def test_contexts_are_relative_to_each_replicas_own_gpus():
    from arignote.parallel.placement import (
        configured_contexts,
        device,
        gpus_per_replica,
        relative_contexts,
        replica_gpus,
        set_replica_gpus,
    )

    contexts = {"dev0": "cuda:0", "dev1": "cuda:1", "host": "cpu"}
    assert gpus_per_replica(contexts) == 2 and gpus_per_replica({"a": "cpu"}) == 1
    # device=all on 4 GPUs: 2 replicas of 2 GPUs; replica 1's cuda0/cuda1 are GPUs 2 and 3
    assert [replica_gpus([0, 1, 2, 3], 2, r) for r in range(2)] == [[0, 1], [2, 3]]
    assert relative_contexts(contexts, [2, 3]) == {"dev0": "cuda:2", "dev1": "cuda:3", "host": "cpu"}
    with pytest.raises(ConfigError, match="multiple of 2 GPUs"):
        replica_gpus([0, 1, 2], 2, 0)
    with pytest.raises(ConfigError, match="owns 1 GPU"):
        relative_contexts(contexts, [5])
    with config.override(contexts="dev0->cuda0;dev1->cuda1"):
        set_replica_gpus([2, 3])
        try:
            assert configured_contexts() == {"dev0": "cuda:2", "dev1": "cuda:3"}
            with device("dev1") as dev:
                assert dev == "cuda:3"  # what a layer added here is placed on, in replica 1
        finally:
            set_replica_gpus(None)
        assert configured_contexts() == {"dev0": "cuda:0", "dev1": "cuda:1"}


def test_two_gpus_placed_by_contexts_are_one_replica_not_data_parallel():
    from arignote.parallel import SingleDevice, strategy_for

    with config.override(contexts="dev0->cuda0;dev1->cuda1"):
        s = strategy_for(["cuda:0", "cuda:1"])  # starts nothing: one replica owns both GPUs
    assert isinstance(s, SingleDevice) and str(s.device) == "cuda:0"
