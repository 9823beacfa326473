"""BackupAndRestore: a training process killed with SIGKILL resumes from its last finished epoch with
the same weights, optimizer state and epoch counter as an uninterrupted run (real fit, subprocesses);
a corrupt newest backup falls back to the previous one."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

from arignote import checkpoint
from arignote.callbacks import BackupAndRestore
from callback_helpers import FakeModel, drive

SCRIPT = textwrap.dedent('''
    import os, signal, sys
    import numpy as np
    import torch
    torch.set_num_threads(1)
    import arignote
    arignote.configure(device="cpu", print_active_device=False)
    from arignote import checkpoint
    from arignote.callbacks import BackupAndRestore, Callback
    from arignote.datasets import synthetic
    from arignote.layers import Dense, Dropout
    from arignote.models import Sequential

    backup_dir, out, kill_epoch, kill_batch, epochs = sys.argv[1], sys.argv[2], int(sys.argv[3]), \\
        int(sys.argv[4]), int(sys.argv[5])
    torch.manual_seed(0)
    x, y = synthetic(shape=(12,), classes=3, samples=192, seed=1)
    model = Sequential([Dense(16, activation="relu", input_shape=(12,)), Dropout(0.3),
                        Dense(3, activation="softmax")])
    model.compile(loss="sparse_categorical_crossentropy", optimizer="adam", metrics=["accuracy"])

    class Kill(Callback):
        """SIGKILL this process at the end of epoch kill_epoch (kill_batch < 0) or mid-epoch."""
        epoch = 0
        def on_epoch_begin(self, epoch, logs=None):
            self.epoch = epoch
        def on_train_batch_end(self, batch, logs=None):
            if self.epoch == kill_epoch and batch == kill_batch:
                os.kill(os.getpid(), signal.SIGKILL)
        def on_epoch_end(self, epoch, logs=None):
            if epoch == kill_epoch and kill_batch < 0:
                os.kill(os.getpid(), signal.SIGKILL)

    history = model.fit(x, y, batch_size=32, epochs=epochs, verbose=0, validation_split=0.25,
                        callbacks=[BackupAndRestore(backup_dir), Kill()])
    checkpoint.save(out, {"weights": model.get_weights(), "optimizer": model.optimizer.state_dict(),
                          "epochs_done": model.epochs_done, "history_epochs": history.epoch,
                          "val_loss": history.history["val_loss"]})
''')

EPOCHS = 5
KILL_EPOCH = 3  # SIGKILL during epoch index 3, after its 3rd batch: 3 epochs are finished and backed up


def _start(tmp_path, name, backup_dir, kill_epoch=-1, kill_batch=-1):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    out = tmp_path / f"{name}.ckpt"
    env = dict(os.environ, ARIGNOTERC="")
    env.pop("ARIGNOTE_FLAGS", None)
    proc = subprocess.Popen([sys.executable, str(script), str(backup_dir), str(out), str(kill_epoch),
                             str(kill_batch), str(EPOCHS)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    return proc, out


def _finish(proc):
    stdout, stderr = proc.communicate(timeout=300)
    return proc.returncode, stderr


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """An uninterrupted run and a run killed mid-epoch, side by side (2 cores)."""
    tmp = tmp_path_factory.mktemp("runs")
    ref, ref_out = _start(tmp, "reference", tmp / "ref-backup")
    killed, _ = _start(tmp, "killed", tmp / "backup", kill_epoch=KILL_EPOCH, kill_batch=2)
    ref_code, ref_err = _finish(ref)
    killed_code, killed_err = _finish(killed)
    assert ref_code == 0, ref_err
    assert killed_code == -signal.SIGKILL, killed_err
    assert not (tmp / "ref-backup").exists()  # deleted after a normal finish
    return {"reference": checkpoint.load(ref_out), "backup": tmp / "backup"}


def _assert_same_state(got, ref):
    assert got["epochs_done"] == ref["epochs_done"] == EPOCHS
    for a, b in zip(got["weights"], ref["weights"]):
        np.testing.assert_array_equal(a, b)
    assert got["optimizer"]["iterations"] == ref["optimizer"]["iterations"]
    for key, state in ref["optimizer"]["torch"]["state"].items():
        for name, value in state.items():
            assert torch.equal(got["optimizer"]["torch"]["state"][key][name], value), name


def _backups(backup_dir):
    return sorted(os.listdir(backup_dir))


@pytest.mark.slow
def test_sigkill_then_restart_matches_an_uninterrupted_run(tmp_path, runs):
    assert _backups(runs["backup"]) == ["backup-epoch-000002.ckpt", "backup-epoch-000003.ckpt"]
    intact, corrupt = tmp_path / "intact", tmp_path / "corrupt"
    shutil.copytree(runs["backup"], intact)
    shutil.copytree(runs["backup"], corrupt)
    newest = corrupt / "backup-epoch-000003.ckpt"
    newest.write_bytes(newest.read_bytes()[:-100])
    first, first_out = _start(tmp_path, "resumed", intact)
    second, second_out = _start(tmp_path, "fallback", corrupt)
    code, err = _finish(first)
    assert code == 0, err
    got = checkpoint.load(first_out)
    ref = runs["reference"]
    # Resumed with the first unfinished epoch (3), and ends exactly where the uninterrupted run did.
    assert got["history_epochs"] == [3, 4]
    _assert_same_state(got, ref)
    assert got["val_loss"] == ref["val_loss"][3:]
    assert not intact.exists()

    # The corrupt newest backup: a notice, then the previous good one (2 epochs done) is used.
    code, err = _finish(second)
    assert code == 0, err
    assert f"skipping backup {newest}" in err and "truncated or corrupt" in err
    assert "resumed from the previous good backup" in err
    got = checkpoint.load(second_out)
    assert got["history_epochs"] == [2, 3, 4]
    _assert_same_state(got, ref)


# ---------------------------------------------------------------------------------------- unit level


def test_backup_rotation_keeps_two_and_writes_atomically(tmp_path):
    backup_dir = tmp_path / "b"
    cb = BackupAndRestore(backup_dir, delete_checkpoint=False)
    model = FakeModel()
    drive(model, [cb], [{"loss": 1.0}] * 4, weights=[1, 2, 3, 4])
    assert _backups(backup_dir) == ["backup-epoch-000003.ckpt", "backup-epoch-000004.ckpt"]
    saved = checkpoint.load(backup_dir / "backup-epoch-000004.ckpt")
    assert saved["epochs_done"] == 4 and torch.all(saved["training_state"]["module"]["weight"] == 4)
    assert {"torch", "numpy", "python"} <= set(saved["rng"])


def test_restore_sets_resume_epoch_and_state(tmp_path, capsys):
    backup_dir = tmp_path / "b"
    drive(FakeModel(), [BackupAndRestore(backup_dir, delete_checkpoint=False)], [{"loss": 1.0}] * 3,
          weights=[1, 2, 3])
    model = FakeModel()
    cb = BackupAndRestore(backup_dir)
    ran = drive(model, [cb], [{"loss": 1.0}] * 5, weights=[9, 9, 9, 7, 8])
    assert ran == [3, 4] and cb.restored_epoch == 3
    assert cb.restored_from == str(backup_dir / "backup-epoch-000003.ckpt")
    assert not backup_dir.exists()


def test_restore_loads_the_weights_it_saved(tmp_path):
    backup_dir = tmp_path / "b"
    drive(FakeModel(), [BackupAndRestore(backup_dir, delete_checkpoint=False)], [{"loss": 1.0}] * 2,
          weights=[1, 5])
    model = FakeModel()
    cb = BackupAndRestore(backup_dir, delete_checkpoint=False)
    cb.set_model(model)
    cb.on_train_begin()
    assert model.resume_epoch == 2
    assert all(np.all(w == 5) for w in model.get_weights())


def test_all_backups_corrupt_is_a_clear_error(tmp_path):
    backup_dir = tmp_path / "b"
    drive(FakeModel(), [BackupAndRestore(backup_dir, delete_checkpoint=False)], [{"loss": 1.0}] * 2)
    for name in _backups(backup_dir):
        (backup_dir / name).write_bytes(b"garbage")
    with pytest.raises(checkpoint.CheckpointError, match=f"every backup in {backup_dir} is unusable.*delete"):
        drive(FakeModel(), [BackupAndRestore(backup_dir)], [{"loss": 1.0}])


def test_backup_of_another_model_is_refused(tmp_path):
    backup_dir = tmp_path / "b"
    drive(FakeModel(), [BackupAndRestore(backup_dir, delete_checkpoint=False)], [{"loss": 1.0}])
    other = FakeModel()
    other.module = torch.nn.Linear(5, 2)
    with pytest.raises(ValueError, match="does not fit this model/optimizer.*another training job"):
        drive(other, [BackupAndRestore(backup_dir)], [{"loss": 1.0}])


def test_only_rank0_writes_but_every_rank_restores(tmp_path):
    backup_dir = tmp_path / "b"
    drive(FakeModel(is_main=False), [BackupAndRestore(backup_dir)], [{"loss": 1.0}] * 2)
    assert not backup_dir.exists() or _backups(backup_dir) == []
    drive(FakeModel(), [BackupAndRestore(backup_dir, delete_checkpoint=False)], [{"loss": 1.0}] * 2)
    worker = FakeModel(is_main=False)
    ran = drive(worker, [BackupAndRestore(backup_dir)], [{"loss": 1.0}] * 3)
    assert ran == [2] and _backups(backup_dir) == ["backup-epoch-000001.ckpt", "backup-epoch-000002.ckpt"]


def test_partial_temp_files_are_cleaned_and_bad_arguments_refused(tmp_path):
    backup_dir = tmp_path / "b"
    backup_dir.mkdir()
    (backup_dir / ".backup-epoch-000001.ckpt.abc.tmp").write_bytes(b"half")
    drive(FakeModel(), [BackupAndRestore(backup_dir)], [{"loss": 1.0}])
    assert not backup_dir.exists()
    with pytest.raises(ValueError, match="save_freq=10"):
        BackupAndRestore(tmp_path, save_freq=10)
    with pytest.raises(ValueError, match="keep=1"):
        BackupAndRestore(tmp_path, keep=1)


@pytest.mark.gpu
def test_gpu_rng_states_round_trip_through_a_backup(tmp_path):
    from arignote.devices import cuda

    torch.randn(1, device="cuda")  # initialise CUDA so it has generator states
    backup_dir = tmp_path / "b"
    drive(FakeModel(), [BackupAndRestore(backup_dir, delete_checkpoint=False)], [{"loss": 1.0}])
    expected = torch.rand(4, device="cuda").cpu()  # drawn right after the backup was taken
    torch.rand(100, device="cuda")  # move the generator on
    cb = BackupAndRestore(backup_dir)
    cb.set_model(FakeModel())
    cb.on_train_begin()
    assert torch.equal(torch.rand(4, device="cuda").cpu(), expected)
    assert len(cuda.rng_states()) == cuda.device_count()



def test_keep_more_copies_and_rng_restore_switch(tmp_path):
    backup_dir = tmp_path / "b"
    drive(FakeModel(), [BackupAndRestore(backup_dir, keep=3, delete_checkpoint=False)], [{"loss": 1.0}] * 5)
    assert _backups(backup_dir) == [f"backup-epoch-{i:06d}.ckpt" for i in (3, 4, 5)]
    # The generators are put back to their state at the backup (so draws repeat), unless switched off.
    drive(FakeModel(), [BackupAndRestore(tmp_path / "c", delete_checkpoint=False)], [{"loss": 1.0}])
    saved = checkpoint.load(tmp_path / "c" / "backup-epoch-000001.ckpt")["rng"]
    torch.set_rng_state(saved["torch"])
    np.random.set_state(("MT19937", saved["numpy"]["keys"], saved["numpy"]["pos"], 0, 0.0))
    expected_torch, expected_numpy = torch.rand(3), np.random.rand(3)
    for restore in (True, False):
        model = FakeModel()  # (seeds torch itself, so build it first)
        torch.rand(10)
        np.random.rand(10)
        cb = BackupAndRestore(tmp_path / "c", delete_checkpoint=False, restore_rng=restore)
        cb.set_model(model)
        cb.on_train_begin()
        assert torch.equal(torch.rand(3), expected_torch) is restore
        assert np.array_equal(np.random.rand(3), expected_numpy) is restore


# ---------------------------------------------------------------- a stopped epoch is not a finished epoch


def test_nan_weights_are_never_backed_up_and_the_backups_are_kept(tmp_path, capsys):
    backup_dir = tmp_path / "b"
    cb = BackupAndRestore(backup_dir)  # delete_checkpoint=True: kept anyway, they are the resume point
    drive(FakeModel(), [cb], [{"loss": 1.0}] * 3, weights=[1, 2, float("nan")])
    assert _backups(backup_dir) == ["backup-epoch-000001.ckpt", "backup-epoch-000002.ckpt"]
    err = capsys.readouterr().err
    assert ("BackupAndRestore: not backing up: the weights after epoch 3 are not finite (NaN/Inf in weight, "
            f"bias); the last good backup {backup_dir / 'backup-epoch-000002.ckpt'} (2 epochs done) "
            "is kept") in err
    assert f"keeping the backups in {backup_dir} because the weights after epoch 3 are not finite" in err
    model = FakeModel()
    ran = drive(model, [BackupAndRestore(backup_dir)], [{"loss": 1.0}] * 4)
    assert ran == [2, 3]  # resumed after the last good epoch, not after the NaN one
    assert not backup_dir.exists()  # that run finished: backups deleted


def test_an_interrupted_epoch_is_not_recorded_as_done(tmp_path, capsys):
    from arignote.callbacks import Callback

    class Interrupt(Callback):
        def on_epoch_end(self, epoch, logs=None):
            self.model.epoch_interrupted = epoch == 2

    backup_dir = tmp_path / "b"
    drive(FakeModel(), [Interrupt(), BackupAndRestore(backup_dir)], [{"loss": 1.0}] * 3, weights=[1, 2, 3])
    assert _backups(backup_dir) == ["backup-epoch-000001.ckpt", "backup-epoch-000002.ckpt"]
    assert "not backing up: epoch 3 was interrupted before its end" in capsys.readouterr().err
    saved = checkpoint.load(backup_dir / "backup-epoch-000002.ckpt")
    assert saved["epochs_done"] == 2 and torch.all(saved["training_state"]["module"]["weight"] == 2)


def test_a_backup_with_nan_weights_is_skipped_on_restore(tmp_path, capsys):
    # e.g. written by an arignote without this check: never a resume point
    backup_dir = tmp_path / "b"
    drive(FakeModel(), [BackupAndRestore(backup_dir, delete_checkpoint=False)], [{"loss": 1.0}] * 2,
          weights=[1, 2])
    newest = backup_dir / "backup-epoch-000002.ckpt"
    saved = checkpoint.load(newest)
    saved["training_state"]["module"]["bias"].fill_(float("nan"))
    checkpoint.save(newest, saved)
    model = FakeModel()
    ran = drive(model, [BackupAndRestore(backup_dir)], [{"loss": 1.0}] * 3)
    assert ran == [1, 2]
    err = capsys.readouterr().err
    assert f"skipping backup {newest}: BackupAndRestore: backup {newest} holds non-finite weights" in err


def test_hostile_backup_contents_are_checkpoint_errors(tmp_path):
    backup_dir = tmp_path / "b"
    backup_dir.mkdir()
    bad = backup_dir / "backup-epoch-000001.ckpt"
    for contents, reason in [
        ({"format": "arignote-backup/1", "epochs_done": "3", "training_state": {}}, "epochs_done='3'"),
        ({"format": "arignote-backup/1", "epochs_done": 1, "training_state": [1, 2]}, "does not fit"),
        ({"format": "arignote-backup/1", "epochs_done": 1, "training_state": {"module": {"x": 1}}},
         "does not fit"),
    ]:
        checkpoint.save(bad, contents)
        with pytest.raises(checkpoint.CheckpointError,
                           match=f"every backup in {backup_dir} is unusable.*{reason}"):
            drive(FakeModel(), [BackupAndRestore(backup_dir)], [{"loss": 1.0}])


def test_directories_in_the_way_are_named_up_front(tmp_path):
    backup_dir = tmp_path / "b"
    drive(FakeModel(), [BackupAndRestore(backup_dir, delete_checkpoint=False)], [{"loss": 1.0}])
    (backup_dir / "backup-epoch-000003.ckpt").mkdir()
    with pytest.raises(checkpoint.CheckpointError,
                       match=r"backup-epoch-000003.ckpt is a directory; that name is where the backup "
                             r"of epoch 3 goes"):
        drive(FakeModel(), [BackupAndRestore(backup_dir)], [{"loss": 1.0}] * 4)
    (tmp_path / "file").write_text("x")
    with pytest.raises(checkpoint.CheckpointError, match="backup_dir .*file is a file, not a directory"):
        drive(FakeModel(), [BackupAndRestore(tmp_path / "file")], [{"loss": 1.0}])


def test_backup_save_failure_names_the_last_good_backup(tmp_path, monkeypatch):
    import errno

    backup_dir = tmp_path / "b"
    real_save = checkpoint.save

    def full_after_one(path, obj):
        if str(path).endswith("000002.ckpt"):
            raise checkpoint.save_error(str(path), errno.ENOSPC)
        real_save(path, obj)

    monkeypatch.setattr(checkpoint, "save", full_after_one)
    with pytest.raises(checkpoint.CheckpointSaveError) as info:
        drive(FakeModel(), [BackupAndRestore(backup_dir)], [{"loss": 1.0}] * 3)
    msg = str(info.value)
    assert msg.startswith("BackupAndRestore: could not back up epoch 2: cannot save checkpoint ")
    assert "No space left on device (ENOSPC)" in msg and info.value.errno == errno.ENOSPC
    last = backup_dir / "backup-epoch-000001.ckpt"
    assert msg.endswith(f"the last good backup {last} (1 epochs done) is intact")
