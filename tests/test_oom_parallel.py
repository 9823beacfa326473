"""Out-of-memory recovery under data parallel: 2 gloo processes through the launcher (issue 7).

Only rank 1 runs out of memory (the injector is on there alone); both ranks must end with the same
k, the same weights, and the weights of a single-process run on the same global batches.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

from arignote import config
from arignote.models import Model

SCRIPT = textwrap.dedent('''
    import json, os, sys
    import numpy as np, torch, arignote
    from arignote.models import Model

    rank = int(os.environ.get("RANK", "0"))
    arignote.configure(device="cpu", cpu_processes=2, floatX="float64", print_active_device=False,
                       memory_oom_inject_above=4 if rank == 1 else 0)
    rng = np.random.default_rng(0)
    x, y = rng.random((64, 6)), rng.random((64, 3))
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))
    model = Model(net)
    model.compile("adam", "mse")
    model.fit(x, y, batch_size=32, epochs=2, shuffle=False, verbose=0)
    guard = model._trainer.oom
    result = {"k": guard.k, "injected": guard.inject.count, "failures": guard.failures,
              "world": model._trainer.strategy.world_size,
              "weights": [w.tolist() for w in model.get_weights()]}

    # BatchNorm: its buffers must not put a collective inside a step (that would hang after an OOM)
    torch.manual_seed(0)
    bn = Model(torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU(),
                                   torch.nn.Linear(16, 3)))
    bn.compile("sgd", "mse")
    bn.fit(x, y, batch_size=32, epochs=2, verbose=0)
    result["bn_k"] = bn._trainer.oom.k
    result["bn_weights"] = [w.tolist() for w in bn.get_weights()]  # parameters and running statistics

    # batch_size="auto": each rank searches alone, all adopt the smallest (4 per rank on rank 1)
    torch.manual_seed(0)
    auto = Model(torch.nn.Sequential(torch.nn.Linear(6, 3)))
    auto.compile("sgd", "mse")
    auto.fit(x, y, batch_size="auto", epochs=1, verbose=0)
    result["auto_batch"] = auto.history.params["batch_size"]
    result["auto_k"] = auto._trainer.oom.k
    with open(os.path.join(sys.argv[1], f"rank{rank}.json"), "w") as fh:
        json.dump(result, fh)
''')


def _single_process_weights():
    rng = np.random.default_rng(0)
    x, y = rng.random((64, 6)), rng.random((64, 3))
    with config.override(device="cpu", floatX="float64", print_active_device=False):
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))
        model = Model(net)
        model.compile("adam", "mse")
        model.fit(x, y, batch_size=32, epochs=2, shuffle=False, verbose=0)
    return model.get_weights()


@pytest.mark.multiproc
@pytest.mark.slow
def test_two_gloo_ranks_agree_on_k_when_only_one_runs_out(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items()
           if k not in ("ARIGNOTE_FLAGS", "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
    env["ARIGNOTERC"] = str(tmp_path / "no-rc")
    proc = subprocess.run([sys.executable, str(script), str(tmp_path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    r0 = json.loads((tmp_path / "rank0.json").read_text())
    r1 = json.loads((tmp_path / "rank1.json").read_text())
    assert r0["world"] == r1["world"] == 2
    # rank 1 ran out (batch 16 per rank, then 8), rank 0 never did; both use k = 4 from then on
    assert (r1["injected"], r1["failures"]) == (2, 2) and (r0["injected"], r0["failures"]) == (0, 0)
    assert r0["k"] == r1["k"] == 4
    # the replicas stayed in step, and match one process training on the same global batches
    reference = _single_process_weights()
    for a, b, ref in zip(r0["weights"], r1["weights"], reference):
        assert np.array_equal(np.asarray(a), np.asarray(b))
        np.testing.assert_allclose(np.asarray(a), ref, rtol=0, atol=1e-9)
    # with BatchNorm: no hang, same k, identical parameters and running statistics on both ranks
    # (num_batches_tracked, an integer, counts forward passes: rank 0's first step was not split)
    assert r0["bn_k"] == r1["bn_k"] == 4
    floats = [(np.asarray(a), np.asarray(b)) for a, b in zip(r0["bn_weights"], r1["bn_weights"])
              if np.asarray(a).dtype.kind == "f"]
    assert len(floats) == 8  # 3 weights, 3 biases (Linear, BatchNorm, Linear), running mean and variance
    for a, b in floats:
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    # batch_size="auto" agrees on the smallest per-rank batch: 4 x 2 ranks
    assert r0["auto_batch"] == r1["auto_batch"] == 8 and r0["auto_k"] == r1["auto_k"] == 1
    # one notice, from rank 0, saying the ranks agreed
    assert proc.stderr.count("arignote: out of memory at batch 16 per rank") == 2  # MLP, then BatchNorm
    assert "agreed by all ranks" in proc.stderr
