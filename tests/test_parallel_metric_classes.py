"""Stateful metrics (AUC, Precision, Recall) under data parallel (2 real gloo processes) against one
process: each rank adds its rows' confusion counts to its state, the loop sums the states over the
ranks at each log point, so the epoch values are those of the whole epoch's predictions, exactly,
also with a padding row (65 samples in batches of 32) and sample weights (weighted_metrics)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from parallel_helpers import _run, _write

pytestmark = pytest.mark.multiproc

SCRIPT = r'''
import json, os, sys
import numpy as np, torch
import arignote
from arignote import metrics
from arignote.layers import Dense
from arignote.models import Sequential

out, procs = sys.argv[1], int(sys.argv[2])
arignote.configure(device="cpu", cpu_processes=procs, floatX="float64", print_active_device=False)
rank = int(os.environ.get("RANK", "0"))
rng = np.random.default_rng(0)
x = rng.normal(size=(85, 5))
y = (x[:, 0] + 0.7 * rng.normal(size=85) > 0).astype("float64")[:, None]
w = rng.uniform(0, 2, 85)
torch.manual_seed(0)
m = Sequential([Dense(4, activation="tanh", input_shape=(5,)), Dense(1, activation="sigmoid")])
m.compile("sgd", "binary_crossentropy",
          metrics=[metrics.AUC(), metrics.Precision(), metrics.Recall(), metrics.AUC(curve="PR")],
          weighted_metrics=[metrics.AUC()])
h = m.fit(x[:65], y[:65], sample_weight=w[:65], batch_size=32, epochs=2, shuffle=True, verbose=0,
          validation_data=(x[65:], y[65:]), validation_batch_size=3)
result = {"history": h.history,
          "evaluate": m.evaluate(x, y, sample_weight=w, batch_size=7, verbose=0)}
with open(os.path.join(out, f"rank{rank}.json"), "w") as fh:
    json.dump(result, fh)
'''


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = {}
    base = tmp_path_factory.mktemp("metric_classes")
    script = _write(base, "metric_classes.py", SCRIPT)
    for procs in (1, 2):
        d = base / str(procs)
        d.mkdir()
        r = _run([str(script), str(d), str(procs)], timeout=400)
        assert r.returncode == 0, r.stderr[-4000:]
        out[procs] = [json.loads((d / f"rank{i}.json").read_text()) for i in range(procs)]
    return out


def test_stateful_metrics_under_data_parallel_equal_one_process(runs):
    one, two = runs[1][0], runs[2]
    # Keras 2.3.1's names for a fresh process: each class numbered from 1
    assert list(one["history"]) == ["loss", "auc_1", "precision_1", "recall_1", "auc_2", "auc_3", "val_loss",
                                    "val_auc_1", "val_precision_1", "val_recall_1", "val_auc_2", "val_auc_3"]
    for rank in two:
        for key, values in one["history"].items():
            np.testing.assert_allclose(rank["history"][key], values, rtol=0, atol=1e-10, err_msg=key)
        np.testing.assert_allclose(rank["evaluate"], one["evaluate"], rtol=0, atol=1e-10)
    # the weighted AUC really uses the weights
    assert abs(one["history"]["auc_1"][0] - one["history"]["auc_3"][0]) > 1e-4
