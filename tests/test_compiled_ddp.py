"""Compiled steps under data parallel: 2 gloo processes train a compiled DDP module (Dynamo splits
its graph at DDP's gradient buckets, `optimize_ddp`) to the weights of the eager 2-process run,
with one gradient reduction per optimizer step, accumulation, and a fixed number of graphs over
epochs with a partial last batch."""

from __future__ import annotations

import json

import numpy as np
import pytest

from parallel_helpers import _run, _write

pytestmark = [pytest.mark.multiproc, pytest.mark.slow]

SCRIPT = r'''
import json, os, sys
import numpy as np, torch
import torch.distributed as dist
import arignote
from arignote.callbacks import Callback
from arignote.layers import Dense
from arignote.models import Sequential

out, procs, jit = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "jit"
arignote.configure(device="cpu", cpu_processes=procs, print_active_device=False, jit_backend="aot_eager")
rank = int(os.environ.get("RANK", "0"))
rng = np.random.default_rng(0)
x = rng.normal(size=(88, 6)).astype("float32")  # global batch 16: 5 full batches and one of 8
y = rng.normal(size=(88, 2)).astype("float32")
result = {}


class Count(Callback):
    """Synced backward passes (the DDP comm hook: is_last once a pass), optimizer steps, graphs."""

    def __init__(self):
        super().__init__()
        self.passes = self.steps = 0
        self.graphs = []

    def on_train_begin(self, logs=None):
        net = self.model._trainer.net
        def hook(state, bucket):
            self.passes += int(bucket.is_last())
            fut = dist.all_reduce(bucket.buffer(), async_op=True).get_future()
            return fut.then(lambda f: f.value()[0].div_(dist.get_world_size()))
        net.register_comm_hook(None, hook)
        step = self.model.optimizer.step

        def counted(*a, **k):
            self.steps += 1
            return step(*a, **k)
        self.model.optimizer.step = counted

    def on_epoch_end(self, epoch, logs=None):
        compiled = self.model._trainer.compiled
        self.graphs.append(compiled.graphs if compiled is not None else None)


for acc in (1, 2):
    torch.manual_seed(0)
    m = Sequential([Dense(16, activation="tanh", input_dim=6), Dense(2)])
    m.compile("adam", "mse", metrics=["mae"], jit_compile=jit)
    count = Count()
    h = m.fit(x, y, batch_size=16, epochs=3, shuffle=False, accumulate=acc, verbose=0,
              validation_split=0.25, callbacks=[count])
    result[f"acc{acc}"] = {"weights": [w.tolist() for w in m.get_weights()], "loss": h.history["loss"],
                           "val_loss": h.history["val_loss"], "passes": count.passes,
                           "steps": count.steps, "graphs": count.graphs}
result["predict"] = m.predict(x[:21], batch_size=8).tolist()
with open(os.path.join(out, f"{'jit' if jit else 'eager'}{rank}.json"), "w") as fh:
    json.dump(result, fh)
'''


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("compiled_ddp")
    script = _write(d, "train.py", SCRIPT)
    for mode in ("eager", "jit"):
        r = _run([str(script), str(d), "2", mode], timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
    return {f"{mode}{rank}": json.loads((d / f"{mode}{rank}.json").read_text())
            for mode in ("eager", "jit") for rank in (0, 1)}


@pytest.mark.parametrize("acc", [1, 2])
def test_compiled_ddp_matches_eager_ddp(runs, acc):
    eager, jit = runs["eager0"][f"acc{acc}"], runs["jit0"][f"acc{acc}"]
    for a, b in zip(eager["weights"], jit["weights"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(eager["loss"], jit["loss"], rtol=1e-5)
    np.testing.assert_allclose(eager["val_loss"], jit["val_loss"], rtol=1e-5)
    # both ranks hold the same weights
    for a, b in zip(jit["weights"], runs["jit1"][f"acc{acc}"]["weights"]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("acc", [1, 2])
def test_one_reduction_per_step_and_fixed_graphs(runs, acc):
    jit = runs["jit0"][f"acc{acc}"]
    # 66 training rows at global batch 16: 5 steps an epoch (4 full, one of 2), 3 epochs
    assert jit["steps"] == 15 and jit["passes"] == 15
    assert jit["graphs"][0] == jit["graphs"][-1] > 0, jit["graphs"]
    assert runs["eager0"][f"acc{acc}"]["graphs"] == [None, None, None]


def test_compiled_ddp_predict(runs):
    np.testing.assert_allclose(runs["eager0"]["predict"], runs["jit0"]["predict"], rtol=1e-5, atol=1e-6)
    assert len(runs["jit0"]["predict"]) == 21
