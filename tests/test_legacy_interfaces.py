"""Keras 1 argument names (``arignote.legacy.conversions``) against real Keras 2.3.1.

``tests/fixtures/keras2/legacy_args.json`` was written by Keras 2.3.1 itself
(``scripts/make_keras2_legacy_args_fixture.py``): for ~75 Keras 1 layer calls the layer's
``get_config()`` and warnings (or error), for the generator methods the arguments Keras's converter
handed on, and what ``fit(nb_epoch=)`` and ``Model(input=, output=)`` did. The same call text runs
here on arignote.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import arignote.layers as layers
import arignote.layers.convolutional as convolutional
from arignote import config
from arignote.constraints import maxnorm, nonneg
from arignote.layers import Dense, Input, Layer
from arignote.legacy import conversions as legacy_interfaces
from arignote.models import Model, Sequential
from arignote.regularizers import l1, l2

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "keras2" / "legacy_args.json").read_text())
# (every name of the face: arignote.layers loads its modules on first use, so vars() holds only those)
NAMES = {**vars(convolutional), **{n: getattr(layers, n) for n in layers.__all__}, "l1": l1, "l2": l2,
         "maxnorm": maxnorm, "nonneg": nonneg}
# Theano-only notes Keras 2.3.1 added on its backend (not part of the conversion)
THEANO_ONLY = ("RNN dropout is no longer supported with the Theano backend",)
# config keys where arignote knowingly differs, not from the conversion: Keras 2.3.1 zeroed RNN dropout
# on Theano; arignote's Embedding leaves batch_input_shape out when input_length carries it; its
# LSTM/GRU configs say implementation=1 for 0 (what both run).
DIFFERS = {
    "RNN dropout": ("dropout", "recurrent_dropout"),
    "Embedding(": ("batch_input_shape",),
    "consume_less='cpu'": ("implementation",),
}


@pytest.fixture(autouse=True)
def _quiet() -> None:
    config.configure(print_active_device=False)


def _normal(text: str) -> str:
    """Object reprs cut at 10 characters differ by package (``<keras.reg...`` / ``<arignote...``),
    generator addresses by run."""
    text = re.sub(r"<[^<>]* at 0x[0-9a-f]+>", "<obj>", text)
    text = re.sub(r"=L1L2\(l1=0\.\.\.\.", "=<obj...", text)  # arignote's regularizers have a repr
    return re.sub(r"<[\w.]{1,10}\.\.\.", "<obj...", text)


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=repr))


def _rounded(value: Any) -> Any:
    """Floats to 6 significant digits (Keras keeps regularizer factors as float32: 0.009999999776...)."""
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def _run(thunk: Any) -> dict:
    out: dict = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out["result"] = thunk()
        except Exception as exc:  # noqa: BLE001 - compared with what Keras raised
            out["error"] = [type(exc).__name__, _normal(str(exc))]
    out["warnings"] = [[w.category.__name__, _normal(str(w.message))] for w in caught]
    return out


def _expected_warnings(case: dict) -> list:
    return [[c, _normal(t)] for c, t in case["warnings"] if not t.startswith(THEANO_ONLY)]


@pytest.mark.parametrize("case", FIXTURE["layers"], ids=[c["call"][:60] for c in FIXTURE["layers"]])
def test_layer_call_as_keras(case: dict) -> None:
    def build() -> dict:
        cfg = eval(case["call"], dict(NAMES)).get_config()  # noqa: S307 - the fixture's literal calls
        cfg.pop("name", None)
        return _jsonable(cfg)

    ours = _run(build)
    if "error" in case:
        assert ours.get("error") == [case["error"][0], _normal(case["error"][1])]
    else:
        assert "error" not in ours, ours["error"]
        skip = {
            k
            for marker, keys in DIFFERS.items()
            for k in keys
            if marker in case["call"] or any(marker in t for _, t in case["warnings"])
        }
        keras_cfg = {k: v for k, v in case["result"].items() if k not in skip}
        assert _rounded({k: ours["result"].get(k) for k in keras_cfg}) == _rounded(keras_cfg)
    assert ours["warnings"] == _expected_warnings(case)


def _gen() -> Any:
    while True:
        yield np.zeros((4, 3), "float32"), np.zeros((4, 2), "float32")


class BatchGen:
    """An iterator of batches with a ``batch_size`` (as the fixture script's)."""

    batch_size = 4

    def __iter__(self) -> BatchGen:
        return self

    def __next__(self) -> tuple:
        return np.zeros((4, 3), "float32"), np.zeros((4, 2), "float32")


_FORWARDED = {"fit_generator": "fit", "evaluate_generator": "evaluate", "predict_generator": "predict"}
_POSITIONAL = ("generator", "steps_per_epoch", "epochs")


@pytest.mark.parametrize("case", FIXTURE["methods"], ids=[c["call"][:60] for c in FIXTURE["methods"]])
def test_generator_method_call_as_keras(case: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real ``Model.fit_generator`` & co.: what reaches ``fit``/``evaluate``/``predict`` is what
    Keras's converter handed to its method."""
    seen: dict = {}

    def record(self: Any, *args: Any, **kwargs: Any) -> None:
        seen.update(kwargs, _args=args)

    name = case["call"].split("(", 1)[0]
    monkeypatch.setattr(Model, _FORWARDED[name], record)
    model = Sequential([Dense(2, input_shape=(3,))])
    scope = {"m": getattr(model, name), "gen": _gen(), "bgen": BatchGen()}
    ours = _run(lambda: eval("m(" + case["call"].split("(", 1)[1], scope))  # noqa: S307
    assert ours["warnings"] == _expected_warnings(case)
    if "error" in case:
        assert ours.get("error") == [case["error"][0], _normal(case["error"][1])]
        return
    assert "error" not in ours, ours["error"]
    keras_args = dict(zip(_POSITIONAL, case["result"]["args"], strict=False)) | case["result"]["kwargs"]
    for key, value in keras_args.items():
        if key in ("generator", "validation_data"):
            continue
        assert seen[key] == value, key


def test_fit_nb_epoch_as_keras() -> None:
    case = FIXTURE["models"]["fit_nb_epoch"]
    model = Sequential([Dense(2, input_shape=(3,))])
    model.compile("sgd", "mse")
    ours = _run(
        lambda: {
            "epochs_run": len(
                model.fit(
                    np.zeros((8, 3), "float32"), np.zeros((8, 2), "float32"), nb_epoch=2, verbose=0
                ).history["loss"]
            )
        }
    )
    assert ours == {"result": case["result"], "warnings": _expected_warnings(case)}


def test_fit_unknown_keyword_as_keras() -> None:
    case = FIXTURE["models"]["fit_unknown_kwarg"]
    model = Sequential([Dense(2, input_shape=(3,))])
    model.compile("sgd", "mse")
    ours = _run(lambda: model.fit(np.zeros((8, 3)), np.zeros((8, 2)), nb_epochs=2, verbose=0))
    # Keras's text, then the fix: the closest names fit takes
    kind, text = case["error"]
    assert ours["warnings"] == [] and ours["error"] == [kind, text + " (did you mean 'epochs'?)"]
    far = _run(lambda: model.fit(np.zeros((8, 3)), np.zeros((8, 2)), zzz=1, verbose=0))
    assert far["error"][0] == "TypeError"
    assert far["error"][1].startswith("Unrecognized keyword arguments: {'zzz': 1} (fit takes x, y, ")


def test_model_input_output_as_keras() -> None:
    case = FIXTURE["models"]["model_input_output"]
    a = Input(shape=(3,))
    b = Dense(2)(a)
    ours = _run(lambda: {"layers": len(Model(input=a, output=b).layers)})
    assert ours["result"] == case["result"]
    [(category, text)] = ours["warnings"]
    [(k_category, k_text)] = case["warnings"]
    prefix = "Update your `Model` call to the Keras 2 API: `Model(inputs="  # tensors print per backend
    assert category == k_category and text.startswith(prefix) and k_text.startswith(prefix)
    assert ", outputs=" in text and ", outputs=" in k_text

    both = FIXTURE["models"]["model_input_and_inputs"]
    assert _run(lambda: Model(input=a, inputs=a, output=b)) == {"error": both["error"], "warnings": []}


class Scale(Layer):
    """A custom layer written for Keras 1: ``add_weight(shape, initializer, name=...)``."""

    def build(self, input_shape: Any) -> None:
        self.w = self.add_weight((input_shape[-1],), "ones", name="w")
        self.b = self.add_weight((input_shape[-1],), "zeros", "b", False)
        super().build(input_shape)

    def call(self, x: Any) -> Any:
        return x * self.w + self.b


def test_add_weight_keras1_order() -> None:
    """Keras 1 / 2.0.0's ``add_weight(shape, initializer, name, trainable, ...)`` works, as in Keras
    2.0-2.2 (Keras 2.3.1 itself had dropped the conversion: the fixture records its TypeError)."""
    assert FIXTURE["models"]["add_weight_keras1_order"]["error"][0] == "TypeError"
    layer = Scale()
    layer.build((None, 3))
    assert [w.shape for w in layer.get_weights()] == [(3,), (3,)]
    np.testing.assert_array_equal(layer.get_weights()[0], np.ones(3))
    assert len(layer.trainable_weights) == 1 and len(layer.non_trainable_weights) == 1
    out = layer(np.full((2, 3), 2.0, "float32"))
    np.testing.assert_allclose(np.asarray(out.detach()), np.full((2, 3), 2.0))
    with pytest.raises(TypeError, match="multiple values for argument 'initializer'"):
        layer.add_weight((3,), "ones", initializer="zeros")


def test_keras2_add_weight_untouched() -> None:
    layer = Layer()
    w = layer.add_weight("k", (2, 2), None, "ones")
    assert tuple(w.shape) == (2, 2) and float(w.sum()) == 4.0


def test_get_updates_args_keras1_order() -> None:
    """Keras 1's ``get_updates(params, constraints, loss)`` -> ``(loss=, params=)`` as Keras 2.3.1."""
    opt = object()
    assert legacy_interfaces.get_updates_args((opt, ["p"], {}, "loss"), {}) == (
        (opt,),
        {"loss": "loss", "params": ["p"]},
    )
    assert legacy_interfaces.get_updates_args((opt, ["p"], {}), {"loss": "l"}) == (
        (opt,),
        {"loss": "l", "params": ["p"]},
    )
    assert legacy_interfaces.get_updates_args((opt, "loss", ["p"]), {}) == ((opt, "loss", ["p"]), {})
    with pytest.raises(TypeError, match="more arguments than expected"):
        legacy_interfaces.get_updates_args((opt, 1, 2, 3, 4), {})


def test_every_table_entry_is_a_layer() -> None:
    """Each layer named in LAYERS exists and its constructor carries the interface."""
    for name, interface in legacy_interfaces.LAYERS.items():
        cls = getattr(layers, name)
        assert cls.__init__._legacy_interface == interface, name


def test_subclass_of_a_converted_layer_converts_too() -> None:
    """A user's subclass calling ``super().__init__`` with Keras 1 names converts (Keras did too), the
    warning naming the subclass."""

    class MyDense(Dense):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)

    with pytest.warns(
        UserWarning, match=r"Update your `MyDense` call to the Keras 2 API: `MyDense\(units=3\)"
    ):
        assert MyDense(output_dim=3).units == 3


def test_keras_legacy_interfaces_path_for_custom_layers() -> None:
    """``from keras.legacy import interfaces`` in a custom layer: Keras's decorator names and factory."""
    from arignote.legacy import interfaces

    class Scaled(Dense):
        @interfaces.legacy_dense_support
        def __init__(self, units: int, scale: float = 1.0, **kwargs: Any) -> None:
            super().__init__(units, **kwargs)
            self.scale = scale

    with pytest.warns(UserWarning, match=r"`Scaled\(scale=2.0, units=4, kernel_initializer=\"zeros\"\)`"):
        layer = Scaled(output_dim=4, scale=2.0, init="zeros")
    assert layer.units == 4 and layer.get_config()["kernel_initializer"]["class_name"] == "Zeros"
    with pytest.raises(TypeError, match="Stick to the latter"):
        Scaled(4, output_dim=4, units=4)

    class Box(Layer):
        @interfaces.generate_legacy_interface(
            allowed_positional_args=["size"], conversions=[("side", "size")],
            value_conversions={"side": {"big": 9}})
        def __init__(self, size: int = 1, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.size = size

    with pytest.warns(UserWarning, match=r"Update your `Box` call to the Keras 2 API: `Box\(size=9\)`"):
        assert Box(side="big").size == 9
    with pytest.raises(TypeError, match=r"`Box` can accept only 1 positional arguments \('size',\)"):
        Box(1, 2)
    assert interfaces.legacy_generator_methods_support is not None
    with pytest.raises(TypeError, match="received both the legacy keyword argument `a`"):
        interfaces.raise_duplicate_arg_error("a", "b")
