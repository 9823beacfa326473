"""Iterables of batches under data parallel, one batch rule: the batch the user wrote is the global
batch, each rank takes its rows of each one (a DataLoader loads only those rows)."""

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

from arignote.training.data import IterableData
from arignote.training.rank_split import RankBatchSampler, for_rank, set_epoch
from parallel_helpers import _run, _write

DS = TensorDataset(torch.arange(10.0).reshape(10, 1), torch.arange(10.0))


class _Fake:
    """The strategy as rank_split sees it: rank, world size and broadcast_seed (rank 0's draw)."""

    def __init__(self, rank, world=2, seed=None, device="cpu"):
        self.rank, self.world_size, self.seed, self.draws = rank, world, seed, 0
        self.device = torch.device(device)

    def broadcast_seed(self, draw):
        self.draws += 1
        return self.seed if self.seed is not None else draw()


def _rows(loader):
    return [[int(v) for v in yb] for _, yb in loader]


def test_a_loader_rebuilt_for_a_gpu_pins_its_batches():
    """Under data parallel on GPUs the rebuilt DataLoader pins in its own thread (issue 18); on the
    CPU it keeps the user's setting."""
    assert for_rank(DataLoader(DS, batch_size=2), _Fake(0, device="cuda:0"))[0].pin_memory is True
    assert for_rank(DataLoader(DS, batch_size=2), _Fake(0))[0].pin_memory is False


def test_single_process_is_left_alone():
    loader = DataLoader(DS, batch_size=2)
    assert for_rank(loader, _Fake(0, 1)) == (loader, None, False)


def test_rank_batch_sampler_splits_every_global_batch_and_pads_an_empty_share():
    batches = [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9], [10]]
    parts = [RankBatchSampler(batches, r, 2) for r in range(2)]
    assert list(parts[0]) == [[0, 1], [4, 5], [8], [10]]
    assert list(parts[1]) == [[2, 3], [6, 7], [9], [10]]  # [10]: a padding row
    assert list(parts[1].shares) == [(2, 4), (2, 4), (1, 2), (0, 1)]
    assert len(parts[0]) == 4  # as many steps as one process


@pytest.mark.parametrize("shuffle", [True, False])
def test_a_loader_keeps_its_global_batch_and_ranks_load_disjoint_rows(shuffle):
    loader = DataLoader(DS, batch_size=4, shuffle=shuffle, drop_last=False)
    parts = [for_rank(loader, _Fake(r, seed=7)) for r in range(2)]
    for part, shares, sharded in parts:
        assert isinstance(part.batch_sampler, RankBatchSampler) and shares is part.batch_sampler.shares
        assert len(part) == len(loader) == 3 and not sharded
    rows = [_rows(p) for p, _, _ in parts]
    assert [len(b) for b in rows[0]] == [2, 2, 1] and [len(b) for b in rows[1]] == [2, 2, 1]
    union = sorted(v for r in rows for b in r for v in b)
    assert union == list(range(10))  # every sample once per epoch, no padding (10 = 2 x 5)
    if not shuffle:
        assert rows[0] == [[0, 1], [4, 5], [8]] and rows[1] == [[2, 3], [6, 7], [9]]


def test_the_shuffle_seed_is_rank_0s_draw_from_the_torch_rng_as_in_one_process():
    loader = DataLoader(DS, batch_size=4, shuffle=True)
    torch.manual_seed(3)
    single = [[int(v) for v in yb] for _, yb in loader]
    torch.manual_seed(3)
    part, _, _ = for_rank(loader, _Fake(0))  # rank 0 draws (the fake broadcasts its own draw)
    mine = _rows(part)
    assert [b[:len(m)] for b, m in zip(single, mine)] == mine  # rank 0's rows of the same global batches
    second = _rows(part)
    assert second != mine  # the next epoch draws a new order


def test_the_loaders_own_generator_decides_the_order_without_a_broadcast():
    make = lambda: DataLoader(DS, batch_size=5, shuffle=True, generator=torch.Generator().manual_seed(1))  # noqa: E731
    single = _rows(make())
    fake = _Fake(1)
    part, _, _ = for_rank(make(), fake)
    assert _rows(part) == [b[3:] for b in single] and fake.draws == 0


def test_set_epoch_reaches_a_users_distributed_sampler():
    sampler = DistributedSampler(DS, num_replicas=2, rank=1, shuffle=True)
    ready = DataLoader(DS, batch_size=2, sampler=sampler)
    assert for_rank(ready, _Fake(1)) == (ready, None, True)  # split by its author: used as it is
    set_epoch(ready, 3)
    assert sampler.epoch == 3


def test_iterables_without_indices_are_read_in_full_and_split_by_rows():
    class Stream(IterableDataset):
        def __iter__(self):
            yield from ((torch.full((1,), float(i)), torch.tensor(float(i))) for i in range(5))

    stream = DataLoader(Stream(), batch_size=2)
    assert for_rank(stream, _Fake(0)) == (stream, None, False)
    data = IterableData(stream, torch.device("cpu"), torch.float32)
    got = [(y.tolist(), rows, total) for _, y, rows, total in data.rank_batches(None, 2, 1)]
    assert got == [([1.0], 1, 2), ([3.0], 1, 2), ([4.0], 0, 1)]  # the last: rank 0 has it, rank 1 pads

    def gen():
        for i in range(3):
            yield np.full((3, 1), i, "float32"), np.arange(3, dtype="float32") + 10 * i

    data = IterableData(gen(), torch.device("cpu"), torch.float32, steps_per_epoch=3)
    got = [(y.tolist(), rows, total) for _, y, rows, total in data.rank_batches(None, 2, 0)]
    assert got == [([0.0, 1.0], 2, 3), ([10.0, 11.0], 2, 3), ([20.0, 21.0], 2, 3)]


def test_a_dataloader_subclass_without_a_distributed_sampler_is_an_error():
    class MyLoader(DataLoader):
        pass

    with pytest.raises(ValueError, match="MyLoader \\(a DataLoader subclass\\).*DistributedSampler"):
        for_rank(MyLoader(DS, batch_size=2), _Fake(0))
    mine = MyLoader(DS, batch_size=2, sampler=DistributedSampler(DS, num_replicas=2, rank=0))
    assert for_rank(mine, _Fake(0))[0] is mine
    custom = DataLoader(DS, batch_sampler=BatchSampler(SequentialSampler(DS), 3, False))
    part, _, _ = for_rank(custom, _Fake(1))
    assert _rows(part) == [[2], [5], [8], [9]]  # a batch sampler of the user's makes the global batches
    weighted = DataLoader(DS, batch_size=4, sampler=WeightedRandomSampler([1.0] * 10, 10))
    assert len(for_rank(weighted, _Fake(0))[0]) == 3
    assert isinstance(RandomSampler(DS), RandomSampler)



DDP_SCRIPT = """
import json, os, sys
import numpy as np, torch
from torch.utils.data import DataLoader, Dataset
import arignote, arignote.callbacks
from arignote.layers import Dense
from arignote.models import Sequential

mode, out, procs = sys.argv[1], sys.argv[2], int(sys.argv[3])
arignote.configure(device="cpu", cpu_processes=procs, print_active_device=False)
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
        g = np.random.default_rng(5)  # the same batches on every rank
        while True:
            i = g.integers(0, 56)
            yield x[i:i + 8], y[i:i + 8]
    data = gen()


class Steps(arignote.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.n = 0
    def on_train_batch_end(self, batch, logs=None):
        self.n += 1
    def on_epoch_end(self, epoch, logs=None):
        steps.append(self.n)


steps = []
h = model.fit(data, epochs=2, verbose=0, steps_per_epoch=None if mode != "generator" else 4,
              callbacks=[Steps()])
rank = model._trainer.strategy.rank
with open(os.path.join(out, f"{mode}{procs}-{rank}.json"), "w") as fh:
    json.dump({"seen": seen, "loss": h.history["loss"], "steps": steps}, fh)
"""


@pytest.mark.multiproc
def test_one_and_two_processes_run_the_same_global_batches_of_a_dataloader(tmp_path):
    script = _write(tmp_path, "train_iter.py", DDP_SCRIPT)
    runs = {}
    for procs in (1, 2):
        r = _run([str(script), "loader", str(tmp_path), str(procs)])
        assert r.returncode == 0, r.stderr
        runs[procs] = [json.loads((tmp_path / f"loader{procs}-{i}.json").read_text()) for i in range(procs)]
    one, two = runs[1][0], runs[2]
    # steps per epoch do not depend on the number of processes (8 global batches of 8)
    assert one["steps"] == two[0]["steps"] == two[1]["steps"] == [8, 8]
    # the same seeded order: rank 0 reads rows 0-3 and rank 1 rows 4-7 of each of one process's batches
    epochs = [one["seen"][-128:][64 * e:64 * (e + 1)] for e in range(2)]
    for e in range(2):
        mine = [rk["seen"][-64:][32 * e:32 * (e + 1)] for rk in two]
        assert sorted(epochs[e]) == list(range(64))
        assert mine[0] == [i for b in range(8) for i in epochs[e][8 * b:8 * b + 4]]
        assert mine[1] == [i for b in range(8) for i in epochs[e][8 * b + 4:8 * b + 8]]
    assert epochs[0] != epochs[1]  # each epoch draws a new order
    np.testing.assert_allclose(two[0]["loss"], one["loss"], rtol=1e-5)
    assert two[0]["loss"] == two[1]["loss"]


@pytest.mark.multiproc
def test_a_list_and_a_seeded_generator_train_under_data_parallel(tmp_path):
    script = _write(tmp_path, "train_iter.py", DDP_SCRIPT)
    for mode in ("list", "generator"):
        r = _run([str(script), mode, str(tmp_path), "2"])
        assert r.returncode == 0, r.stderr
        ranks = [json.loads((tmp_path / f"{mode}2-{i}.json").read_text()) for i in range(2)]
        assert ranks[0]["steps"] == ranks[1]["steps"] == [8, 8] if mode == "list" else [4, 4]
        assert ranks[0]["loss"] == ranks[1]["loss"]
