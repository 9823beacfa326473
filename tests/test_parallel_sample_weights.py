"""Sample and class weights under data parallel (2 real gloo processes) against one process (issue
13 item 5): the weighted training loss, the weights after training, weighted metrics and weighted
``evaluate`` are the same, on batch sizes that do not split evenly over the ranks (a rank with no
row of the last batch runs a padding row weighted 0).

Why it is exact: a rank's loss is ``sum(w * l) / rows`` of its rows, the loop weighs it by
``rows * W / B`` and DDP averages over the ``W`` ranks, so the gradient is that of
``sum(w * l) / B`` over the global batch, Keras's SUM_OVER_BATCH_SIZE; ``evaluate`` sums
``loss * rows`` and the rows over the ranks, and a weighted metric its ``sum(w * v)`` and ``sum(w)``.
Output masks (Keras 2.3.1 multiplies them into the weights) keep it exact the same way.
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
import arignote
from arignote.layers import Dense
from arignote.models import Sequential
from arignote.utils import Sequence

out, procs = sys.argv[1], int(sys.argv[2])
arignote.configure(device="cpu", cpu_processes=procs, floatX="float64", print_active_device=False)
rank = int(os.environ.get("RANK", "0"))
rng = np.random.default_rng(0)
x = rng.normal(size=(65, 5))
labels = rng.integers(0, 3, 65)
w = rng.uniform(0, 2, 65)
w[::7] = 0.0  # some samples weigh nothing
cw = {0: 1.0, 1: 3.0, 2: 0.5}
result = {}


def model():
    torch.manual_seed(0)
    m = Sequential([Dense(8, activation="tanh", input_shape=(5,)), Dense(3, activation="softmax")])
    m.compile("sgd", "sparse_categorical_crossentropy", metrics=["acc"], weighted_metrics=["acc"])
    return m


def weights(m):
    return [v.tolist() for v in m.get_weights()]


# arrays: 65 samples in batches of 32 -> 32, 32, 1 (rank 1 pads the last one)
m = model()
h = m.fit(x[:50], labels[:50], sample_weight=w[:50], class_weight=cw, batch_size=32, epochs=2, verbose=0,
          validation_data=(x[50:], labels[50:], w[50:]), validation_batch_size=4)
result["history"] = h.history
result["weights"] = weights(m)
result["evaluate"] = {str(bs): m.evaluate(x, labels, sample_weight=w, batch_size=bs, verbose=0)
                      for bs in (32, 7, 4)}
m = model()
m.fit(x, labels, sample_weight=w, batch_size=32, epochs=1, shuffle=False, verbose=0)
result["padded"] = weights(m)


class Batches(Sequence):  # (x, y, sample_weight) batches of 10, 10, 10, 3
    def __len__(self):
        return 4

    def __getitem__(self, i):
        rows = slice(10 * i, min(10 * i + 10, 33))
        return x[rows], labels[rows], w[rows]


m = model()
h = m.fit(Batches(), epochs=1, verbose=0, shuffle=False, class_weight=cw)
result["sequence"] = {"history": h.history, "weights": weights(m),
                      "evaluate": m.evaluate(Batches(), verbose=0)}

# output masks (Embedding(mask_zero=True) -> LSTM -> TimeDistributed) times temporal weights: the loss
# is sum(w * mask * l) / (rows * steps), the same rows * W / B share keeps it exact
tokens = rng.integers(1, 6, (33, 4))
for i in range(33):
    tokens[i, rng.integers(1, 5):] = 0
seq_y = rng.normal(size=(33, 4, 2))
seq_w = rng.uniform(0, 2, (33, 4))


def masked_model():
    from arignote.layers import LSTM, Embedding, TimeDistributed

    torch.manual_seed(0)
    m = Sequential([Embedding(6, 3, mask_zero=True, input_length=4), LSTM(3, return_sequences=True),
                    TimeDistributed(Dense(2))])
    m.compile("sgd", "mse", metrics=["mae"], weighted_metrics=["mae"], sample_weight_mode="temporal")
    return m


m = masked_model()
h = m.fit(tokens, seq_y, sample_weight=seq_w, batch_size=16, epochs=2, shuffle=False, verbose=0)
result["masked"] = {"history": h.history, "weights": weights(m),
                    "evaluate": m.evaluate(tokens, seq_y, sample_weight=seq_w, batch_size=5, verbose=0)}

with open(os.path.join(out, f"rank{rank}.json"), "w") as fh:
    json.dump(result, fh)
'''


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = {}
    base = tmp_path_factory.mktemp("weights")
    script = _write(base, "weights.py", SCRIPT)
    for procs in (1, 2):
        d = base / str(procs)
        d.mkdir()
        r = _run([str(script), str(d), str(procs)], timeout=400)
        assert r.returncode == 0, r.stderr[-4000:]
        out[procs] = [json.loads((d / f"rank{i}.json").read_text()) for i in range(procs)]
    return out


def _close(a, b, tol=1e-10):
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=0, atol=tol)


def test_weighted_training_loss_metrics_and_weights_equal_one_process(runs):
    one, two = runs[1][0], runs[2]
    assert set(one["history"]) == {"loss", "acc", "acc_1", "val_loss", "val_acc", "val_acc_1"}
    for rank in two:
        for key, values in one["history"].items():
            _close(rank["history"][key], values)
        for a, b in zip(rank["weights"], one["weights"]):
            _close(a, b)
        for a, b in zip(rank["padded"], one["padded"]):
            _close(a, b)
    # the weighted accuracy differs from the plain one: the weights are really in it
    assert abs(one["history"]["acc"][0] - one["history"]["acc_1"][0]) > 1e-3


def test_weighted_evaluate_counts_every_sample_once(runs):
    one, two = runs[1][0], runs[2]
    for bs, values in one["evaluate"].items():
        for rank in two:
            _close(rank["evaluate"][bs], values)
    # batch-size independent, as sum(w * l) / n is
    _close(one["evaluate"]["7"], one["evaluate"]["32"], 1e-12)


def test_a_sequence_of_weighted_batches_with_class_weight_splits_exactly(runs):
    one, two = runs[1][0]["sequence"], runs[2]
    for rank in two:
        _close(rank["sequence"]["history"]["loss"], one["history"]["loss"])
        _close(rank["sequence"]["history"]["acc_1"], one["history"]["acc_1"])
        _close(rank["sequence"]["evaluate"], one["evaluate"])
        for a, b in zip(rank["sequence"]["weights"], one["weights"]):
            _close(a, b)


def test_masked_outputs_with_temporal_weights_split_exactly(runs):
    one, two = runs[1][0]["masked"], runs[2]
    for rank in two:
        for key, values in one["history"].items():
            _close(rank["masked"]["history"][key], values)
        _close(rank["masked"]["evaluate"], one["evaluate"])
        for a, b in zip(rank["masked"]["weights"], one["weights"]):
            _close(a, b)
    # the mask is in the metrics: the plain mae (mask only) differs from the weighted one
    assert abs(one["history"]["mae"][0] - one["history"]["mae_1"][0]) > 1e-3
