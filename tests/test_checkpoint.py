"""arignote.checkpoint: atomic writes, checksum, weights_only loading, clear errors on bad files."""

from __future__ import annotations

import errno
import os
import re
import subprocess
import sys
import zipfile

import numpy as np
import pytest
import torch

from arignote import atomic_file, checkpoint
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
    with pytest.raises(checkpoint.CheckpointSaveError, match="disk full.*previous state.ckpt is intact"):
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


# ---------------------------------------------------------------- every save failure is named


def test_full_disk_during_the_write_is_named_and_the_old_file_kept(tmp_path, monkeypatch):
    # the kernel's own ENOSPC: the temporary file is /dev/full, where every write fails
    path = tmp_path / "e02.h5"
    checkpoint.save(path, {"v": 1})
    real_mkstemp = atomic_file.tempfile.mkstemp
    made = []

    def full_disk(prefix, suffix, dir):
        fd, tmp = real_mkstemp(prefix=prefix, suffix=suffix, dir=dir)
        made.append(tmp)
        os.dup2(os.open("/dev/full", os.O_WRONLY), fd)
        return fd, tmp

    monkeypatch.setattr(atomic_file.tempfile, "mkstemp", full_disk)
    with pytest.raises(checkpoint.CheckpointSaveError) as info:
        checkpoint.save(path, {"w": torch.ones(1000)})
    monkeypatch.undo()
    err = info.value
    assert err.errno == errno.ENOSPC and err.filename == str(path)
    assert str(err).startswith(f"cannot save checkpoint {path}: No space left on device (ENOSPC)")
    assert str(err).endswith("the previous e02.h5 is intact")
    assert isinstance(err.__cause__, (OSError, RuntimeError))  # what torch raised is kept as the cause
    assert checkpoint.load(path) == {"v": 1}
    assert made and not os.path.exists(made[0])  # the temporary file is gone
    assert sorted(os.listdir(tmp_path)) == ["e02.h5"]


@pytest.mark.parametrize("code,name,hint", [
    (errno.EDQUOT, "EDQUOT", "quota"),
    (errno.EROFS, "EROFS", "read-only"),
    (errno.EACCES, "EACCES", "permission"),
    (errno.EFBIG, "EFBIG", "file-size limit"),
])
def test_each_os_cause_is_named_with_its_errno_and_a_hint(tmp_path, monkeypatch, code, name, hint):
    path = tmp_path / "w.ckpt"

    def fail(fd):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(checkpoint.os, "fsync", fail)
    with pytest.raises(checkpoint.CheckpointSaveError) as info:
        checkpoint.save(path, {"v": 2})
    monkeypatch.undo()
    assert info.value.errno == code
    assert f"{os.strerror(code)} ({name})" in str(info.value) and hint in str(info.value)
    assert str(info.value).endswith("nothing was written there")
    assert os.listdir(tmp_path) == []


def test_a_directory_in_place_of_the_file_is_named_before_writing(tmp_path):
    (tmp_path / "best.h5").mkdir()
    with pytest.raises(checkpoint.CheckpointSaveError,
                       match=r"best.h5: Is a directory \(EISDIR\); a directory has that name") as info:
        checkpoint.save(tmp_path / "best.h5", {"v": 1})
    assert info.value.errno == errno.EISDIR
    assert os.listdir(tmp_path) == ["best.h5"]
    with pytest.raises(CheckpointError, match="best.h5 is a directory, not a checkpoint file"):
        checkpoint.load(tmp_path / "best.h5")


def test_a_file_in_place_of_the_directory_is_named(tmp_path):
    (tmp_path / "ckpt").write_text("not a directory")
    with pytest.raises(checkpoint.CheckpointSaveError, match=r"ckpt/w.ckpt: .*\(E(EXIST|NOTDIR)\)"):
        checkpoint.save(tmp_path / "ckpt" / "w.ckpt", {"v": 1})


def test_too_little_free_space_is_refused_before_writing(tmp_path, monkeypatch):
    path = tmp_path / "w.ckpt"
    checkpoint.save(path, {"v": 1})
    class Tiny:
        f_frsize, f_bavail, f_bfree = 4096, 1, 1

    monkeypatch.setattr(checkpoint.os, "statvfs", lambda d: Tiny)
    with pytest.raises(checkpoint.CheckpointSaveError, match=r"No space left on device \(ENOSPC\) \(it needs "
                       r"at least 40.\d KB, 4096 bytes free in .*previous w.ckpt is intact") as info:
        checkpoint.save(path, {"w": torch.ones(10_000)})
    assert info.value.errno == errno.ENOSPC
    monkeypatch.undo()
    assert checkpoint.load(path) == {"v": 1} and os.listdir(tmp_path) == ["w.ckpt"]


_FSIZE = """
import io, os, resource, signal, sys, torch
from arignote import checkpoint
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # a write past the limit then fails with EFBIG
path, margin = sys.argv[1], int(sys.argv[2])
checkpoint.save(path, {"v": 1})
obj = {"w": torch.ones(25_000)}
raw = io.BytesIO(); torch.save(obj, raw)
resource.setrlimit(resource.RLIMIT_FSIZE, (len(raw.getvalue()) + margin, resource.RLIM_INFINITY))
try:
    checkpoint.save(path, obj)
except checkpoint.CheckpointSaveError as exc:
    print(exc.errno, exc)
"""


@pytest.mark.parametrize("margin,when", [(-100, "before writing"), (20, "while writing")])
def test_file_size_limit_is_named_in_a_real_process(tmp_path, margin, when):
    # RLIMIT_FSIZE is the full disk we can make without root tricks: the kernel refuses the write.
    # A margin below the payload is caught by the check before writing; a margin above the
    # payload but below the file's size fails inside torch's zip writer.
    script = tmp_path / "fsize.py"
    script.write_text(_FSIZE)
    path = tmp_path / "out" / "e03.h5"
    out = subprocess.run([sys.executable, str(script), str(path), str(margin)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    code, _, message = out.stdout.strip().partition(" ")
    assert int(code) == errno.EFBIG, out.stdout
    assert message.startswith(f"cannot save checkpoint {path}: File too large (EFBIG)")
    assert ("the file-size limit is" in message) == (when == "before writing")
    assert message.endswith("the previous e03.h5 is intact")
    assert checkpoint.load(path) == {"v": 1}
    assert os.listdir(path.parent) == ["e03.h5"]


def test_temporary_files_finds_what_killed_saves_left(tmp_path):
    for name in (".e03.h5.abcd1234.tmp", ".e04.h5.k_9x0zzz.tmp", ".other.ckpt.abcd1234.tmp", "e03.h5",
                 ".e03.h5.short.tmp"):
        (tmp_path / name).write_bytes(b"x")
    assert checkpoint.temporary_files(tmp_path, "e03.h5") == [str(tmp_path / ".e03.h5.abcd1234.tmp")]
    assert [os.path.basename(p) for p in checkpoint.temporary_files(tmp_path, re.compile(r"e\d+\.h5"))] == [
        ".e03.h5.abcd1234.tmp", ".e04.h5.k_9x0zzz.tmp"]


_READ_ONLY = """
import os, sys, torch
from arignote import checkpoint
path = sys.argv[1]
checkpoint.save(path, {"v": 1})
if os.geteuid() == 0:   # root ignores permissions: drop to nobody (modules are already loaded)
    os.setgid(65534)
    os.setuid(65534)
else:
    os.chmod(os.path.dirname(path), 0o555)
try:
    checkpoint.save(path, {"v": 2})
except checkpoint.CheckpointSaveError as exc:
    print(exc.errno, exc)
"""


def test_a_directory_the_process_cannot_write_is_named(tmp_path):
    # the mount-free stand-in for a read-only file system: the kernel's own EACCES, as a user that
    # may not write into the directory (a root test process drops to 'nobody' after its imports)
    import shutil
    import tempfile

    base = tempfile.mkdtemp(prefix="arignote-ro-", dir="/tmp")
    try:
        os.chmod(base, 0o755)  # traversable by nobody; writable only by its owner
        path = os.path.join(base, "e02.h5.ckpt")
        script = tmp_path / "ro.py"
        script.write_text(_READ_ONLY)
        out = subprocess.run([sys.executable, str(script), path], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        code, _, message = out.stdout.strip().partition(" ")
        assert int(code) == errno.EACCES, out.stdout
        assert message.startswith(f"cannot save checkpoint {path}: Permission denied (EACCES)")
        assert "no permission to write there" in message
        assert message.endswith("the previous e02.h5.ckpt is intact")
        assert checkpoint.load(path) == {"v": 1} and os.listdir(base) == ["e02.h5.ckpt"]
    finally:
        os.chmod(base, 0o755)
        shutil.rmtree(base)
