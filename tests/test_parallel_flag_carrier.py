"""The step's flags inside DDP's gradient all-reduce, as the gradient of a parameter of their own
(parallel/flag_carrier.py): the encoding through DDP's average in every dtype (one process), and
with 2 real gloo processes: the reduced gradients are bit-identical to DDP's without the carrier,
over several buckets, before and after DDP's bucket rebuild, with and without
gradient_as_bucket_view, in float32, bfloat16 and float16, with no all-reduce from Python; every
rank gets the maxima of the flags; and the fallback where the buckets cannot carry them."""

from __future__ import annotations

import json

import pytest
import torch

from arignote.parallel.flag_carrier import DIGITS, decode, encode
from parallel_helpers import _run, _write

CANNOT_SPLIT = 1 << 30  # the largest flag the step sends (oom.CANNOT_SPLIT)


@pytest.mark.parametrize("world", [2, 3, 5, 7, 8])
def test_ddps_average_of_the_ranks_blocks_gives_every_flag_exactly(world):
    # DDP averages a float32 gradient: each rank's block times 1/world (or divided by world), summed
    # in any order; every digit comes back exactly
    pool = [[0, 0, 0], [CANNOT_SPLIT, 1, 0], [8, 0, 3], [255, 1, 0], [256, 0, 2 ** 32 - 1],
            [2 ** 32 - 2, 0, 254], [1, 1, 1], [65535, 0, 0]]
    flags = pool[:world]
    blocks = [encode(f, rank=r, world=world) for r, f in enumerate(flags)]
    assert all(b.dtype == torch.float32 and b.numel() == world * 3 * DIGITS for b in blocks)
    want = [max(f[i] for f in flags) for i in range(3)]
    for scaled in ([b * (1.0 / world) for b in blocks], [b / world for b in blocks]):
        for order in (scaled, scaled[::-1]):  # any summation order
            total = torch.zeros_like(blocks[0])
            for b in order:
                total = total + b
            assert decode(total, world, 3) == want
    assert decode(sum(encode([0, 0, 0], r, world) for r in range(world)) / world, world, 3) == [0, 0, 0]


def test_the_carrier_gives_its_flags_to_the_armed_backward_and_zeros_otherwise():
    from arignote.parallel.flag_carrier import FlagCarrier

    c = FlagCarrier(torch.nn.Linear(3, 1), rank=0, world=1, width=3)
    assert [n for n, _ in c.named_parameters()] == ["flags", "module.weight", "module.bias"]
    c.send([7, 0, 300])
    c.attach(c(torch.ones(2, 3)).sum()).backward()
    assert c.received() == [7, 0, 300] and c.flags.grad is None  # read once, released
    c.attach(c(torch.ones(2, 3)).sum()).backward()  # nothing sent: zeros (DDP needs a gradient)
    assert c.received() == [0, 0, 0] and c.delivered == 2
    with pytest.raises(RuntimeError, match="did not travel"):
        c.received()  # no backward carried anything since
    with pytest.raises(ValueError, match="takes 3 flags"):
        c.send([1, 2])


def test_a_flag_out_of_range_is_refused():
    with pytest.raises(ValueError, match=r"\[0, 2\*\*32\)"):
        encode([-1, 0, 0], rank=0, world=2)
    with pytest.raises(ValueError, match="whole number"):
        encode([2 ** 32, 0, 0], rank=0, world=2)


SCRIPT = r'''
import copy, json, os, sys
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from arignote import config
from arignote.bench.opcount import OpRecorder
from arignote.parallel import strategy_for
from arignote.parallel.flag_carrier import FlagCarrier

out = sys.argv[1]
config.configure(device="cpu", cpu_processes=2, print_active_device=False)
s = strategy_for(["cpu"])
rank = s.rank
calls = {"all_reduce": 0}
_all_reduce = dist.all_reduce


def counting(*args, **kwargs):
    calls["all_reduce"] += 1
    return _all_reduce(*args, **kwargs)


dist.all_reduce = counting


def all_reduces(rec):
    return sum(op.name == "c10d.allreduce_.default" for op in rec.ops)


result = {}
CASES = ((torch.float32, False), (torch.float32, True), (torch.bfloat16, True), (torch.float16, False))
for dtype, view in CASES:
    torch.manual_seed(0)
    base = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64),
                               torch.nn.Tanh(), torch.nn.Linear(64, 4)).to(dtype)
    # 2 KB buckets: after DDP's rebuild (its first backward reduces one bucket of everything) the
    # model is reduced in several buckets
    plain = DDP(copy.deepcopy(base), bucket_cap_mb=0.002, gradient_as_bucket_view=view)
    carried = DDP(FlagCarrier(copy.deepcopy(base), rank, 2, 3), bucket_cap_mb=0.002,
                  gradient_as_bucket_view=view)
    torch.manual_seed(10 + rank)
    case = {"same": [], "flags": [], "plain": [], "carried": [], "torch": []}
    for step in range(4):  # DDP rebuilds its buckets at the second forward
        x = torch.randn(8, 32).to(dtype)
        plain.zero_grad(set_to_none=step % 2 == 0)
        carried.module.module.zero_grad(set_to_none=step % 2 == 0)
        with OpRecorder() as rec:
            plain(x).square().mean().backward()
        case["plain"].append(all_reduces(rec))
        before = calls["all_reduce"]
        flags = [3 + 5 * rank + step, int(rank == 1 and step == 2), (1 << 30) * rank if step == 3 else 0]
        pending = s.agree_in_reduction(carried, flags)
        with carried.no_sync():  # the loop's way: forward unarmed, armed once the step goes on
            loss = carried(x).square().mean()
        with OpRecorder() as rec:
            s.reduce_next_backward(carried, loss).backward()
        case["flags"].append(pending.wait())
        case["carried"].append(all_reduces(rec))
        case["torch"].append(calls["all_reduce"] - before)
        pairs = zip(plain.parameters(), carried.module.module.parameters())
        case["same"].append(all(torch.equal(a.grad, b.grad) for a, b in pairs))
    case["flag_grad"] = carried.module.flags.grad is None  # read and released
    result[f"{dtype}-{view}"] = case

# the strategy's own wrap: a flag carrier around the module under gloo, the user's module inside
wrapped = s.wrap(torch.nn.Linear(4, 2), stepped=True)
plain = s.wrap(torch.nn.Linear(4, 2))  # a hand-written loop's: plain DDP, armed by its forward
result["wrap"] = [type(wrapped.module).__name__, type(wrapped.module.module).__name__,
                  [n for n, _ in wrapped.module.named_parameters()], wrapped.require_backward_grad_sync,
                  type(plain.module).__name__, plain.require_backward_grad_sync]

# fallbacks: a DDP module with a comm hook of its own, and a module that is not DDP
torch.manual_seed(0)
own = s.wrap(torch.nn.Linear(4, 2), stepped=True)
own.register_comm_hook(None, lambda state, bucket: dist.all_reduce(bucket.buffer().div_(2), async_op=True)
                       .get_future().then(lambda f: f.value()[0]))
before = dict(s.collectives)
pending = s.agree_in_reduction(own, [rank, 0, 0])
with own.no_sync():
    loss = own(torch.ones(3, 4)).sum()
s.reduce_next_backward(own, loss).backward()
result["own_hook"] = {"flags": pending.wait(), "type": type(pending).__name__,
                      "agree_later": s.collectives["agree_later"] - before.get("agree_later", 0)}
bare = s.agree_in_reduction(torch.nn.Linear(2, 2), [0, rank, 0])
result["bare"] = [type(bare).__name__, bare.wait()]
with open(os.path.join(out, f"rank{rank}.json"), "w") as fh:
    json.dump(result, fh)
'''


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    d = tmp_path_factory.mktemp("carrier")
    script = _write(d, "carrier.py", SCRIPT)
    r = _run([str(script), str(d)], timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    return [json.loads((d / f"rank{i}.json").read_text()) for i in range(2)]


@pytest.mark.multiproc
@pytest.mark.parametrize("case", ["torch.float32-False", "torch.float32-True", "torch.bfloat16-True",
                                  "torch.float16-False"])
def test_gradients_are_ddps_own_bit_for_bit_and_the_flags_their_maxima(ranks, case):
    for rk in ranks:
        got = rk[case]
        assert got["same"] == [True] * 4  # every parameter's reduced gradient equals DDP's, bitwise
        assert got["plain"][1] >= 2  # several buckets after DDP's rebuild
        # DDP's own bucket all-reduces from its C++ reducer, none from Python: float32 models need
        # no more than without the carrier (the flags join a bucket); float16/bfloat16 ones one
        # more (DDP buckets by dtype: the flags are float32)
        extra = 0 if "float32" in case else 1
        assert got["carried"] == [n + extra for n in got["plain"]]
        assert got["torch"] == [0] * 4
        assert got["flags"] == [[8, 0, 0], [9, 0, 0], [10, 1, 0], [11, 0, CANNOT_SPLIT]]
        assert got["flag_grad"] is True


@pytest.mark.multiproc
def test_the_strategy_wraps_the_trainers_module_in_a_flag_carrier_under_gloo(ranks):
    for rk in ranks:
        assert rk["wrap"] == ["FlagCarrier", "Linear", ["flags", "module.weight", "module.bias"], False,
                              "Linear", True]


@pytest.mark.multiproc
def test_the_flags_keep_their_own_exchange_where_no_bucket_can_carry_them(ranks):
    for rk in ranks:
        assert rk["own_hook"] == {"flags": [1, 0, 0], "type": "Agreement", "agree_later": 1}
        assert rk["bare"] == ["Agreement", [0, 1, 0]]
