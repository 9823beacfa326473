"""Fault suite: hostile and truncated model files. Every way a file can be unusable is one
``CheckpointError`` naming the file and the reason, including files whose checksum verifies over
contents that do not make a model; classes come only from arignote's own lists."""

from __future__ import annotations

import json

import pytest
import torch

from arignote import checkpoint, optimizers
from arignote.checkpoint import CheckpointError
from arignote.layers import Dense
from arignote.models import Sequential, load_model


@pytest.fixture
def saved(tmp_path):
    model = Sequential([Dense(4, activation="relu", input_shape=(3,)), Dense(2)])
    model.compile(optimizer="adam", loss="mse")
    model.fit(torch.ones(8, 3).numpy(), torch.zeros(8, 2).numpy(), epochs=1, verbose=0)
    path = tmp_path / "model.ckpt"  # arignote's format (a .h5 name gives Keras 2 HDF5)
    model.save(str(path))
    return path, checkpoint.load(path)


def _rewrite(path, obj, **changes):
    obj = dict(obj, **changes)
    checkpoint.save(path, obj)  # a valid checksum over hostile contents
    return path


@pytest.mark.parametrize("changes,reason", [
    ({"config": "{not json"}, "its model config is not valid JSON (JSONDecodeError"),
    ({"config": json.dumps({"layers": [{"class_name": "os.system", "config": {}}]})},
     "its model config does not rebuild a model (ValueError: unknown layer class 'os.system'"),
    ({"config": json.dumps({"layers": [{"class_name": "Dense", "config": {"units": "many"}}]})},
     "its model config does not rebuild a model"),
    ({"config": json.dumps({"nothing": 1})}, "its model config does not rebuild a model (KeyError"),
    ({"compile": json.dumps({"loss": "mse", "optimizer": {"class_name": "Optimizer", "config": {}}})},
     "its compile settings (loss, metrics, optimizer) are unusable"),
    ({"compile": json.dumps({"loss": "mse", "optimizer": {"class_name": "__class__", "config": {}}})},
     "unknown optimizer class"),
    ({"compile": json.dumps({"loss": "mse", "optimizer": "SGD_but_not"})}, "unknown optimizer 'SGD_but_not'"),
    ({"compile": json.dumps({"loss": "no_such_loss", "optimizer": "sgd"})}, "its compile settings"),
    ({"compile": "[1, 2"}, "its compile settings are not a JSON object"),
    ({"compile": "[1, 2]"}, "its compile settings are not a JSON object"),
    ({"optimizer": {"torch": {"state": {}, "param_groups": []}, "iterations": 1, "lr": 0.1}},
     "its optimizer state does not fit the model"),
    ({"weights": {"layers.0.weight": torch.ones(1)}}, "its weights do not fit the architecture"),
    ({"weights": [1, 2]}, "its weights are not a state dict"),
    ({"epochs_done": "three"}, "epochs_done='three'"),
    ({"class_name": "builtins.eval"}, "unknown model class 'builtins.eval'"),
])
def test_valid_checksum_bad_contents_is_a_checkpoint_error(saved, changes, reason):
    path, obj = saved
    _rewrite(path, obj, **changes)
    with pytest.raises(CheckpointError) as info:
        load_model(str(path))
    assert str(info.value).startswith(str(path)), info.value
    assert reason in str(info.value), info.value


def test_optimizer_names_are_looked_up_only_in_the_allow_list(saved, monkeypatch):
    # a name that exists on the module (a helper, an imported module) is not a class it may build
    path, obj = saved
    for name in ("get", "torch", "difflib", "Optimizer"):
        assert hasattr(optimizers, name)
        spec = {"loss": "mse", "optimizer": {"class_name": name, "config": {}}}
        _rewrite(path, obj, compile=json.dumps(spec))
        with pytest.raises(CheckpointError, match="unknown optimizer class"):
            load_model(str(path))


def test_compile_false_skips_bad_compile_settings(saved):
    path, obj = saved
    _rewrite(path, obj, compile=json.dumps({"loss": "mse", "optimizer": "nope"}))
    model = load_model(str(path), compile=False)
    assert model.get_weights()[0].shape == (3, 4)


@pytest.mark.parametrize("damage", ["truncated", "zeroed middle", "empty", "directory", "foreign torch file"])
def test_damaged_files_are_checkpoint_errors_naming_the_file(saved, damage):
    path, _ = saved
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "zeroed middle":
        path.write_bytes(data[:200] + bytes(len(data) - 400) + data[-200:])
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "directory":
        path.unlink()
        path.mkdir()
    else:
        torch.save({"state_dict": {}}, path)
    with pytest.raises(CheckpointError, match=str(path)):
        load_model(str(path))
    model = Sequential([Dense(4, activation="relu", input_shape=(3,)), Dense(2)])
    with pytest.raises(CheckpointError, match=str(path)):
        model.load_weights(str(path))


def test_weights_of_another_architecture_are_a_checkpoint_error(saved):
    path, _ = saved
    other = Sequential([Dense(5, input_shape=(3,)), Dense(2)])
    with pytest.raises(CheckpointError, match=r"weight 'layers.0.weight' has shape \(4, 3\)"):
        other.load_weights(str(path))
    other = Sequential([Dense(4, input_shape=(3,))])
    with pytest.raises(CheckpointError, match="does not match this model's architecture"):
        other.load_weights(str(path))


@pytest.fixture
def saved_h5(tmp_path):
    model = Sequential([Dense(4, activation="relu", input_shape=(3,)), Dense(2)])
    model.compile(optimizer="adam", loss="mse")
    model.fit(torch.ones(8, 3).numpy(), torch.zeros(8, 2).numpy(), epochs=1, verbose=0)
    path = tmp_path / "model.h5"  # Keras 2 HDF5
    model.save(str(path))
    return path


def _h5_attr(path, name, value):
    import h5py

    with h5py.File(path, "r+") as f:
        f.attrs[name] = value


@pytest.mark.parametrize("damage,reason", [
    ("truncated", "truncated or corrupt"),
    ("zeroed", "unusable Keras HDF5 file"),
    ("bad model_config", "unusable Keras HDF5 file (JSONDecodeError"),
    ("hostile optimizer", "unknown optimizer class"),
    ("hostile layer", "unknown layer class 'os.system'"),
])
def test_damaged_or_hostile_hdf5_files_are_checkpoint_errors(saved_h5, damage, reason):
    path = saved_h5
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "zeroed":
        path.write_bytes(data[:1000] + bytes(len(data) - 1000))
    elif damage == "bad model_config":
        _h5_attr(path, "model_config", "{bad json")
    elif damage == "hostile optimizer":
        _h5_attr(path, "training_config", json.dumps(
            {"optimizer_config": {"class_name": "get", "config": {}}, "loss": "mse"}))
    else:
        import h5py

        with h5py.File(path, "r") as f:
            config = json.loads(f.attrs["model_config"])
        config["config"]["layers"][0]["class_name"] = "os.system"
        _h5_attr(path, "model_config", json.dumps(config))
    with pytest.raises(CheckpointError) as info:
        load_model(str(path))
    assert str(info.value).startswith(str(path)) and reason in str(info.value), info.value
