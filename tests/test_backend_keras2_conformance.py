"""Keras 2.3.1 backend behaviours that its own backend_test.py checks (batch_dot of 4-D tensors,
channels_first bias_add, eye of a (rows, cols) size, relu below a negative threshold, stop_gradient of
a list, is_keras_tensor, variable dtypes, scipy.sparse variables). The expected values were printed
by real Keras 2.3.1 (Theano 1.0.5 backend) in the side venv scripts/setup-keras2-venv.sh builds."""

import numpy as np
import pytest
import torch

from arignote import backend as K


def test_batch_dot_of_4d_tensors_matches_keras2():
    x = np.arange(2 * 3 * 4 * 5, dtype="float32").reshape(2, 3, 4, 5) / 10
    y = np.arange(2 * 2 * 3 * 4, dtype="float32").reshape(2, 2, 3, 4) / 10
    z = K.eval(K.batch_dot(K.variable(x), K.variable(y), (2, 3)))
    assert z.shape == (2, 3, 5, 2, 3)  # Keras 2.3.1's shape
    np.testing.assert_allclose(z[1, 2, 0], [[109.9, 127.1, 144.3], [161.5, 178.7, 195.9]], rtol=1e-5)
    np.testing.assert_allclose(z, np.einsum("bijk,bmnj->bikmn", x, y), rtol=1e-5)
    # 2-D x against 3-D y: Keras 2.3.1 gives (batch, 3)
    z = K.eval(K.batch_dot(K.variable(np.ones((2, 4), "float32")),
                           K.variable(np.arange(24, dtype="float32").reshape(2, 3, 4)), (1, 2)))
    assert z.tolist() == [[6.0, 22.0, 38.0], [54.0, 70.0, 86.0]]


def test_batch_dot_symbolic_shapes():
    x, y = K.placeholder(shape=(None, 3, 4, 5)), K.placeholder(shape=(None, 2, 3, 4))
    z = K.batch_dot(x, y, (2, 3))
    assert K.int_shape(z) == (None, 3, 5, 2, 3)
    out = K.function([x, y], [z])([np.ones((7, 3, 4, 5)), np.ones((7, 2, 3, 4))])[0]
    assert out.shape == (7, 3, 5, 2, 3) and float(out[0, 0, 0, 0, 0]) == 4.0
    flat = K.batch_dot(K.placeholder(shape=(None, 4)), K.placeholder(shape=(None, 4)))
    assert K.int_shape(flat) == (None, 1)


def test_bias_add_channels_first_full_bias_is_reshaped_not_transposed():
    x = np.arange(2 * 6 * 10, dtype="float32").reshape(2, 6, 10)
    b = np.arange(60, dtype="float32").reshape(10, 6) / 100
    out = K.eval(K.bias_add(K.variable(x), K.variable(b), data_format="channels_first"))
    np.testing.assert_allclose(out[0, :2, :3], [[0.0, 1.01, 2.02], [10.1, 11.11, 12.12]], rtol=1e-6)
    np.testing.assert_allclose(out, x + b.reshape(1, 6, 10), rtol=1e-6)


def test_eye_takes_rows_and_cols():
    assert K.eval(K.eye((3, 2))).tolist() == [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]
    assert K.eval(K.eye(2)).tolist() == [[1.0, 0.0], [0.0, 1.0]]


def test_relu_threshold_max_value_alpha_as_keras2():
    v = K.variable(np.array([[-3.0, -1.0, 0.5, 7.0]], "float32"))
    np.testing.assert_allclose(K.eval(K.relu(v, alpha=0.1, max_value=5.0, threshold=-2.8)),
                               [[-0.02, 0.0, 0.5, 5.0]], rtol=1e-5)
    np.testing.assert_allclose(K.eval(K.relu(v, alpha=0.1, max_value=5.0, threshold=0.8)),
                               [[-0.38, -0.18, -0.03, 5.0]], rtol=1e-5)


def test_stop_gradient_of_a_list():
    a = K.variable(np.ones((2, 2)))
    c, d = K.stop_gradient([a, K.square(a)])
    assert not c.requires_grad and not d.requires_grad and a.requires_grad
    assert not K.stop_gradient(K.square(a)).requires_grad


def test_is_keras_tensor_as_keras2():
    with pytest.raises(ValueError, match="Expected a symbolic tensor"):
        K.is_keras_tensor(np.array([1, 2]))
    assert K.is_keras_tensor(K.variable(np.array([1, 2]))) is False
    assert K.is_keras_tensor(K.placeholder(shape=(2, 4, 5))) is False  # a bare placeholder, as Keras 2.3.1
    from arignote.layers import Dense, Input
    x = Input((3,))
    assert K.is_keras_tensor(x) and K.is_keras_tensor(Dense(2)(x))


def test_variable_dtypes():
    assert K.dtype(K.variable(1, dtype="int16")) == "int16"
    assert K.dtype(K.variable(False, dtype="bool")) == "bool"
    assert K.dtype(K.variable(1.0, dtype=np.float64)) == "float64"
    with pytest.raises(TypeError, match="'unsupported' is not a dtype"):
        K.variable("", dtype="unsupported")


def test_scipy_sparse_variable_dot_and_concat():
    sparse = pytest.importorskip("scipy.sparse")
    rows, cols = np.array([0, 2, 2, 3]), np.array([4, 3, 2, 3])
    m = sparse.csr_matrix((np.array([0, 7, 2, 3], "float32"), (rows, cols)), shape=(4, 5))
    s = K.variable(m)
    assert K.is_sparse(s) and not K.is_sparse(K.variable(m.toarray()))
    w = np.arange(20, dtype="float32").reshape(5, 4)
    np.testing.assert_allclose(K.eval(K.dot(s, K.variable(w))), m.toarray() @ w)
    joined = K.concatenate([s, K.variable(m)])
    assert K.is_sparse(joined) and K.eval(joined).shape == (4, 10)
    np.testing.assert_array_equal(K.eval(joined), np.concatenate([m.toarray()] * 2, axis=-1))
    mixed = K.concatenate([s, K.variable(m.toarray())], axis=0)
    assert not K.is_sparse(mixed) and isinstance(mixed, torch.Tensor) and mixed.shape == (8, 5)


def test_selu_matches_keras2_theano_to_the_bit():
    # Keras 2.3.1 (Theano) prints [[-1.1113307, -1.5201665]]; its test_selu expects exp(x) - 1
    # (TensorFlow's float32 rounding, -1.1113309), which loses precision near 0: not copied.
    from arignote import activations
    out = activations.selu(torch.tensor([[-1.0, -2.0]])).numpy()
    np.testing.assert_array_equal(out, np.array([[-1.1113307, -1.5201665]], "float32"))


def test_in_top_k_counts_ties_in_as_keras2():
    # Keras 2.3.1 (Theano and TensorFlow): predictions[i, t] >= the k-th largest of row i
    p = K.variable(np.array([[0.5, 0.9, 0.5, 0.5], [0.1, 0.2, 0.3, 0.4]], "float32"))
    t = K.variable(np.array([2, 0]), dtype="int32")
    assert K.eval(K.in_top_k(p, t, 1)).tolist() == [False, False]
    assert K.eval(K.in_top_k(p, t, 2)).tolist() == [True, False]
    assert K.eval(K.in_top_k(p, t, 4)).tolist() == [True, True]
