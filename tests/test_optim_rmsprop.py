"""KerasRMSprop (optimizers/kernels.py): torch's RMSprop arithmetic bit for bit, in fewer operators, with
torch's state (tests/test_optim_rmsprop_state.py) and step hooks."""

from __future__ import annotations

import io

import pytest
import torch

from arignote import optimizers
from arignote.bench.opcount import OpRecorder
from arignote.optimizers.kernels import KerasRMSprop


def _params(seed: int = 0) -> list[torch.nn.Parameter]:
    torch.manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(5, 3)), torch.nn.Parameter(torch.randn(3))]


def _grads(params, step: int) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(100 + step)
    return [torch.randn(p.shape, generator=gen) for p in params]


@pytest.mark.parametrize("foreach", [False, True])
def test_weights_are_torch_rmsprop_s_bit_for_bit_in_fewer_operators(foreach):
    ours, theirs = _params(), _params()
    a = KerasRMSprop(ours, lr=0.01, alpha=0.8, eps=1e-3, foreach=foreach)
    b = torch.optim.RMSprop(theirs, lr=0.01, alpha=0.8, eps=1e-3, foreach=foreach)
    for step in range(4):
        for p, q, g in zip(ours, theirs, _grads(ours, step)):
            p.grad, q.grad = g.clone(), g.clone()
        with OpRecorder() as mine:
            a.step()
        with OpRecorder() as torch_s:
            b.step()
        for p, q in zip(ours, theirs):
            assert torch.equal(p, q)
    names = [op.name for op in mine.ops]
    if foreach:
        assert names == ["aten._foreach_mul_.Scalar", "aten._foreach_addcmul_.Scalar",
                         "aten._foreach_sqrt.default", "aten._foreach_add_.Scalar",
                         "aten._foreach_addcdiv_.Scalar"]
    else:  # per parameter: a = rho a + (1 - rho) g^2; p -= lr g / (sqrt(a) + eps)
        assert names == ["aten.mul_.Tensor", "aten.addcmul_.default", "aten.sqrt.default", "aten.add_.Tensor",
                         "aten.addcdiv_.default"] * 2
    # torch's: the same plus a step counter per parameter (foreach: one) and its profiler range
    assert len(torch_s.ops) == len(mine.ops) + (1 if foreach else 2) + 2
    assert not any("record_function" in name for name in names)


def test_state_is_torch_s_square_avg_and_torch_s_checkpoints_load():
    ours, theirs = _params(), _params()
    a = KerasRMSprop(ours, lr=0.01)
    b = torch.optim.RMSprop(theirs, lr=0.01, alpha=0.9, eps=1e-7, foreach=False)
    for p, q, g in zip(ours, theirs, _grads(ours, 0)):
        p.grad, q.grad = g.clone(), g.clone()
    a.step()
    b.step()
    assert list(a.state_dict()["state"][0]) == list(b.state_dict()["state"][0]) == ["step", "square_avg"]
    assert isinstance(a, torch.optim.RMSprop)
    # a torch checkpoint (with its step counters) loads into ours: the next steps agree
    c = KerasRMSprop(theirs, lr=0.01)
    c.load_state_dict(b.state_dict())
    d = KerasRMSprop(ours, lr=0.01)
    d.load_state_dict(a.state_dict())
    for p, q, g in zip(ours, theirs, _grads(ours, 1)):
        p.grad, q.grad = g.clone(), g.clone()
    c.step()
    d.step()
    for p, q in zip(ours, theirs):
        assert torch.equal(p, q)


def test_step_hooks_still_run():
    params = _params()
    opt = KerasRMSprop(params, lr=0.01)
    calls = []
    pre = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append("pre"))
    post = opt.register_step_post_hook(lambda o, args, kwargs: calls.append("post"))
    for p, g in zip(params, _grads(params, 0)):
        p.grad = g
    opt.step()
    pre.remove()
    post.remove()
    opt.step()
    assert calls == ["pre", "post"]


def test_a_learning_rate_held_in_a_tensor_gives_the_same_step():
    """A compiled step (training/compiled.py) writes the learning rate into a 0-d tensor."""
    for foreach in (False, True):
        ours, theirs = _params(), _params()
        a = KerasRMSprop(ours, lr=torch.tensor(0.01), foreach=foreach)
        b = KerasRMSprop(theirs, lr=0.01, foreach=foreach)
        for p, q, g in zip(ours, theirs, _grads(ours, 0)):
            p.grad, q.grad = g.clone(), g.clone()
        a.step()
        b.step()
        for p, q in zip(ours, theirs):
            torch.testing.assert_close(p, q, rtol=1e-6, atol=0)


def test_keras_rmsprop_checkpoint_resumes_identically():
    def run(steps, resume_at=None):
        p = torch.nn.Parameter(torch.ones(4, dtype=torch.float64))
        opt = optimizers.RMSprop(lr=0.01, decay=0.1).build([p])
        for i in range(steps):
            if i == resume_at:
                buf = io.BytesIO()
                torch.save({"w": p.detach().clone(), "opt": opt.state_dict()}, buf)
                buf.seek(0)
                saved = torch.load(buf, weights_only=True)
                p = torch.nn.Parameter(saved["w"])
                opt = optimizers.RMSprop(lr=0.01, decay=0.1).build([p])
                opt.load_state_dict(saved["opt"])
            p.grad = torch.linspace(-1, 1, 4, dtype=torch.float64) * (i + 1)
            opt.step()
        return p.detach()

    assert torch.equal(run(5), run(5, resume_at=2))


def test_run_step_leaves_out_torch_s_profiler_range_unless_something_listens():
    import warnings

    from arignote.optimizers.kernels import run_step

    w = torch.nn.Parameter(torch.ones(3))
    opt = torch.optim.SGD([w], lr=0.5, foreach=False)
    w.grad = torch.ones(3)
    with OpRecorder() as rec:
        run_step(opt)
    assert w.tolist() == [0.5, 0.5, 0.5]
    assert not any("record_function" in op.name for op in rec.ops)
    calls = []
    handle = opt.register_step_post_hook(lambda o, args, kwargs: calls.append(1))
    run_step(opt)
    handle.remove()
    assert calls == [1]
    # a torch LRScheduler patches step on the instance to see it called: it must see it
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "lr_scheduler.step() before optimizer.step()" would raise
        run_step(opt)
        sched.step()
    assert opt.param_groups[0]["lr"] == 0.25


def _big_params(seed: int = 0) -> list[torch.nn.Parameter]:
    torch.manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(64, 48)), torch.nn.Parameter(torch.randn(48))]


@pytest.mark.parametrize("rho", [0.9, 0.0, 0.999999])
def test_one_pass_is_the_loop_within_a_last_bit_in_one_kernel(rho):
    """``one_pass`` (what arignote's RMSprop builds on the CPU): one fused kernel a step, the
    accumulators bit for bit torch's, the weights within float32 rounding of torch's loop; the
    saturated step count makes Adam's bias corrections exactly 1 for any rho (at step 1 they would
    scale the update by 1 / sqrt(1 - rho): 3.2x for rho 0.9)."""
    ours, theirs = _big_params(), _big_params()
    a = KerasRMSprop(ours, lr=0.01, alpha=rho, eps=1e-7, one_pass=True)
    b = torch.optim.RMSprop(theirs, lr=0.01, alpha=rho, eps=1e-7, foreach=False)
    for step in range(5):
        grads = _grads(ours, step)
        for p, q, g in zip(ours, theirs, grads):
            p.grad, q.grad = g.clone(), g.clone()
        with OpRecorder() as rec:
            a.step()
        b.step()
        names = [op.name for op in rec.ops]
        assert names == ["aten.zeros_like.default"] * 2 * (step == 0) + ["aten._fused_adam_.default"]
        for p, g in zip(ours, grads):
            assert torch.equal(p.grad, g)  # the gradient served as Adam's first moment, unchanged
        for p, q in zip(ours, theirs):
            # float32 rounding at the weights' scale (rho near 1 makes steps of lr / sqrt(1 - rho))
            scale = float(q.detach().abs().max())
            torch.testing.assert_close(p.detach(), q.detach(), rtol=2e-7, atol=2.5e-7 * scale)
            assert torch.equal(a.state[p]["square_avg"], b.state[q]["square_avg"])
    assert float(a.state_dict()["state"][0]["step"]) == 5.0


def test_one_pass_leaves_what_it_cannot_run_to_the_loop():
    w = torch.nn.Parameter(torch.ones(3))
    opt = KerasRMSprop([w], lr=0.1, one_pass=True)
    opt.param_groups[0]["lr"] = torch.tensor(0.1)  # a compiled step holds lr in a tensor
    w.grad = torch.ones(3)
    with OpRecorder() as rec:
        opt.step()
    assert "aten._fused_adam_.default" not in [op.name for op in rec.ops]
    assert [op.name for op in rec.ops].count("aten.addcdiv_.default") == 1


def test_one_pass_leaves_rho_one_to_the_loop():
    """rho = 1 would make Adam's second bias correction 0 (1 ** step): such a group runs the loop,
    whose accumulator stays 0 and whose step is lr * g / eps, as torch's."""
    ours, theirs = torch.nn.Parameter(torch.ones(3)), torch.nn.Parameter(torch.ones(3))
    a = KerasRMSprop([ours], lr=1e-3, alpha=1.0, eps=1e-7, one_pass=True)
    b = torch.optim.RMSprop([theirs], lr=1e-3, alpha=1.0, eps=1e-7, foreach=False)
    ours.grad, theirs.grad = torch.full((3,), 0.5), torch.full((3,), 0.5)
    with OpRecorder() as rec:
        a.step()
    b.step()
    assert "aten._fused_adam_.default" not in [op.name for op in rec.ops]
    assert torch.equal(ours.detach(), theirs.detach())
    assert float(ours[0]) < -1e3


def test_arignote_s_rmsprop_runs_one_pass_and_a_direct_one_torch_s_operators():
    w = torch.nn.Parameter(torch.ones(3))
    assert optimizers.RMSprop().build([w]).torch.one_pass is True
    assert KerasRMSprop([w]).one_pass is False


def test_one_pass_takes_the_loop_when_a_gradient_is_laid_out_otherwise():
    """The fused kernel walks parameter, gradient and accumulator memory in step: a channels-last
    weight with a contiguous gradient (set by hand) would pair wrong elements, so the loop runs it;
    laid out alike, the kernel runs and agrees."""
    for grad_format, kernel in ((torch.contiguous_format, False), (torch.channels_last, True)):
        torch.manual_seed(0)
        w = torch.nn.Parameter(torch.randn(4, 3, 5, 5).contiguous(memory_format=torch.channels_last))
        ref = torch.nn.Parameter(w.detach().clone())
        a = KerasRMSprop([w], lr=0.01, one_pass=True)
        b = torch.optim.RMSprop([ref], lr=0.01, alpha=0.9, eps=1e-7)
        a.state[w]["square_avg"] = torch.zeros_like(w)  # channels-last, as the parameter
        g = torch.randn(4, 3, 5, 5)
        w.grad, ref.grad = g.contiguous(memory_format=grad_format), g.clone()
        with OpRecorder() as rec:
            a.step()
        b.step()
        assert ("aten._fused_adam_.default" in [op.name for op in rec.ops]) is kernel
        torch.testing.assert_close(w.detach(), ref.detach(), rtol=2e-7, atol=1e-7)
