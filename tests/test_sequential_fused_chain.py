"""A Sequential's fused chain (models/sequential.py: ``_Stack._fused``) is made once, at the first
forward after its members changed: ``add``/``pop`` drop it, a copy or a pickle makes its own, and no
forward compares the members (issue 32: per-step cost of small models)."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import torch

from arignote.graph.node import runtime_module
from arignote.layers import Conv1D, Dense, Embedding, GlobalMaxPooling1D
from arignote.layers.convolutional.conv_maxpool import ConvMaxPool
from arignote.models import Sequential


def _model() -> Sequential:
    torch.manual_seed(0)
    return Sequential([Embedding(50, 8, input_shape=(20,)), Conv1D(16, 3, activation="relu"),
                       GlobalMaxPooling1D()])


def test_the_chain_is_made_once_and_kept_across_forwards():
    model = _model()
    stack = runtime_module(model)
    x = np.zeros((2, 20), "int64")
    model.predict(x)
    chain = stack._fused()
    model.predict(x)
    assert stack._fused() is chain and any(isinstance(m, ConvMaxPool) for m in chain)


def test_add_and_pop_drop_the_chain_so_the_new_members_run():
    model = _model()
    stack = runtime_module(model)
    x = np.zeros((2, 20), "int64")
    assert model.predict(x).shape == (2, 16)
    model.add(Dense(3))
    assert stack._fused_list is None
    assert model.predict(x).shape == (2, 3)  # a stale chain would stop at the pooling
    model.pop()
    model.pop()  # Conv1D last now: nothing fuses
    assert model.predict(x).shape == (2, 18, 16)
    assert not any(isinstance(m, ConvMaxPool) for m in stack._fused())


def test_a_copy_and_a_pickle_fuse_their_own_members():
    model = _model()
    model.predict(np.zeros((2, 20), "int64"))
    stack = runtime_module(model)
    for other in (copy.deepcopy(stack), pickle.loads(pickle.dumps(stack))):
        pair = next(m for m in other._fused() if isinstance(m, ConvMaxPool))
        assert pair.conv is other.members[1] and pair.conv is not stack.members[1]
        out = other(torch.zeros(2, 20, dtype=torch.int64))
        assert torch.equal(out, stack(torch.zeros(2, 20, dtype=torch.int64)))


def test_a_stack_pickled_with_the_member_ids_key_loads():
    stack = runtime_module(_model())
    state = stack.__getstate__()
    state["_fused_key"], state["_fused_list"] = (1, 2, 3), ["stale"]  # as pickled before session 13
    old = object.__new__(type(stack))
    old.__setstate__(state)
    assert "_fused_key" not in vars(old) and old._fused_list is None
    assert any(isinstance(m, ConvMaxPool) for m in old._fused())
