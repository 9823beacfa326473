"""``arignote doctor``: findings for explicit machine facts, and the exit codes on this machine."""

from __future__ import annotations

import json

import pytest

from arignote import cli, config
from arignote.commands import doctor_cmd
from arignote.commands.doctor_cmd import Facts, check_visible_devices, diagnose

CPU_BOX = Facts(torch_version="2.13.0+cpu", cuda_build=None,
                cuda_reason="this torch build (2.13.0+cpu) has no CUDA support")
GPU_BOX = Facts(torch_version="2.13.0+cu128", cuda_build="12.8", cuda_reason=None,
                gpu_names=("NVIDIA A100-SXM4-80GB",) * 2, driver_version="570.86.15", nvml_gpu_count=2,
                cudnn=91000, nccl="2.27.3")


def levels(findings):
    return {f.topic: f.level for f in findings}


def by_topic(findings, topic):
    return [f for f in findings if f.topic == topic]


def test_cpu_box_is_healthy_for_cpu_and_auto():
    for spec, devices in (("cpu", ["cpu"]), ("auto", ["cpu"])):
        found = diagnose(CPU_BOX, spec, devices, None)
        assert not any(f.level == "fail" for f in found)
        assert levels(found) == {"torch": "ok", "driver": "info", "CUDA": "info", "cuDNN/NCCL": "info",
                                 "CUDA_VISIBLE_DEVICES": "ok", "device": "ok"}
        assert by_topic(found, "device")[0].text == f"device={spec} -> cpu"
        assert doctor_cmd.render(found, spec).endswith(f"healthy for device={spec}")


def test_cpu_box_fails_for_cuda_with_fixes():
    found = diagnose(CPU_BOX, "cuda", None, "device=cuda needs a CUDA GPU, but none is usable: ...")
    lv = levels(found)
    assert lv["driver"] == lv["CUDA"] == lv["device"] == "fail"
    cuda = by_topic(found, "CUDA")[0]
    assert cuda.text == "not usable: this torch build (2.13.0+cpu) has no CUDA support"
    assert "device=cpu" in cuda.fix
    assert "nvidia-smi" in by_topic(found, "driver")[0].fix
    text = doctor_cmd.render(found, "cuda")
    assert text.endswith("NOT healthy for device=cuda") and "       fix: " in text


def test_cpu_torch_on_a_gpu_box_says_install_cuda_build():
    facts = Facts("2.13.0+cpu", None, "this torch build (2.13.0+cpu) has no CUDA support",
                  driver_version="570.86.15", nvml_gpu_count=4)
    found = diagnose(facts, "cuda", None, "device=cuda needs a CUDA GPU")
    torch_f = by_topic(found, "torch")[0]
    assert torch_f.level == "fail" and "NVIDIA driver 570.86.15 is present" in torch_f.text
    assert doctor_cmd.TORCH_CUDA_INDEX in torch_f.fix
    assert doctor_cmd.TORCH_CUDA_INDEX in by_topic(found, "CUDA")[0].fix
    assert by_topic(found, "driver")[0].text == "NVIDIA driver 570.86.15, 4 GPU(s) in NVML"
    # the same machine asked for cpu: healthy, but the mismatch is still a warning
    ok = diagnose(facts, "cpu", ["cpu"], None)
    assert levels(ok)["torch"] == "warn" and not any(f.level == "fail" for f in ok)


def test_gpu_box_all_green():
    found = diagnose(GPU_BOX, "all", ["cuda:0", "cuda:1"], None)
    assert set(levels(found).values()) == {"ok"}
    assert by_topic(found, "cuDNN")[0].text == "version 91000"
    assert by_topic(found, "NCCL")[0].text == "version 2.27.3"
    assert by_topic(found, "CUDA")[0].text.startswith("usable: 2 GPU(s): NVIDIA A100")


def test_gpu_box_without_cudnn_nccl_warns_and_device_order():
    facts = Facts("2.13.0", "12.8", None, ("T4",), "550.1", 1, None, None, device_order="FASTEST_FIRST",
                  order_set_too_late=True)
    found = diagnose(facts, "cuda", ["cuda:0"], None)
    assert levels(found)["cuDNN"] == "warn" and levels(found)["NCCL"] == "warn"
    orders = by_topic(found, "CUDA_DEVICE_ORDER")
    assert [f.level for f in orders] == ["warn", "warn"]
    assert "FASTEST_FIRST" in orders[0].text and "import arignote before using CUDA" == orders[1].fix
    assert not any(f.level == "fail" for f in found)


@pytest.mark.parametrize("value,count,needs,want", [
    (None, 2, True, [("ok", "unset: every GPU is visible")]),
    ("", 2, True, [("fail", "'' hides every GPU")]),
    ("-1", 2, False, [("info", "'-1' hides every GPU")]),
    ("0,1", 2, True, [("ok", "'0,1': these GPUs are visible, renumbered from 0")]),
    ("GPU-8a3c,MIG-1", None, True, [("ok", "'GPU-8a3c,MIG-1': these GPUs are visible, renumbered from 0")]),
    ("0,0", 2, True, [("warn", "0 is listed twice in '0,0'")]),
    ("1,5", 4, True, [("warn", "'1,5' names GPU 5 but the driver sees 4 (0..3)")]),
    ("0,gpu1,2", 4, True, [("warn", "entry 'gpu1' of '0,gpu1,2' is neither an index nor a GPU-/MIG- UUID")]),
])
def test_visible_devices_sanity(value, count, needs, want):
    found = check_visible_devices(value, count, needs)
    assert [(f.level, f.text[:len(t)]) for f, (_, t) in zip(found, want)] == want
    assert len(found) == len(want)
    assert all(f.fix for f in found if f.level in ("warn", "fail"))


def test_hidden_gpus_fail_a_gpu_request():
    facts = Facts("2.13.0", "12.8", "CUDA_VISIBLE_DEVICES='' hides every GPU", driver_version="570",
                  nvml_gpu_count=2, cudnn=91000, nccl="2.27.3", visible_devices="")
    found = diagnose(facts, "cuda1", None, "device=cuda1 needs a CUDA GPU")
    assert levels(found)["CUDA_VISIBLE_DEVICES"] == "fail"


# --------------------------------------------------------------------------- the command on this machine


def run(capsys, *argv):
    code = cli.main(["doctor", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_gather_reads_this_machine():
    import torch

    facts = doctor_cmd.gather()
    assert facts.torch_version == torch.__version__
    assert facts.cuda_build == torch.version.cuda
    assert (facts.cuda_reason is None) == bool(facts.gpu_names)


@pytest.mark.parametrize("spec", ["cpu", "auto"])
def test_doctor_exit_0_for_cpu_and_auto(capsys, spec):
    code, out, _ = run(capsys, "--device", spec)
    assert code == 0
    assert out.splitlines()[-1] == f"healthy for device={spec}"


def test_doctor_default_device_comes_from_config(capsys, monkeypatch):
    monkeypatch.setenv("ARIGNOTE_FLAGS", "device=cpu")
    config.reload()
    code, out, _ = run(capsys)
    assert code == 0 and out.splitlines()[-1] == "healthy for device=cpu"


def test_doctor_exit_1_for_cuda_without_gpu(capsys):
    from arignote.devices import current_inventory

    if current_inventory().gpus:
        pytest.skip("this machine has a GPU: device=cuda is healthy here")
    code, out, _ = run(capsys, "--device", "cuda")
    assert code == 1
    assert "[fail] device: device=cuda needs a CUDA GPU" in out
    assert out.splitlines()[-1] == "NOT healthy for device=cuda"


def test_doctor_json(capsys):
    code, out, _ = run(capsys, "--device", "cpu", "--json")
    data = json.loads(out)
    assert code == 0 and data["healthy"] is True and data["device"] == "cpu"
    assert data["facts"]["torch_version"]
    assert {f["topic"] for f in data["findings"]} >= {"torch", "driver", "CUDA", "device"}


def test_doctor_malformed_spec_exits_2(capsys):
    code, out, err = run(capsys, "--device", "cdua")
    assert code == 2 and out == ""
    assert "device='cdua': 'cdua' is not a device" in err


def test_driver_part_does_not_import_torch():
    import subprocess
    import sys

    code = ("import sys; from arignote.commands import doctor_cmd as d; v, n = d.driver_version(); "
            "print('torch' in sys.modules, v is None or isinstance(v, str), n is None or n >= 0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["False", "True", "True"], out.stderr
