"""Fault suite: a training job hurt mid-fit (kill -9, kill -9 during a checkpoint save, SIGINT,
SIGTERM, a full disk, a NaN loss) loses nothing: rerun, it ends with the weights, optimizer state and
validation losses of an uninterrupted run, bit for bit; no checkpoint ever holds NaN weights."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest
import torch
from fault_helpers import points, run

from arignote import checkpoint
from arignote.models import load_model

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    work = tmp_path_factory.mktemp("reference")
    r = run(work)
    assert r.returncode == 0, r.stderr
    return checkpoint.load(work / "final.ckpt"), work


def _same_as(work, ref, resumed_after):
    got = checkpoint.load(work / "final.ckpt")
    assert got["history_epochs"] == list(range(resumed_after, 5))
    assert got["epochs_done"] == 5
    for a, b in zip(got["weights"], ref["weights"], strict=True):
        np.testing.assert_array_equal(a, b)  # bit for bit
    assert got["optimizer"]["iterations"] == ref["optimizer"]["iterations"]
    for key, state in ref["optimizer"]["torch"]["state"].items():
        for name, value in state.items():
            assert torch.equal(got["optimizer"]["torch"]["state"][key][name], value), name
    assert got["val_loss"] == ref["val_loss"][resumed_after:]


def _weights(path):
    """The weights of a model file ModelCheckpoint wrote (Keras 2 HDF5: the names end in .h5)."""
    return load_model(str(path), compile=False).get_weights()


@pytest.mark.parametrize("mode,epoch,batch", points(
    [("sigkill", 3, 2), ("sigint", 1, 4)],
    [("sigkill", 0, 1), ("sigkill", 4, 4), ("sigterm", 2, 0), ("sigterm", 4, 3), ("sigint", 3, 0)]))
def test_killed_or_interrupted_mid_fit_resumes_to_the_same_weights(tmp_path, reference, mode, epoch, batch):
    ref, _ = reference
    r = run(tmp_path, mode, epoch, batch)
    assert r.returncode == -getattr(signal, mode.upper()), r.stderr
    assert not (tmp_path / "final.ckpt").exists()
    assert epoch == 0 or sorted(os.listdir(tmp_path / "backup"))[-1] == f"backup-epoch-{epoch:06d}.ckpt"
    r = run(tmp_path)
    assert r.returncode == 0, r.stderr
    _same_as(tmp_path, ref, epoch)
    assert not (tmp_path / "backup").exists()  # finished normally: backups deleted


@pytest.mark.parametrize("epoch", points([2], [0, 4]))
def test_killed_during_a_checkpoint_save(tmp_path, reference, epoch):
    ref, ref_work = reference
    r = run(tmp_path, "sigkill-save", epoch)
    assert r.returncode == -signal.SIGKILL, r.stderr
    ckpt = tmp_path / "ckpt"
    name = f"e{epoch + 1:02d}.h5"
    leftovers = checkpoint.temporary_files(ckpt, name)
    assert len(leftovers) == 1 and not (ckpt / name).exists()  # the half-written save, never renamed
    for e in range(1, epoch + 1):  # the files of earlier epochs are intact and equal the reference's
        for a, b in zip(_weights(ckpt / f"e{e:02d}.h5"), _weights(ref_work / "ckpt" / f"e{e:02d}.h5")):
            np.testing.assert_array_equal(a, b)
    os.utime(leftovers[0], (1, 1))  # (a rerun starts seconds later; leftovers older than it are removed)
    r = run(tmp_path)
    assert r.returncode == 0, r.stderr
    _same_as(tmp_path, ref, epoch)
    assert not checkpoint.temporary_files(ckpt, name)  # cleaned at the callback's next save
    assert sorted(os.listdir(ckpt)) == sorted(os.listdir(ref_work / "ckpt"))


@pytest.mark.parametrize("epoch", points([2], [1, 4]))
def test_full_disk_at_a_save_is_named_and_a_rerun_loses_nothing(tmp_path, reference, epoch):
    ref, _ = reference
    r = run(tmp_path, "fsize", epoch)  # RLIMIT_FSIZE of 2000 bytes from epoch `epoch` on
    assert r.returncode == 1
    path, last = tmp_path / "ckpt" / f"e{epoch + 1:02d}.h5", tmp_path / "ckpt" / f"e{epoch:02d}.h5"
    expected = (f"ModelCheckpoint: could not save epoch {epoch + 1}: cannot save checkpoint {path}: File too "
                "large (EFBIG)")
    assert expected in r.stderr, r.stderr[-2000:]
    if epoch > 0:
        assert f"the last checkpoint it saved, {last}, is intact" in r.stderr
        assert len(_weights(last)) == 4  # a complete, loadable model file
    assert not path.exists()
    r = run(tmp_path)
    assert r.returncode == 0, r.stderr
    _same_as(tmp_path, ref, epoch)


@pytest.mark.parametrize("epoch,batch", points([(2, 2)], [(0, 0), (4, 3)]))
def test_nan_loss_never_becomes_a_checkpoint_or_resume_point(tmp_path, reference, epoch, batch):
    ref, ref_work = reference
    r = run(tmp_path, "nan", epoch, batch)
    assert r.returncode == 0, r.stderr
    assert f"Batch {batch}: Invalid loss, terminating training" in r.stdout
    ckpt = tmp_path / "ckpt"
    expected = [f"e{e:02d}.h5" for e in range(1, epoch + 1)] + (["last.h5"] if epoch else [])
    assert (sorted(os.listdir(ckpt)) if ckpt.exists() else []) == expected
    for f in expected:
        assert all(np.isfinite(w).all() for w in _weights(ckpt / f)), f
    if epoch:
        for a, b in zip(_weights(ckpt / "last.h5"), _weights(ref_work / "ckpt" / f"e{epoch:02d}.h5")):
            np.testing.assert_array_equal(a, b)  # last.h5 is the last good epoch's model
    # TerminateOnNaN(restore=True): the model in memory went back to the last good epoch
    stopped = checkpoint.load(tmp_path / "final.ckpt")
    assert stopped["restored_from"] == epoch and stopped["epochs_done"] == epoch
    assert all(np.isfinite(w).all() for w in stopped["weights"])
    backups = sorted(os.listdir(tmp_path / "backup"))  # kept: they are the resume point
    assert backups[-1:] == ([f"backup-epoch-{epoch:06d}.ckpt"] if epoch else [])
    assert "BackupAndRestore: keeping the backups" in r.stderr
    # a rerun (the cause of the NaN fixed) resumes after the last good epoch and ends where the
    # uninterrupted run did
    os.remove(tmp_path / "final.ckpt")
    r = run(tmp_path)
    assert r.returncode == 0, r.stderr
    _same_as(tmp_path, ref, epoch)


@pytest.fixture(scope="module")
def reference_2p(tmp_path_factory):
    work = tmp_path_factory.mktemp("reference-2p")
    r = run(work, processes=2)
    assert r.returncode == 0, r.stderr
    return checkpoint.load(work / "final.ckpt"), work


@pytest.mark.multiproc
def test_nan_on_one_rank_of_two_never_becomes_a_checkpoint_or_resume_point(tmp_path, reference_2p):
    # rank 1 alone gets infinite weights at epoch 2, batch 1: the all-reduced gradients carry the NaN
    # to rank 0; every rank stops, no file holds NaN, and a rerun ends where the clean run did
    ref, ref_work = reference_2p
    r = run(tmp_path, "nan", 2, 1, processes=2)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Invalid loss, terminating training" in r.stdout
    ckpt = tmp_path / "ckpt"
    assert sorted(os.listdir(ckpt)) == ["e01.h5", "e02.h5", "last.h5"]
    for f in os.listdir(ckpt):
        assert all(np.isfinite(w).all() for w in _weights(ckpt / f)), f
    for a, b in zip(_weights(ckpt / "last.h5"), _weights(ref_work / "ckpt" / "e02.h5")):
        np.testing.assert_array_equal(a, b)
    assert sorted(os.listdir(tmp_path / "backup"))[-1] == "backup-epoch-000002.ckpt"
    stopped = checkpoint.load(tmp_path / "final.ckpt")
    assert stopped["restored_from"] == 2 and all(np.isfinite(w).all() for w in stopped["weights"])
    os.remove(tmp_path / "final.ckpt")
    r = run(tmp_path, processes=2)
    assert r.returncode == 0, r.stderr[-3000:]
    _same_as(tmp_path, ref, 2)
