"""The training loop: fit/evaluate/predict semantics, data paths, accumulation, syncs, bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arignote import config
from arignote.callbacks.base import Callback, LazyLogs
from arignote.layers import Conv2D, Dense, Dropout, Flatten, MaxPooling2D
from arignote.models import Model, Sequential
from arignote.optimizers import SGD
from arignote.training import loop as loop_mod
from arignote.training.data import ArrayData, IterableData, fits_on_device, split_validation


@pytest.fixture(autouse=True)
def _cpu():
    with config.override(device="cpu", print_active_device=False):
        yield


def _blobs(n=200, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    centers = np.array([[2.0, 0.0], [-2.0, 0.0], [0.0, 2.0]], "float32")
    x = (centers[y] + rng.normal(0, 0.3, (n, 2))).astype("float32")
    return x, y


def _mlp(lr=0.1, metrics=("accuracy",), loss="sparse_categorical_crossentropy"):
    m = Sequential([Dense(16, activation="relu", input_shape=(2,)), Dense(3, activation="softmax")])
    m.compile(optimizer=SGD(lr=lr, momentum=0.9), loss=loss, metrics=list(metrics))
    return m


def _images(n=64, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((n, 8, 8, 1), dtype=np.float32), rng.integers(0, 2, n)


def _cnn():
    m = Sequential([Conv2D(4, (3, 3), padding="same", activation="relu", input_shape=(8, 8, 1)),
                    MaxPooling2D(), Flatten(), Dense(2, activation="softmax")])
    m.compile("sgd", "sparse_categorical_crossentropy", metrics=["acc"])
    return m


class Recorder(Callback):
    def __init__(self):
        super().__init__()
        self.events = []
        self.batch_sizes = []

    def on_train_begin(self, logs=None):
        self.events.append("train_begin")

    def on_epoch_begin(self, epoch, logs=None):
        self.events.append(f"epoch_begin {epoch}")

    def on_train_batch_end(self, batch, logs=None):
        self.batch_sizes.append(logs["size"])

    def on_test_begin(self, logs=None):
        self.events.append("test_begin")

    def on_epoch_end(self, epoch, logs=None):
        keys = sorted(k for k in logs if not k.startswith("cpu_"))  # minus DeviceStatsMonitor's peak
        self.events.append(f"epoch_end {epoch} " + ",".join(keys))

    def on_train_end(self, logs=None):
        self.events.append("train_end")


# ----------------------------------------------------------------------------- fit


def test_fit_learns_and_returns_history():
    torch.manual_seed(0)
    x, y = _blobs()
    m = _mlp()
    h = m.fit(x, y, epochs=5, batch_size=20, verbose=0)
    assert h is m.history
    assert h.epoch == [0, 1, 2, 3, 4]
    # Keras keys only; the device memory peak is in model.device_stats (and the progress line)
    assert set(h.history) == {"loss", "accuracy"}
    peaks = [v for k, v in m.device_stats.items() if k.startswith("cpu_") and k.endswith("rss_mib")]
    assert len(peaks) == 1 and peaks[0] > 0
    assert h.history["loss"][-1] < h.history["loss"][0] * 0.5
    assert h.history["accuracy"][-1] > 0.95
    loss, acc = m.evaluate(x, y, verbose=0)
    assert acc > 0.95 and loss < 0.3
    pred = m.predict(x)
    assert isinstance(pred, np.ndarray) and pred.shape == (200, 3)
    np.testing.assert_allclose(pred.sum(axis=1), 1.0, rtol=1e-5)


def test_callback_order_batches_and_last_partial_batch():
    x, y = _blobs(50)
    rec = Recorder()
    _mlp().fit(x, y, epochs=2, batch_size=16, verbose=0, callbacks=[rec], validation_split=0.2)
    assert rec.events == ["train_begin", "epoch_begin 0", "test_begin",
                          "epoch_end 0 accuracy,loss,val_accuracy,val_loss", "epoch_begin 1", "test_begin",
                          "epoch_end 1 accuracy,loss,val_accuracy,val_loss", "train_end"]
    assert rec.batch_sizes == [16, 16, 8] * 2  # 40 training samples: the last batch is partial


def test_validation_split_takes_the_last_fraction():
    x, y = _blobs(100)
    m = _mlp(lr=0.0)  # weights never change, so val_loss must equal evaluate on the last 20%
    h = m.fit(x, y, epochs=1, batch_size=10, verbose=0, validation_split=0.2)
    assert m.evaluate(x[80:], y[80:], verbose=0)[0] == pytest.approx(h.history["val_loss"][0], rel=1e-6)
    assert m.evaluate(x[:80], y[:80], verbose=0)[0] == pytest.approx(h.history["loss"][0], rel=1e-5)
    xt, yt, xv, yv = split_validation(np.arange(10), np.arange(10), 0.3)
    assert xv.tolist() == [7, 8, 9] and xt.tolist() == list(range(7))


def test_validation_data_tuple_and_iterable():
    x, y = _blobs(60)
    m = _mlp()
    h = m.fit(x, y, epochs=1, verbose=0, validation_data=(x[:10], y[:10]))
    assert "val_loss" in h.history and "val_accuracy" in h.history
    loader = [(x[i:i + 10], y[i:i + 10]) for i in range(0, 30, 10)]
    h = m.fit(x, y, epochs=1, verbose=0, validation_data=loader)
    assert "val_loss" in h.history


def test_seed_makes_runs_reproducible_and_shuffle_changes_order():
    x, y = _blobs(64)

    def run(shuffle):
        torch.manual_seed(123)
        m = _mlp()
        m.fit(x, y, epochs=2, batch_size=8, verbose=0, shuffle=shuffle)
        return m.get_weights()

    a, b, c = run(True), run(True), run(False)
    for wa, wb in zip(a, b):
        np.testing.assert_array_equal(wa, wb)
    assert any(not np.array_equal(wa, wc) for wa, wc in zip(a, c))


def test_initial_epoch_and_resume_epoch():
    x, y = _blobs(40)
    m = _mlp()
    h = m.fit(x, y, epochs=4, initial_epoch=2, verbose=0)
    assert h.epoch == [2, 3]

    class Resume(Callback):
        def on_train_begin(self, logs=None):
            self.model.resume_epoch = 3

    h = m.fit(x, y, epochs=5, verbose=0, callbacks=[Resume()])
    assert h.epoch == [3, 4]
    assert m.epochs_done == 5


def test_stop_training_mid_epoch_and_at_epoch_end():
    x, y = _blobs(80)

    class StopAt(Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 1:
                self.model.stop_training = True

    rec = Recorder()
    _mlp().fit(x, y, epochs=3, batch_size=10, verbose=0, callbacks=[StopAt(), rec])
    assert rec.batch_sizes == [10, 10]
    assert rec.events[-2].startswith("epoch_end 0")


def test_accumulate_gives_the_same_step_as_one_batch():
    x, y = _blobs(32)

    def one_step(k):
        torch.manual_seed(7)
        m = Sequential([Dense(8, activation="tanh", input_shape=(2,)), Dense(3, activation="softmax")])
        m.compile(SGD(lr=0.5), "sparse_categorical_crossentropy")
        m.fit(x, y, epochs=1, batch_size=32, shuffle=False, verbose=0, accumulate=k)
        return m.get_weights(), m.history.history["loss"][0]

    (w1, l1), (w4, l4) = one_step(1), one_step(4)
    assert l1 == pytest.approx(l4, rel=1e-5)
    for a, b in zip(w1, w4):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert not np.allclose(w1[0], one_step(1)[0][0] * 0)  # the step did change the weights


def test_steps_per_epoch_with_arrays_and_generators():
    x, y = _blobs(40)
    rec = Recorder()
    _mlp().fit(x, y, epochs=1, batch_size=16, steps_per_epoch=5, verbose=0, callbacks=[rec])
    assert rec.batch_sizes == [16] * 5  # wraps around the 40 samples

    def gen():
        while True:
            yield x[:8], y[:8]

    rec = Recorder()
    h = _mlp().fit(gen(), epochs=2, steps_per_epoch=3, verbose=0, callbacks=[rec])
    assert rec.batch_sizes == [8] * 6 and len(h.history["loss"]) == 2
    with pytest.raises(ValueError, match="steps_per_epoch"):
        _mlp().fit(gen(), epochs=1, verbose=0)


def test_dataloader_input():
    x, y = _blobs(60)
    ds = torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
    loader = torch.utils.data.DataLoader(ds, batch_size=16, shuffle=True)
    m = _mlp()
    h = m.fit(loader, epochs=3, verbose=0)
    assert len(h.history["loss"]) == 3
    loss, acc = m.evaluate(loader, verbose=0)
    assert 0 <= acc <= 1 and loss > 0
    assert m.predict(loader).shape == (60, 3)


def test_images_are_channels_last_and_conv_weights_too():
    x, y = _images()
    m = _cnn()
    m.fit(x, y, epochs=1, batch_size=16, verbose=0)
    conv = m.layers[0]
    assert conv.weight.is_contiguous(memory_format=torch.channels_last)
    seen = {}
    # layers take and return Keras NHWC tensors; contiguous NHWC is NCHW in channels_last memory,
    # the layout the convolution kernels get
    handle = conv.register_forward_hook(lambda mod, inp, out: seen.update(
        inp=inp[0].permute(0, 3, 1, 2).is_contiguous(memory_format=torch.channels_last),
        out=out.permute(0, 3, 1, 2).is_contiguous(memory_format=torch.channels_last)))
    m.predict(x[:4])
    handle.remove()
    assert seen == {"inp": True, "out": True}


def test_wrapped_module_with_nchw_conv():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                              torch.nn.Linear(4 * 8 * 8, 2), torch.nn.Softmax(dim=1))
    m = Model(net)
    m.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    x, y = _images()
    x = x.transpose(0, 3, 1, 2).copy()
    h = m.fit(x, y, epochs=2, verbose=0)
    assert len(h.history["loss"]) == 2
    assert net[0].weight.is_contiguous(memory_format=torch.channels_last)
    assert m.predict(x).shape == (64, 2)
    assert m.device == torch.device("cpu")


def test_floatx_float64_and_integer_inputs_convert():
    x, y = _blobs(40)
    with config.override(floatX="float64"):
        m = _mlp()
        m.fit(x.astype("float32"), y.astype("int32"), epochs=1, verbose=0)
        assert next(m.module.parameters()).dtype == torch.float64
        assert m.predict(x).dtype == np.float64


# ----------------------------------------------------------------------------- evaluate / predict


def test_evaluate_scalar_without_metrics_and_inference_mode():
    x, y = _blobs(40)
    m = Sequential([Dense(8, input_shape=(2,)), Dropout(0.5), Dense(3, activation="softmax")])
    m.compile("sgd", "sparse_categorical_crossentropy")
    a = m.evaluate(x, y, verbose=0)
    b = m.evaluate(x, y, verbose=0)
    assert isinstance(a, float) and a == b  # dropout off in evaluation: deterministic
    before = m.get_weights()
    m.predict(x)
    for w0, w1 in zip(before, m.get_weights()):
        np.testing.assert_array_equal(w0, w1)
    assert m.module.training  # restored after evaluate/predict


def test_loss_matches_a_torch_reference():
    x, y = _blobs(16)
    m = _mlp(metrics=())
    m.fit(x, y, epochs=1, verbose=0)
    with torch.no_grad():
        p = m.module(torch.from_numpy(x)).clamp(1e-7, 1 - 1e-7)
        ref = torch.nn.functional.nll_loss(p.log(), torch.from_numpy(y)).item()
    assert m.evaluate(x, y, verbose=0) == pytest.approx(ref, rel=1e-5)
    assert m.test_on_batch(x, y) == pytest.approx(ref, rel=1e-5)


def test_on_batch_methods():
    x, y = _blobs(32)
    m = _mlp()
    before = m.test_on_batch(x, y)
    for _ in range(20):
        m.train_on_batch(x, y)
    after = m.test_on_batch(x, y)
    assert isinstance(after, list) and after[0] < before[0]
    assert m.optimizer.iterations == 20
    out = m.predict_on_batch(x[:5])
    assert out.shape == (5, 3)


# ----------------------------------------------------------------------------- no per-step syncs


def test_one_sync_per_epoch_when_nobody_reads_batch_logs(monkeypatch):
    calls = []
    real = loop_mod.Trainer._gathered  # the one device sync behind results() and result_values()

    def counting(self, reduce, buffers, step):
        calls.append(reduce)
        return real(self, reduce, buffers, step)

    monkeypatch.setattr(loop_mod.Trainer, "_gathered", counting)
    x, y = _blobs(200)
    # the shared server's status record reads the batch logs every 2 s: a slow run would count those
    with config.override(**{"share.status": False}):
        _mlp().fit(x, y, epochs=2, batch_size=10, verbose=2, validation_split=0.1)
    assert len(calls) == 4  # per epoch: training logs + validation logs, never per batch (18 batches)


def test_lazy_logs_compute_once_on_access():
    n = []
    logs = LazyLogs({"batch": 3, "size": 8}, lambda: n.append(1) or {"loss": 0.5, "acc": 1.0},
                    ["loss", "acc"])
    assert logs["size"] == 8 and not n
    assert dict(logs) == {"batch": 3, "size": 8, "loss": 0.5, "acc": 1.0}
    assert logs["loss"] == 0.5 and len(n) == 1
    with pytest.raises(KeyError):
        logs["nope"]


# ----------------------------------------------------------------------------- data helpers


def test_fits_on_device_rule():
    assert fits_on_device(10**12, torch.device("cpu"), None)
    assert fits_on_device(4 * 2**30, torch.device("cuda", 0), 10 * 2**30)
    assert not fits_on_device(5 * 2**30, torch.device("cuda", 0), 10 * 2**30)
    assert not fits_on_device(1, torch.device("cuda", 0), None)


def test_array_data_shares_float32_numpy_and_slices_views():
    x = np.arange(40, dtype="float32").reshape(10, 4)
    data = ArrayData(x, np.arange(10), torch.device("cpu"), torch.float32)
    assert data.x.data_ptr() == x.ctypes.data  # no copy on CPU
    batches = list(data.batches(None, 4))
    assert [len(b[0]) for b in batches] == [4, 4, 2]
    assert batches[0][0].data_ptr() == x.ctypes.data
    idx = torch.tensor([9, 0])
    xb, yb = next(iter(data.batches(idx, 4)))
    assert yb.tolist() == [9, 0] and xb[0, 0].item() == 36.0


def test_iterable_data_one_shot_needs_steps():
    with pytest.raises(ValueError, match="steps_per_epoch"):
        IterableData(iter([]), torch.device("cpu"), torch.float32)
    data = IterableData([(np.zeros((2, 3)), np.zeros(2))], torch.device("cpu"), torch.float32)
    xb, yb = next(data.batches())
    assert xb.dtype == torch.float32 and yb.dtype == torch.float32


# ----------------------------------------------------------------------------- bad input


class NoStep(Callback):
    def on_train_batch_begin(self, batch, logs=None):
        raise AssertionError("a step ran before the bad input was reported")


@pytest.mark.parametrize("case, match", [
    ("length", "different numbers of samples: 10 inputs but 9 targets"),
    ("empty", "empty"),
    ("nan", r"NaN or Inf values \(first at sample 3\)"),
    ("inf_y", "NaN or Inf"),
    ("batch0", "batch_size must be a positive whole number, got 0"),
    ("batchneg", "batch_size must be a positive whole number, got -4"),
    ("label_range", r"labels in \[0, 3\), got 7"),
    ("label_kind", "one-hot"),
    ("shape", r"per-sample shape \(5,\) but the model's input shape is \(2,\)"),
    ("accumulate", "accumulate"),
])
def test_bad_input_is_reported_before_the_first_step(case, match):
    x, y = _blobs(10)
    m = _mlp()
    kwargs = {}
    if case == "length":
        y = y[:9]
    elif case == "empty":
        x, y = x[:0], y[:0]
    elif case == "nan":
        x = x.copy()
        x[3, 1] = np.nan
    elif case == "inf_y":
        m = _mlp(metrics=(), loss="mse")
        y = np.zeros((10, 3), "float32")
        y[2, 0] = np.inf
    elif case == "batch0":
        kwargs["batch_size"] = 0
    elif case == "batchneg":
        kwargs["batch_size"] = -4
    elif case == "label_range":
        y = y.copy()
        y[4] = 7
    elif case == "label_kind":
        y = np.eye(3, dtype="float32")[y]
    elif case == "shape":
        x = np.zeros((10, 5), "float32")
    elif case == "accumulate":
        kwargs.update(batch_size=4, accumulate=8)
    with pytest.raises(ValueError, match=match):
        m.fit(x, y, verbose=0, callbacks=[NoStep()], **kwargs)


def test_channels_first_images_get_the_transpose_hint():
    x, y = _images(8)
    m = _cnn()
    with pytest.raises(ValueError, match=r"channels first.*x\.transpose\(0, 2, 3, 1\)"):
        m.fit(x.transpose(0, 3, 1, 2), y, verbose=0, callbacks=[NoStep()])
    with pytest.raises(ValueError, match=r"transpose\(0, 2, 3, 1\)"):
        m.predict(x.transpose(0, 3, 1, 2))


def test_uncompiled_model_and_missing_targets():
    x, y = _blobs(10)
    m = Sequential([Dense(3, input_shape=(2,))])
    with pytest.raises(RuntimeError, match="compile"):
        m.fit(x, y, verbose=0)
    with pytest.raises(RuntimeError, match="compile"):
        m.evaluate(x, y, verbose=0)
    assert m.predict(x).shape == (10, 3)  # predict needs no compile, as in Keras
    m.compile("sgd", "mse")
    with pytest.raises(ValueError, match="y"):
        m.fit(x, verbose=0)


def test_validation_split_out_of_range():
    x, y = _blobs(10)
    with pytest.raises(ValueError, match="validation_split"):
        _mlp().fit(x, y, validation_split=1.0, verbose=0)


# ----------------------------------------------------------------------------- precision and GPU


@pytest.mark.parametrize("mode", ["mixed-bf16", "mixed-fp16"])
def test_mixed_precision_on_cpu_trains(mode):
    torch.manual_seed(0)
    x, y = _blobs(200)
    with config.override(precision=mode):
        m = _mlp(lr=0.05)
        h = m.fit(x, y, epochs=4, batch_size=20, verbose=0)
        trainer = m._trainer
        assert trainer.scaler.is_enabled() is (mode == "mixed-fp16")
        assert next(m.module.parameters()).dtype == torch.float32  # parameters stay float32
        assert all(np.isfinite(h.history["loss"]))
        assert h.history["loss"][-1] < h.history["loss"][0]
        # fp16 steps with inf/nan gradients are skipped by the scaler, never applied
        assert 1 <= m.optimizer.iterations <= 40
        if mode == "mixed-fp16":
            assert m.training_state()["scaler"]["scale"] > 0


@pytest.mark.gpu
def test_fit_on_gpu_moves_arrays_once_and_uses_channels_last():
    x, y = _images(64)
    with config.override(device="cuda0"):
        m = _cnn()
        seen = []
        m.layers[0].register_forward_pre_hook(lambda mod, inp: seen.append(
            (inp[0].device.type, inp[0].is_contiguous(memory_format=torch.channels_last))))
        m.fit(x, y, epochs=1, batch_size=16, verbose=0)
        assert m.device.type == "cuda"
        assert set(seen) == {("cuda", True)}
        assert m.predict(x).shape == (64, 2)


@pytest.mark.gpu
def test_fit_on_gpu_mixed_fp16_and_dataloader():
    x, y = _blobs(64)
    ds = torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
    loader = torch.utils.data.DataLoader(ds, batch_size=16, pin_memory=True)
    with config.override(device="cuda0", precision="mixed-fp16"):
        m = _mlp()
        h = m.fit(loader, epochs=2, verbose=0)
        assert all(np.isfinite(h.history["loss"]))
        assert m._trainer.scaler.is_enabled()


def test_validation_sample_weights_and_weighted_batches_are_used_not_dropped():
    x, y = _blobs(20)
    m = _mlp(lr=0.0)
    w = np.r_[np.ones(10), np.zeros(10)].astype("float32")
    h = m.fit(x, y, verbose=0, validation_data=(x, y, w), batch_size=20)
    weighted = m.evaluate(x, y, sample_weight=w, verbose=0)[0]
    assert h.history["val_loss"][0] == pytest.approx(weighted, rel=1e-6)
    h = m.fit([(x, y, w)], verbose=0)
    assert h.history["loss"][0] == pytest.approx(m.evaluate(x, y, sample_weight=w, verbose=0)[0], rel=1e-6)


def test_gradients_are_released_before_the_next_backward_and_after_fit():
    # the previous step's gradients live until the next backward (allocator reuse), none after fit
    torch.manual_seed(0)
    x, y = _blobs()
    m = _mlp()
    m.fit(x, y, epochs=1, batch_size=20, verbose=0)
    assert all(p.grad is None for p in m.module.parameters())
    trainer = m._trainer
    seen = []
    first = next(m.module.parameters())
    first.register_hook(lambda g: seen.append(first.grad is None))  # runs during the backward
    xb, yb = torch.as_tensor(x[:20]), torch.as_tensor(y[:20])
    trainer.train_step(xb, yb)
    assert first.grad is not None and trainer._stale_grads  # kept after the step...
    trainer.train_step(xb, yb)
    assert seen == [True, True]  # ...and released before each backward, never accumulated into


# ----------------------------------------------------------------------------- default callbacks, logs


def test_a_users_progbar_and_history_replace_the_default_ones(tmp_path):
    import io

    from arignote.callbacks import CSVLogger, History, ProgbarLogger

    x, y = _blobs(60)
    out = io.StringIO()
    mine, csv = History(), tmp_path / "log.csv"
    m = _mlp()
    h = m.fit(x, y, epochs=2, batch_size=20, verbose=2,
              callbacks=[ProgbarLogger(verbose=2, stream=out), mine, CSVLogger(str(csv))])
    assert h is mine and m.history is mine  # fit returns the user's History, and adds none
    assert out.getvalue().count("Epoch 1/2") == 1  # one progress logger: the user's
    assert out.getvalue().count(" - cpu peak RSS ") == 2  # device figures still in the progress line
    assert set(h.history) == {"loss", "accuracy"}  # History and CSV: Keras keys only
    assert csv.read_text().splitlines()[0].split(",") == ["epoch", "accuracy", "loss"]


def test_an_opt_in_device_stats_monitor_puts_the_figures_in_the_logs():
    from arignote.callbacks import DeviceStatsMonitor

    x, y = _blobs(60)
    m = _mlp()
    h = m.fit(x, y, epochs=2, batch_size=20, verbose=0, callbacks=[DeviceStatsMonitor()])
    extra = set(h.history) - {"loss", "accuracy"}
    assert len(extra) == 1 and extra <= {"cpu_peak_rss_mib", "cpu_process_peak_rss_mib"}
    assert m.device_stats.keys() == extra


def test_no_host_sync_per_batch_when_nobody_reads_batch_logs(monkeypatch):
    """Count every way a tensor's value reaches the host during fit: the count must not grow with
    the number of batches (10 vs 40 batches an epoch)."""
    counts = []
    for batches in (10, 40):
        calls = [0]
        for name in ("item", "tolist", "__bool__", "__float__", "__int__", "cpu", "numpy"):
            real = getattr(torch.Tensor, name)

            def counted(self, *a, _real=real, _calls=calls, **k):
                _calls[0] += 1
                return _real(self, *a, **k)
            monkeypatch.setattr(torch.Tensor, name, counted)
        x, y = _blobs(batches * 10)
        m = _mlp()
        with config.override(**{"share.status": False}):  # its record reads the logs every 2 s
            m.fit(x, y, epochs=2, batch_size=10, verbose=0)
        monkeypatch.undo()
        counts.append(calls[0])
    assert counts[0] == counts[1], counts


def test_stop_in_a_batch_marks_the_epoch_interrupted_and_does_not_count_it():
    seen = []

    class StopAt(Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 1 and len(seen) == 1:
                self.model.stop_training = True

        def on_epoch_end(self, epoch, logs=None):
            seen.append((epoch, self.model.epoch_interrupted, self.model.epochs_done, "val_loss" in logs))

    x, y = _blobs(100)
    m = _mlp()
    h = m.fit(x, y, epochs=4, batch_size=10, verbose=0, validation_split=0.2, callbacks=[StopAt()])
    # epoch 0 complete (validated, counted); epoch 1 cut after batch 1: interrupted, not validated
    assert seen == [(0, False, 1, True), (1, True, 1, False)]
    assert h.epoch == [0, 1] and m.epochs_done == 1


def test_a_model_with_nothing_to_train_fits_as_a_no_op_and_reports_its_loss():
    """Keras 2.3.1 (checked with it): ``model.trainable = False`` then compile and fit trains
    nothing and logs the loss of the unchanged weights, epoch after epoch; so does train_on_batch."""
    from arignote.layers import Dense
    from arignote.models import Sequential

    x, y = np.ones((8, 3), "float32"), np.ones((8, 2), "float32")
    model = Sequential([Dense(2, input_shape=(3,))])
    model.trainable = False
    model.compile("sgd", "mse", metrics=["mae"])
    before = model.get_weights()
    expected = float(np.mean((model.predict(x) - y) ** 2))
    history = model.fit(x, y, batch_size=4, epochs=2, verbose=0)
    assert history.history["loss"] == pytest.approx([expected, expected], rel=1e-6)
    assert float(model.train_on_batch(x[:4], y[:4])[0]) == pytest.approx(expected, rel=1e-6)
    assert all(np.array_equal(a, b) for a, b in zip(before, model.get_weights()))
