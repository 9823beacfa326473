"""GPU data parallel paths (NCCL, one device per rank, ``free:N``): skipped without CUDA.

The CPU twins of these tests (gloo) are in test_parallel_multiproc.py; here only what needs GPUs.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from parallel_helpers import _run, _write

pytestmark = pytest.mark.gpu

GPU_SCRIPT = """
import json, os, sys
import numpy as np, torch
import arignote
from arignote.layers import Dense
from arignote.models import Sequential

out, spec = sys.argv[1], sys.argv[2]
arignote.configure(device=spec, parallel_timeout=30, dnn_deterministic=True)
torch.manual_seed(0)
rng = np.random.default_rng(0)
x = rng.normal(size=(256, 8)).astype("float32")
y = (x[:, :1] * 2 - x[:, 1:2]).astype("float32")
model = Sequential([Dense(16, activation="tanh", input_dim=8), Dense(1)])
model.compile("sgd", "mse")
h = model.fit(x, y, batch_size=32, epochs=2, verbose=0)
s = model._trainer.strategy
with open(os.path.join(out, f"rank{s.rank}.json"), "w") as fh:
    json.dump({"device": str(s.device), "world": s.world_size, "backend": getattr(s, "backend", None)}, fh)
if s.is_main:
    np.savez(os.path.join(out, "weights.npz"), *model.get_weights())
"""


def _gpu_count() -> int:
    from arignote.devices import cuda

    return cuda.device_count()


def _ranks(out) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(out.glob("rank*.json"))]


def test_one_gpu_is_a_single_device_strategy():
    from arignote import devices
    from arignote.parallel import SingleDevice, strategy_for

    s = strategy_for([devices.Device("cuda", 0)])
    assert isinstance(s, SingleDevice) and str(s.device) == "cuda:0"


@pytest.mark.multiproc
@pytest.mark.parametrize("spec", ["all", "free:2", "cuda0,cuda1"])
def test_nccl_over_two_gpus_matches_one_gpu(tmp_path, spec):
    if _gpu_count() < 2:
        pytest.skip("needs 2 GPUs")
    script = _write(tmp_path, "train.py", GPU_SCRIPT)
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    r1 = _run([str(script), str(one), "cuda0"])
    assert r1.returncode == 0, r1.stderr
    env_spec = "cuda0,cuda1" if spec == "all" and _gpu_count() > 2 else spec
    r2 = _run([str(script), str(two), env_spec])
    assert r2.returncode == 0, r2.stderr
    ranks = _ranks(two)
    assert [r["world"] for r in ranks] == [2, 2] and {r["backend"] for r in ranks} == {"nccl"}
    assert len({r["device"] for r in ranks}) == 2  # one GPU per rank
    w1, w2 = np.load(one / "weights.npz"), np.load(two / "weights.npz")
    for k in w1.files:
        np.testing.assert_allclose(w2[k], w1[k], rtol=1e-4, atol=1e-5)
