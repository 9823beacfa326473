"""The step's flags inside DDP's gradient all-reduce (parallel/flag_carrier.py): the encoding in
every bucket dtype (one process), and with 2 real gloo processes: the reduced gradients are
bit-identical to DDP's own (no hook), over several buckets, before and after DDP's bucket
rebuild, with and without gradient_as_bucket_view, in float32, bfloat16 and float16; every rank
gets the maxima of the flags; and the fallback where the hook cannot carry them."""

from __future__ import annotations

import json

import pytest
import torch

from arignote.parallel.flag_carrier import DIGITS, decode, encode
from parallel_helpers import _run, _write

CANNOT_SPLIT = 1 << 30  # the largest flag the step sends (oom.CANNOT_SPLIT)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_a_sum_of_the_ranks_blocks_gives_every_flag_exactly_in_every_bucket_dtype(dtype):
    world = 5
    flags = [[0, 0, 0], [CANNOT_SPLIT, 1, 0], [8, 0, 3], [255, 1, 0], [256, 0, 2 ** 32 - 1]]
    blocks = [encode(f, rank=r, world=world).to(dtype) for r, f in enumerate(flags)]
    assert all(b.numel() == world * 3 * DIGITS for b in blocks)
    for order in (blocks, blocks[::-1]):  # any summation order
        total = torch.zeros_like(blocks[0])
        for b in order:
            total = total + b
        assert decode(total, world, 3) == [CANNOT_SPLIT, 1, 2 ** 32 - 1]
    assert decode(sum(encode([0, 0, 0], r, world) for r in range(world)), world, 3) == [0, 0, 0]


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
from arignote.parallel import strategy_for

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
result = {}
CASES = ((torch.float32, False), (torch.float32, True), (torch.bfloat16, True), (torch.float16, False))
for dtype, view in CASES:
    torch.manual_seed(0)
    base = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64),
                               torch.nn.Tanh(), torch.nn.Linear(64, 4)).to(dtype)
    # 2 KB buckets: after DDP's rebuild (its first backward reduces one bucket of everything) the
    # model is reduced in several buckets
    plain = DDP(copy.deepcopy(base), bucket_cap_mb=0.002, gradient_as_bucket_view=view)
    hooked = DDP(copy.deepcopy(base), bucket_cap_mb=0.002, gradient_as_bucket_view=view)
    torch.manual_seed(10 + rank)
    case = {"same": [], "flags": [], "buckets": [], "torch": []}
    for step in range(4):  # DDP rebuilds its buckets at the second forward
        x = torch.randn(8, 32).to(dtype)
        for net in (plain, hooked):
            net.zero_grad(set_to_none=step % 2 == 0)
        plain(x).square().mean().backward()
        buckets, before = s.collectives["bucket"], calls["all_reduce"]
        flags = [3 + 5 * rank + step, int(rank == 1 and step == 2), CANNOT_SPLIT * rank if step == 3 else 0]
        pending = s.agree_in_reduction(hooked, flags)
        hooked(x).square().mean().backward()
        case["flags"].append(pending.wait())
        case["buckets"].append(s.collectives["bucket"] - buckets)
        case["torch"].append(calls["all_reduce"] - before)
        pairs = zip(plain.parameters(), hooked.parameters())
        case["same"].append(all(torch.equal(a.grad, b.grad) for a, b in pairs))
    case["ddp_buckets"] = len(hooked.reducer._get_zeros_like_grad_buckets())
    result[f"{dtype}-{view}"] = case

# fallbacks: a DDP module with a comm hook of its own, and a module that is not DDP
torch.manual_seed(0)
own = DDP(torch.nn.Linear(4, 2))
own.register_comm_hook(None, lambda state, bucket: dist.all_reduce(bucket.buffer().div_(2), async_op=True)
                       .get_future().then(lambda f: f.value()[0]))
before = dict(s.collectives)
pending = s.agree_in_reduction(own, [rank, 0, 0])
own(torch.ones(3, 4)).sum().backward()
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
    script = _write(d, "carrier.py", SCRIPT.replace("CANNOT_SPLIT", str(CANNOT_SPLIT)))
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
        assert got["ddp_buckets"] >= 2
        # one all-reduce a bucket, nothing else: the flags travel in bucket 0's (DDP's first
        # backward reduces one bucket of every parameter, then it rebuilds them)
        assert got["buckets"] == got["torch"] == [1] + [got["ddp_buckets"]] * 3
        assert got["flags"] == [[8, 0, 0], [9, 0, 0], [10, 1, 0], [11, 0, CANNOT_SPLIT]]


@pytest.mark.multiproc
def test_the_flags_keep_their_own_exchange_where_no_bucket_can_carry_them(ranks):
    for rk in ranks:
        assert rk["own_hook"] == {"flags": [1, 0, 0], "type": "Agreement", "agree_later": 1}
        assert rk["bare"] == ["Agreement", [0, 1, 0]]
