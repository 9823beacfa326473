"""preprocessing.image.Iterator (Keras 2's base class of image iterators): a subclass written as for
Keras 2 gets Keras 2.3.1's batches and, seeded, the same sample order (it[i], on_epoch_end, next,
reset; recorded from real keras_preprocessing 1.1.2 in tests/fixtures/keras2/image_transforms.npz by
scripts/make_keras2_image_transforms_fixture.py), trains in fit, and arignote's own iterators share
the base."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest
import torch

from arignote.layers import Dense
from arignote.models import Sequential
from arignote.preprocessing.image import DirectoryIterator, ImageDataGenerator, Iterator, NumpyArrayIterator

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "keras2", "image_transforms.npz")
KERAS = dict(np.load(FIXTURE))


class Numbered(Iterator):
    """As the fixture script's Keras 2 subclass: batches of sample indices, one np.random draw per
    sample (as an augmentation would)."""

    def __init__(self, n, batch_size, shuffle, seed):
        super().__init__(n, batch_size, shuffle, seed)

    def _get_batches_of_transformed_samples(self, index_array):
        return index_array.copy(), np.random.random(len(index_array))


def _check(key, batches):
    np.testing.assert_array_equal(np.concatenate([b[0] for b in batches]), KERAS[f"it_{key}_idx"])
    np.testing.assert_array_equal([len(b[0]) for b in batches], KERAS[f"it_{key}_sizes"])
    np.testing.assert_array_equal(np.concatenate([b[1] for b in batches]), KERAS[f"it_{key}_draw"])


@pytest.mark.parametrize("shuffle,seed", [(True, 7), (False, 7), (True, None)])
def test_same_batches_and_order_as_keras2(shuffle, seed):
    key = f"{'shuffled' if shuffle else 'ordered'}_{seed}"
    np.random.seed(3)
    it = Numbered(10, 4, shuffle, seed)
    assert len(it) == 3
    batches = [it[i] for i in range(len(it))]
    it.on_epoch_end()
    batches += [it[i] for i in (2, 0, 1)]
    _check(key + "_getitem", batches)
    assert it.total_batches_seen == KERAS[f"it_{key}_seen"]
    np.random.seed(3)
    it = Numbered(10, 4, shuffle, seed)
    batches = [next(it) for _ in range(5)]  # the endless stream: a pass ends with a short batch
    it.reset()
    batches += [next(it) for _ in range(4)]
    _check(key + "_next", batches)
    assert [it.batch_index, it.total_batches_seen] == KERAS[f"it_{key}_next_state"].tolist()


def test_a_seeded_order_is_repeatable_and_a_permutation():
    a, b = Numbered(10, 4, True, 5), Numbered(10, 4, True, 5)
    first = np.concatenate([a[i][0] for i in range(3)])
    assert sorted(first.tolist()) == list(range(10)) and first.tolist() != list(range(10))
    np.testing.assert_array_equal(first, np.concatenate([b[i][0] for i in range(3)]))
    assert iter(a) is a  # Keras's iterator is endless: iter() is the iterator itself


def test_out_of_range_and_bad_arguments_are_clear():
    it = Numbered(10, 4, False, None)
    with pytest.raises(IndexError, match="asked for batch 3, but this Numbered has 3 batches"):
        it[3]
    with pytest.raises(ValueError):  # what Keras 2 raised
        it[3]
    assert it[-1][0].tolist() == [8, 9]
    with pytest.raises(ValueError, match="batch_size must be a positive integer, got 0"):
        Numbered(10, 0, False, None)
    with pytest.raises(ValueError, match="n \\(the number of samples\\) must be an integer >= 0"):
        Numbered(-1, 4, False, None)

    class Forgot(Iterator):
        pass

    with pytest.raises(NotImplementedError, match="Forgot must define _get_batches_of_transformed_samples"):
        Forgot(4, 2, False, None)[0]


def test_pickles_without_its_lock():
    it = Numbered(10, 4, True, 1)
    it[0]
    copy = pickle.loads(pickle.dumps(it))
    np.testing.assert_array_equal(copy.index_array, it.index_array)
    assert next(copy)[0].shape == (4,)


class ArrayBatches(Iterator):
    """A Keras 2 style iterator over arrays, noting the samples it serves."""

    def __init__(self, x, y, batch_size=8, shuffle=True, seed=0):
        self.x, self.y, self.served = x, y, []
        super().__init__(len(x), batch_size, shuffle, seed)

    def _get_batches_of_transformed_samples(self, index_array):
        self.served.extend(index_array.tolist())
        return self.x[index_array], self.y[index_array]


def test_a_keras2_subclass_trains_in_fit():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(36, 4)).astype("float32")
    y = (x @ np.array([1.0, -2.0, 0.5, 1.5], dtype="float32"))[:, None]
    it = ArrayBatches(x, y)
    model = Sequential([Dense(1, input_shape=(4,))])
    model.compile("sgd", "mse")
    history = model.fit(it, epochs=3, verbose=0, shuffle=False)
    assert len(history.history["loss"]) == 3
    assert history.history["loss"][-1] < history.history["loss"][0]
    # every epoch serves every sample once: len(it) batches, the last one short
    assert len(it.served) == 3 * 36 and sorted(it.served) == sorted(list(range(36)) * 3)
    # Keras 2's generator methods, with a worker thread as Keras's default workers=1
    it.served.clear()
    model.fit_generator(it, steps_per_epoch=len(it), epochs=1, verbose=0)
    assert sorted(it.served) == list(range(36))
    assert np.isfinite(model.evaluate_generator(it, steps=len(it), verbose=0))


def test_arignote_iterators_share_the_base():
    x = np.random.default_rng(1).random((10, 4, 4, 3), dtype=np.float32)
    flow = ImageDataGenerator().flow(x, np.arange(10), batch_size=4, shuffle=True, seed=2)
    assert isinstance(flow, Iterator) and issubclass(DirectoryIterator, Iterator)
    assert (flow.n, flow.batch_size, flow.shuffle, flow.seed, len(flow)) == (10, 4, True, 2, 3)
    assert sorted(flow.index_array.tolist()) == list(range(10))
    assert [next(flow)[1].tolist() for _ in range(2)] == [flow[0][1].tolist(), flow[1][1].tolist()]
    flow.reset()
    assert flow.batch_index == 0 and next(flow)[1].tolist() == flow[0][1].tolist()
    # their own batch method still takes Keras's single argument (augmentation from np.random)
    xb, yb = flow._get_batches_of_transformed_samples(np.array([3, 1]))
    assert xb.shape == (2, 4, 4, 3) and yb.tolist() == [3, 1]


def test_a_keras2_override_of_numpy_array_iterator_is_called():
    class Doubled(NumpyArrayIterator):
        def _get_batches_of_transformed_samples(self, index_array):
            xb, yb = super()._get_batches_of_transformed_samples(index_array)
            return xb * 2, yb

    x = np.ones((5, 2, 2, 1), dtype=np.float32)
    it = Doubled(x, np.arange(5), ImageDataGenerator(), batch_size=2, shuffle=False)
    xb, yb = it[1]
    assert xb.max() == 2.0 and yb.tolist() == [2, 3]
