"""Keras 2.3.1 public names arignote does not provide yet raise one clear error naming what to use
(issue 13 item 7), never a bare AttributeError; names Keras never had stay AttributeErrors."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from arignote.errors import ArignoteError, KerasNameMissing

MISSING = {
    "arignote.optimizers": ["TFOptimizer", "clip_norm"],
}


@pytest.mark.parametrize("module, name", [(m, n) for m, names in MISSING.items() for n in names])
def test_a_missing_keras_name_says_so_and_what_to_use(module, name):
    mod = importlib.import_module(module)
    with pytest.raises(KerasNameMissing) as err:
        getattr(mod, name)
    text = str(err.value)
    assert f"{module}.{name}" in text and "not provided by arignote yet; use " in text
    assert isinstance(err.value, ImportError) and isinstance(err.value, ArignoteError)


def test_from_import_shows_the_message():
    with pytest.raises(ImportError, match="TFOptimizer.*not provided by arignote yet; use an arignote"):
        exec("from arignote.optimizers import TFOptimizer", {})


def test_names_keras_never_had_stay_attribute_errors():
    import arignote.optimizers as optimizers
    assert not hasattr(optimizers, "NoSuchOptimizer")
    with pytest.raises(AttributeError, match="NoSuchOptimizer"):
        optimizers.NoSuchOptimizer  # noqa: B018


def test_models_exports_input_and_the_suggested_clone_works():
    from arignote import models
    from arignote.layers import Dense, Input, InputLayer
    assert models.Input is Input and models.InputLayer is InputLayer
    x = models.Input(shape=(3,))
    model = models.Model(x, Dense(2)(x))
    clone = models.model_from_json(model.to_json())
    assert [w.shape for w in clone.get_weights()] == [w.shape for w in model.get_weights()]
    assert not np.array_equal(clone.get_weights()[0], model.get_weights()[0])  # new weights
