"""Merge layers' ``compute_mask`` as Keras 2.3.1's (its merge_test.py): float masks (``K.variable``)
count nonzero entries as true, and misuse raises Keras's ValueErrors."""

import numpy as np
import pytest

from arignote import backend as K
from arignote.layers import Add, Concatenate, Input, Subtract


@pytest.mark.parametrize("layer_cls", [Add, Subtract])
def test_elementwise_merge_of_float_masks(layer_cls):
    i1, i2 = Input((4, 5)), Input((4, 5))
    layer = layer_cls()
    layer([i1, i2])
    assert layer.compute_mask([i1, i2], [None, None]) is None
    m1 = np.array([[1.0, 0.0], [0.5, 2.0]], dtype="float32")
    m2 = np.array([[1.0, 1.0], [0.0, 3.0]], dtype="float32")
    got = K.eval(layer.compute_mask([i1, i2], [K.variable(m1), K.variable(m2)]))
    np.testing.assert_array_equal(got, [[True, False], [False, True]])
    with pytest.raises(ValueError, match="`mask` should be a list"):
        layer.compute_mask([i1, i2], m1)
    with pytest.raises(ValueError, match="`inputs` should be a list"):
        layer.compute_mask(i1, [None, None])
    with pytest.raises(ValueError, match="should have the same length"):
        layer.compute_mask([i1, i2], [None])


def test_concatenate_of_float_masks_on_symbolic_inputs():
    i1, i2 = Input((4, 5)), Input((4, 5))
    layer = Concatenate(axis=1)
    layer([i1, i2])
    x1 = np.random.default_rng(0).random((2, 4, 5)).astype("float32") + 0.1
    x2 = x1.copy()
    x2[1, 3, 0] = 0.0
    got = K.eval(layer.compute_mask([i1, i2], [K.variable(x1), K.variable(x2)]))
    assert got.shape == (2, 8)
    want = np.ones((2, 8), dtype=bool)
    want[1, 7] = False
    np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="should have the same length"):
        layer.compute_mask([i1, i2], [None])
