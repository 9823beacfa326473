"""fit's ``shuffle`` values as Keras 2.3.1 reads them (training_arrays.fit_loop): False keeps the
rows in order, True shuffles the rows every epoch, ``'batch'`` shuffles whole batches
(``training_utils.batch_shuffle``: blocks of ``batch_size`` contiguous rows, the incomplete last
batch at the end)."""

from __future__ import annotations

import numpy as np
import torch

from arignote.models import Model
from arignote.optimizers import SGD


class _Seen(torch.nn.Module):
    """A linear layer that records the rows (their first column: the sample's index) it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(2, 1)
        self.batches: list[list[int]] = []

    def forward(self, x):
        if self.training:
            self.batches.append([int(v) for v in x[:, 0]])
        return self.lin(x)


def _fit(shuffle, epochs=3, n=10, batch=4):
    net = _Seen()
    model = Model(net)
    model.compile(SGD(lr=0.0), "mse")
    x = np.stack([np.arange(n), np.zeros(n)], 1).astype("float32")
    model.fit(x, np.zeros((n, 1), "float32"), batch_size=batch, epochs=epochs, shuffle=shuffle, verbose=0)
    per_epoch = len(net.batches) // epochs
    return [net.batches[e * per_epoch:(e + 1) * per_epoch] for e in range(epochs)]


def test_batch_shuffle_moves_whole_batches_and_keeps_the_short_one_last():
    torch.manual_seed(5)
    epochs = _fit("batch", epochs=6)
    for batches in epochs:
        assert batches[-1] == [8, 9]
        assert sorted(map(tuple, batches[:-1])) == [(0, 1, 2, 3), (4, 5, 6, 7)]
    assert {tuple(b[0]) for b in epochs} == {(0, 1, 2, 3), (4, 5, 6, 7)}  # the order changes
    torch.manual_seed(5)
    assert _fit("batch", epochs=6) == epochs  # and follows torch's seed


def test_true_shuffles_rows_and_false_keeps_them_in_order():
    torch.manual_seed(0)
    shuffled = _fit(True)
    assert any(b not in ([0, 1, 2, 3], [4, 5, 6, 7], [8, 9]) for e in shuffled for b in e)
    assert all(sorted(sum(e, [])) == list(range(10)) for e in shuffled)
    assert _fit(False) == [[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]] * 3
