"""One error family: ``ArignoteError`` at the root, each class also the builtin callers already catch."""

from __future__ import annotations

import pytest

from arignote import errors


@pytest.mark.parametrize("cls, builtin", [
    (errors.ConfigError, ValueError), (errors.DeviceError, ValueError), (errors.CheckpointError, ValueError),
    (errors.ShareError, RuntimeError), (errors.DatasetError, OSError),
])
def test_each_error_is_an_arignote_error_and_its_builtin(cls, builtin):
    assert issubclass(cls, errors.ArignoteError) and issubclass(cls, builtin)
    with pytest.raises(errors.ArignoteError):
        raise cls("x")


def test_old_homes_re_export_the_same_classes():
    import arignote
    from arignote import checkpoint, config, datasets, devices, share
    from arignote.devices import spec
    from arignote.runtime import memory

    assert config.ConfigError is errors.ConfigError is arignote.ConfigError
    assert spec.DeviceError is devices.DeviceError is errors.DeviceError
    assert checkpoint.CheckpointError is errors.CheckpointError
    assert issubclass(checkpoint.CheckpointSaveError, errors.ArignoteError)
    assert issubclass(checkpoint.CheckpointSaveError, OSError)
    assert share.ShareError is errors.ShareError and issubclass(share.NoFreeGPUError, errors.ArignoteError)
    assert datasets.DatasetError is errors.DatasetError
    assert issubclass(memory.MemoryPlanError, errors.ConfigError)
    assert arignote.ArignoteError is errors.ArignoteError


def test_other_purposeful_errors_join_the_family():
    from arignote.bench.report import ChartUnavailable
    from arignote.devices.snapshot import SnapshotFormatError
    from arignote.training.oom import UnsplittableOOMError

    assert issubclass(SnapshotFormatError, errors.ArignoteError)
    assert issubclass(SnapshotFormatError, ValueError)
    assert issubclass(ChartUnavailable, errors.ArignoteError) and issubclass(ChartUnavailable, RuntimeError)
    assert issubclass(UnsplittableOOMError, errors.ArignoteError)
    import torch

    assert issubclass(UnsplittableOOMError, torch.OutOfMemoryError)


def test_errors_raised_on_purpose_are_catchable_as_arignote_error(tmp_path):
    from arignote import checkpoint, config
    from arignote.devices import parse_spec

    with pytest.raises(errors.ArignoteError, match="unknown flag"):
        config.get("no.such.flag")
    with pytest.raises(errors.ArignoteError):
        parse_spec("tpu0")
    with pytest.raises(errors.ArignoteError):
        checkpoint.load(tmp_path / "missing.ckpt")
