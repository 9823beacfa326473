"""arignote.checkpoint: atomic writes, checksum, weights_only loading, clear errors on bad files."""

from __future__ import annotations

import os
import zipfile

import numpy as np
import pytest
import torch

from arignote import checkpoint
from arignote.checkpoint import CheckpointError


def _state():
    torch.manual_seed(0)
    return {
        "model": {"w": torch.randn(64, 32), "b": torch.zeros(32)},
        "weights": [np.arange(6, dtype=np.float32).reshape(2, 3), np.ones(3, dtype=np.int64)],
        "epoch": 7,
        "name": "run",
        "lr": 0.001,
    }


def test_round_trip_keeps_values_and_types(tmp_path):
    path = tmp_path / "state.ckpt"
    state = _state()
    checkpoint.save(path, state)
    back = checkpoint.load(path)
    assert back["epoch"] == 7 and back["name"] == "run" and back["lr"] == 0.001
    assert torch.equal(back["model"]["w"], state["model"]["w"])
    assert isinstance(back["weights"][0], np.ndarray) and back["weights"][0].dtype == np.float32
    np.testing.assert_array_equal(back["weights"][0], state["weights"][0])
    np.testing.assert_array_equal(back["weights"][1], state["weights"][1])
    assert checkpoint.is_checkpoint(path)


def test_file_loads_with_plain_torch_weights_only(tmp_path):
    path = tmp_path / "state.pt"
    checkpoint.save(path, {"w": torch.ones(3)})
    raw = torch.load(path, weights_only=True)
    assert raw["format"] == checkpoint.FORMAT
    assert raw["payload"].dtype == torch.uint8 and len(raw["sha256"]) == 64


def test_save_overwrites_atomically_and_leaves_no_temp_files(tmp_path):
    path = tmp_path / "sub" / "state.ckpt"
    checkpoint.save(path, {"v": 1})
    checkpoint.save(path, {"v": 2})
    assert checkpoint.load(path) == {"v": 2}
    assert sorted(os.listdir(path.parent)) == ["state.ckpt"]


def test_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "state.ckpt"
    checkpoint.save(path, {"v": 1})

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        checkpoint.save(path, {"v": 2})
    monkeypatch.undo()
    assert checkpoint.load(path) == {"v": 1}
    assert sorted(os.listdir(tmp_path)) == ["state.ckpt"]


@pytest.mark.parametrize("cut", ["empty", "ten bytes", "half", "last byte missing"])
def test_truncated_file_is_named_in_the_error(tmp_path, cut):
    path = tmp_path / "state.ckpt"
    checkpoint.save(path, _state())
    data = path.read_bytes()
    keep = {"empty": 0, "ten bytes": 10, "half": len(data) // 2, "last byte missing": len(data) - 1}[cut]
    path.write_bytes(data[:keep])
    with pytest.raises(CheckpointError) as info:
        checkpoint.load(path)
    assert str(path) in str(info.value)
    assert ("empty" if keep == 0 else "truncated or corrupt") in str(info.value)
    assert not checkpoint.is_checkpoint(path)


def _payload_span(path):
    """Byte range of the payload tensor's storage record inside the outer zip file."""
    with zipfile.ZipFile(path) as zf:
        info = next(i for i in zf.infolist() if i.filename.endswith("/data/0"))
    data = path.read_bytes()
    # The local header is 30 bytes + name + extra; the record's data follows it.
    name_len = int.from_bytes(data[info.header_offset + 26:info.header_offset + 28], "little")
    extra_len = int.from_bytes(data[info.header_offset + 28:info.header_offset + 30], "little")
    start = info.header_offset + 30 + name_len + extra_len
    return start, start + info.file_size


@pytest.mark.parametrize("where", [0.0, 0.3, 0.77, 1.0])
def test_flipped_payload_byte_fails_the_checksum(tmp_path, where):
    path = tmp_path / "state.ckpt"
    checkpoint.save(path, _state())
    start, end = _payload_span(path)
    data = bytearray(path.read_bytes())
    offset = min(end - 1, start + int((end - start) * where))
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="sha256") as info:
        checkpoint.load(path)
    assert str(path) in str(info.value)


def test_every_flipped_byte_of_a_small_file_is_caught_or_harmless(tmp_path):
    # Flips in zip padding/metadata that nothing reads may go unnoticed; none may change the data.
    path = tmp_path / "state.ckpt"
    original = {"w": torch.arange(8.0), "n": 3}
    checkpoint.save(path, original)
    data = path.read_bytes()
    bad = tmp_path / "bad.ckpt"
    caught = 0
    for offset in range(0, len(data), 3):
        flipped = bytearray(data)
        flipped[offset] ^= 0xFF
        bad.write_bytes(bytes(flipped))
        try:
            back = checkpoint.load(bad)
        except CheckpointError:
            caught += 1
            continue
        assert torch.equal(back["w"], original["w"]) and back["n"] == 3, offset
    assert caught > len(data) // 6


def test_foreign_torch_file_is_refused_with_the_fix(tmp_path):
    path = tmp_path / "model.pt"
    torch.save({"state_dict": {"w": torch.ones(2)}}, path)
    with pytest.raises(CheckpointError, match="not an arignote checkpoint") as info:
        checkpoint.load(path)
    assert str(path) in str(info.value) and "arignote.checkpoint.save" in str(info.value)


def test_random_bytes_and_missing_file(tmp_path):
    junk = tmp_path / "junk.h5"
    junk.write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(range(256)) * 4)
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        checkpoint.load(junk)
    with pytest.raises(CheckpointError, match="no such file"):
        checkpoint.load(tmp_path / "missing.ckpt")


def test_payload_that_needs_code_execution_is_refused(tmp_path):
    path = tmp_path / "obj.ckpt"
    checkpoint.save(path, {"obj": np.array([1, "a"], dtype=object)})
    with pytest.raises(CheckpointError, match="weights_only"):
        checkpoint.load(path)
