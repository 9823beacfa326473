"""Recorded outcomes of ``arignote selftest`` items for their judges (tests/test_selftest_judges.py).

``RECORDS[item] = {"good": [records of a correct run], "broken": {what broke: record}}``. The CPU
items' good records were taken from ``python -m arignote.bench.selfchecks NAME`` on the CPU box of
session 10; the GPU items' records are written from the run's code (no GPU was here): the numbers
are what a correct run and each broken run would record, not measurements. A broken record is a
good one with what the breakage changes (:func:`broke`). Add a file ``tests/selftest_records_*.py``
with its own ``RECORDS`` for other items: the judge test collects them all.
"""

from __future__ import annotations

from typing import Any

MiB = 1 << 20
GiB = 1 << 30


def broke(good: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**good, **changes}


_banner_cpu = {"lines": ["arignote 0.1.0 on torch 2.13.0 (CPU build) · device cpu: Intel(R) Xeon(R) "
                         "Processor, 2 threads"]}
_train_cpu = {"device": "cpu", "losses": [1.371006652712822, 1.157123938202858]}
_dp_cpu = {"strategies": [[2, "gloo"]], "losses": [1.6670451238751411, 1.5002987831830978]}
_bf16_cpu = {"losses": [1.38348388671875, 1.207733154296875], "forward_dtypes": ["torch.bfloat16"],
             "autocast_on": [True], "policy": "mixed-bf16: autocast to bfloat16 on cpu, no gradient scaling",
             "scaler_enabled": False, "scale": None}
_oom_cpu = {"stderr": ["arignote: out of memory at batch 32; each step now runs as 4 micro-batches of 8 "
                       "samples with gradients accumulated before one update"],
            "k": 4, "losses": [1.3878908641636372, 1.2873075157403946]}
_placement_cpu = {"placed": ["cpu", "cpu"], "losses": [1.453182801604271, 1.3655690550804138]}

_a100 = "NVIDIA A100-SXM4-80GB"
_banner_gpu = {"gpu_name": _a100, "lines": [
    "arignote 0.1.0 on torch 2.13.0 (CUDA 12.8, cuDNN 91000)",
    f"Mapped cuda:0 to {_a100} (0000:07:00.0), 79 GiB free", "Memory: caching allocator, grows on demand",
    "TF32: matmul on, conv on (tf32=on)"]}
_prealloc = {"total": 80 * GiB, "free_before": 79 * GiB, "free_after": 39 * GiB, "reserved": 40 * GiB}
_limit = {"total": 80 * GiB, "fraction": 0.25, "oom_raised": True, "small_allocated": True,
          "oom_message": "CUDA out of memory. Tried to allocate 28.00 GiB ... memory.limit=0.25 (from code) "
                         "caps the caching allocator of cuda:0"}
_no_cache = {"caching": False, "reserved_after": 0, "free_before": 79 * GiB, "free_after": 79 * GiB + 2 * MiB}
_cudnn = {"want": [True, True], "flags": [True, True], "losses": [1.38, 1.21]}
_fp16 = {"losses": [1.38, 1.2], "forward_dtypes": ["torch.float16"], "autocast_on": [True],
         "policy": "mixed-fp16: autocast to float16 on cuda:0, dynamic gradient scaling",
         "scaler_enabled": True, "scale": 65536.0}
_each = {"runs": [{"index": 0, "device": "cuda:0", "losses": [1.4, 1.3]},
                  {"index": 1, "device": "cuda:1", "losses": [1.4, 1.3]}]}
_nccl = {"strategies": [[2, "nccl"]], "gpus": 2, "nccl": "2.27.3", "losses": [1.6, 1.5]}
_placement = {"where": ["cuda:0", "cuda:1"], "losses": [1.45, 1.36]}
_oom = {"device": "cuda:0", "batch": 4096, "cap": 600 * MiB, "plain_oom": True, "k": 4, "failures": 2,
        "max_rel_diff": 3e-7, "error": ""}

RECORDS: dict[str, dict[str, Any]] = {
    "banner-cpu": {"good": [_banner_cpu], "broken": {
        "no device line": {"lines": ["arignote 0.1.0 on torch 2.13.0 (CPU build)"]},
        "nothing printed": {"lines": []}}},
    "train-cpu": {"good": [_train_cpu], "broken": {
        "trained on a GPU": broke(_train_cpu, device="cuda:0"),
        "loss went up": broke(_train_cpu, losses=[1.1, 1.3]),
        "loss nan": broke(_train_cpu, losses=[1.3, float("nan")])}},
    "data-parallel-cpu": {"good": [_dp_cpu], "broken": {
        "ran in one process": broke(_dp_cpu, strategies=[[1, "none"]]),
        "each rank fitted alone": broke(_dp_cpu, strategies=[[1, "none"], [1, "none"]]),
        "loss stuck": broke(_dp_cpu, losses=[1.5, 1.5])}},
    "mixed-precision-cpu": {"good": [_bf16_cpu], "broken": {
        "no autocast in the step": broke(_bf16_cpu, forward_dtypes=["torch.float32"], autocast_on=[False]),
        "fp32 policy": broke(_bf16_cpu, policy="fp32: no autocast"),
        "scaler on for bf16": broke(_bf16_cpu, scaler_enabled=True, scale=65536.0)}},
    "oom-split-cpu": {"good": [_oom_cpu], "broken": {
        "no notice": broke(_oom_cpu, stderr=[]),
        "split too little": broke(_oom_cpu, k=2)}},
    "placement-cpu": {"good": [_placement_cpu], "broken": {
        "placed on a GPU": broke(_placement_cpu, placed=["cpu", "cuda:0"])}},
    "banner-gpu": {"good": [_banner_gpu], "broken": {
        "names another GPU": broke(_banner_gpu, gpu_name="Tesla T4")}},
    "memory-preallocate": {"good": [_prealloc], "broken": {
        "nothing reserved": broke(_prealloc, reserved=2 * MiB, free_after=79 * GiB - 300 * MiB),
        "reserved lazily (the driver saw nothing taken)": broke(_prealloc, free_after=79 * GiB - 300 * MiB)}},
    "memory-limit": {"good": [_limit], "broken": {
        "no cap": broke(_limit, fraction=1.0, oom_raised=False, oom_message=""),
        "error does not name the flag": broke(_limit, oom_message="CUDA out of memory."),
        "cap too tight": broke(_limit, small_allocated=False, small_error="OutOfMemoryError"),
    }},
    "memory-no-cache": {"good": [_no_cache], "broken": {
        "caching still on": broke(_no_cache, caching=True, reserved_after=512 * MiB, free_after=78 * GiB)}},
    "cudnn-benchmark": {"good": [_cudnn, {"want": [False, False], "flags": [False, False],
                                          "losses": [1.3, 1.2]}],
                        "broken": {"benchmark not set": broke(_cudnn, flags=[True, False]),
                                   "cudnn not off": {"want": [False, False], "flags": [True, False],
                                                     "losses": [1.3, 1.2]}}},
    "mixed-precision": {"good": [_fp16], "broken": {
        "the trainer's scaler off (W2)": broke(_fp16, scaler_enabled=False, scale=None),
        "the step ran without autocast (W2)": broke(_fp16, forward_dtypes=["torch.float32"],
                                                    autocast_on=[False]),
        "bf16 instead of fp16": broke(_fp16, forward_dtypes=["torch.bfloat16"])}},
    "train-each-gpu": {"good": [_each], "broken": {
        "second fit on cuda:0": {"runs": [_each["runs"][0], {**_each["runs"][1], "device": "cuda:0"}]},
        "no GPU": {"runs": []}}},
    "data-parallel-nccl": {"good": [_nccl], "broken": {
        "gloo on GPUs": broke(_nccl, strategies=[[2, "gloo"]]),
        "one GPU used": broke(_nccl, strategies=[[1, "none"]])}},
    "placement": {"good": [_placement], "broken": {
        "all on cuda:0": broke(_placement, where=["cuda:0"])}},
    "out-of-memory": {"good": [_oom], "broken": {
        "cap did not bite": broke(_oom, plain_oom=False, k=1, failures=0, max_rel_diff=0.0),
        "recovery ran out too": broke(_oom, error="CUDA out of memory", k=8, max_rel_diff=None),
        "wrong gradient": broke(_oom, max_rel_diff=0.2)}},
}
for _name in ("cudnn-off", "cudnn-on"):
    RECORDS[_name] = RECORDS["cudnn-benchmark"]

# data parallel (selfchecks_dp.py); the gloo records were taken on this CPU box by
# `python -m arignote.bench.selfchecks_dp weights|oom cpu`
_dp_w = {"world_size": 2, "backend": "nccl", "want_backend": "nccl", "k": 1, "max_diff": 2.4e-7}
_dp_oom = {**_dp_w, "k": 4}
_sync = {"returncode": 1, "seconds": 9.5, "named": True,
         "last_line": "RuntimeError: rank 1: out of memory in the backward pass while the gradients were "
                      "being reduced"}
_prealloc_oom = {"k": 2, "reserved": 40 * GiB, "total": 80 * GiB}
_dp_place = {"world_size": 2, "rank": 0, "gpus": 4, "where": ["cuda:0", "cuda:1"]}
RECORDS.update({
    "data-parallel-weights": {"good": [_dp_w, {"world_size": 2, "backend": "gloo", "want_backend": "gloo",
                                                "k": 1, "max_diff": 1.4901161193847656e-08}], "broken": {
        "gloo instead of NCCL": broke(_dp_w, backend="gloo"),
        "rank 1's reference joined the job: one process": broke(_dp_w, world_size=1),
        "weights differ": broke(_dp_w, max_diff=3e-2),
        "no reference": broke(_dp_w, max_diff=None)}},
    "data-parallel-oom": {"good": [_dp_oom, {"world_size": 2, "backend": "gloo", "want_backend": "gloo",
                                             "k": 2, "max_diff": 7.450580596923828e-09}], "broken": {
        "the cap never ran on rank 1 (W1)": broke(_dp_oom, k=1),
        "recovered to other weights": broke(_dp_oom, max_diff=1e-2)}},
    "data-parallel-oom-sync": {"good": [_sync], "broken": {
        "went on": broke(_sync, returncode=0, named=False, last_line="no output"),
        "waited for the NCCL timeout": broke(_sync, seconds=300.2),
        "died with another error": broke(_sync, named=False, last_line="RuntimeError: NCCL error")}},
    "mixed-bf16": {"good": [{"losses": [0.99, 0.97]}], "broken": {"nan": {"losses": [0.99, float("nan")]}}},
    "preallocate-after-oom": {"good": [_prealloc_oom], "broken": {
        "block released by the recovery": broke(_prealloc_oom, reserved=3 * GiB),
        "no split": broke(_prealloc_oom, k=1)}},
    "placement-data-parallel": {"good": [_dp_place, broke(_dp_place, rank=1, where=["cuda:2", "cuda:3"])],
                                "broken": {"replica 1 on replica 0's GPUs": broke(_dp_place, rank=1),
                                           "4 replicas": broke(_dp_place, world_size=4, where=["cuda:0"])}},
})


# fast paths (selfchecks_fast.py): what the decision expects and what the probes saw on cuda:0
def _fast(want: dict, seen: dict, convs: int = 16, guarded: list | None = None) -> dict:
    return {"want": want, "seen": {**seen, "conv_outputs": [True] * convs, "guarded": guarded or []}}


_fused = {"adam": _fast({"fused": True}, {"fused": True}), "adagrad": _fast({"fused": True}, {"fused": True})}
RECORDS.update({
    "fast-autotune": {"good": [{"arrays": _fast({"benchmark": True}, {"benchmark": True}),
                                "iterable": _fast({"benchmark": False}, {"benchmark": False})}], "broken": {
        "autotune off for arrays": {"arrays": _fast({"benchmark": True}, {"benchmark": False}),
                                    "iterable": _fast({"benchmark": False}, {"benchmark": False})},
        "autotune on for an iterable": {"arrays": _fast({"benchmark": True}, {"benchmark": True}),
                                        "iterable": _fast({"benchmark": False}, {"benchmark": True})}}},
    "fast-channels-last": {"good": [_fast({"channels_last": True}, {"channels_last": True})], "broken": {
        "NCHW kernels": _fast({"channels_last": True}, {"channels_last": False})}},
    "fast-fused-optimizer": {"good": [_fused], "broken": {
        "Adagrad foreach on a GPU, as the decision wrongly expected (S2)": {
            **_fused, "adagrad": _fast({"fused": False}, {"fused": False})},
        "Adam not fused": {**_fused, "adam": _fast({"fused": True}, {"fused": False})},
        "Adagrad not run": {"adam": _fused["adam"]}}},
    "fast-tf32": {"good": [_fast({"tf32": [True, True]}, {"tf32": [True, True]})], "broken": {
        "matmul TF32 off": _fast({"tf32": [True, True]}, {"tf32": [False, True]})}},
    "no-host-sync": {"good": [{**_fast({}, {}, guarded=[1, 2, 3, 4, 5, 6, 7]), "sync_error": ""}], "broken": {
        "a step synced": {**_fast({}, {}, guarded=[1, 2]), "sync_error": "synchronizing CUDA operation"},
        "nothing guarded": {**_fast({}, {}), "sync_error": ""}}},
})

_ok = {"device": "cuda:0", "one_chunk": True, "weights_round_trip": True, "warnings": []}
_rnn = {"runs": [{"layer": "LSTM", "losses": [1.02, 0.97], **_ok},
                 {"layer": "SimpleRNN", "losses": [1.05, 0.99], **_ok},
                 {"layer": "GRU(reset_after=True)", "losses": [1.04, 0.98], **_ok}]}
_copied = "UserWarning: RNN module weights are not part of single contiguous chunk of memory."
RECORDS["rnn-cudnn"] = {"good": [_rnn], "broken": {
    "weights copied every forward (S3)": {"runs": [
        {**_rnn["runs"][0], "warnings": [_copied]}, *_rnn["runs"][1:]]},
    "GRU weights copied every forward (S3, gates in Keras order)": {"runs": [
        *_rnn["runs"][:2], {**_rnn["runs"][2], "warnings": [_copied], "one_chunk": False}]},
    "GRU bias left beside the buffer (cuDNN warned once, earlier)": {"runs": [
        *_rnn["runs"][:2], {**_rnn["runs"][2], "one_chunk": False}]},
    "GRU gate reorder lost on the way back": {"runs": [
        *_rnn["runs"][:2], {**_rnn["runs"][2], "weights_round_trip": False}]},
    "ran on the CPU": {"runs": [{**r, "device": "cpu"} for r in _rnn["runs"]]},
    "SimpleRNN missing": {"runs": [_rnn["runs"][0], _rnn["runs"][2]]},
    "GRU missing": {"runs": _rnn["runs"][:2]},
    "GRU with reset_after=False (never on cuDNN)": {"runs": [
        *_rnn["runs"][:2], {**_rnn["runs"][2], "layer": "GRU(reset_after=False)"}]}}}

# placement on several GPUs (selfchecks_placement.py)
_probe = {"fraction": 0.25, "oom_raised": True, "small_allocated": True, "total": 80 * GiB,
          "oom_message": "CUDA out of memory. ... arignote: cuda:1 hit the caching allocator's cap of "
                         "20389/81559 MiB set by memory.limit=0.25 (from code)"}
_pml = {"where": ["cuda:0", "cuda:1"], "losses": [1.1, 1.0],
        "banner": ["Mapped cuda:0 to NVIDIA A100-SXM4-80GB (0000:07:00.0)",
                   "Capping cuda:0 at 20389/81559 MiB (0.25) by memory.limit",
                   "Mapped cuda:1 to NVIDIA A100-SXM4-80GB (0000:08:00.0)",
                   "Capping cuda:1 at 20389/81559 MiB (0.25) by memory.limit"],
        "probes": {"cuda:0": _probe, "cuda:1": _probe}}
_pdo = {"world_size": 2, "rank": 0, "gpus": 4, "k": 2, "where": ["cuda:0", "cuda:1"], "losses": [0.9, 0.8]}
RECORDS.update({
    "placement-memory-limit": {"good": [_pml], "broken": {
        "the cap reached the first GPU only (W4)": {**_pml, "banner": _pml["banner"][:3], "probes": {
            "cuda:0": _probe, "cuda:1": {**_probe, "fraction": 1.0, "oom_raised": False, "oom_message": ""}}},
        "the error names the other GPU": {**_pml, "probes": {
            "cuda:0": _probe, "cuda:1": {**_probe, "oom_message": "CUDA out of memory."}}}}},
    "placement-data-parallel-oom": {"good": [_pdo, {**_pdo, "rank": 1, "where": ["cuda:2", "cuda:3"]}],
                                    "broken": {
        "rank 1 died of a device error (C3)": {"raised": "RuntimeError: Expected all tensors to be on the "
                                                         "same device"},
        "no split agreed": {**_pdo, "k": 1},
        "replica on the wrong GPUs": {**_pdo, "rank": 1}}},
})
