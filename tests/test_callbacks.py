"""Every callback against expected values and files, driven by a stand-in model (callback_helpers)."""

from __future__ import annotations

import errno
import math
import os

import numpy as np
import pytest

from arignote import checkpoint
from arignote.callbacks import (
    Callback,
    CSVLogger,
    EarlyStopping,
    LearningRateScheduler,
    ModelCheckpoint,
    ReduceLROnPlateau,
    TensorBoard,
    TerminateOnNaN,
)
from callback_helpers import FakeModel, drive


def _val_loss(*values):
    return [{"loss": 1.0 - 0.1 * i, "val_loss": v} for i, v in enumerate(values)]


# ---------------------------------------------------------------------------------------- CSVLogger


def test_csv_logger_writes_keras_format(tmp_path):
    path = tmp_path / "log" / "training.csv"
    logs = [{"loss": 0.5, "acc": 0.75, "val_loss": 0.625}, {"loss": 0.25, "acc": 0.875, "val_loss": 0.5}]
    drive(FakeModel(), [CSVLogger(path)], logs)
    expected = ["epoch,acc,loss,val_loss", "0,0.75,0.5,0.625", "1,0.875,0.25,0.5"]
    assert path.read_text().splitlines() == expected


def test_csv_logger_separator_and_append(tmp_path):
    path = tmp_path / "training.tsv"
    drive(FakeModel(), [CSVLogger(path, separator="\t")], [{"loss": 0.5}])
    drive(FakeModel(), [CSVLogger(path, separator="\t", append=True)], [{"loss": 0.5}, {"loss": 0.25}])
    assert path.read_text().splitlines() == ["epoch\tloss", "0\t0.5", "0\t0.5", "1\t0.25"]
    # Without append the file starts over.
    drive(FakeModel(), [CSVLogger(path, separator="\t")], [{"loss": 0.125}])
    assert path.read_text().splitlines() == ["epoch\tloss", "0\t0.125"]


def test_csv_logger_append_to_empty_file_writes_header(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("")
    drive(FakeModel(), [CSVLogger(path, append=True)], [{"loss": 1.5}])
    assert path.read_text().splitlines() == ["epoch,loss", "0,1.5"]


def test_csv_logger_na_when_stopping_epoch_lacks_keys(tmp_path):
    class StopAtOne(Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:
                self.model.stop_training = True

    path = tmp_path / "t.csv"
    drive(FakeModel(), [StopAtOne(), CSVLogger(path)], [{"loss": 1.0, "val_loss": 2.0}, {"loss": 0.5}])
    assert path.read_text().splitlines() == ["epoch,loss,val_loss", "0,1.0,2.0", "1,0.5,NA"]


def test_csv_logger_rank_nonzero_writes_nothing(tmp_path):
    path = tmp_path / "t.csv"
    drive(FakeModel(is_main=False), [CSVLogger(path)], [{"loss": 1.0}])
    assert not path.exists()


def test_csv_logger_bad_separator():
    with pytest.raises(ValueError, match="separator"):
        CSVLogger("x.csv", separator=", ")


# ---------------------------------------------------------------------------------------- ModelCheckpoint


def test_model_checkpoint_keras_filenames_every_epoch(tmp_path):
    pattern = str(tmp_path / "weights.{epoch:02d}-{val_loss:.2f}.h5")
    model = FakeModel()
    drive(model, [ModelCheckpoint(pattern)], _val_loss(0.5, 0.4, 0.45))
    assert sorted(os.listdir(tmp_path)) == ["weights.01-0.50.h5", "weights.02-0.40.h5", "weights.03-0.45.h5"]
    assert [kind for kind, _ in model.saved] == ["model"] * 3
    assert checkpoint.load(tmp_path / "weights.02-0.40.h5")["kind"] == "model"


def test_model_checkpoint_best_only_saves_on_improvement(tmp_path, capsys):
    pattern = str(tmp_path / "best.{epoch:02d}.ckpt")
    model = FakeModel()
    cb = ModelCheckpoint(pattern, save_best_only=True, verbose=1)
    drive(model, [cb], _val_loss(0.5, 0.4, 0.45, 0.3, 0.3), weights=[1, 2, 3, 4, 5])
    assert sorted(os.listdir(tmp_path)) == ["best.01.ckpt", "best.02.ckpt", "best.04.ckpt"]
    assert cb.best == 0.3
    saved = checkpoint.load(tmp_path / "best.04.ckpt")["weights"]
    assert all(np.all(w == 4) for w in saved)
    out = capsys.readouterr().out
    assert "Epoch 00002: val_loss improved from 0.50000 to 0.40000, saving model to" in out
    assert "Epoch 00003: val_loss did not improve from 0.40000" in out
    assert "Epoch 00005: val_loss did not improve from 0.30000" in out


def test_model_checkpoint_single_file_keeps_best_weights(tmp_path):
    path = tmp_path / "best.h5"
    cb = ModelCheckpoint(str(path), monitor="val_acc", save_best_only=True, save_weights_only=True)
    drive(FakeModel(), [cb], [{"val_acc": 0.5}, {"val_acc": 0.7}, {"val_acc": 0.6}], weights=[1, 2, 3])
    saved = checkpoint.load(path)
    assert saved["kind"] == "weights" and all(np.all(w == 2) for w in saved["weights"])


def test_model_checkpoint_mode_min_on_accuracy_and_accuracy_alias(tmp_path):
    path = tmp_path / "m.{epoch}.h5"
    # mode='min' overrides auto's "acc is maximised"; monitor val_acc finds val_accuracy.
    drive(FakeModel(), [ModelCheckpoint(str(path), monitor="val_acc", mode="min", save_best_only=True)],
          [{"val_accuracy": 0.5}, {"val_accuracy": 0.7}, {"val_accuracy": 0.4}])
    assert sorted(os.listdir(tmp_path)) == ["m.1.h5", "m.3.h5"]


def test_model_checkpoint_period_and_save_freq(tmp_path):
    drive(FakeModel(), [ModelCheckpoint(str(tmp_path / "p{epoch}.h5"), period=2)], _val_loss(*[0.1] * 5))
    assert sorted(os.listdir(tmp_path)) == ["p2.h5", "p4.h5"]
    batch_dir = tmp_path / "batches"
    batches = [[{"loss": 1.0}] * 3] * 2
    drive(FakeModel(), [ModelCheckpoint(str(batch_dir / "e{epoch}-b{batch}.h5"), save_freq=2)],
          _val_loss(0.1, 0.1), batch_logs=batches)
    # 6 batches in all, a save every 2: after batch 2 of epoch 1, batch 1 and 3 of epoch 2.
    assert sorted(os.listdir(batch_dir)) == ["e1-b2.h5", "e2-b1.h5", "e2-b3.h5"]


def test_model_checkpoint_errors_name_the_problem(tmp_path):
    with pytest.raises(ValueError, match="mode='best'"):
        ModelCheckpoint("x.h5", mode="best")
    with pytest.raises(ValueError, match="period=0"):
        ModelCheckpoint("x.h5", period=0)
    with pytest.raises(ValueError, match="not a valid format pattern"):
        ModelCheckpoint("w.{epoch:02d.h5")
    cb = ModelCheckpoint(str(tmp_path / "w.{val_acc:.2f}.h5"))
    with pytest.raises(KeyError, match=r"uses \{val_acc\}.*available: epoch, loss, val_loss"):
        drive(FakeModel(), [cb], _val_loss(0.5))


def test_model_checkpoint_missing_monitor_warns_with_available_keys(tmp_path):
    cb = ModelCheckpoint(str(tmp_path / "b.h5"), monitor="val_loss", save_best_only=True)
    with pytest.warns(RuntimeWarning, match=r"'val_loss'.*available: loss.*validation_split"):
        drive(FakeModel(), [cb], [{"loss": 0.5}])
    assert not (tmp_path / "b.h5").exists()


def test_model_checkpoint_only_rank0_writes(tmp_path):
    model = FakeModel(is_main=False)
    drive(model, [ModelCheckpoint(str(tmp_path / "w{epoch}.h5"))], _val_loss(0.5, 0.4))
    assert os.listdir(tmp_path) == [] and model.saved == []


# ---------------------------------------------------------------------------------------- EarlyStopping


def test_early_stopping_patience(capsys):
    cb = EarlyStopping(monitor="val_loss", patience=2, verbose=1)
    ran = drive(FakeModel(), [cb], _val_loss(1.0, 0.9, 0.95, 0.93, 0.8, 0.7))
    assert ran == [0, 1, 2, 3] and cb.stopped_epoch == 3 and cb.best == 0.9 and cb.best_epoch == 1
    assert "Epoch 00004: early stopping" in capsys.readouterr().out


def test_early_stopping_patience_zero_and_min_delta():
    assert drive(FakeModel(), [EarlyStopping(patience=0)], _val_loss(1.0, 0.9, 0.95, 0.5)) == [0, 1, 2]
    # Improvements smaller than min_delta do not count.
    cb = EarlyStopping(min_delta=0.1, patience=1)
    assert drive(FakeModel(), [cb], _val_loss(1.0, 0.95, 0.93, 0.5)) == [0, 1]
    assert cb.best == 1.0


def test_early_stopping_max_mode_and_auto_for_accuracy():
    logs = [{"val_acc": v} for v in (0.5, 0.6, 0.55, 0.58)]
    assert drive(FakeModel(), [EarlyStopping(monitor="val_acc", patience=2)], logs) == [0, 1, 2, 3]
    assert drive(FakeModel(), [EarlyStopping(monitor="val_acc", patience=1)], logs) == [0, 1, 2]
    assert drive(FakeModel(), [EarlyStopping(monitor="val_acc", mode="min", patience=0)], logs) == [0, 1]


def test_early_stopping_baseline():
    # Never beats the baseline 0.5: stops after `patience` epochs.
    cb = EarlyStopping(baseline=0.5, patience=2, restore_best_weights=True)
    model = FakeModel()
    assert drive(model, [cb], _val_loss(0.9, 0.8, 0.7, 0.4), weights=[1, 2, 3, 4]) == [0, 1]
    assert all(np.all(w == 2) for w in model.get_weights())  # no best weights: current ones stay
    cb = EarlyStopping(baseline=0.5, patience=2)
    assert drive(FakeModel(), [cb], _val_loss(0.9, 0.4, 0.45, 0.3)) == [0, 1, 2, 3]


def test_early_stopping_restore_best_weights():
    model = FakeModel()
    cb = EarlyStopping(patience=2, restore_best_weights=True)
    ran = drive(model, [cb], _val_loss(0.9, 0.5, 0.6, 0.7, 0.1), weights=[1, 2, 3, 4, 5])
    assert ran == [0, 1, 2, 3]
    assert all(np.all(w == 2) for w in model.get_weights())
    model = FakeModel()
    drive(model, [EarlyStopping(patience=2)], _val_loss(0.9, 0.5, 0.6, 0.7), weights=[1, 2, 3, 4])
    assert all(np.all(w == 4) for w in model.get_weights())


def test_early_stopping_resets_between_fits():
    cb = EarlyStopping(patience=1)
    model = FakeModel()
    assert drive(model, [cb], _val_loss(0.5, 0.6, 0.7)) == [0, 1]
    assert drive(model, [cb], _val_loss(0.9, 0.8, 0.7)) == [0, 1, 2]


# ---------------------------------------------------------------------------------------- TerminateOnNaN


def test_terminate_on_nan_stops_at_the_bad_batch(capsys):
    batches = [[{"loss": 1.0}] * 3, [{"loss": 0.9}, {"loss": math.nan}, {"loss": 0.8}], [{"loss": 0.7}]]
    cb = TerminateOnNaN()
    model = FakeModel()
    ran = drive(model, [cb], [{"loss": 1.0}, {"loss": 0.9}, {"loss": 0.7}], batch_logs=batches)
    assert ran == [0, 1] and cb.terminated_at == (1, 1) and model.stop_training
    assert "Batch 1: Invalid loss, terminating training" in capsys.readouterr().out


def test_terminate_on_nan_catches_inf_epoch_loss():
    cb = TerminateOnNaN()
    assert drive(FakeModel(), [cb], [{"loss": 1.0}, {"loss": math.inf}, {"loss": 1.0}]) == [0, 1]
    assert cb.terminated_at == (1, -1)
    assert drive(FakeModel(), [TerminateOnNaN()], [{"loss": 1.0}, {"loss": 0.5}]) == [0, 1]


# ---------------------------------------------------------------------------------------- LR callbacks


def _lr_recorder(model, seen):
    class Record(Callback):
        def on_epoch_end(self, epoch, logs=None):
            seen.append((model.optimizer.lr, model.optimizer.torch.param_groups[0]["lr"], logs.get("lr")))

    return Record()


def test_learning_rate_scheduler_epoch_only(capsys):
    model, seen = FakeModel(lr=0.1), []
    sched = LearningRateScheduler(lambda epoch: 0.1 * 0.5 ** epoch, verbose=1)
    drive(model, [sched, _lr_recorder(model, seen)], [{"loss": 1.0}] * 3)
    assert seen == [(0.1, 0.1, 0.1), (0.05, 0.05, 0.05), (0.025, 0.025, 0.025)]
    assert "Epoch 00003: LearningRateScheduler setting learning rate to 0.025." in capsys.readouterr().out


def test_learning_rate_scheduler_with_current_lr():
    model, seen = FakeModel(lr=0.2), []

    def schedule(epoch, lr):
        return lr if epoch < 1 else lr * 0.1

    drive(model, [LearningRateScheduler(schedule), _lr_recorder(model, seen)], [{"loss": 1.0}] * 3)
    assert [round(s[1], 10) for s in seen] == [0.2, 0.02, 0.002]


def test_learning_rate_scheduler_bad_output():
    with pytest.raises(ValueError, match=r"schedule\(0\) returned 'fast'"):
        drive(FakeModel(), [LearningRateScheduler(lambda e: "fast")], [{"loss": 1.0}])
    with pytest.raises(ValueError, match="finite and >= 0"):
        drive(FakeModel(), [LearningRateScheduler(lambda e: -1.0)], [{"loss": 1.0}])
    with pytest.raises(TypeError, match="function of the epoch"):
        LearningRateScheduler(0.1)


def test_reduce_lr_on_plateau_patience_factor_cooldown_min_lr(capsys):
    model, seen = FakeModel(lr=1.0), []
    # As in Keras, the cooldown counter is decremented before the check, so cooldown=2 skips one epoch.
    cb = ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=1, cooldown=2, min_lr=0.2, verbose=1)
    losses = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.5, 0.5]
    drive(model, [cb, _lr_recorder(model, seen)], _val_loss(*losses))
    # logs['lr'] is the rate in force during the epoch; the reduction applies from the next one.
    assert [s[2] for s in seen] == [1.0, 1.0, 0.5, 0.5, 0.25, 0.25, 0.2, 0.2, 0.2]
    assert [s[1] for s in seen][-1] == 0.2
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line] == [
        "Epoch 00002: ReduceLROnPlateau reducing learning rate to 0.5.",
        "Epoch 00004: ReduceLROnPlateau reducing learning rate to 0.25.",
        "Epoch 00006: ReduceLROnPlateau reducing learning rate to 0.2.",
    ]


def test_reduce_lr_on_plateau_min_delta_and_max_mode():
    model, seen = FakeModel(lr=1.0), []
    # Gains of 0.05 are below min_delta=0.1, so accuracy is "not improving".
    cb = ReduceLROnPlateau(monitor="val_acc", factor=0.1, patience=2, min_delta=0.1)
    drive(model, [cb, _lr_recorder(model, seen)], [{"val_acc": 0.5 + 0.05 * i} for i in range(4)])
    assert [round(s[2], 10) for s in seen] == [1.0, 1.0, 1.0, 0.1]
    with pytest.warns(UserWarning, match="`epsilon` argument is deprecated") as caught:  # Keras 2.3.1's
        plateau = ReduceLROnPlateau(epsilon=0.3)
    assert plateau.min_delta == 0.3 and not hasattr(plateau, "epsilon")
    assert not any(issubclass(w.category, DeprecationWarning) for w in caught)  # hidden by default filters
    with pytest.raises(ValueError, match="factor=1.0"):
        ReduceLROnPlateau(factor=1.0)


def test_lr_callbacks_need_an_optimizer():
    model = FakeModel()
    model.optimizer = None
    with pytest.raises(ValueError, match="compile"):
        drive(model, [LearningRateScheduler(lambda e: 0.1)], [{"loss": 1.0}])


# ---------------------------------------------------------------------------------------- TensorBoard


def _scalars(log_dir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(log_dir), size_guidance={"scalars": 0, "histograms": 0})
    acc.Reload()
    return acc


def test_tensorboard_writes_epoch_scalars_and_histograms(tmp_path):
    logs = [{"loss": 1.0, "val_loss": 1.5, "acc": 0.25}, {"loss": 0.5, "val_loss": 1.25, "acc": 0.5}]
    drive(FakeModel(), [TensorBoard(log_dir=tmp_path / "tb", histogram_freq=1)], logs)
    assert any(name.startswith("events.out.tfevents") for name in os.listdir(tmp_path / "tb"))
    acc = _scalars(tmp_path / "tb")
    assert sorted(acc.Tags()["scalars"]) == ["acc", "loss", "val_loss"]
    assert [(e.step, e.value) for e in acc.Scalars("loss")] == [(0, 1.0), (1, 0.5)]
    assert [e.value for e in acc.Scalars("val_loss")] == [1.5, 1.25]
    assert sorted(acc.Tags()["histograms"]) == ["bias", "weight"]
    assert [e.step for e in acc.Histograms("weight")] == [0, 1]


def test_tensorboard_batch_updates(tmp_path):
    batches = [[{"loss": 1.0}, {"loss": 0.8}, {"loss": 0.6}], [{"loss": 0.5}, {"loss": 0.4}, {"loss": 0.3}]]
    drive(FakeModel(), [TensorBoard(log_dir=tmp_path, update_freq=2)], [{"loss": 0.6}, {"loss": 0.3}],
          batch_logs=batches)
    acc = _scalars(tmp_path)
    got = [(e.step, round(e.value, 6)) for e in acc.Scalars("batch_loss")]
    assert got == [(8, 0.8), (16, 0.5), (24, 0.3)]  # every 2nd batch, step = samples seen (4 a batch)
    assert "batch_size" not in acc.Tags()["scalars"] and "batch_batch" not in acc.Tags()["scalars"]


def test_tensorboard_rejects_unsupported_options_and_missing_package(monkeypatch, tmp_path):
    with pytest.raises(ValueError, match="write_images"):
        TensorBoard(log_dir=tmp_path, write_images=True)
    with pytest.raises(ValueError, match="update_freq='often'"):
        TensorBoard(log_dir=tmp_path, update_freq="often")
    import builtins

    real_import = builtins.__import__

    def no_tensorboard(name, *args, **kwargs):
        if name.startswith("torch.utils.tensorboard"):
            raise ImportError("No module named 'tensorboard'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tensorboard)
    with pytest.raises(ImportError, match=r"pip install arignote\[tensorboard\]"):
        TensorBoard(log_dir=tmp_path)


def test_tensorboard_rank_nonzero_writes_nothing(tmp_path):
    drive(FakeModel(is_main=False), [TensorBoard(log_dir=tmp_path / "tb")], [{"loss": 1.0}])
    assert not (tmp_path / "tb").exists()


# ---------------------------------------------------------------------------------------- through real fit


@pytest.fixture
def fit_model():
    """A small compiled MLP on learnable synthetic data, on the CPU, and its data."""
    import torch

    import arignote
    from arignote.datasets import synthetic
    from arignote.layers import Dense
    from arignote.models import Sequential

    arignote.configure(device="cpu", print_active_device=False)
    torch.manual_seed(0)
    x, y = synthetic(shape=(10,), classes=3, samples=96, seed=2)

    def make(optimizer="sgd", loss="sparse_categorical_crossentropy"):
        model = Sequential([Dense(8, activation="relu", input_shape=(10,)), Dense(3, activation="softmax")])
        model.compile(loss=loss, optimizer=optimizer, metrics=["accuracy"])
        return model

    return make, x, y


def test_fit_model_checkpoint_best_only_writes_loadable_models(tmp_path, fit_model):
    from arignote.models import load_model

    make, x, y = fit_model
    model = make()
    pattern = str(tmp_path / "weights.{epoch:02d}-{val_loss:.2f}.h5")
    weights = []

    class Record(Callback):
        def on_epoch_end(self, epoch, logs=None):
            weights.append(self.model.get_weights())

    history = model.fit(x, y, batch_size=16, epochs=4, verbose=0, validation_split=0.25,
                        callbacks=[ModelCheckpoint(pattern, save_best_only=True), Record()])
    val = history.history["val_loss"]
    best_so_far = [i for i, v in enumerate(val) if v < min(val[:i], default=math.inf)]
    expected = sorted(f"weights.{i + 1:02d}-{val[i]:.2f}.h5" for i in best_so_far)
    assert sorted(os.listdir(tmp_path)) == expected
    for i, name in zip(sorted(best_so_far), expected):
        loaded = load_model(str(tmp_path / name))
        for a, b in zip(loaded.get_weights(), weights[i]):
            np.testing.assert_array_equal(a, b)


def test_fit_csv_logger_matches_history(tmp_path, fit_model):
    make, x, y = fit_model
    path = tmp_path / "log.csv"
    history = make().fit(x, y, batch_size=32, epochs=3, verbose=0, validation_split=0.25,
                         callbacks=[CSVLogger(path)])
    rows = [line.split(",") for line in path.read_text().splitlines()]
    keys = sorted(history.history)
    assert rows[0] == ["epoch", *keys] and [r[0] for r in rows[1:]] == ["0", "1", "2"]
    for key_index, key in enumerate(keys, start=1):
        assert [float(r[key_index]) for r in rows[1:]] == history.history[key]


def test_fit_early_stopping_and_lr_callbacks_change_training(fit_model):
    make, x, y = fit_model
    model = make()
    # Nothing improves by 10: stop after patience=1 epoch without improvement, i.e. 2 epochs.
    history = model.fit(x, y, batch_size=32, epochs=6, verbose=0, callbacks=[EarlyStopping("loss", 10, 1)])
    assert history.epoch == [0, 1] and model.stop_training

    model = make()
    history = model.fit(x, y, batch_size=32, epochs=3, verbose=0,
                        callbacks=[LearningRateScheduler(lambda epoch: 0.1 / (epoch + 1))])
    assert history.history["lr"] == pytest.approx([0.1, 0.05, 0.1 / 3])
    assert model.optimizer.lr == pytest.approx(0.1 / 3)
    assert model.optimizer.torch.param_groups[0]["lr"] == pytest.approx(0.1 / 3)

    model = make()
    cb = ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1, min_delta=10)
    history = model.fit(x, y, batch_size=32, epochs=3, verbose=0, callbacks=[cb])
    # logs['lr'] is the rate each epoch ran with (SGD's default 0.01); epoch 0 improves on inf.
    assert history.history["lr"] == pytest.approx([0.01, 0.01, 0.005])
    assert model.optimizer.torch.param_groups[0]["lr"] == pytest.approx(0.0025)


def test_fit_terminate_on_nan_stops_a_diverging_run(fit_model, capsys):
    from arignote.layers import Dense
    from arignote.models import Sequential
    from arignote.optimizers import SGD

    _, x, y = fit_model
    model = Sequential([Dense(8, input_shape=(10,)), Dense(3)])  # linear: nothing bounds the loss
    model.compile(loss="mse", optimizer=SGD(lr=1e3))
    history = model.fit(x * 100, np.eye(3, dtype=np.float32)[y], batch_size=8, epochs=5, verbose=0,
                        callbacks=[TerminateOnNaN()])
    assert len(history.epoch) == 1 and model.stop_training
    assert "Invalid loss, terminating training" in capsys.readouterr().out


def test_fit_tensorboard_event_files(tmp_path, fit_model):
    make, x, y = fit_model
    history = make().fit(x, y, batch_size=32, epochs=2, verbose=0, validation_split=0.25,
                         callbacks=[TensorBoard(log_dir=tmp_path, histogram_freq=1)])
    acc = _scalars(tmp_path)
    assert {"loss", "val_loss"} <= set(acc.Tags()["scalars"])
    written = [e.value for e in acc.Scalars("val_loss")]
    assert written == pytest.approx(history.history["val_loss"], rel=1e-6)  # stored as float32
    assert len(acc.Tags()["histograms"]) == 4  # two Dense layers: kernel and bias each


def test_model_checkpoint_mode_max_and_reduce_lr_mode_min(tmp_path):
    drive(FakeModel(), [ModelCheckpoint(str(tmp_path / "m{epoch}.h5"), monitor="score", mode="max",
                                        save_best_only=True)], [{"score": v} for v in (1.0, 3.0, 2.0, 4.0)])
    assert sorted(os.listdir(tmp_path)) == ["m1.h5", "m2.h5", "m4.h5"]
    model, seen = FakeModel(lr=1.0), []
    # mode='min' on an accuracy: rising accuracy counts as no improvement.
    cb = ReduceLROnPlateau(monitor="val_acc", mode="min", factor=0.5, patience=1)
    drive(model, [cb, _lr_recorder(model, seen)], [{"val_acc": 0.1 * i} for i in range(3)])
    assert [s[2] for s in seen] == [1.0, 1.0, 0.5]


def test_tensorboard_histogram_freq_and_batch_updates(tmp_path):
    batches = [[{"loss": 1.0}, {"loss": 0.5}]] * 3
    drive(FakeModel(), [TensorBoard(log_dir=tmp_path, histogram_freq=2, update_freq="batch")],
          [{"loss": 1.0}] * 3, batch_logs=batches)
    acc = _scalars(tmp_path)
    assert [e.step for e in acc.Histograms("weight")] == [0, 2]  # every 2nd epoch
    assert [e.step for e in acc.Scalars("batch_loss")] == [4, 8, 12, 16, 20, 24]  # every batch


# ------------------------------------------------------------------------- NaN safety, save failures


class _Interrupt(Callback):
    """Marks the listed epochs as interrupted (what the loop does when stop_training cut them short)."""

    def __init__(self, epochs):
        super().__init__()
        self.epochs = set(epochs)

    def on_epoch_end(self, epoch, logs=None):
        self.model.epoch_interrupted = epoch in self.epochs


def test_model_checkpoint_never_replaces_a_finite_file_with_nan_weights(tmp_path):
    last = tmp_path / "last.h5"
    cb_every, cb_last = ModelCheckpoint(str(tmp_path / "e{epoch:02d}.h5")), ModelCheckpoint(str(last))
    with pytest.warns(RuntimeWarning) as caught:
        drive(FakeModel(), [cb_every, cb_last], [{"loss": 1.0}] * 4, weights=[1, 2, math.nan, 4])
    assert sorted(os.listdir(tmp_path)) == ["e01.h5", "e02.h5", "e04.h5", "last.h5"]
    assert all(np.all(w == 4) for w in checkpoint.load(last)["weights"])  # finite again: saved
    messages = [str(w.message) for w in caught]
    assert any(m.startswith("ModelCheckpoint: the weights at epoch 3 are not finite (NaN/Inf in weight, "
                            f"bias); not saving {tmp_path / 'e03.h5'}; the last good checkpoint "
                            f"{tmp_path / 'e02.h5'} is kept") for m in messages), messages
    assert cb_every.last_saved == str(tmp_path / "e04.h5")


def test_model_checkpoint_best_only_keeps_best_when_weights_turn_nan(tmp_path):
    path = tmp_path / "best.h5"
    cb = ModelCheckpoint(str(path), save_best_only=True)
    with pytest.warns(RuntimeWarning, match="not finite"):
        drive(FakeModel(), [cb], _val_loss(0.5, 0.4, 0.1), weights=[1, 2, math.inf])
    assert all(np.all(w == 2) for w in checkpoint.load(path)["weights"])
    assert cb.best == 0.4  # the NaN epoch did not become the best one


def test_model_checkpoint_does_not_save_an_interrupted_epoch(tmp_path, capsys):
    drive(FakeModel(), [_Interrupt({1}), ModelCheckpoint(str(tmp_path / "e{epoch:02d}.h5"))],
          [{"loss": 1.0}] * 2)
    assert sorted(os.listdir(tmp_path)) == ["e01.h5"]
    assert (f"ModelCheckpoint: epoch 2 was interrupted before its end; not saving it as a finished epoch "
            f"(the last good checkpoint {tmp_path / 'e01.h5'} is kept)") in capsys.readouterr().err


def test_model_checkpoint_save_failure_names_the_file_cause_and_last_good(tmp_path):
    (tmp_path / "e02.h5").mkdir()  # a directory where epoch 2's file goes
    with pytest.raises(checkpoint.CheckpointSaveError) as info:
        drive(FakeModel(), [ModelCheckpoint(str(tmp_path / "e{epoch:02d}.h5"))], [{"loss": 1.0}] * 3)
    msg = str(info.value)
    assert msg.startswith(f"ModelCheckpoint: could not save epoch 2: cannot save checkpoint "
                          f"{tmp_path / 'e02.h5'}: Is a directory (EISDIR)")
    assert msg.endswith(f"the last checkpoint it saved, {tmp_path / 'e01.h5'}, is intact")
    assert info.value.errno == errno.EISDIR
    assert checkpoint.load(tmp_path / "e01.h5")["kind"] == "model"


def test_model_checkpoint_cleans_temporary_files_of_killed_saves(tmp_path):
    old = [tmp_path / ".e03.h5.abcd1234.tmp", tmp_path / ".e07.h5.zz99zz99.tmp"]
    fresh, foreign = tmp_path / ".e05.h5.q1w2e3r4.tmp", tmp_path / ".notes.txt.abcd1234.tmp"
    for f in [*old, foreign]:
        f.write_bytes(b"partial")
        os.utime(f, (1, 1))  # written long before this run started

    class SaveInProgress(Callback):  # another process saving e05.h5 right now: not a leftover
        def on_train_begin(self, logs=None):
            fresh.write_bytes(b"partial")

    cb = ModelCheckpoint(str(tmp_path / "e{epoch:02d}.h5"))
    drive(FakeModel(), [cb, SaveInProgress()], [{"loss": 1.0}])
    assert sorted(os.listdir(tmp_path)) == sorted([fresh.name, foreign.name, "e01.h5"])


def test_terminate_on_nan_restore_rolls_back_weights_and_optimizer():
    model = FakeModel()
    batches = [[{"loss": 1.0}], [{"loss": 0.9}], [{"loss": math.nan}], [{"loss": 0.5}]]
    cb = TerminateOnNaN(restore=True)

    class Diverge(Callback):
        def on_train_batch_end(self, batch, logs=None):
            if logs["loss"] != logs["loss"]:
                self.model.bump(math.nan)

    model.epochs_done = 0

    class Count(Callback):
        def on_epoch_end(self, epoch, logs=None):
            self.model.epochs_done = epoch + 1

    epochs = [{"loss": 1.0}, {"loss": 0.9}, {"loss": math.nan}, {"loss": 0.5}]
    ran = drive(model, [Count(), Diverge(), cb], epochs, batch_logs=batches, weights=[1, 2, 3, 4])
    assert ran == [0, 1, 2] and cb.terminated_at == (2, 0)
    assert all(np.all(w == 2) for w in model.get_weights())  # the end of epoch 2, the last good one
    assert cb.restored_from == 2 and model.epochs_done == 2
    with pytest.raises(ValueError, match="restore='yes' must be True or False"):
        TerminateOnNaN(restore="yes")


def test_terminate_on_nan_restore_without_a_finished_epoch_restores_the_start():
    model = FakeModel()
    start = model.get_weights()
    cb = TerminateOnNaN(restore=True)
    drive(model, [cb], [{"loss": math.nan}], weights=[math.nan])
    for a, b in zip(model.get_weights(), start):
        np.testing.assert_array_equal(a, b)
    assert cb.restored_from == 0
