"""atomic_file.py: the one atomic writer (checkpoints, HDF5, .keras, datasets, status and queue
records). A crash between the write and the rename leaves the old file whole and no temporary file."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from arignote.atomic_file import fsync_directory, write_atomically


def test_bytes_text_and_a_writer_function_replace_the_file(tmp_path):
    path = tmp_path / "f.bin"
    write_atomically(path, b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"
    write_atomically(path, "h\u00e9")
    assert path.read_bytes() == "h\u00e9".encode()
    write_atomically(str(path), lambda fh: (fh.write(b"a"), fh.write(b"b")))
    assert path.read_bytes() == b"ab" and os.listdir(tmp_path) == ["f.bin"]


def test_mode_sets_the_permission_bits_and_none_keeps_owner_only(tmp_path):
    shared, private = tmp_path / "shared.json", tmp_path / "private.ckpt"
    write_atomically(shared, "{}", mode=0o644)
    write_atomically(private, b"x")
    assert stat.S_IMODE(shared.stat().st_mode) == 0o644
    assert stat.S_IMODE(private.stat().st_mode) == 0o600


@pytest.mark.parametrize("where", ["rename", "fsync", "writer"])
def test_a_crash_between_write_and_rename_leaves_the_old_file_intact(tmp_path, monkeypatch, where):
    path = tmp_path / "state.json"
    write_atomically(path, '{"v": 1}')
    seen = []

    def crash(*args):
        seen.append(args)
        raise OSError(28, "No space left on device")

    content = '{"v": 2}'
    if where == "rename":
        monkeypatch.setattr(os, "replace", crash)
    elif where == "fsync":
        monkeypatch.setattr(os, "fsync", crash)
    else:
        def content(fh):
            fh.write(b'{"v": 2, "half')
            raise KeyboardInterrupt  # killed mid-write: not an OSError, still cleaned up
    with pytest.raises(KeyboardInterrupt if where == "writer" else OSError):
        write_atomically(path, content)
    monkeypatch.undo()
    assert path.read_text() == '{"v": 1}'
    assert os.listdir(tmp_path) == ["state.json"]  # the temporary file is gone
    if where == "rename":  # the rename was tried with the temporary file beside the target
        src, dst = seen[0]
        assert os.path.dirname(src) == str(tmp_path) and os.path.basename(src).startswith(".state.json.")
        assert dst == str(path)


def test_a_killed_writer_leaves_only_a_hidden_temporary_file(tmp_path):
    """A process killed between write and rename (no cleanup runs): the old file is whole and the
    leftover is the pattern checkpoint.temporary_files finds."""
    from arignote import checkpoint

    path = tmp_path / "e03.h5"
    write_atomically(path, b"old")
    code = ("import os, sys; from arignote import atomic_file as a\n"
            "os.replace = lambda *_: os._exit(9)\n"
            f"a.write_atomically({str(path)!r}, b'new')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert out.returncode == 9, out.stderr
    assert path.read_bytes() == b"old"
    leftovers = checkpoint.temporary_files(tmp_path, "e03.h5")
    assert len(leftovers) == 1 and open(leftovers[0], "rb").read() == b"new"


def test_fsync_directory_skips_what_cannot_be_opened(tmp_path):
    fsync_directory(tmp_path)  # a real directory: no error
    fsync_directory(tmp_path / "missing")  # cannot open: skipped, as on Windows
