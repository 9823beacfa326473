"""KerasRMSprop's checkpoints are torch.optim.RMSprop's: the same keys per parameter (``step``,
``square_avg``, ``momentum_buffer`` with momentum), the same values, loadable both ways, and training
continues identically after a reload; the step counts stay right for compiled steps."""

from __future__ import annotations

import io

import pytest
import torch

from arignote import optimizers
from arignote.optimizers.kernels import KerasRMSprop


def _params(seed: int = 0) -> list[torch.nn.Parameter]:
    torch.manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(5, 3)), torch.nn.Parameter(torch.randn(3)),
            torch.nn.Parameter(torch.randn(2))]


def _feed(params, step: int) -> None:
    """Gradients for ``step``; the last parameter gets one every other step only (its own count)."""
    gen = torch.Generator().manual_seed(100 + step)
    for i, p in enumerate(params):
        g = torch.randn(p.shape, generator=gen)
        p.grad = None if (i == 2 and step % 2) else g


def _through_a_file(state: dict) -> dict:
    buf = io.BytesIO()
    torch.save(state, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=True)


def _same_state(a: dict, b: dict) -> None:
    assert a["state"].keys() == b["state"].keys()
    for index, slots in a["state"].items():
        other = b["state"][index]
        assert list(slots) == list(other), index  # the same keys in the same order
        for key, value in slots.items():
            assert value.dtype == other[key].dtype and torch.equal(value, other[key]), (index, key)


def _run(opt, params, steps: range) -> None:
    for step in steps:
        _feed(params, step)
        opt.step()


KWARGS = [dict(lr=0.01, alpha=0.8, eps=1e-3), dict(lr=0.01, alpha=0.9, eps=1e-7, momentum=0.5)]


@pytest.mark.parametrize("foreach", [False, True])
@pytest.mark.parametrize("kwargs", KWARGS, ids=["keras_rule", "momentum"])
def test_state_dict_is_torch_s_keys_and_values(foreach, kwargs):
    ours, theirs = _params(), _params()
    a = KerasRMSprop(ours, foreach=foreach, **kwargs)
    b = torch.optim.RMSprop(theirs, foreach=foreach, **kwargs)
    _run(a, ours, range(5))
    _run(b, theirs, range(5))
    _same_state(a.state_dict(), b.state_dict())
    keys = ["step", "square_avg"] + (["momentum_buffer"] if kwargs.get("momentum") else [])
    assert list(a.state_dict()["state"][0]) == keys
    assert [float(a.state_dict()["state"][i]["step"]) for i in range(3)] == [5.0, 5.0, 3.0]


@pytest.mark.parametrize("kwargs", KWARGS, ids=["keras_rule", "momentum"])
def test_ours_into_torch_s_and_back_trains_on_identically(kwargs):
    reference = _params()
    ref = torch.optim.RMSprop(reference, **kwargs)  # never reloaded
    _run(ref, reference, range(7))

    ours = _params()
    a = KerasRMSprop(ours, **kwargs)
    _run(a, ours, range(3))
    saved = _through_a_file(a.state_dict())
    torch_s = torch.optim.RMSprop(ours, **kwargs)
    torch_s.load_state_dict(saved)  # ours -> torch
    _run(torch_s, ours, range(3, 5))
    back = KerasRMSprop(ours, **kwargs)
    back.load_state_dict(_through_a_file(torch_s.state_dict()))  # torch -> ours
    _run(back, ours, range(5, 7))
    for p, q in zip(ours, reference):
        assert torch.equal(p, q)
    _same_state(back.state_dict(), ref.state_dict())


def test_a_state_without_step_counters_still_loads():
    """A KerasRMSprop checkpoint written before the step counters (``square_avg`` only)."""
    ours, theirs = _params(), _params()
    a = KerasRMSprop(ours, lr=0.01)
    b = torch.optim.RMSprop(theirs, lr=0.01, alpha=0.9, eps=1e-7)
    _run(a, ours, range(2))
    _run(b, theirs, range(2))
    old = a.state_dict()
    old["state"] = {i: {"square_avg": s["square_avg"]} for i, s in old["state"].items()}
    c = KerasRMSprop(ours, lr=0.01)
    c.load_state_dict(old)
    _run(c, ours, range(2, 4))
    _run(b, theirs, range(2, 4))
    for p, q in zip(ours, theirs):
        assert torch.equal(p, q)
    assert float(c.state_dict()["state"][0]["step"]) == 2.0  # counted from the load


def test_keras_optimizer_counts_steps_once_eager_or_compiled():
    params = _params()
    opt = optimizers.RMSprop(lr=0.01).build(params)
    for step in range(2):
        _feed(params, step)
        opt.step()  # eager
    for step in range(2, 4):
        _feed(params, step)
        opt.step(torch_step=opt.torch.step)  # a torch_step that ran eagerly: counted once
    compiled = torch.compile(opt.torch.step, backend="eager")
    for step in range(4, 7):
        _feed(params, step)
        opt.step(torch_step=compiled)  # Dynamo leaves the counting to the Keras optimizer
    steps = [float(s["step"]) for s in opt.state_dict()["torch"]["state"].values()]
    assert steps == [7.0, 7.0, 4.0] and opt.iterations == 7
