"""_keras_objects.get: the one Keras 2 ``get(identifier)`` behind initializers.get, constraints.get and
regularizers.get (Keras 2.3.1's rules and its ``Could not interpret ... identifier:`` error)."""

from __future__ import annotations

import pytest

from arignote import constraints, initializers, regularizers
from arignote._keras_objects import get

MODULES = [(initializers, "initializer", "he_normal", initializers.VarianceScaling),
           (constraints, "constraint", "non_neg", constraints.NonNeg),
           (regularizers, "regularizer", "l1_l2", regularizers.L1L2)]


@pytest.mark.parametrize("module, kind, name, cls", MODULES, ids=[m[1] for m in MODULES])
def test_each_modules_get_follows_keras2(module, kind, name, cls):
    assert isinstance(module.get(name), cls)  # a name is a config without arguments
    built = module.get({"class_name": cls.__name__, "config": module.get(name).get_config()})
    assert type(built) is cls and built.get_config() == module.get(name).get_config()
    instance = module.get(name)
    assert module.get(instance) is instance  # a callable (an instance, a function) passes through
    assert module.get(abs) is abs
    with pytest.raises(ValueError) as info:
        module.get(3)
    assert str(info.value) == f"Could not interpret {kind} identifier: 3"  # Keras 2.3.1's words


def test_none_stays_none_except_for_initializers():
    assert constraints.get(None) is None and regularizers.get(None) is None
    with pytest.raises(ValueError, match=r"^Could not interpret initializer identifier: None$"):
        initializers.get(None)  # Keras 2.3.1's initializers.get has no None case


def test_the_shared_get_hands_names_and_dicts_to_deserialize():
    seen = []
    assert get("x", lambda c: seen.append(c) or "built", "thing") == "built"
    assert get({"class_name": "Y", "config": {"a": 1}}, seen.append, "thing") is None
    assert seen == [{"class_name": "x", "config": {}}, {"class_name": "Y", "config": {"a": 1}}]
    with pytest.raises(ValueError, match=r"^Could not interpret thing identifier: \[1\]$"):
        get([1], seen.append, "thing")
