"""The one self-test runner: ``arignote selftest`` and the ``gpu``-marked tests (tests/test_cuda_gpu.py)
both run a check through ``bench.selfchecks.run_in_process``; here on the CPU items."""

from __future__ import annotations

from arignote.bench import selfchecks


def test_a_cpu_item_passes_in_its_own_process():
    ok, detail = selfchecks.run_in_process("banner-cpu", timeout=300)
    assert ok, detail
    assert "cpu" in detail


def test_an_unknown_item_fails_with_the_usage_line():
    ok, detail = selfchecks.run_in_process("no-such-item", timeout=300)
    assert not ok
    assert detail.startswith("exit code 2: usage: python -m arignote.bench.selfchecks {banner-cpu,")



def test_without_a_gpu_every_gpu_item_is_planned_as_skipped_with_its_gpu_count_and_the_reason():
    from types import SimpleNamespace as NS

    planned = selfchecks.plan(NS(gpus=[], cuda_reason="no NVIDIA driver is loaded"))
    for check, why in planned:
        if not check.gpus:
            assert why is None, check.name
            continue
        need = "a CUDA GPU" if check.gpus == 1 else f"{check.gpus} CUDA GPUs"
        assert why == f"needs {need} (no NVIDIA driver is loaded)", (check.name, why)
    assert dict((c.name, w) for c, w in planned)["placement-data-parallel"].startswith("needs 4 CUDA GPUs")


def test_the_gpu_banner_item_finds_the_line_naming_the_gpu(monkeypatch):
    """On a GPU the banner's device line is followed by the memory-policy and TF32 lines: the item
    took the last line and could never find the GPU's name there. Here on a fake A100 box (the
    hardware answers replaced, the banner code real)."""
    from arignote import devices
    from arignote.devices import GPUInfo, Inventory, cuda, inventory
    from arignote.runtime import setup

    gpu = GPUInfo(0, "NVIDIA A100-SXM4-80GB", "0000:07:00.0", 81559 << 20, 81000 << 20, (8, 0), "u0")
    box = Inventory(gpus=(gpu,), cpu_name="AMD EPYC", cpu_threads=2, cuda_reason=None)
    monkeypatch.setattr(inventory, "gpu_count", lambda: (1, None))  # the device flag's machine check
    monkeypatch.setattr(devices, "current_inventory", lambda refresh=False: box)
    monkeypatch.setattr(setup, "current_inventory", lambda refresh=False: box)
    for name in ("set_cudnn", "set_tf32"):
        monkeypatch.setattr(cuda, name, lambda *a: None)
    monkeypatch.setattr(cuda, "cudnn_available", lambda: True)
    result = selfchecks.run_item(next(c for c in selfchecks.CHECKS if c.name == "banner-gpu"))
    assert result["ok"], result
    assert result["message"].startswith("Mapped cuda:0 to NVIDIA A100-SXM4-80GB (0000:07:00.0)")


def test_selftest_out_writes_every_verdict_with_numbers_versions_and_the_gpu_items_skipped(tmp_path):
    """`arignote selftest --json --out selftest.json` on this CPU box: the CPU item that ran has its
    verdict, numbers and record; every GPU item is SKIP with the reason; the environment names the
    versions (torch here; CUDA, cuDNN, NCCL None on a CPU build) so a first GPU run can be compared."""
    import json

    import torch

    from arignote import cli

    out = tmp_path / "selftest.json"
    assert cli.main(["selftest", "--only", "train-cpu,banner-gpu,data-parallel-weights", "--json",
                     "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    env = doc["environment"]
    assert env["torch"] == torch.__version__ and env["cuda"] is None and env["gpus"] == []
    assert {"cudnn", "nccl", "arignote", "cpu"} <= set(env)
    by = {r["item"]: r for r in doc["results"]}
    assert by["train-cpu"]["status"] == "PASS" and by["train-cpu"]["record"]["device"] == "cpu"
    assert by["train-cpu"]["numbers"]["last_loss"] < by["train-cpu"]["numbers"]["first_loss"]
    assert by["banner-gpu"]["status"] == "SKIP"
    assert by["banner-gpu"]["detail"].startswith("not tested: needs a")
    assert by["data-parallel-weights"]["detail"].startswith("not tested: needs 2 CUDA GPUs")
    assert (doc["PASS"], doc["FAIL"], doc["SKIP"]) == (1, 0, 2)
    assert cli.main(["selftest", "--only", "train-cpu", "--out", str(tmp_path / "no" / "s.json")]) == 2


def test_the_fused_optimizer_items_run_records_adagrad_fused_on_the_cpu_and_its_judge_reads_it():
    """The run of fast-fused-optimizer on the CPU (torch has fused Adam and Adagrad there too): the
    record has what the judge reads and the judge passes it."""
    from arignote.bench import selfchecks_fast

    record = {name: selfchecks_fast.fit_record(["fused"], optimizer=name, device="cpu", samples=64)
              for name in ("adam", "adagrad")}
    assert record["adagrad"]["seen"]["fused"] is True and record["adagrad"]["want"]["fused"] is True
    assert selfchecks_fast.judge_fused_optimizer(record).ok


def test_selftest_judge_rejudges_a_stored_record_and_says_what_changed(tmp_path, capsys):
    import json

    from arignote import cli

    doc = {"results": [
        {"item": "train-cpu", "status": "PASS", "record": {"device": "cpu", "losses": [1.37, 1.16]}},
        {"item": "mixed-precision", "status": "PASS",  # judged by the old, fresh-scaler check (W2)
         "record": {"losses": [1.38, 1.2], "forward_dtypes": ["torch.float32"], "autocast_on": [False],
                    "policy": "mixed-fp16", "scaler_enabled": False, "scale": None}},
        {"item": "banner-gpu", "status": "SKIP", "record": {}}]}
    path = tmp_path / "selftest.json"
    path.write_text(json.dumps(doc))
    assert cli.main(["selftest", "--judge", str(path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("same     train-cpu: PASS then, PASS now: CNN, loss 1.370 -> 1.160 on cpu")
    assert lines[1].startswith("CHANGED  mixed-precision: PASS then, FAIL now: the trainer's grad scaler is "
                               "disabled under mixed-fp16")
    assert len(lines) == 2
    assert cli.main(["selftest", "--judge", str(tmp_path / "none.json")]) == 2
