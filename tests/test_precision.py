"""floatX dtypes and the mixed-precision policy (autocast context and grad scaler) on CPU."""

from __future__ import annotations

import contextlib

import pytest
import torch

from arignote import config
from arignote.config import ConfigError
from arignote.devices import Device
from arignote.runtime.precision import Precision, dtype_of


@pytest.mark.parametrize("name,dtype", [("float32", torch.float32), ("float64", torch.float64),
                                        ("float16", torch.float16), ("bfloat16", torch.bfloat16)])
def test_dtype_of(name, dtype):
    assert dtype_of(name) is dtype
    with config.override(floatX=name):
        assert dtype_of() is dtype


def test_dtype_of_rejects_unknown():
    with pytest.raises(ConfigError, match="floatX='float33'.*float32, float64"):
        dtype_of("float33")


def one_step(p: Precision):
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 8), torch.randint(0, 3, (16,))
    before = model.weight.detach().clone()
    with p.autocast():
        out = model(x)
        loss = torch.nn.functional.cross_entropy(out, y)
    opt.zero_grad()
    p.scaler.scale(loss).backward()
    p.scaler.step(opt)
    p.scaler.update()
    return out.dtype, model.weight.dtype, (model.weight.detach() - before).abs().max().item()


def test_fp32_is_a_no_op():
    p = Precision("fp32", "cpu")
    assert isinstance(p.autocast(), contextlib.nullcontext)
    assert not p.enabled and not p.scaler.is_enabled() and p.dtype is None
    out_dtype, w_dtype, moved = one_step(p)
    assert (out_dtype, w_dtype) == (torch.float32, torch.float32) and moved > 0
    assert p.describe() == "fp32: parameters and compute in float32 on cpu"


def test_mixed_bf16_on_cpu_autocasts_without_scaling():
    p = Precision("mixed-bf16", Device("cpu"))
    assert p.enabled and p.dtype is torch.bfloat16 and not p.scaler.is_enabled()
    out_dtype, w_dtype, moved = one_step(p)
    assert out_dtype == torch.bfloat16 and w_dtype == torch.float32 and moved > 0
    assert p.describe() == "mixed-bf16: autocast to bfloat16 on cpu, no gradient scaling"


def test_mixed_fp16_on_cpu_autocasts_and_scales():
    p = Precision("mixed-fp16", "cpu")
    assert p.dtype is torch.float16 and p.scaling and p.scaler.is_enabled()
    out_dtype, w_dtype, moved = one_step(p)
    assert out_dtype == torch.float16 and w_dtype == torch.float32 and moved > 0
    assert p.scaler.get_scale() == 65536.0  # finite grads: the scale stays until growth_interval
    assert p.describe() == "mixed-fp16: autocast to float16 on cpu, with gradient scaling"


def test_autocast_gives_a_fresh_context_each_time():
    p = Precision("mixed-bf16", "cpu")
    assert p.autocast() is not p.autocast()
    with p.autocast():
        with p.autocast():
            assert torch.is_autocast_enabled("cpu")
    assert not torch.is_autocast_enabled("cpu")


def test_from_config_and_sources(monkeypatch):
    monkeypatch.setenv("ARIGNOTE_FLAGS", "precision=mixed-bf16")
    config.reload()
    p = Precision.from_config("cpu")
    assert p.mode == "mixed-bf16" and repr(p) == "Precision('mixed-bf16', 'cpu')"
    with config.override(floatX="float64"), pytest.raises(ConfigError) as info:
        Precision.from_config("cpu")
    assert "precision=mixed-bf16 (from ARIGNOTE_FLAGS)" in str(info.value)
    assert "floatX=float64" in str(info.value) and "precision=fp32" in str(info.value)


def test_fp32_with_other_floatx_is_fine():
    p = Precision("fp32", "cpu", floatX="float64")
    assert p.param_dtype is torch.float64
    assert p.describe().startswith("fp32: parameters and compute in float64")


def test_unknown_mode_is_an_error():
    with pytest.raises(ConfigError, match="precision='fp8' is not a mode; use one of fp32, mixed-fp16"):
        Precision("fp8", "cpu")


def test_bf16_on_old_gpu_is_an_error_naming_fix(monkeypatch):
    from arignote.devices import cuda

    monkeypatch.setattr(cuda, "bf16_supported", lambda index: index != 1)
    with pytest.raises(ConfigError, match=r"cuda:1 has no native bfloat16.*precision=mixed-fp16"):
        Precision("mixed-bf16", "cuda:1")
    assert Precision("mixed-bf16", "cuda:0").device == "cuda:0"
