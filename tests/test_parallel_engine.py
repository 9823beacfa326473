"""The data-parallel engine with real gloo process groups (2 processes) against one process:
gradient reductions counted per optimizer step (DDP's all-reduce operators), equal weights with accumulation
and with out-of-memory splitting, exact evaluate/validation/predict, stopping at a batch.

One script runs every case in one job (a job costs seconds of start-up); a module fixture runs
it with 1 and with 2 processes and the tests read its JSON.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from parallel_helpers import _run, _write

pytestmark = pytest.mark.multiproc

SCRIPT = r'''
import json, os, sys
import numpy as np, torch
import torch.distributed as dist
import arignote
from arignote import config
from arignote.callbacks import Callback, TerminateOnNaN
from arignote.models import Model
from arignote.parallel import ddp

out, procs = sys.argv[1], int(sys.argv[2])
arignote.configure(device="cpu", cpu_processes=procs, floatX="float64", print_active_device=False)
rank = int(os.environ.get("RANK", "0"))
rng = np.random.default_rng(0)
x, y = rng.normal(size=(96, 6)), rng.normal(size=(96, 3))
result = {}


class Count(Callback):
    """Counts synced backward passes (each carries the step's flags as the flag carrier's gradient:
    the backwards that delivered it), bucket all-reduces (the ``c10d.allreduce_`` operators DDP's
    reducer runs, seen by an operator recorder over the whole fit) and optimizer steps.
    ``own_hook``: the user's own DDP comm hook, registered before the first step (the flags then
    keep their own exchange)."""

    def __init__(self, own_hook=False):
        super().__init__()
        self.own_hook = own_hook
        self.own_passes = self.own_buckets = self.steps = 0
        self.rec = None

    def on_train_begin(self, logs=None):
        from arignote.bench.opcount import OpRecorder
        net = self.model._trainer.net
        self.strategy = self.model._trainer.strategy
        carrier = getattr(net, "module", None)
        self.carrier = carrier if hasattr(carrier, "delivered") else None
        self.delivered = self.carrier.delivered if self.carrier is not None else 0
        if self.own_hook and hasattr(net, "register_comm_hook"):
            def hook(state, bucket):
                self.own_buckets += 1
                self.own_passes += int(bucket.is_last())
                fut = dist.all_reduce(bucket.buffer(), async_op=True).get_future()
                return fut.then(lambda f: f.value()[0].div_(dist.get_world_size()))
            net.register_comm_hook(None, hook)
        opt = self.model.optimizer
        step = opt.step

        def counted(*a, **k):
            self.steps += 1
            return step(*a, **k)
        opt.step = counted
        self.rec = OpRecorder().__enter__()
        self.python_all_reduces = calls.get("all_reduce", 0)

    def on_train_end(self, logs=None):
        self.rec.__exit__(None, None, None)
        # DDP's (from its C++ reducer): every all-reduce operator but those called from Python
        # (the epoch ends' agreements and metric sums, a user's hook)
        self.all_reduces = (sum(op.name == "c10d.allreduce_.default" for op in self.rec.ops)
                            - (calls.get("all_reduce", 0) - self.python_all_reduces))

    @property
    def passes(self):
        if self.own_hook:
            return self.own_passes
        return self.carrier.delivered - self.delivered if self.carrier is not None else 0

    @property
    def buckets(self):
        return self.own_buckets if self.own_hook else self.all_reduces


COLLECTIVES = ("all_reduce", "broadcast", "all_gather", "all_gather_object", "barrier", "reduce_scatter",
               "all_to_all", "reduce", "gather", "scatter", "broadcast_object_list")
calls = {}  # every torch.distributed collective called from Python in this process, by name


def _counting(name, fn):
    def call(*args, **kwargs):
        calls[name] = calls.get(name, 0) + 1
        return fn(*args, **kwargs)
    return call


for name in COLLECTIVES:
    setattr(dist, name, _counting(name, getattr(dist, name)))


class Probe(Callback):
    """What each training step asks of the strategy (its collectives, by kind), of torch.distributed
    (every collective called from Python), of the process group (``c10d`` operators: DDP's bucket
    all-reduces from its C++ reducer are among them) and of the host (reads of a device value:
    aten._local_scalar_dense, counted by arignote.bench.opcount)."""

    def __init__(self):
        super().__init__()
        self.steps = []

    def on_train_batch_begin(self, batch, logs=None):
        from arignote.bench.opcount import OpRecorder
        self.before = dict(getattr(self.model._trainer.strategy, "collectives", {}))
        self.carried = getattr(self.model._trainer.strategy, "carried", 0)
        self.calls = dict(calls)
        self.rec = OpRecorder().__enter__()

    def on_train_batch_end(self, batch, logs=None):
        self.rec.__exit__(None, None, None)
        now = getattr(self.model._trainer.strategy, "collectives", {})
        delta = {k: v - self.before.get(k, 0) for k, v in now.items() if v != self.before.get(k, 0)}
        delta.pop("waited", None)  # timing: whether the exchange was still running at the wait
        torch_calls = {k: v - self.calls.get(k, 0) for k, v in calls.items() if v != self.calls.get(k, 0)}
        carried = getattr(self.model._trainer.strategy, "carried", 0) - self.carried
        c10d = {}
        for op in self.rec.ops:
            if op.name.startswith("c10d."):
                c10d[op.name] = c10d.get(op.name, 0) + 1
        self.steps.append({"collectives": delta, "torch": torch_calls, "c10d": c10d, "carried": carried,
                           "syncs": sum(op.sync for op in self.rec.ops)})


def model(seed=0, bn=False):
    torch.manual_seed(seed)
    layers = [torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3)]
    if bn:
        layers.insert(1, torch.nn.BatchNorm1d(16))
    m = Model(torch.nn.Sequential(*layers))
    m.compile("adam", "mse", metrics=["mae"])
    return m


def weights(m):
    return [w.tolist() for w in m.get_weights()]


# 1. gradient reductions per optimizer step: default, accumulate=4, out-of-memory splitting; the
# flags in DDP's buckets with gradient_as_bucket_view off too; with a user's own comm hook (the flags
# then keep their own exchange)
CASES = (("default", 1, 0, True, False), ("accumulate4", 4, 0, True, False), ("oom", 1, 4, True, False),
         ("copied", 1, 0, False, False), ("oom_copied", 4, 2, False, False), ("own_hook", 1, 0, True, True),
         ("own_hook_oom", 1, 4, True, True))
for mode, acc, inject, view, own in CASES:
    config.configure(memory_oom_inject_above=inject if rank == procs - 1 else 0, parallel_bucket_view=view)
    m, count, probe = model(), Count(own_hook=own), Probe()
    before = dict(getattr(ddp.active(), "collectives", {}))
    torch.manual_seed(1)
    h = m.fit(x, y, batch_size=32, epochs=2, accumulate=acc, verbose=0, callbacks=[count, probe])
    result[mode] = {"passes": count.passes, "buckets": count.buckets, "steps": count.steps,
                    "k": m._trainer.oom.k, "weights": weights(m), "loss": h.history["loss"],
                    "per_step": probe.steps,
                    "collectives": {k: v - before.get(k, 0)  # this fit's (one strategy per process)
                                    for k, v in getattr(m._trainer.strategy, "collectives", {}).items()}}
config.configure(memory_oom_inject_above=0, parallel_bucket_view=True)

# 2. exact evaluation, validation and prediction on sizes that do not split evenly
m = model()
torch.manual_seed(2)
h = m.fit(x[:90], y[:90], batch_size=30, epochs=2, verbose=0, validation_data=(x[90:], y[90:]),
          validation_batch_size=4)
result["val_loss"] = h.history["val_loss"]
result["val_mae"] = h.history["val_mae"]
result["evaluate"] = {str(n): m.evaluate(x[:n], y[:n], batch_size=bs, verbose=0)
                      for n, bs in ((5, 32), (1, 4), (33, 4), (96, 7))}
result["predict"] = {str(n): m.predict(x[:n], batch_size=bs).tolist() for n, bs in ((5, 2), (1, 4), (37, 8))}
result["direct"] = m.module(torch.as_tensor(x[:37])).tolist()

# 3. BatchNorm: statistics averaged over the ranks at each epoch's end, so evaluation agrees
m = model(bn=True)
m.fit(x, y, batch_size=32, epochs=1, verbose=0)
result["bn_weights"] = weights(m)
result["bn_eval"] = m.evaluate(x, y, verbose=0)


# 4. stop_training set on one rank, at batch 2 of epoch 1 (of 6 batches): every rank stops
class StopAt(Callback):
    def on_train_batch_end(self, batch, logs=None):
        if batch == 2 and self.model._trainer.rank == procs - 1:
            self.model.stop_training = True

    def on_epoch_end(self, epoch, logs=None):
        result["stop_interrupted"] = self.model.epoch_interrupted
        result["stop_epochs_done"] = self.model.epochs_done


m, count = model(), Count()
h = m.fit(x, y, batch_size=16, epochs=3, verbose=0, callbacks=[StopAt(), count])
result["stop"] = {"epochs": h.epoch, "steps": count.steps, "passes": count.passes}

# 5. TerminateOnNaN: a target whose squared error overflows (inf loss, non-finite gradients) on the
# last rank's rows of batch 1; no rank steps on it
yn = y.copy()
yn[16 + 15] = 1e300  # row 15 of the second global batch of 16: the last rank's rows
m, count = model(), Count()
before = weights(m)
torch.manual_seed(3)
h = m.fit(x, yn, batch_size=16, epochs=2, shuffle=False, verbose=0, callbacks=[TerminateOnNaN(), count])
after = m.get_weights()
result["nan"] = {"steps": count.steps, "finite": bool(all(np.isfinite(w).all() for w in after)),
                 "epochs": h.epoch}

# 6. DDP's options: gradient_as_bucket_view (default on), static_graph (needs every backward to reduce)
m = model()
m.fit(x[:32], y[:32], batch_size=32, epochs=1, verbose=0)
net = m._trainer.net
result["ddp_default"] = {"bucket_view": getattr(net, "gradient_as_bucket_view", None),
                         "static_graph": getattr(net, "static_graph", None),
                         "find_unused": getattr(net, "find_unused_parameters", None),
                         "arms_itself": getattr(net, "require_backward_grad_sync", None),
                         "carrier": type(getattr(net, "module", None)).__name__}
config.configure(parallel_static_graph=True, memory_on_oom="raise")
m, count = model(), Count()
torch.manual_seed(1)
h = m.fit(x, y, batch_size=32, epochs=2, verbose=0, callbacks=[count])
result["static"] = {"weights": weights(m), "loss": h.history["loss"], "passes": count.passes,
                    "static_graph": getattr(m._trainer.net, "static_graph", None)}
try:
    model().fit(x, y, batch_size=32, epochs=1, accumulate=2, verbose=0)
except config.ConfigError as exc:
    result["static_accumulate"] = str(exc)
config.configure(parallel_static_graph=False, memory_on_oom="split")


# 7. a parameter the loss never uses: a clear error naming it, or DDP's search when asked for
class Aux(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.body, self.aux = torch.nn.Linear(6, 3), torch.nn.Linear(6, 2)

    def forward(self, t):
        return self.body(t)


for find in (False, True):
    config.configure(parallel_find_unused_parameters=find)
    m = Model(Aux())
    m.compile("sgd", "mse")
    try:
        m.fit(x, y, batch_size=32, epochs=2, verbose=0)
        result[f"unused_{find}"] = weights(m)
    except config.ConfigError as exc:
        result[f"unused_{find}"] = str(exc)
config.configure(parallel_find_unused_parameters=False)

with open(os.path.join(out, f"rank{rank}.json"), "w") as fh:
    json.dump(result, fh)
'''


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = {}
    base = tmp_path_factory.mktemp("engine")
    script = _write(base, "engine.py", SCRIPT)
    for procs in (1, 2):
        d = base / str(procs)
        d.mkdir()
        r = _run([str(script), str(d), str(procs)], timeout=400)
        assert r.returncode == 0, r.stderr[-4000:]
        out[procs] = [json.loads((d / f"rank{i}.json").read_text()) for i in range(procs)]
    return out


def _close(a, b, tol):
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=0, atol=tol)


MODES = ["default", "accumulate4", "oom", "copied", "oom_copied", "own_hook", "own_hook_oom"]
RETRIES = {"oom": 2, "oom_copied": 1, "own_hook_oom": 2}  # retry rounds of the first step (k doubled)


@pytest.mark.parametrize("mode", MODES)
def test_exactly_one_gradient_reduction_per_optimizer_step(runs, mode):
    for rk in runs[2]:
        got = rk[mode]
        assert got["steps"] == 6  # 96 samples, global batch 32, 2 epochs
        # one synced backward (DDP reduction) per update; with out-of-memory splitting, each retry
        # round of the first step (k=2, then 4) reduces the stand-in's zeros once more
        assert got["passes"] == got["steps"] + RETRIES.get(mode, 0)
        assert got["buckets"] == got["passes"]  # a small model: one bucket per reduction
    ks = [rk[mode]["k"] for rk in runs[2]]
    want = {"default": 1, "accumulate4": 4, "oom": 4, "copied": 1, "oom_copied": 8, "own_hook": 1,
            "own_hook_oom": 4}[mode]
    assert ks == [want, want]  # agreed by both ranks (only the last one ran out)


@pytest.mark.parametrize("mode", MODES)
def test_two_processes_give_the_weights_of_one(runs, mode):
    one, (r0, r1) = runs[1][0], runs[2]
    for a, b, ref in zip(r0[mode]["weights"], r1[mode]["weights"], one[mode]["weights"]):
        assert np.array_equal(np.asarray(a), np.asarray(b))  # replicas in step
        _close(a, ref, 1e-9)
    _close(r0[mode]["loss"], one[mode]["loss"], 1e-9)


ONE_BUCKET = {"c10d.allreduce_.default": 1}


def _without_rebuild(step):
    c10d = {k: v for k, v in step["c10d"].items() if k != "c10d.broadcast_.default"}
    return {**step, "c10d": c10d}


def test_a_step_runs_only_ddps_bucket_all_reduce_and_no_host_sync(runs):
    # the step's flags (stop requests, out-of-memory decision, a fatal error) travel in DDP's
    # gradient bucket: each step is one bucket all-reduce, run by DDP's C++ reducer (this small
    # model has one bucket), and no collective from arignote or anyone calling torch.distributed
    # from Python, nothing read back from the device; with accumulation too (the micro-batches
    # before the last run under no_sync). One step also has DDP's one bucket rebuild (at its
    # second forward: broadcasts of the new layout), nothing else.
    for mode in ("default", "accumulate4", "copied"):
        for rk in runs[2]:
            steps = rk[mode]["per_step"]
            assert len(steps) == 6
            want = {"collectives": {}, "torch": {}, "c10d": ONE_BUCKET, "carried": 1, "syncs": 0}
            assert [_without_rebuild(s) for s in steps] == [want] * 6, steps
            assert sum("c10d.broadcast_.default" in s["c10d"] for s in steps) <= 1
    for rk in runs[1]:  # one process: no collective at all, no sync either
        assert all(s == {"collectives": {}, "torch": {}, "c10d": {}, "carried": 0, "syncs": 0}
                   for s in rk["default"]["per_step"])


def test_a_users_own_comm_hook_keeps_its_place_and_the_flags_their_own_exchange(runs):
    # DDP takes one comm hook: a user's, registered before the first step, is kept, and the flags
    # fall back to one asynchronous agreement a step (started before the armed backward, waited after)
    for rk in runs[2]:
        steps = rk["own_hook"]["per_step"]
        want = {"collectives": {"agree_later": 1, "wait": 1}, "torch": {"all_reduce": 2},
                "c10d": {"c10d.allreduce_.default": 2}, "carried": 0, "syncs": 0}
        assert [_without_rebuild(s) for s in steps] == [want] * 6, steps


def test_blocking_agreements_only_at_epoch_ends(runs):
    # default mode: 2 epoch ends block (stop after on_epoch_end, a fatal error); the 6 steps'
    # agreements ride in the buckets; the out-of-memory run adds its 2 retry rounds (k=2, then 4)
    for rk in runs[2]:
        counts = rk["default"]["collectives"]
        assert counts["agree"] == 2 and rk["default"]["buckets"] == 6
        assert "agree_later" not in counts and "wait" not in counts
        assert rk["oom"]["buckets"] == 6 + 2 and "agree_later" not in rk["oom"]["collectives"]
        assert rk["own_hook_oom"]["collectives"]["agree_later"] == 6 + 2


def test_evaluate_validation_and_predict_count_every_sample_once(runs):
    one = runs[1][0]
    for rk in runs[2]:
        _close(rk["val_loss"], one["val_loss"], 1e-6)
        _close(rk["val_mae"], one["val_mae"], 1e-6)
        for n, ref in one["evaluate"].items():
            _close(rk["evaluate"][n], ref, 1e-6)
        for n, ref in one["predict"].items():
            _close(rk["predict"][n], ref, 1e-9)  # every row, in input order, on every rank
        _close(rk["predict"]["37"], rk["direct"], 1e-9)


def test_batchnorm_statistics_agree_over_ranks_and_evaluation_matches(runs):
    r0, r1 = runs[2]
    for a, b in zip(r0["bn_weights"], r1["bn_weights"]):
        _close(a, b, 1e-12)
    assert r0["bn_eval"] == r1["bn_eval"]


def test_stop_training_on_one_rank_stops_every_rank_after_that_batch(runs):
    one = runs[1][0]
    for rk in runs[2] + [one]:
        # batches 0, 1, 2 of epoch 0, then stop; batch 3's reduced backward carried the request
        # (its forward and backward ran, its update nowhere)
        assert rk["stop"] == {"epochs": [0], "steps": 3, "passes": 4 if rk is not one else 0}
        assert rk["stop_interrupted"] is True and rk["stop_epochs_done"] == 0


def test_terminate_on_nan_no_rank_steps_on_non_finite_gradients(runs):
    for rk in runs[2] + runs[1]:
        assert rk["nan"]["finite"]
        assert rk["nan"]["steps"] == 1 and rk["nan"]["epochs"] == [0]  # batch 0 stepped, batch 1 skipped


SYNC_OOM = r'''
import os, sys
import numpy as np, torch
import arignote
from arignote.models import Model

arignote.configure(device="cpu", cpu_processes=2, print_active_device=False)
rank = int(os.environ.get("RANK", "0"))
open(os.path.join(sys.argv[1], f"pid.{rank}"), "w").write(str(os.getpid()))
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
calls = [0]


def hook(grad):
    # rank 1 runs out of memory in the backward of its 3rd step: DDP is reducing the gradients then
    calls[0] += 1
    if rank == 1 and calls[0] == 3:
        raise torch.OutOfMemoryError("CUDA out of memory (simulated during the gradient sync)")
    return grad


net[0].weight.register_hook(hook)
m = Model(net)
m.compile("sgd", "mse")
x = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
m.fit(x, x[:, :1], batch_size=16, epochs=2, verbose=0)
'''


def test_an_oom_during_the_gradient_sync_ends_every_rank_with_one_clear_error(tmp_path):
    import time

    from parallel_helpers import _alive, _pids

    script = _write(tmp_path, "sync_oom.py", SYNC_OOM)
    started = time.monotonic()
    r = _run([str(script), str(tmp_path)], timeout=120)
    assert r.returncode == 1
    assert "rank 1: out of memory in the backward pass while the gradients were being reduced" in r.stderr
    assert "arignote: rank 1 (pid" in r.stderr  # the launcher names the rank and stops the others
    assert time.monotonic() - started < 60  # nobody waited for a collective timeout
    assert not any(_alive(p) for p in _pids(tmp_path))


def test_ddp_gradients_are_bucket_views_by_default(runs):
    for rk in runs[2]:
        # every forward unarmed (the step arms DDP's reducer for its last backward), and the step's
        # flags carried by a FlagCarrier's parameter
        assert rk["ddp_default"] == {"bucket_view": True, "static_graph": False, "find_unused": False,
                                     "arms_itself": False, "carrier": "FlagCarrier"}
    # and the equal-weights tests above ran with it


def test_static_graph_trains_like_one_process_and_refuses_no_sync(runs):
    one, (r0, r1) = runs[1][0], runs[2]
    for rk in (r0, r1):
        assert rk["static"]["static_graph"] is True and rk["static"]["passes"] == 6
        assert "parallel.static_graph=true needs every backward" in rk["static_accumulate"]
        assert "fit(accumulate=2)" in rk["static_accumulate"]
        assert "pytorch/pytorch#143580" in rk["static_accumulate"]
    for a, b, ref in zip(r0["static"]["weights"], r1["static"]["weights"], one["default"]["weights"]):
        assert np.array_equal(np.asarray(a), np.asarray(b))
        _close(a, ref, 1e-9)


def test_an_unused_parameter_is_named_with_the_fixes_or_searched_for_on_request(runs):
    one = runs[1][0]
    for rk in runs[2]:
        error = rk["unused_False"]
        assert isinstance(error, str) and "(aux.weight, aux.bias)" in error
        assert "requires_grad_(False)" in error and "parallel.find_unused_parameters=true" in error
        for a, ref in zip(rk["unused_True"], one["unused_True"]):
            _close(a, ref, 1e-9)  # the aux layer keeps its initial weights, the body trains as one process
    assert one["unused_False"] == one["unused_True"]  # one process: no DDP, no error
