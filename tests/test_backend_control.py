"""arignote.backend's rnn, map_fn/foldl/foldr, in_top_k, CTC and small helpers.

rnn, map/fold and in_top_k are checked against real Keras 2.3.1 (Theano backend) results in
tests/fixtures/keras2/backend_nn.npz (scripts/make_keras2_backend_fixture.py) and rnn also against a
hand-rolled loop. Theano's Keras has no ctc_decode and its ctc_batch_cost smooths the probabilities,
so the CTC functions are checked against torch's ctc_loss, a brute-force sum over all alignments and
hand-made examples, with TensorFlow Keras's conventions (blank = last class, log(y_pred + epsilon)).
"""

import itertools
import json
import math
import os

import numpy as np
import pytest
import torch

from arignote import backend as K
from arignote.layers import Dense, Input, Lambda
from arignote.models import Model

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "keras2", "backend_nn.npz")
DATA = np.load(FIXTURE)


def case(name):
    arrays = {k.split("/")[1]: DATA[k] for k in DATA.files if k.startswith(name + "/")}
    return json.loads(str(arrays.pop("args"))), arrays


def t(a):
    return torch.from_numpy(np.asarray(a))


def check(got, want, atol=1e-5):
    got = got.detach().numpy() if isinstance(got, torch.Tensor) else np.asarray(got)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, atol=atol, rtol=1e-4)


# ---------------------------------------------------------------------- rnn


def _step(a):
    w, u = t(a["w"]), t(a["u"])

    def step(x, states):
        h = torch.tanh(x @ w + states[0] @ u)
        if len(states) > 1:
            h = h + states[1]  # the constant
        return h, [h]

    return step


def _hand_rnn(a, go_backwards=False, mask=None, constant=None):
    """Keras's rule by hand: a masked step repeats the previous output (zeros at first) and states."""
    x, h = a["x"], a["h0"].copy()
    steps = range(x.shape[1])[::-1] if go_backwards else range(x.shape[1])
    prev_out = np.zeros_like(h)
    outs = []
    for s in steps:
        new = np.tanh(x[:, s] @ a["w"] + h @ a["u"]) + (constant if constant is not None else 0)
        keep = np.ones((x.shape[0], 1)) if mask is None else mask[:, s : s + 1]
        out = np.where(keep > 0, new, prev_out)
        h = np.where(keep > 0, new, h)
        outs.append(out)
        prev_out = out
    return outs[-1], np.stack(outs, axis=1), h


@pytest.mark.parametrize(
    "name", ["rnn_plain", "rnn_backwards", "rnn_masked", "rnn_masked_backwards_constants"]
)
def test_rnn_matches_keras_2_and_a_hand_rolled_loop(name):
    args, a = case(name)
    kwargs = {"go_backwards": args["go_backwards"]}
    if args.get("mask"):
        kwargs["mask"] = t(a["mask"])
    if args.get("constants"):
        kwargs["constants"] = [t(a["c"])]
    last, outputs, states = K.rnn(_step(a), t(a["x"]), [t(a["h0"])], **kwargs)
    check(last, a["y0"])
    check(outputs, a["y1"])
    assert len(states) == 1
    check(states[0], a["y2"])
    hand = _hand_rnn(
        a,
        args["go_backwards"],
        a["mask"] if args.get("mask") else None,
        a["c"] if args.get("constants") else None,
    )
    for got, want in zip((last, outputs, states[0]), hand):
        check(got, want.astype("float32"))


def test_rnn_masked_first_step_outputs_zeros_and_keeps_the_initial_state():
    a = case("rnn_masked")[1]
    _, outputs, _ = K.rnn(_step(a), t(a["x"]), [t(a["h0"])], mask=t(a["mask"]))
    assert a["mask"][1, 0] == 0 and torch.equal(outputs[1, 0], torch.zeros(2))


def test_rnn_rejects_what_keras_rejects():
    step = _step(case("rnn_plain")[1])
    with pytest.raises(ValueError, match=r"K\.rnn: inputs must be at least 3-D"):
        K.rnn(step, torch.zeros(2, 3), [torch.zeros(2, 2)])
    with pytest.raises(ValueError, match=r"K\.rnn: mask should have shape \(samples, time\) = \(2, 4\)"):
        K.rnn(step, torch.zeros(2, 4, 3), [torch.zeros(2, 2)], mask=torch.ones(2, 5))
    with pytest.raises(ValueError, match=r"returned 1 states for 2 initial_states"):
        K.rnn(step, torch.zeros(2, 4, 3), [torch.zeros(2, 2), torch.zeros(2, 2)])


def test_rnn_in_a_lambda_of_a_functional_model_trains():
    inp = Input((5, 3))
    h = Dense(4)(inp)

    def cumulate(x):
        last, outs, _ = K.rnn(lambda xt, s: (xt + s[0], [xt + s[0]]), x, [K.zeros_like(x[:, 0])])
        return outs

    model = Model(inp, Lambda(cumulate)(h))
    model.compile("sgd", "mse")
    data = np.random.RandomState(0).uniform(-1, 1, (4, 5, 3)).astype("float32")
    out = model.predict(data)
    dense = model.layers[1]
    proj = data @ K.get_value(dense.kernel) + K.get_value(dense.bias)
    np.testing.assert_allclose(out, np.cumsum(proj, axis=1), atol=1e-5)
    model.fit(data, np.zeros((4, 5, 4), "float32"), epochs=1, verbose=0)


# ---------------------------------------------------------------------- map / fold / in_top_k


def test_map_fn_foldl_foldr_match_keras_2():
    elems = t(case("map_fn")[1]["elems"])
    check(K.map_fn(lambda r: K.sum(r * r) + r[0], elems), case("map_fn")[1]["y"])
    check(K.foldl(lambda acc, r: acc * 0.5 + r, elems), case("foldl")[1]["y"])
    check(K.foldr(lambda acc, r: acc * 0.5 + r, elems, initializer=torch.ones(3)), case("foldr_init")[1]["y"])


def test_map_fn_dtype_and_tuples_and_fold_with_initializer():
    out = K.map_fn(lambda r: r.sum(), torch.tensor([[1.5, 2.0], [3.0, 4.0]]), dtype="int64")
    assert out.dtype == torch.int64 and out.tolist() == [3, 7]
    pairs = K.map_fn(lambda ab: ab[0] * ab[1], (torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])))
    assert pairs.tolist() == [3.0, 8.0]
    assert K.foldr(lambda acc, x: acc + [int(x)], torch.tensor([1, 2, 3]), initializer=[]) == [3, 2, 1]
    with pytest.raises(ValueError, match=r"K\.foldl: elems is empty and no initializer"):
        K.foldl(lambda acc, x: acc + x, torch.zeros(0))


def test_in_top_k_matches_keras_2_ties_included():
    args, a = case("in_top_k")
    for k, key in zip(args["k"], ("y0", "y1", "y2", "y3")):
        got = K.in_top_k(t(a["predictions"]), t(a["targets"]), k)
        assert got.dtype == torch.bool
        assert got.int().tolist() == a[key].tolist(), k


# ---------------------------------------------------------------------- CTC


def _brute_force(probs, blank):
    """Every label sequence's probability, summing all alignments of one (time, classes) sample."""
    found = {}
    for path in itertools.product(range(probs.shape[1]), repeat=probs.shape[0]):
        labels = tuple(c for i, c in enumerate(path) if c != blank and (i == 0 or c != path[i - 1]))
        found[labels] = found.get(labels, 0.0) + float(np.prod([probs[i, c] for i, c in enumerate(path)]))
    return found


def _softmax(logits):
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype("float32")


def test_ctc_batch_cost_against_torch_ctc_loss_and_brute_force():
    rng = np.random.RandomState(5)
    y_pred = _softmax(rng.normal(size=(3, 6, 4)) * 2)  # classes 0..2 and the blank 3
    labels = np.array([[0, 1, 1], [2, 0, 9], [1, 9, 9]], "float32")  # 9: padding past label_length
    input_length = np.array([[6], [5], [4]])
    label_length = np.array([[3], [2], [1]])
    got = K.ctc_batch_cost(t(labels), t(y_pred), t(input_length), t(label_length))
    assert got.shape == (3, 1)
    logp = torch.log_softmax(torch.log(t(y_pred) + K.epsilon()), -1).transpose(0, 1)
    want = torch.nn.functional.ctc_loss(
        logp,
        t(labels).long().clamp(max=2),
        t(input_length[:, 0]),
        t(label_length[:, 0]),
        blank=3,
        reduction="none",
    )
    check(got[:, 0], want.numpy())
    for i in range(3):
        table = _brute_force(y_pred[i, : input_length[i, 0]], blank=3)
        label = tuple(int(c) for c in labels[i, : label_length[i, 0]])
        assert got[i, 0].item() == pytest.approx(-math.log(table[label]), rel=1e-4)


def test_ctc_batch_cost_in_the_ocr_example_graph_trains():
    # keras/examples/image_ocr.py: the loss is a Lambda over [y_pred, labels, input_length, label_length]
    inp = Input((8, 5), name="the_input")
    y_pred = Dense(4, activation="softmax")(inp)
    labels = Input(name="the_labels", shape=[3], dtype="float32")
    input_length = Input(name="input_length", shape=[1], dtype="int64")
    label_length = Input(name="label_length", shape=[1], dtype="int64")
    loss_out = Lambda(lambda args: K.ctc_batch_cost(*args), output_shape=(1,), name="ctc")(
        [labels, y_pred, input_length, label_length]
    )
    model = Model(inputs=[inp, labels, input_length, label_length], outputs=loss_out)
    # image_ocr.py passes loss={"ctc": ...}: arignote takes a dict of losses only for several outputs (yet)
    model.compile(loss=lambda y_true, y_pred: y_pred, optimizer="sgd")
    rng = np.random.RandomState(0)
    feeds = [
        rng.uniform(-1, 1, (4, 8, 5)).astype("float32"),
        np.array([[0, 1, 2], [1, 1, 0], [2, 0, 0], [0, 2, 1]], "float32"),
        np.full((4, 1), 8),
        np.array([[3], [2], [1], [3]]),
    ]
    before = model.predict(feeds)
    history = model.fit(feeds, np.zeros(4), epochs=3, verbose=0)
    assert before.shape == (4, 1) and np.all(before > 0)
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_ctc_decode_greedy_by_hand():
    blank = 3
    steps = [[0, 0, 3, 0, 1, 1, 3], [2, 3, 2, 2, 3, 3, 3]]  # the argmax of each step
    y_pred = np.full((2, 7, 4), 0.1, "float32")
    for i, seq in enumerate(steps):
        for s, c in enumerate(seq):
            y_pred[i, s, c] = 0.7
    decoded, log_prob = K.ctc_decode(y_pred, np.array([7, 4]))
    assert len(decoded) == 1
    # sample 0: 0 0 _ 0 1 1 _ -> 0 0 1; sample 1 (4 steps): 2 _ 2 2 -> 2 2; padded with -1
    assert decoded[0].tolist() == [[0, 0, 1], [2, 2, -1]]
    assert blank == y_pred.shape[-1] - 1
    # TensorFlow's greedy score: minus the sum of each step's best log-probability
    check(
        log_prob, np.array([[-7 * math.log(0.7 + 1e-7)], [-4 * math.log(0.7 + 1e-7)]], "float32"), atol=1e-4
    )
    nothing, _ = K.ctc_decode(np.full((1, 3, 2), [0.1, 0.9], "float32"), np.array([3]))
    assert tuple(nothing[0].shape) == (1, 0)  # only blanks: an empty sequence


def test_ctc_decode_on_symbolic_tensors_through_k_function():
    y_pred, lengths = Input((5, 3)), Input((), dtype="int64")
    decoded, log_prob = K.ctc_decode(y_pred, lengths)
    decode = K.function([y_pred, lengths], [decoded[0], log_prob])
    data = np.random.RandomState(0).dirichlet([1, 1, 1], size=(2, 5)).astype("float32")
    got = decode([data, np.array([5, 3])])
    want = K.ctc_decode(data, np.array([5, 3]))
    assert got[0].tolist() == want[0][0].tolist()
    check(got[1], want[1].numpy())


def test_ctc_decode_beam_search_finds_the_most_probable_labelling():
    rng = np.random.RandomState(1)
    y_pred = _softmax(rng.normal(size=(2, 5, 3)) * 1.5)  # classes 0, 1 and the blank 2
    decoded, log_probs = K.ctc_decode(y_pred, np.array([5, 4]), greedy=False, beam_width=100, top_paths=2)
    assert len(decoded) == 2 and log_probs.shape == (2, 2)
    for i, n in enumerate((5, 4)):
        table = sorted(_brute_force(y_pred[i, :n], blank=2).items(), key=lambda kv: -kv[1])
        for p in range(2):
            seq = [c for c in decoded[p][i].tolist() if c != -1]
            assert tuple(seq) == table[p][0]
            assert log_probs[i, p].item() == pytest.approx(math.log(table[p][1]), abs=1e-4)
    with pytest.raises(ValueError, match=r"K\.ctc_decode: need 1 <= top_paths <= beam_width"):
        K.ctc_decode(y_pred, np.array([5, 4]), greedy=False, beam_width=1, top_paths=2)


def test_ctc_label_dense_to_sparse_keeps_each_rows_label_length():
    sparse = K.ctc_label_dense_to_sparse(torch.tensor([[1, 2, 3], [4, 5, 6]]), torch.tensor([2, 3]))
    assert K.is_sparse(sparse) and sparse.shape == (2, 3) and not K.is_sparse(torch.zeros(2))
    assert K.to_dense(sparse).tolist() == [[1, 2, 0], [4, 5, 6]]
    assert sparse.coalesce().indices().t().tolist() == [[0, 0], [0, 1], [1, 0], [1, 1], [1, 2]]
    assert sparse.coalesce().values().tolist() == [1, 2, 4, 5, 6]


def test_ctc_rejects_a_label_that_is_the_blank():
    with pytest.raises(ValueError, match=r"labels must be < 2: class 2 \(the last\) is the blank"):
        K.ctc_batch_cost(
            torch.tensor([[2]]), torch.full((1, 3, 3), 1 / 3), torch.tensor([[3]]), torch.tensor([[1]])
        )


# ---------------------------------------------------------------------- small helpers


def test_print_tensor_prints_and_returns_x(capsys):
    x = torch.tensor([1.0, 2.0])
    assert K.print_tensor(x, message="x is:") is x
    assert capsys.readouterr().out == "x is: [1. 2.]\n"


def test_print_tensor_in_a_model_prints_each_batch_not_the_shape_probe(capsys):
    inp = Input((2,))
    model = Model(inp, Lambda(lambda x: K.print_tensor(x * 2, message="doubled:"))(inp))
    assert capsys.readouterr().out == ""  # building the graph printed nothing
    model.predict(np.array([[1.0, 2.0]], "float32"))
    out = capsys.readouterr().out  # after the device banner of a first run
    assert out.endswith("doubled: [[2. 4.]]\n") and out.count("doubled:") == 1


def test_control_dependencies_is_a_no_op_context():
    x = K.variable(np.zeros(2))
    with K.control_dependencies([K.update_add(x, np.ones(2))]):
        y = x * 2
    assert y.tolist() == [2.0, 2.0]


def test_random_variables_follow_their_arguments_and_seed():
    v = K.random_normal_variable((200, 50), 3.0, 0.5, seed=7)
    assert K.is_variable(v) and v.shape == (200, 50) and v.dtype == torch.float32
    assert (
        abs(v.mean().item() - 3.0) < 0.02 and abs(v.std().item() - 0.5) < 0.02
    )  # Keras 2's Theano ignores mean
    assert torch.equal(v, K.random_normal_variable((200, 50), 3.0, 0.5, seed=7))
    u = K.random_uniform_variable((1000,), -2.0, -1.0, dtype="float64", seed=1)
    assert u.dtype == torch.float64 and u.min().item() >= -2.0 and u.max().item() < -1.0
    np.random.seed(3)
    a = K.random_uniform_variable((3,), 0, 1)
    np.random.seed(3)
    assert torch.equal(a, K.random_uniform_variable((3,), 0, 1))  # no seed: numpy's random state, as Keras
