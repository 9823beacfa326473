"""TimeDistributed's masks (Keras 2.3.1 ``TimeDistributed.compute_mask``), ``compute_mask`` asked on
symbolic tensors (a mask tensor of the graph, evaluated by ``K.function``), and the bookkeeping of
a symbolic call (``_input_map``, the wrapped layer's updates)."""

from __future__ import annotations

import numpy as np
import torch

from arignote import backend as K
from arignote import layers
from arignote.layers import BatchNormalization, Dense, Embedding, Input, Masking, SimpleRNN, TimeDistributed
from arignote.models import Model, Sequential


def _ids():
    x = np.array([[[1, 2, 0], [0, 0, 0]], [[3, 0, 0], [4, 4, 4]]], dtype="int32")  # (2, 2, 3)
    return x


def test_inner_masks_per_time_step_on_torch_tensors():
    x = torch.as_tensor(_ids())
    emb = TimeDistributed(Embedding(5, 2, mask_zero=True))
    mask = emb.compute_mask(x)
    np.testing.assert_array_equal(mask.numpy(), _ids() > 0)  # Embedding's mask, (batch, t, steps)
    seq = TimeDistributed(SimpleRNN(4, return_sequences=True))
    h = emb(x)
    np.testing.assert_array_equal(seq.compute_mask(h, mask).numpy(), _ids() > 0)  # handed on
    last = TimeDistributed(SimpleRNN(4))
    # the RNN gives no mask: the input mask reduced to (batch, t) with any()
    np.testing.assert_array_equal(last.compute_mask(seq(h, mask=mask), mask).numpy(),
                                  [[True, False], [True, True]])
    assert TimeDistributed(Dense(2)).compute_mask(torch.zeros(2, 2, 3), None) is None


def test_compute_mask_on_symbolic_tensors_is_a_graph_tensor():
    model = Sequential()
    model.add(TimeDistributed(Masking(mask_value=0.0), input_shape=(None, 3)))
    model.add(TimeDistributed(Dense(2)))
    m0 = model.layers[0].compute_mask(model.input)
    m1 = model.layers[1].compute_mask(model.layers[1].input, m0)
    assert m0.shape == (None, None) and m0.dtype == "bool"
    data = _ids().astype("float32")
    got = K.function([model.input], [m0, m1])([data])
    np.testing.assert_array_equal(got[0], np.any(data, axis=-1))
    np.testing.assert_array_equal(got[1], np.any(data, axis=-1))
    assert SimpleRNN(2).compute_mask(Input(shape=(3, 2)), None) is None  # no mask: None, no node


def test_sequential_inside_time_distributed_behind_masking():
    inputs = Input(shape=(2, 3))
    x = Masking(mask_value=0.0)(inputs)
    inner = Sequential([Dense(4, input_shape=(3,)), layers.Activation("relu")])
    model = Model(inputs, layers.wrappers.TimeDistributed(inner)(x))
    data = _ids().astype("float32")
    assert model.predict(data).shape == (2, 2, 4)
    masking = model.layers[1].compute_mask(model.layers[1].input)
    mask = model.layers[2].compute_mask(model.layers[2].input, masking)
    np.testing.assert_array_equal(K.function([model.input], [mask])([data])[0], np.any(data, axis=-1))


def test_symbolic_call_bookkeeping():
    x = Input(shape=(3, 2))
    td = TimeDistributed(BatchNormalization())
    td(x)
    assert len(td.updates) == 2 and len(td.trainable_weights) == 2
    td.trainable = False
    assert td.updates == [] and td.trainable_weights == []
    td.trainable = True
    assert len(td.updates) == 2
    (key, inner), = td._input_map.items()
    assert key == str(abs(id(x))) and inner.shape == (None, 2)
