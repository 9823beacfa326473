"""arignote.utils as Keras 2: normalize, custom objects, print_summary, plot_model, HDF5Matrix and
multi_gpu_model."""

from __future__ import annotations

import importlib
import shutil
import types

import numpy as np
import pytest
import torch

from arignote import config, parallel, utils
from arignote.devices import inventory as inv_mod
from arignote.devices.inventory import GPUInfo, Inventory
from arignote.layers import Dense, Layer
from arignote.layers.base import deserialize
from arignote.models import Sequential
from arignote.runtime import setup as setup_mod


@pytest.fixture(autouse=True)
def cpu():
    with config.override(device="cpu", print_active_device=False):
        yield


def _mlp():
    torch.manual_seed(0)
    return Sequential([Dense(4, input_shape=(3,), name="hidden"), Dense(1, name="out")])


# --------------------------------------------------------------------------------- np_utils, generic


def test_normalize_axis_order_and_zero_rows():
    x = np.array([[3.0, 4.0], [0.0, 0.0]])
    np.testing.assert_allclose(utils.normalize(x), [[0.6, 0.8], [0.0, 0.0]])
    np.testing.assert_allclose(utils.normalize(x, order=1), [[3 / 7, 4 / 7], [0.0, 0.0]])
    np.testing.assert_allclose(utils.normalize(x, axis=0), [[1.0, 1.0], [0.0, 0.0]])
    assert utils.normalize([1.0, 1.0]).shape == (1, 2)  # Keras 2 returns a 1-D input as one row


class Twice(Layer):
    def call(self, x):
        return 2 * x


def test_custom_objects_registry_and_scope_reach_deserialize():
    spec = {"class_name": "Twice", "config": {"name": "t"}}
    with pytest.raises(ValueError, match="unknown layer class 'Twice'"):
        deserialize(spec)
    with utils.CustomObjectScope({"Twice": Twice}, {"other": len}):
        assert isinstance(deserialize(spec), Twice) and utils.get_custom_objects()["other"] is len
    assert "Twice" not in utils.get_custom_objects()
    utils.get_custom_objects()["Twice"] = Twice
    try:
        with utils.custom_object_scope({"Twice": Dense}):
            assert utils.get_custom_objects()["Twice"] is Dense
        assert utils.get_custom_objects()["Twice"] is Twice  # restored, not deleted
        assert isinstance(deserialize(spec), Twice)
    finally:
        utils.get_custom_objects().pop("Twice")
    with pytest.raises(TypeError, match="dicts of name -> object"):
        utils.CustomObjectScope(["Twice"])


def test_print_summary_passes_keras_arguments():
    lines = []
    utils.print_summary(_mlp(), print_fn=lines.append)
    text = "\n".join(lines)
    assert "hidden (Dense)" in text and "(None, 4)" in text and "Total params: 21" in text
    with pytest.raises(ValueError, match="print_summary takes a model"):
        utils.print_summary(object())


# --------------------------------------------------------------------------------- plot_model


def test_plot_model_writes_graph_source_with_shapes(tmp_path):
    pytest.importorskip("pydot")
    out = tmp_path / "model.dot"
    assert utils.plot_model(_mlp(), to_file=str(out), show_shapes=True, rankdir="LR") is None
    text = out.read_text()
    assert "rankdir=LR" in text and "hidden: Dense" in text and "{{(None, 3)}|{(None, 4)}}" in text
    assert "{{(None, 4)}|{(None, 1)}}" in text and text.count("->") == 1
    dot = utils.model_to_dot(_mlp(), show_layer_names=False)
    labels = [n.get_label().strip('"') for n in dot.get_nodes() if n.get_name() not in ("node", "edge")]
    assert labels == ["Dense", "Dense"]
    with pytest.raises(ValueError, match="rankdir='XY'"):
        utils.model_to_dot(_mlp(), rankdir="XY")


def test_plot_model_follows_keras_inbound_nodes():
    pytest.importorskip("pydot")

    def layer(name, *sources):
        node = types.SimpleNamespace(inbound_layers=list(sources))
        return types.SimpleNamespace(name=name, _inbound_nodes=[node] if sources else [])

    a = layer("input_1")
    b, c = layer("left", a), layer("right", a)
    d = layer("concat", b, c)
    model = types.SimpleNamespace(name="m", layers=[a, b, c, d])
    edges = {(e.get_source(), e.get_destination()) for e in utils.model_to_dot(model).get_edges()}
    ids = {x.name: str(id(x)) for x in (a, b, c, d)}
    assert edges == {(ids["input_1"], ids["left"]), (ids["input_1"], ids["right"]),
                     (ids["left"], ids["concat"]), (ids["right"], ids["concat"])}


def test_plot_model_says_what_is_missing(tmp_path, monkeypatch):
    pytest.importorskip("pydot")
    if shutil.which("dot") is None:
        with pytest.raises(OSError, match="Graphviz's `dot` program was not found.*to_file='model.dot'"):
            utils.plot_model(_mlp(), to_file=str(tmp_path / "m.png"))
    real = importlib.import_module

    def no_pydot(name, *a, **k):
        if name == "pydot":
            raise ImportError("no pydot")
        return real(name, *a, **k)

    monkeypatch.setattr(importlib, "import_module", no_pydot)
    with pytest.raises(ImportError, match="pip install pydot .*Graphviz"):
        utils.plot_model(_mlp(), to_file=str(tmp_path / "m.dot"))


# --------------------------------------------------------------------------------- HDF5Matrix


@pytest.fixture
def h5file(tmp_path):
    h5py = pytest.importorskip("h5py")
    path = str(tmp_path / "data.h5")
    x = np.arange(40, dtype="float32").reshape(20, 2)
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=x)
        f.create_dataset("y", data=(x.sum(axis=1, keepdims=True) > 20).astype("float32"))
    yield path, x
    for handle in utils.HDF5Matrix.refs.values():
        handle.close()
    utils.HDF5Matrix.refs.clear()


def test_hdf5matrix_indexing_offsets_and_normalizer(h5file):
    path, x = h5file
    m = utils.HDF5Matrix(path, "x", start=5, end=15, normalizer=lambda a: a * 10)
    assert len(m) == 10 and m.shape == (10, 2) and m.dtype == np.float32 and m.ndim == 2 and m.size == 20
    np.testing.assert_array_equal(m[0], x[5] * 10)
    np.testing.assert_array_equal(m[-1], x[14] * 10)
    np.testing.assert_array_equal(m[2:4], x[7:9] * 10)
    np.testing.assert_array_equal(m[:], x[5:15] * 10)
    np.testing.assert_array_equal(m[[3, 0, 3]], x[[8, 5, 8]] * 10)  # any order, repeats
    np.testing.assert_array_equal(m[np.array([9, 1])], x[[14, 6]] * 10)
    np.testing.assert_array_equal(np.asarray(m), x[5:15] * 10)
    with pytest.raises(IndexError, match="out of range for 10 rows"):
        m[10]
    with pytest.raises(IndexError, match="must be in \\[0, 10\\)"):
        m[[2, 11]]
    with pytest.raises(KeyError, match="has no dataset 'z' \\(it has: x, y\\)"):
        utils.HDF5Matrix(path, "z")
    with pytest.raises(ValueError, match="end=99"):
        utils.HDF5Matrix(path, "x", end=99)


def test_fit_and_predict_take_hdf5matrix(h5file):
    path, x = h5file
    model = Sequential([Dense(1, activation="sigmoid", input_shape=(2,))])
    model.compile("sgd", "binary_crossentropy")
    xm, ym = utils.HDF5Matrix(path, "x", end=16), utils.HDF5Matrix(path, "y", end=16)
    history = model.fit(xm, ym, batch_size=4, epochs=1, verbose=0)
    assert len(history.history["loss"]) == 1
    np.testing.assert_allclose(model.predict(utils.HDF5Matrix(path, "x", start=16)), model.predict(x[16:]),
                               rtol=1e-6)


# --------------------------------------------------------------------------------- multi_gpu_model

MiB = 1 << 20


def _gpus(n):
    return Inventory(gpus=tuple(GPUInfo(i, "NVIDIA A100", f"0000:0{i}:00.0", 81559 * MiB, 81000 * MiB, (8, 0),
                                        f"uuid-{i}") for i in range(n)),
                     cpu_name="EPYC", cpu_threads=8, cuda_reason=None)


@pytest.fixture
def fake_gpus(monkeypatch):
    def install(n):
        inv = _gpus(n)
        monkeypatch.setattr(inv_mod, "current_inventory", lambda refresh=False: inv)
        monkeypatch.setattr(setup_mod, "current_inventory", lambda refresh=False: inv)
    return install


def test_multi_gpu_model_without_the_gpus_is_a_keras_value_error():
    with pytest.raises(ValueError, match="gpus=4.*\\['cuda0', 'cuda1', 'cuda2', 'cuda3'\\].*Try reducing"):
        utils.multi_gpu_model(_mlp(), gpus=4)
    with pytest.raises(ValueError, match="with `gpus >= 2`. Received: `gpus=1`"):
        utils.multi_gpu_model(_mlp(), gpus=1)
    with pytest.raises(ValueError, match="`len\\(gpus\\) >= 2`"):
        utils.multi_gpu_model(_mlp(), gpus=[0])
    with pytest.raises(ValueError, match="cpu_merge='yes' must be True or False"):
        utils.multi_gpu_model(_mlp(), gpus=2, cpu_merge="yes")


def test_multi_gpu_model_sets_up_the_same_strategy_as_the_device_flag(fake_gpus, monkeypatch, capsys):
    fake_gpus(4)
    asked = []

    class Stop(Exception):
        pass

    def capture(devices):
        asked.append([str(d) for d in devices])
        raise Stop

    monkeypatch.setattr(parallel, "strategy_for", capture)
    x, y = np.zeros((8, 3), "float32"), np.zeros((8, 1), "float32")
    with config.override(device="cuda0,cuda1,cuda2,cuda3"):
        flagged = _mlp()
        flagged.compile("sgd", "mse")
        with pytest.raises(Stop):
            flagged.fit(x, y, verbose=0)
    model = _mlp()
    parallel_model = utils.multi_gpu_model(model, gpus=4)
    assert parallel_model is model and model.device_spec == "cuda0,cuda1,cuda2,cuda3"
    parallel_model.compile("sgd", "mse")
    with pytest.raises(Stop):
        parallel_model.fit(x, y, batch_size=8, verbose=0)
    assert asked == [["cuda:0", "cuda:1", "cuda:2", "cuda:3"]] * 2
    assert config.get("device") == "cpu"  # the global flag is untouched
    err = capsys.readouterr().err
    assert err.count("multi_gpu_model: fit runs data parallel on cuda0, cuda1, cuda2, cuda3") == 1
    utils.multi_gpu_model(_mlp(), gpus=4)
    assert "multi_gpu_model" not in capsys.readouterr().err  # said once
    assert utils.multi_gpu_model(_mlp(), gpus=[1, 3]).device_spec == "cuda1,cuda3"
    assert utils.multi_gpu_model(_mlp()).device_spec == "cuda0,cuda1,cuda2,cuda3"  # None: every GPU
    with pytest.raises(ValueError, match="\\['cuda4', 'cuda5'\\]"):
        utils.multi_gpu_model(_mlp(), gpus=[4, 5])


def test_multi_gpu_model_after_training_on_one_device_is_refused(fake_gpus):
    model = _mlp()
    model.compile("sgd", "mse")
    model.fit(np.zeros((4, 3), "float32"), np.zeros((4, 1), "float32"), verbose=0)
    fake_gpus(2)
    with pytest.raises(ValueError, match="call multi_gpu_model before the first fit"):
        utils.multi_gpu_model(model, gpus=2)


# --------------------------------------------------------------------------------- Progbar


def test_progbar_means_stateful_metrics_and_verbosity():
    import io

    out = io.StringIO()
    bar = utils.Progbar(10, verbose=1, interval=0, stateful_metrics=["lr"], stream=out)
    bar.update(4, [("loss", 1.0), ("lr", 0.1)])
    bar.add(6, [("loss", 2.0), ("lr", 0.05)])
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].startswith(" 4/10 [===========>") and "ETA:" in lines[0]
    assert lines[1].startswith("10/10 [==============================] - ")
    assert lines[1].endswith(" - loss: 1.6000 - lr: 0.0500")  # (1*4 + 2*6) / 10; lr as given
    quiet = io.StringIO()
    utils.Progbar(3, verbose=2, stream=quiet).update(2, [("acc", 0.5)])
    assert quiet.getvalue() == ""  # verbose=2 prints once, at the target
    unknown = io.StringIO()
    utils.Progbar(None, interval=0, stream=unknown).update(5)
    assert unknown.getvalue().startswith("      5/Unknown")
    assert utils.generic_utils.Progbar is utils.Progbar
