"""Keras 2.3.1 fits, evaluates and predicts on scipy sparse inputs and targets (its
test_sparse_inputs_targets): arignote makes them dense, with the same numbers as the dense arrays."""

import numpy as np
import pytest

from arignote.layers import Dense, Dropout, Input
from arignote.models import Model, Sequential

sparse = pytest.importorskip("scipy.sparse")


def test_a_two_input_model_trains_on_sparse_inputs_and_targets():
    xs = [sparse.random(6, 3, density=0.25, random_state=i).tocsr() for i in range(2)]
    ys = [sparse.random(6, n, density=0.25, random_state=n).tocsr() for n in (3, 4)]
    in1, in2 = Input(shape=(3,)), Input(shape=(3,))
    model = Model([in1, in2], [Dropout(0.5, name="dropout")(in1), Dense(4, name="dense_1")(in2)])
    got = model.predict(xs, batch_size=2)
    np.testing.assert_allclose(got[1], model.predict([x.toarray() for x in xs], batch_size=2)[1])
    model.compile("rmsprop", "mse")
    history = model.fit(xs, ys, epochs=1, batch_size=2, validation_split=0.5, verbose=0)
    assert set(history.history) >= {"loss", "val_loss"}
    loss = model.evaluate(xs, ys, batch_size=2, verbose=0)
    dense = model.evaluate([x.toarray() for x in xs], [y.toarray() for y in ys], batch_size=2, verbose=0)
    np.testing.assert_allclose(loss, dense, rtol=1e-6)


def test_a_sequential_on_a_sparse_matrix_equals_the_dense_one():
    x = sparse.random(8, 5, density=0.3, random_state=0, format="csr")
    model = Sequential([Dense(2, input_dim=5)])
    np.testing.assert_allclose(model.predict(x), model.predict(x.toarray()), rtol=1e-6)
    model.compile("sgd", "mse")
    assert model.train_on_batch(x, sparse.csr_matrix(np.ones((8, 2)))) > 0
