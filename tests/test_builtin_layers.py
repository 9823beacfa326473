"""Built-in layers register by an explicit list (layers/serialization.py's BUILTIN_LAYERS), not by the
folder their file sits in (issue 33): every Keras layer of ``arignote.layers`` deserializes by name and
takes Keras 1 argument names; OpLayer (now in layers/) and a user's own ``Dense`` do not register."""

import importlib
import pkgutil

import pytest

import arignote.layers as layers
import arignote.legacy.layers  # noqa: F401 - Highway, MaxoutDense
from arignote.layers import Layer
from arignote.layers.op_layer import OpLayer
from arignote.layers.serialization import _REGISTRY, BUILTIN_LAYERS, deserialize, is_builtin


def _all_layer_modules():
    for info in pkgutil.walk_packages(layers.__path__, "arignote.layers."):
        importlib.import_module(info.name)


def test_every_public_layer_class_is_listed_and_registered():
    _all_layer_modules()
    classes = [getattr(layers, n) for n in layers.__all__]  # Keras's aliases (Convolution2D) included
    public = {c.__name__ for c in classes if isinstance(c, type) and issubclass(c, Layer) and c is not Layer}
    assert public - BUILTIN_LAYERS == set()
    assert {n for n in BUILTIN_LAYERS if n not in _REGISTRY} == set()
    assert all(_REGISTRY[n].__module__.startswith("arignote.") for n in BUILTIN_LAYERS)


def test_op_layer_and_private_bases_stay_out():
    _all_layer_modules()
    assert OpLayer.__module__ == "arignote.layers.op_layer" and "OpLayer" not in _REGISTRY
    assert not is_builtin(OpLayer)
    assert {n for n in _REGISTRY if n.startswith("_")} == set()


def test_a_users_class_named_like_a_builtin_does_not_register():
    before = _REGISTRY["Dense"]

    class Dense(Layer):  # a user's own Dense, in a user module
        pass

    assert _REGISTRY["Dense"] is before and not is_builtin(Dense)


def test_a_listed_layer_deserializes_by_name_and_takes_keras_1_names():
    assert deserialize({"class_name": "Conv2D", "config": {"filters": 2, "kernel_size": 3}}).filters == 2
    with pytest.warns(UserWarning, match="Keras 2 API"):
        assert layers.Dense(output_dim=3).units == 3
