"""Iterables of batches under data parallel: each rank reads its share (DataLoader, list), and what
cannot be split (a generator, a custom sampler) is a clear error."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from torch.utils.data import (
    BatchSampler,
    DataLoader,
    DistributedSampler,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    TensorDataset,
    WeightedRandomSampler,
)

from arignote.training.rank_split import set_epoch, split_for_rank
from parallel_helpers import _run, _write

DS = TensorDataset(torch.arange(10.0).reshape(10, 1), torch.arange(10.0))


def test_single_process_is_left_alone():
    loader = DataLoader(DS, batch_size=2)
    assert split_for_rank(loader, 0, 1) is loader


def test_lists_are_strided_and_padded():
    assert split_for_rank(list("abcde"), 0, 2) == ["a", "c", "e"]
    assert split_for_rank(list("abcde"), 1, 2) == ["b", "d", "a"]  # padded to equal counts
    assert split_for_rank(("a", "b", "c", "d"), 1, 2) == ["b", "d"]


@pytest.mark.parametrize("shuffle", [True, False])
def test_a_loader_gets_a_distributed_sampler_with_the_same_settings(shuffle):
    loader = DataLoader(DS, batch_size=3, shuffle=shuffle, drop_last=True)
    parts = [split_for_rank(loader, r, 2) for r in range(2)]
    for r, part in enumerate(parts):
        assert isinstance(part.sampler, DistributedSampler) and part.sampler.rank == r
        assert part.sampler.shuffle is shuffle and part.batch_size == 3 and part.drop_last
    seen = [[int(v) for _, yb in part for v in yb] for part in parts]
    assert len(seen[0]) == len(seen[1]) == 3  # 5 samples each, one full batch of 3 (drop_last)
    full = [[int(v) for _, yb in split_for_rank(DataLoader(DS, batch_size=5, shuffle=shuffle), r, 2)
             for v in yb] for r in range(2)]
    assert sorted(full[0] + full[1]) == list(range(10))  # disjoint shares covering the data


def test_set_epoch_changes_the_shuffle_the_same_way_on_every_rank():
    parts = [split_for_rank(DataLoader(DS, batch_size=10, shuffle=True), r, 2) for r in range(2)]
    orders = {}
    for epoch in (0, 1):
        for r, part in enumerate(parts):
            set_epoch(part, epoch)
            orders[r, epoch] = [int(v) for _, yb in part for v in yb]
        assert sorted(orders[0, epoch] + orders[1, epoch]) == list(range(10))  # same permutation
    assert orders[0, 0] != orders[0, 1]
    set_epoch(parts[0], 0)
    assert [int(v) for _, yb in parts[0] for v in yb] == orders[0, 0]


def test_what_is_used_as_it_is():
    sampler = DistributedSampler(DS, num_replicas=2, rank=1)
    ready = DataLoader(DS, batch_size=2, sampler=sampler)
    assert split_for_rank(ready, 1, 2) is ready

    class Stream(IterableDataset):
        def __iter__(self):
            yield from range(4)

    stream = DataLoader(Stream(), batch_size=2)
    assert split_for_rank(stream, 0, 2) is stream


def test_what_cannot_be_split_is_an_error():
    def gen():
        yield np.zeros((2, 1)), np.zeros(2)

    with pytest.raises(ValueError, match="x is a generator, which cannot be split over the 2 .*Sequence"):
        split_for_rank(gen(), 0, 2)
    weighted = DataLoader(DS, batch_size=2, sampler=WeightedRandomSampler([1.0] * 10, 10))
    with pytest.raises(ValueError, match="custom sampler \\(WeightedRandomSampler\\).*DistributedSampler"):
        split_for_rank(weighted, 0, 2)

    class Pairs(BatchSampler):
        pass

    class MyLoader(DataLoader):
        pass

    with pytest.raises(ValueError, match="MyLoader \\(a DataLoader subclass\\).*DistributedSampler"):
        split_for_rank(MyLoader(DS, batch_size=2), 0, 2)
    mine = MyLoader(DS, batch_size=2, sampler=DistributedSampler(DS, num_replicas=2, rank=0))
    assert split_for_rank(mine, 0, 2) is mine
    custom = DataLoader(DS, batch_sampler=Pairs(SequentialSampler(DS), 2, False))
    with pytest.raises(ValueError, match="custom batch_sampler \\(Pairs\\)"):
        split_for_rank(custom, 0, 2)
    assert isinstance(RandomSampler(DS), RandomSampler)


DDP_SCRIPT = """
import json, os, sys
import numpy as np, torch
from torch.utils.data import DataLoader, Dataset
import arignote
from arignote.layers import Dense
from arignote.models import Sequential

mode, out = sys.argv[1], sys.argv[2]
arignote.configure(device="cpu", cpu_processes=2, parallel_timeout=20)
torch.manual_seed(0)
rng = np.random.default_rng(0)
x = rng.normal(size=(64, 5)).astype("float32")
y = (x @ rng.normal(size=(5, 1))).astype("float32")
seen = []


class Recorded(Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        seen.append(int(i))
        return x[i], y[i]


model = Sequential([Dense(4, activation="tanh", input_shape=(5,)), Dense(1)])
model.compile("sgd", "mse")
if mode == "loader":
    data = DataLoader(Recorded(), batch_size=8, shuffle=True)
elif mode == "list":
    data = [(x[i:i + 8], y[i:i + 8]) for i in range(0, 64, 8)]
else:
    def gen():
        while True:
            yield x[:8], y[:8]
    data = gen()
h = model.fit(data, epochs=2, verbose=2, steps_per_epoch=None if mode != "generator" else 4)
rank = model._trainer.strategy.rank
with open(os.path.join(out, f"{mode}{rank}.json"), "w") as fh:
    json.dump({"seen": seen, "loss": h.history["loss"]}, fh)
"""


def test_ranks_read_their_share_of_a_dataloader_and_a_list(tmp_path):
    script = _write(tmp_path, "train_iter.py", DDP_SCRIPT)
    r = _run([str(script), "loader", str(tmp_path)])
    assert r.returncode == 0, r.stderr
    assert "4/4" in r.stdout or "Epoch 2/2" in r.stdout
    ranks = [json.loads((tmp_path / f"loader{i}.json").read_text()) for i in range(2)]
    # fit looks at a first batch before training (checks, memory plan); then 2 epochs of 32 samples per rank
    per_epoch = [[rk["seen"][-64:][32 * e: 32 * (e + 1)] for e in range(2)] for rk in ranks]
    for e in range(2):
        assert sorted(per_epoch[0][e] + per_epoch[1][e]) == list(range(64))
    assert per_epoch[0][0] != per_epoch[0][1]  # set_epoch reshuffles
    assert ranks[0]["loss"] == ranks[1]["loss"]
    r = _run([str(script), "list", str(tmp_path)])
    assert r.returncode == 0, r.stderr


def test_a_generator_under_data_parallel_is_refused(tmp_path):
    script = _write(tmp_path, "train_iter.py", DDP_SCRIPT)
    r = _run([str(script), "generator", str(tmp_path)])
    assert r.returncode != 0
    assert "cannot be split over the 2 data-parallel ranks" in r.stderr + r.stdout
