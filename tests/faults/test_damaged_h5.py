"""Fault suite: damaged Keras ``.h5`` model files (issue 30). Truncated files, flipped bytes, wrong
HDF5 types, huge declared shapes, weights read from outside the file (an external link, external
storage, a virtual dataset) and a ``model_config`` that is not JSON each end in one
``CheckpointError`` naming the file, within a second of CPU; nothing is allocated from a declared
shape before it is checked against the data the file holds (a 1 GiB dataset declared over no data
allocates nothing: tracemalloc sees numpy's allocations).

A flipped byte inside weight data (HDF5 keeps no checksum of it) can give a file that still loads,
with other weights, as it would in Keras: then the load returns a model; any other outcome than a
model or the named error fails.
"""

from __future__ import annotations

import json
import time
import tracemalloc

import h5py
import numpy as np
import pytest
from fault_helpers import points

from arignote.checkpoint import CheckpointError
from arignote.layers import Dense
from arignote.models import Sequential, load_model

SECOND = 1.0  # CPU seconds a damaged file may take to be refused
MIB = 1 << 20


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """A compiled, trained two-layer model saved as Keras 2 HDF5 (with optimizer weights)."""
    model = Sequential([Dense(4, activation="relu", input_shape=(3,), name="d1"), Dense(2, name="d2")])
    model.compile(optimizer="adam", loss="mse")
    model.fit(np.ones((8, 3), "float32"), np.zeros((8, 2), "float32"), epochs=1, verbose=0)
    path = tmp_path_factory.mktemp("good") / "model.h5"
    model.save(str(path))
    return path.read_bytes()


def _refused(path, allow_model=False):
    """Load ``path``: the named error (or, if allowed, a model), fast and without big allocations."""
    tracemalloc.start()
    started = time.process_time()
    try:
        load_model(str(path))
    except CheckpointError as err:
        assert str(path) in str(err), err
        outcome = "error"
    else:
        assert allow_model, f"{path} loaded"
        outcome = "model"
    finally:
        spent = time.process_time() - started
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert spent < SECOND, f"{spent:.2f} s of CPU to refuse {path}"
    assert peak < 64 * MIB, f"{peak / MIB:.0f} MiB allocated while loading {path}"
    return outcome


@pytest.mark.parametrize("fraction", points([0.05, 0.5, 0.97], [0.0, 0.01, 0.2, 0.3, 0.7, 0.8, 0.9, 0.99]))
def test_a_truncated_file_is_named(good, tmp_path, fraction):
    path = tmp_path / "cut.h5"
    path.write_bytes(good[: int(len(good) * fraction)])
    assert _refused(path) == "error"


@pytest.mark.parametrize("seed", points([0, 1], list(range(2, 12))))
def test_flipped_bytes_give_the_named_error_or_a_model(good, tmp_path, seed):
    rng = np.random.default_rng(seed)
    outcomes = set()
    for i, offset in enumerate(rng.choice(len(good), size=12, replace=False)):
        data = bytearray(good)
        data[offset] ^= 0xFF
        path = tmp_path / f"flip{i}.h5"
        path.write_bytes(bytes(data))
        outcomes.add(_refused(path, allow_model=True))
    assert outcomes <= {"error", "model"}


def _rewrite(good, tmp_path, change):
    path = tmp_path / "bad.h5"
    path.write_bytes(good)
    with h5py.File(path, "r+") as f:
        change(f)
    return path


def _replace(group, name, **dataset):
    del group[name]
    group.create_dataset(name, **dataset)


WRONG_TYPES = {
    "kernel is text": lambda f: _replace(f["model_weights/d1/d1"], "kernel:0", data=np.array([b"abc"] * 12)),
    "kernel is a group": lambda f: (f["model_weights/d1/d1"].__delitem__("kernel:0"),
                                    f["model_weights/d1/d1"].create_group("kernel:0")),
    "kernel is a compound": lambda f: _replace(f["model_weights/d1/d1"], "kernel:0",
                                               data=np.zeros((3, 4), dtype=[("a", "f4"), ("b", "i4")])),
    "kernel has another shape": lambda f: _replace(f["model_weights/d1/d1"], "kernel:0",
                                                   data=np.zeros((5, 7), "f4")),
    "model_config is a number": lambda f: f.attrs.__setitem__("model_config", 3.5),
    "layer_names are numbers": lambda f: f["model_weights"].attrs.__setitem__("layer_names", np.arange(2)),
    "weight_names missing": lambda f: f["model_weights/d1"].attrs.__delitem__("weight_names"),
    "model_weights is a dataset": lambda f: (f.__delitem__("model_weights"),
                                             f.create_dataset("model_weights", data=np.zeros(3))),
    "optimizer weight is text": lambda f: _replace(
        f["optimizer_weights"], _first_dataset(f["optimizer_weights"]), data=np.array([b"x"] * 4)),
}


def _first_dataset(group):
    names = []
    group.visititems(lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) else None)
    return names[-1]


@pytest.mark.parametrize("damage", list(WRONG_TYPES))
def test_wrong_hdf5_types_are_named(good, tmp_path, damage):
    assert _refused(_rewrite(good, tmp_path, WRONG_TYPES[damage])) == "error"


HUGE = {
    # 1 GiB of float32 declared, nothing written: reading it would allocate and fill 1 GiB
    "kernel declares 1 GiB over no data": lambda f: _replace(
        f["model_weights/d1/d1"], "kernel:0", shape=(16384, 16384), dtype="f4", chunks=(256, 256)),
    # compressed: one chunk written, the rest declared
    "gzip kernel declares 1 GiB": lambda f: _huge_gzip(f["model_weights/d1/d1"]),
    "optimizer weight declares 1 GiB": lambda f: _replace(
        f["optimizer_weights"], _first_dataset(f["optimizer_weights"]), shape=(16384, 16384), dtype="f4",
        chunks=(256, 256)),
    "kernel declares 2**40 elements": lambda f: _replace(
        f["model_weights/d1/d1"], "kernel:0", shape=(1 << 20, 1 << 20), dtype="f4", chunks=(64, 64)),
}


def _huge_gzip(group):
    _replace(group, "kernel:0", shape=(16384, 16384), dtype="f4", chunks=(256, 256), compression="gzip")
    group["kernel:0"][:256, :256] = 1.0


@pytest.mark.parametrize("damage", list(HUGE))
def test_huge_declared_shapes_allocate_nothing(good, tmp_path, damage):
    assert _refused(_rewrite(good, tmp_path, HUGE[damage])) == "error"


def _outside(f, how, other):
    """The kernel of d1 (3, 4) read from outside the file: what a forged file could point at."""
    group = f["model_weights/d1/d1"]
    del group["kernel:0"]
    if how == "external link":
        group["kernel:0"] = h5py.ExternalLink(str(other), "/secret")
    elif how == "external storage":
        group.create_dataset("kernel:0", shape=(3, 4), dtype="f4", external=[("/dev/zero", 0, 48)])
    else:
        layout = h5py.VirtualLayout(shape=(3, 4), dtype="f4")
        layout[:] = h5py.VirtualSource(str(other), "secret", shape=(3, 4))
        group.create_virtual_dataset("kernel:0", layout)


@pytest.mark.parametrize("how", ["external link", "external storage", "virtual dataset"])
def test_a_weight_read_from_another_file_is_refused(good, tmp_path, how):
    other = tmp_path / "secret.h5"
    with h5py.File(other, "w") as f:
        f["secret"] = np.full((3, 4), 7.0, "f4")  # stands for a file of the user's the model should not read
    assert _refused(_rewrite(good, tmp_path, lambda f: _outside(f, how, other))) == "error"


NOT_JSON = {
    "broken": "{not json",
    "a list": "[1, 2, 3]",
    "not a model": json.dumps({"class_name": "Dense", "config": {"units": 2}}),
    "nested 20000 deep": "[" * 20000 + "]" * 20000,  # (json recurses: a RecursionError)
    "empty": "",
}


@pytest.mark.parametrize("damage", list(NOT_JSON))
def test_a_model_config_that_is_not_json_is_named(good, tmp_path, damage):
    path = _rewrite(good, tmp_path, lambda f: f.attrs.__setitem__("model_config", np.bytes_(
        NOT_JSON[damage].encode())))
    assert _refused(path) == "error"


def test_a_model_config_that_is_not_utf8_is_named(good, tmp_path):
    path = _rewrite(good, tmp_path, lambda f: f.attrs.__setitem__("model_config", np.bytes_(b"\xff\xfe{")))
    assert _refused(path) == "error"


def test_the_good_file_loads_within_the_same_bounds(good, tmp_path):
    path = tmp_path / "good.h5"
    path.write_bytes(good)
    assert _refused(path, allow_model=True) == "model"
