"""Fault suite: a bad batch in the middle of an epoch, from every kind of iterable input, fails
before its step runs with one error naming the batch index, the input and the problem."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import arignote
from arignote.layers import Dense
from arignote.models import Sequential
from arignote.utils import Sequence

GOOD_X = np.random.default_rng(0).normal(size=(8, 4)).astype("float32")
GOOD_Y = np.array([0, 1, 2, 0, 1, 2, 0, 1])


def _model():
    arignote.configure(device="cpu", print_active_device=False)
    torch.manual_seed(0)
    model = Sequential([Dense(3, activation="softmax", input_shape=(4,))])
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    return model


BAD = {
    "label out of range": ((GOOD_X, np.array([0, 1, 7, 0, 1, 2, 0, 1])),
                           "y: sparse_categorical_crossentropy expects integer labels in [0, 3), got 7"),
    "nan input": ((np.where(np.arange(32).reshape(8, 4) == 9, np.nan, GOOD_X).astype("float32"), GOOD_Y),
                  "x contains NaN or Inf values (first at sample 2)"),
    "wrong shape": ((np.zeros((8, 5), "float32"), GOOD_Y),
                    "x has per-sample shape (5,) but the model's input shape is (4,)"),
    "length mismatch": ((GOOD_X, GOOD_Y[:5]), "y has 5 samples but x has 8"),
    "strings": ((GOOD_X, np.array(["a"] * 8)), "y holds <U1 values (strings or bytes), not numbers"),
    "empty": ((GOOD_X[:0], GOOD_Y[:0]), "it is empty (0 samples)"),
    "not a pair": ((GOOD_X, GOOD_Y, GOOD_Y, GOOD_Y), "each batch of an iterable must be an (x, y) pair"),
}


class Batches(Sequence):
    def __init__(self, bad, at=2, n=4):
        self.bad, self.at, self.n = bad, at, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.bad if i == self.at else (GOOD_X, GOOD_Y)


def _sources(bad):
    """The same 4 batches, batch 2 bad, as each input type fit takes."""
    batches = [(GOOD_X, GOOD_Y)] * 2 + [bad] + [(GOOD_X, GOOD_Y)]
    torch_batches = [tuple(torch.as_tensor(a) if a.dtype.kind != "U" else a for a in b) for b in batches]
    return {
        "Sequence": (Batches(bad), {"shuffle": False}),
        "list": (batches, {}),
        "generator": ((b for b in batches * 3), {"steps_per_epoch": 4}),
        "DataLoader-like": (torch_batches, {}),
    }


@pytest.mark.parametrize("kind", ["Sequence", "list", "generator", "DataLoader-like"])
@pytest.mark.parametrize("problem", sorted(BAD))
def test_a_bad_batch_mid_epoch_is_named_before_its_step(problem, kind):
    bad, expected = BAD[problem]
    if kind == "DataLoader-like" and problem == "strings":
        pytest.skip("a tensor cannot hold strings")
    model = _model()
    data, kwargs = _sources(bad)[kind]
    steps = []

    class Count(arignote.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            steps.append((batch, model.get_weights()[0].copy()))

    with pytest.raises(ValueError) as info:
        model.fit(data, epochs=1, verbose=0, callbacks=[Count()], **kwargs)
    msg = str(info.value)
    assert msg.startswith("batch 2 of x: "), msg
    assert expected in msg, msg
    assert [s for s, _ in steps] == [0, 1]  # batches 0 and 1 ran, batch 2's step never did
    np.testing.assert_array_equal(model.get_weights()[0], steps[-1][1])


def test_a_bad_validation_batch_is_named():
    model = _model()
    val = [(GOOD_X, GOOD_Y), (GOOD_X, np.array([0, 1, 2, 0, 1, 2, 0, 9]))]
    with pytest.raises(ValueError, match=r"^batch 1 of validation_data: y: .* got 9"):
        model.fit([(GOOD_X, GOOD_Y)], validation_data=val, epochs=1, verbose=0)


def test_evaluate_and_predict_check_their_batches_too():
    model = _model()
    with pytest.raises(ValueError, match=r"^batch 1 of x: y: .* got 3"):
        model.evaluate([(GOOD_X, GOOD_Y), (GOOD_X, GOOD_Y + 1)], verbose=0)
    with pytest.raises(ValueError, match=r"^batch 1 of x: x has per-sample shape \(2,\)"):
        model.predict([GOOD_X, GOOD_X[:, :2]])
    assert model.predict([GOOD_X, GOOD_X]).shape == (16, 3)  # predict needs no targets


def test_good_batches_train_as_before():
    model = _model()
    history = model.fit(Batches((GOOD_X, GOOD_Y)), epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2 and np.isfinite(history.history["loss"]).all()


def test_a_real_dataloader_and_a_threaded_sequence_name_the_batch():
    from torch.utils.data import DataLoader, TensorDataset

    y = torch.as_tensor(np.tile(GOOD_Y, 4))
    y[19] = 5  # sample 19: batch 2 of a batch_size=8 loader
    loader = DataLoader(TensorDataset(torch.as_tensor(np.tile(GOOD_X, (4, 1))), y), batch_size=8)
    with pytest.raises(ValueError, match=r"^batch 2 of x: y: .*labels in \[0, 3\), got 5"):
        _model().fit(loader, epochs=1, verbose=0)
    with pytest.raises(ValueError, match=r"^batch 3 of x: it is empty \(0 samples\)"):
        _model().fit(Batches((GOOD_X[:0], GOOD_Y[:0]), at=3), epochs=1, verbose=0, shuffle=False,
                     workers=2)
