"""Keras 2.3's remaining callbacks (LambdaCallback, RemoteMonitor, BaseLogger, argument audit) and the
metric names of both Keras eras (acc / accuracy, mean_absolute_error / mae) in History, logs, CSV and
every monitoring callback."""

from __future__ import annotations

import csv
import http.server
import inspect
import io
import json
import threading
import urllib.parse
import warnings

import numpy as np
import pytest
import torch

from arignote import callbacks as C
from arignote import config, metrics
from arignote.callbacks.progbar import is_device_stat
from arignote.datasets import synthetic
from arignote.layers import Dense
from arignote.metrics.names import Logs, legacy_name, spellings
from arignote.models import Sequential


@pytest.fixture(autouse=True)
def cpu():
    with config.override(device="cpu", print_active_device=False):
        yield


def _data():
    x, y = synthetic(shape=(6,), classes=2, samples=64, seed=3)
    return x, np.eye(2, dtype=np.float32)[y]


def _metric_keys(history):
    return sorted(k for k in history if not is_device_stat(k))  # DeviceStatsMonitor adds cpu_* stats


def _model(metric_list=("accuracy", "mae")):
    torch.manual_seed(0)
    model = Sequential([Dense(8, activation="relu", input_shape=(6,)), Dense(2, activation="softmax")])
    model.compile("sgd", "categorical_crossentropy", metrics=list(metric_list))
    return model


# ---------------------------------------------------------------------------------------- the names


def test_logs_answer_every_spelling_but_show_one():
    logs = Logs({"loss": 1.0, "accuracy": 0.5, "val_accuracy": 0.25, "out_1_mae": 3.0})
    assert logs["acc"] == 0.5 and logs["val_acc"] == 0.25 and logs["out_1_mean_absolute_error"] == 3.0
    assert "val_acc" in logs and logs.get("acc") == 0.5 and logs.get("val_mse", 7) == 7
    assert list(logs) == ["loss", "accuracy", "val_accuracy", "out_1_mae"]
    assert json.dumps(logs) == json.dumps(dict(logs)) and repr(logs).startswith("{'loss'")
    with pytest.raises(KeyError, match="val_mse"):
        logs["val_mse"]
    assert spellings("val_mean_squared_error") == ["val_mse"] and spellings("loss") == []
    assert [legacy_name(n) for n in ("accuracy", "acc", "mae", "mse", "binary_accuracy")] == [
        "acc", "acc", "mean_absolute_error", "mean_squared_error", "binary_accuracy"]


def test_metric_names_flag_picks_the_logged_spelling():
    assert metrics.get("accuracy").name == "accuracy" and metrics.get("mae").name == "mae"
    with config.override(metrics_names="2.2"):
        assert metrics.get("accuracy").name == "acc" and metrics.get("mae").name == "mean_absolute_error"
        assert metrics.get("binary_accuracy").name == "binary_accuracy"
    assert config.FLAGS["metrics.names"].default == "2.3"


def test_history_of_a_23_run_answers_the_22_names():
    x, y = _data()
    model = _model()
    history = model.fit(x, y, batch_size=16, epochs=2, verbose=0, validation_split=0.25)
    h = history.history
    assert _metric_keys(h) == ["accuracy", "loss", "mae", "val_accuracy", "val_loss", "val_mae"]
    assert h["acc"] == h["accuracy"] and h["val_acc"] == h["val_accuracy"] and len(h["acc"]) == 2
    assert h["mean_absolute_error"] == h["mae"] and h["val_mean_absolute_error"] == h["val_mae"]
    assert model.metrics_names == ["loss", "accuracy", "mae"]


def test_a_22_run_prints_and_stores_the_22_names(capsys):
    x, y = _data()
    with config.override(metrics_names="2.2"):
        model = _model()
        history = model.fit(x, y, batch_size=16, epochs=1, verbose=2, validation_split=0.25)
    out = capsys.readouterr().out
    assert " acc: " in out and " mean_absolute_error: " in out and "val_acc: " in out
    assert "accuracy" not in out and " mae:" not in out
    assert _metric_keys(history.history) == ["acc", "loss", "mean_absolute_error", "val_acc", "val_loss",
                                       "val_mean_absolute_error"]
    assert history.history["val_accuracy"] == history.history["val_acc"]  # the 2.3 name still answers
    assert model.metrics_names == ["loss", "acc", "mean_absolute_error"]


@pytest.mark.parametrize("names,monitor", [("2.3", "val_acc"), ("2.2", "val_accuracy"),
                                           ("2.3", "val_mean_absolute_error")])
def test_monitor_in_either_spelling_works_in_every_callback(tmp_path, names, monitor):
    x, y = _data()
    seen_epoch, seen_batch = [], []
    with config.override(metrics_names=names):
        model = _model()
        cbs = [
            C.EarlyStopping(monitor=monitor, patience=5),
            C.ModelCheckpoint(str(tmp_path / ("w-{epoch:02d}-{" + monitor + ":.3f}.pt")), monitor=monitor,
                              save_best_only=True, save_weights_only=True),
            C.ReduceLROnPlateau(monitor=monitor, patience=5),
            C.CSVLogger(str(tmp_path / "log.csv")),
            C.LambdaCallback(on_epoch_end=lambda e, logs: seen_epoch.append(logs[monitor]),
                             on_batch_end=lambda b, logs: seen_batch.append(logs[monitor[4:]])),
        ]
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a monitor that is not found would warn
            history = model.fit(x, y, batch_size=16, epochs=2, verbose=0, validation_split=0.25,
                                callbacks=cbs)
    values = history.history[monitor]
    assert seen_epoch == values and len(seen_batch) == 2 * 3
    assert cbs[0].best == pytest.approx(max(values) if "acc" in monitor else min(values))
    assert cbs[1].best == cbs[0].best
    saved = sorted(p.name for p in tmp_path.glob("w-*.pt"))
    assert saved and saved[0] == f"w-01-{values[0]:.3f}.pt"
    with open(tmp_path / "log.csv") as fh:
        header = next(csv.reader(fh))
    stored = [k for k in history.history]
    assert header == ["epoch", *sorted(stored)]  # the CSV has the stored spelling only


# ---------------------------------------------------------------------------------------- LambdaCallback


def test_lambda_callback_hooks_run_with_keras_positional_arguments():
    x, y = _data()
    calls = []
    cb = C.LambdaCallback(
        on_train_begin=lambda logs: calls.append("train_begin"),
        on_epoch_begin=lambda epoch, logs: calls.append(("epoch_begin", epoch)),
        on_batch_begin=lambda batch, logs: calls.append(("batch_begin", batch)),
        on_batch_end=lambda batch, logs: calls.append(("batch_end", batch, logs["size"])),
        on_epoch_end=lambda epoch, logs: calls.append(("epoch_end", epoch, round(logs["loss"], 6))),
        on_train_end=lambda logs: calls.append("train_end"),
        on_test_end=lambda logs: calls.append("test_end"))
    history = _model().fit(x, y, batch_size=32, epochs=2, verbose=0, validation_split=0.5, callbacks=[cb])
    epoch0 = ["train_begin", ("epoch_begin", 0), ("batch_begin", 0), ("batch_end", 0, 32), "test_end",
              ("epoch_end", 0, round(history.history["loss"][0], 6))]
    assert calls[:6] == epoch0 and calls[-1] == "train_end" and len(calls) == 12


def test_lambda_callback_without_batch_hooks_adds_no_batch_listeners():
    cbl = C.CallbackList([C.LambdaCallback(on_epoch_end=lambda e, logs: None)])
    assert not cbl.has_batch_hooks("train") and not cbl.has_batch_hooks("test")
    assert C.CallbackList([C.LambdaCallback(on_batch_end=lambda b, logs: None)]).has_batch_hooks("train")
    with pytest.raises(TypeError, match="on_epoch_finish are not callback hooks"):
        C.LambdaCallback(on_epoch_finish=print)
    with pytest.raises(TypeError, match="on_epoch_end must be a function"):
        C.LambdaCallback(on_epoch_end=3)


# ---------------------------------------------------------------------------------------- RemoteMonitor


class _Recorder(http.server.BaseHTTPRequestHandler):
    received: list = []

    def do_POST(self):  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append((self.path, self.headers.get("Content-Type"), self.headers.get("X-Run"),
                                    body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    _Recorder.received = []
    srv = http.server.HTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}", _Recorder.received
    srv.shutdown()
    srv.server_close()


def test_remote_monitor_posts_form_and_json(server):
    pytest.importorskip("requests")
    root, received = server
    x, y = _data()
    form = C.RemoteMonitor(root=root, headers={"X-Run": "r1"})
    as_json = C.RemoteMonitor(root=root, path="/json/", send_as_json=True)
    history = _model().fit(x, y, batch_size=32, epochs=2, verbose=0, callbacks=[form, as_json])
    assert len(received) == 4
    path, ctype, run, body = received[0]
    assert path == "/publish/epoch/end/" and ctype == "application/x-www-form-urlencoded" and run == "r1"
    sent = json.loads(urllib.parse.parse_qs(body.decode())["data"][0])
    assert sent["epoch"] == 0 and sent["loss"] == pytest.approx(history.history["loss"][0])
    path, ctype, _, body = received[1]
    assert path == "/json/" and ctype == "application/json" and json.loads(body)["accuracy"] == pytest.approx(
        history.history["accuracy"][0])
    assert C.RemoteMonitor().payload(3, {"a": np.float32(0.5), "b": np.array(2)}) == {"epoch": 3, "a": 0.5,
                                                                                        "b": 2}


def test_remote_monitor_warns_when_the_server_is_down_and_needs_requests(monkeypatch):
    pytest.importorskip("requests")
    cb = C.RemoteMonitor(root="http://127.0.0.1:9", timeout=2)  # port 9 (discard) is closed
    with pytest.warns(RuntimeWarning, match="could not reach http://127.0.0.1:9/publish/epoch/end/"):
        cb.on_epoch_end(0, {"loss": 1.0})
    import importlib

    real = importlib.import_module

    def no_requests(name, *a, **k):
        if name == "requests":
            raise ImportError("no requests")
        return real(name, *a, **k)

    monkeypatch.setattr(importlib, "import_module", no_requests)
    with pytest.raises(ImportError, match="pip install requests"):
        C.RemoteMonitor()


# ---------------------------------------------------------------------------------------- BaseLogger, audit


def test_base_logger_matches_the_loops_epoch_means():
    x, y = _data()
    base = C.BaseLogger()
    copy = {}
    history = _model().fit(x[:40], y[:40], batch_size=16, epochs=1, verbose=0,  # batches 16, 16, 8
                           callbacks=[base, C.LambdaCallback(on_epoch_end=lambda e, logs: copy.update(logs))])
    assert base.seen == 40
    assert copy["loss"] == pytest.approx(history.history["loss"][0], rel=1e-5)
    assert copy["accuracy"] == pytest.approx(history.history["accuracy"][0], rel=1e-6)
    stateful = C.BaseLogger(stateful_metrics=["m"])
    stateful.set_params({"metrics": ["m"]})
    stateful.on_epoch_begin(0)
    stateful.on_batch_end(0, {"size": 4, "m": 1.0})
    stateful.on_batch_end(1, {"size": 4, "m": 3.0})
    logs = {}
    stateful.on_epoch_end(0, logs)
    assert logs == {"m": 3.0}


KERAS_23_ARGUMENTS = {
    "BaseLogger": ["stateful_metrics"],
    "TerminateOnNaN": [],
    "ProgbarLogger": ["count_mode", "stateful_metrics"],
    "History": [],
    "ModelCheckpoint": ["filepath", "monitor", "verbose", "save_best_only", "save_weights_only", "mode",
                        "period"],
    "EarlyStopping": ["monitor", "min_delta", "patience", "verbose", "mode", "baseline",
                      "restore_best_weights"],
    "RemoteMonitor": ["root", "path", "field", "headers", "send_as_json"],
    "LearningRateScheduler": ["schedule", "verbose"],
    "ReduceLROnPlateau": ["monitor", "factor", "patience", "verbose", "mode", "min_delta", "cooldown",
                          "min_lr"],
    "CSVLogger": ["filename", "separator", "append"],
    "LambdaCallback": ["on_epoch_begin", "on_epoch_end", "on_batch_begin", "on_batch_end", "on_train_begin",
                       "on_train_end"],
    "TensorBoard": ["log_dir", "histogram_freq", "batch_size", "write_graph", "write_grads", "write_images",
                    "embeddings_freq", "embeddings_layer_names", "embeddings_metadata", "embeddings_data",
                    "update_freq"],
}


@pytest.mark.parametrize("name", sorted(KERAS_23_ARGUMENTS))
def test_every_keras_23_callback_exists_with_its_positional_arguments(name):
    params = [p for p in inspect.signature(getattr(C, name).__init__).parameters.values()
              if p.name != "self" and p.kind is p.POSITIONAL_OR_KEYWORD]
    expected = KERAS_23_ARGUMENTS[name]
    assert [p.name for p in params][:len(expected)] == expected


def test_progbar_logger_takes_keras_positional_stateful_metrics():
    bar = C.ProgbarLogger("steps", ["m"], stream=io.StringIO())
    assert bar.count_mode == "steps" and bar.stateful_metrics == {"m"} and bar.verbose == 1


def test_tensorboard_embeddings_arguments_are_refused_by_name(tmp_path):
    pytest.importorskip("tensorboard")
    with pytest.raises(ValueError, match="embeddings_layer_names=\\['dense'\\] is not supported"):
        C.TensorBoard(log_dir=str(tmp_path), embeddings_layer_names=["dense"])
    with pytest.raises(ValueError, match="embeddings_data=array"):
        C.TensorBoard(log_dir=str(tmp_path), embeddings_data=np.zeros(2))


# ------------------------------------------------------------------ auto mode for AUC, Precision ...


@pytest.mark.parametrize("monitor", ["val_auc", "auc", "val_precision_1", "recall", "val_mean_io_u",
                                     "true_positives"])
def test_auto_mode_maximises_auc_precision_recall(monitor):
    """Keras 2.3.1's auto rule looks for 'acc' only, so it minimised val_auc (EarlyStopping stopped as
    AUC rose); arignote maximises the metric classes whose larger value is better, as Keras 3 does."""
    model = _model()
    stop = C.EarlyStopping(monitor=monitor, patience=0)
    stop.set_model(model)
    stop.on_train_begin()
    for epoch, value in enumerate([0.70, 0.80, 0.85]):  # improving every epoch
        stop.on_epoch_end(epoch, {monitor: value})
        assert not model.stop_training, (epoch, value)
    stop.on_epoch_end(3, {monitor: 0.60})  # worse
    assert model.stop_training and stop.stopped_epoch == 3


def test_auto_mode_still_minimises_losses_and_lookalike_names():
    from arignote.callbacks._monitor import maximizes

    assert not maximizes("val_loss", "auto") and not maximizes("val_aucx_loss", "auto")
    assert not maximizes("precision_loss", "auto") and maximizes("val_auc_2", "auto")
    assert maximizes("val_acc", "auto") and not maximizes("val_auc", "min")


def test_fit_calls_the_test_batch_hooks_during_validation_as_keras_2_3_1():
    """Keras 2.3.1's callbacks_test (test_callback_hooks_are_called_in_fit): 10 training and 4
    validation samples, batch_size=2, 5 epochs -> 25 train batches, 10 test batches."""
    from collections import Counter as Tally

    from arignote.callbacks import Callback
    from arignote.layers import Dense
    from arignote.models import Sequential

    class Counter(Callback):
        def __init__(self):
            super().__init__()
            self.calls = Tally()

        def on_test_batch_begin(self, batch, logs=None):
            self.calls["on_test_batch_begin", batch] += 1

        def on_test_batch_end(self, batch, logs=None):
            self.calls["on_test_batch_end"] += 1

        def on_train_batch_begin(self, batch, logs=None):
            self.calls["on_train_batch_begin"] += 1

        def on_test_begin(self, logs=None):
            self.calls["on_test_begin"] += 1

    rng = np.random.default_rng(0)
    model = Sequential([Dense(2, activation="softmax", input_shape=(3,))])
    model.compile("sgd", "categorical_crossentropy")
    counter = Counter()
    model.fit(rng.random((10, 3)), np.eye(2)[rng.integers(0, 2, 10)], batch_size=2, epochs=5, verbose=0,
              validation_data=(rng.random((4, 3)), np.eye(2)[rng.integers(0, 2, 4)]), callbacks=[counter])
    calls = counter.calls
    assert calls["on_train_batch_begin"] == 25 and calls["on_test_begin"] == 5
    assert calls["on_test_batch_begin", 0] == calls["on_test_batch_begin", 1] == 5  # 2 batches a run
    assert calls["on_test_batch_end"] == 10
