"""Out-of-memory resilience through ``Model.fit`` on the CPU, with the fault injector (issue 7)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arignote import config
from arignote.diagnostics import memory_plan
from arignote.models import Model
from arignote.training.oom import UnsplittableOOMError


def _data(n=96, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((n, 6)), rng.random((n, 3))


def _model(seed=0, metrics=("mae",)):
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))
    model = Model(net)
    model.compile("adam", "mse", metrics=list(metrics))
    return model


def _fit(*, batch_size=32, epochs=2, accumulate=1, verbose=0, **flags):
    x, y = _data()
    with config.override(device="cpu", floatX="float64", print_active_device=False, **flags):
        model = _model()
        torch.manual_seed(1)  # the shuffle order
        history = model.fit(x, y, batch_size=batch_size, epochs=epochs, accumulate=accumulate,
                            verbose=verbose)
    return model, history


def _same(a, b, tol=1e-10):
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_allclose(wa, wb, rtol=0, atol=tol)


def test_fit_with_recovery_gives_the_weights_and_history_of_the_unsplit_run():
    plain, h_plain = _fit()
    split, h_split = _fit(memory_oom_inject_above=8)
    guard = split._trainer.oom
    assert guard.k == 4 and guard.inject.count == 2  # found on the first step, remembered afterwards
    _same(plain, split)
    # loss and metrics are counted once per sample, not once per failed try
    np.testing.assert_allclose(h_plain.history["loss"], h_split.history["loss"], rtol=1e-12)
    np.testing.assert_allclose(h_plain.history["mae"], h_split.history["mae"], rtol=1e-12)


def test_fit_accumulate_gives_the_weights_of_the_plain_run():
    plain, _ = _fit()
    accumulated, _ = _fit(accumulate=4, memory_on_oom="raise")
    assert accumulated._trainer.oom.k == 4
    _same(plain, accumulated)


def test_fit_prints_the_notice_once(capsys):
    _fit(memory_oom_inject_above=8, epochs=3)
    err = capsys.readouterr().err
    assert err.count("arignote: out of memory at batch 32") == 1 and "4 micro-batches of 8" in err


def test_fit_in_raise_mode_raises_torch_oom():
    with pytest.raises(torch.OutOfMemoryError):
        _fit(memory_oom_inject_above=8, memory_on_oom="raise")


class _Hungry(torch.nn.Module):
    """A module that runs out of memory at any batch size (in training mode)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(6, 3)

    def forward(self, x):
        if self.training:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 80.00 GiB")
        return self.lin(x)


def test_fit_at_one_sample_per_micro_batch_is_a_clear_error():
    x, y = _data(4)
    with config.override(device="cpu", print_active_device=False):
        model = Model(_Hungry())
        model.compile("sgd", "mse")
        with pytest.raises(UnsplittableOOMError) as info:
            model.fit(x.astype("float32"), y.astype("float32"), batch_size=4, verbose=0)
    text = str(info.value)
    assert "1 sample per micro-batch" in text and "cpu ran out of memory; try: precision=mixed-bf16" in text
    assert "Tried to allocate 80.00 GiB" in text and "RAM" in text


def test_fit_batch_size_auto_finds_the_injected_limit_and_trains_with_it(capsys):
    auto, h_auto = _fit(batch_size="auto", memory_oom_inject_above=24, verbose=2)
    out = capsys.readouterr().out
    assert 'batch_size="auto": 24' in out and "training with batch_size=24" in out
    assert auto._trainer.oom.k == 1  # no split needed afterwards
    direct, h_direct = _fit(batch_size=24)
    _same(auto, direct)  # the trial steps left no trace, and training used 24
    np.testing.assert_allclose(h_auto.history["loss"], h_direct.history["loss"], rtol=1e-12)


def test_fit_batch_size_auto_is_capped_by_the_data():
    auto, _ = _fit(batch_size="auto", epochs=1)
    assert auto.history.params["batch_size"] == 96


def test_fit_batch_size_auto_needs_array_data():
    loader = [(torch.rand(4, 6), torch.rand(4, 3))] * 2
    with config.override(device="cpu", print_active_device=False):
        model = _model()
        with pytest.raises(ValueError, match='batch_size="auto" needs array data'):
            model.fit(loader, batch_size="auto", verbose=0)


def test_fit_shows_the_memory_plan_and_summary_repeats_it(capsys):
    model, _ = _fit(verbose=2)
    out = capsys.readouterr().out
    assert "Memory plan: batch 32 needs about" in out and "(fits)" in out
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert "Memory plan for batch 32 on cpu" in text and "parameters" in text and "activations" in text
    assert "Adam" in text and "free RAM" in text


def test_fit_warns_before_training_when_the_plan_does_not_fit(monkeypatch, capsys):
    monkeypatch.setattr(memory_plan, "available_memory", lambda device: (1024, "memory.limit=1 cap"))
    _fit(verbose=0)
    err = capsys.readouterr().err
    # verbose=0: the counted part alone, no forward pass
    assert "warning: batch 32 needs at least" in err and "memory.limit=1 cap" in err


def test_summary_before_fit_measures_a_sequential_with_its_input_shape():
    from arignote.layers import Dense
    from arignote.models import Sequential

    with config.override(device="cpu", print_active_device=False):
        model = Sequential([Dense(32, input_shape=(10,), activation="relu"), Dense(2)])
        lines = []
        model.summary(print_fn=lines.append)
        assert "shown once the model is compiled" in "\n".join(lines)
        model.compile("sgd", "mse")
        lines = []
        model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert "Memory plan for batch 32 on cpu" in text and "SGD: 0 values per parameter" in text
