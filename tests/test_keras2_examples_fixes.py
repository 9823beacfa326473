"""What Keras 2.3.1's own examples needed from arignote (docs/keras2_examples.md), each checked on
its mechanism with models and values we write ourselves."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from arignote import backend as K
from arignote import config
from arignote.diagnostics.memory_plan import plan_memory
from arignote.errors import KerasNameMissing
from arignote.graph.network import Packing
from arignote.layers import LSTM, Conv2D, Dense, Input, SimpleRNN, concatenate
from arignote.layers.recurrent.rnn import states_set_aside
from arignote.models import Model, Sequential


@pytest.fixture(autouse=True)
def cpu():
    torch.manual_seed(0)
    with config.override(device="cpu", print_active_device=False):
        yield


# ------------------------------------------------ several inputs/outputs with variable-length dims

def test_packing_with_none_dims_takes_its_layout_from_the_data():
    p = Packing([(None, 3), (2,)], ["a", "b"])
    assert p.variable and p.width is None
    with pytest.raises(ValueError, match="depends on the data"):
        p.unpack(torch.zeros(1, 5))
    q = p.concrete([(4, 3), (2,)])
    assert q.bounds == [(0, 12), (12, 14)] and q.width == 14
    a, b = torch.arange(2 * 12.0).reshape(2, 4, 3), torch.ones(2, 2)
    ua, ub = q.unpack(Packing.pack([a, b]))
    assert torch.equal(ua, a) and torch.equal(ub, b)
    with pytest.raises(ValueError, match=r"a: expected samples of shape \(None, 3\), got \(4, 5\)"):
        p.concrete([(4, 5), (2,)])


def test_pack_promotes_three_dtypes():
    out = Packing.pack([torch.ones(2, 1, dtype=torch.int64), torch.ones(2, 1, dtype=torch.float16),
                        torch.ones(2, 1, dtype=torch.float32)])
    assert out.dtype == torch.float32 and out.shape == (2, 3)


def _seq2seq():
    enc_in, dec_in = Input(shape=(None, 3)), Input(shape=(None, 4))
    _, h, c = LSTM(5, return_state=True)(enc_in)
    decoder = LSTM(5, return_sequences=True, return_state=True)
    seq, _, _ = decoder(dec_in, initial_state=[h, c])
    dense = Dense(4, activation="softmax")
    return enc_in, dec_in, decoder, dense, Model([enc_in, dec_in], dense(seq))


def test_variable_length_inputs_train_and_predict_as_the_module_computes():
    enc_in, dec_in, _, _, model = _seq2seq()
    model.compile("rmsprop", "categorical_crossentropy")
    rng = np.random.RandomState(0)
    x1, x2 = rng.rand(8, 6, 3).astype("float32"), rng.rand(8, 2, 4).astype("float32")
    y = np.eye(4, dtype="float32")[rng.randint(0, 4, (8, 2))]
    history = model.fit([x1, x2], y, batch_size=4, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2
    got = model.predict([x1, x2])
    model.module.eval()
    with torch.no_grad():
        want = model.module([torch.from_numpy(x1), torch.from_numpy(x2)])
    assert got.shape == (8, 2, 4)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-6)
    # another length in the next call: the layout follows the data of each call
    assert model.predict([x1[:, :3], rng.rand(8, 5, 4).astype("float32")]).shape == (8, 5, 4)
    with pytest.raises(ValueError, match="expected samples of shape"):
        model.predict([x1, rng.rand(8, 5, 3).astype("float32")])


def test_several_variable_length_outputs_unpack_per_call():
    _, dec_in, decoder, dense, _ = _seq2seq()
    h_in, c_in = Input(shape=(5,)), Input(shape=(5,))
    seq, h, c = decoder(dec_in, initial_state=[h_in, c_in])
    step = Model([dec_in, h_in, c_in], [dense(seq), h, c])
    rng = np.random.RandomState(1)
    for steps in (1, 3):
        x = rng.rand(2, steps, 4).astype("float32")
        h0, c0 = rng.rand(2, 5).astype("float32"), rng.rand(2, 5).astype("float32")
        out, h1, c1 = step.predict([x, h0, c0])
        assert out.shape == (2, steps, 4) and h1.shape == (2, 5) and c1.shape == (2, 5)
        step.module.eval()
        with torch.no_grad():
            want = step.module([torch.from_numpy(a) for a in (x, h0, c0)])
        for g, w in zip((out, h1, c1), want):
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-6)


def test_fixed_shape_inputs_still_pack_statically():
    a, b = Input(shape=(2,)), Input(shape=(3,))
    model = Model([a, b], Dense(1)(concatenate([a, b])))
    assert model.module.input_packing.width == 5 and model.expected_input_shape() == (5,)


# ------------------------------------------------------------- Sequential.predict_classes / _proba

def test_predict_classes_is_the_argmax_or_the_half_threshold():
    x = np.random.RandomState(0).rand(6, 3).astype("float32")
    multi = Sequential([Dense(4, activation="softmax", input_shape=(3,))])
    np.testing.assert_array_equal(multi.predict_classes(x), multi.predict(x).argmax(-1))
    single = Sequential([Dense(1, activation="sigmoid", input_shape=(3,))])
    single.layers[0].set_weights([np.array([[1.0], [-1.0], [0.0]], "float32"), np.zeros(1, "float32")])
    classes = single.predict_classes(x)
    assert classes.dtype == np.int32 and classes.shape == (6, 1)  # Keras 2 keeps the unit axis
    np.testing.assert_array_equal(classes[:, 0], (x[:, 0] > x[:, 1]).astype("int32"))


def test_predict_proba_warns_on_values_that_are_not_probabilities():
    linear = Sequential([Dense(2, input_shape=(1,))])
    linear.layers[0].set_weights([np.array([[3.0, -3.0]], "float32"), np.zeros(2, "float32")])
    with pytest.warns(UserWarning, match="invalid probability values"):
        out = linear.predict_proba(np.ones((2, 1), "float32"))
    np.testing.assert_allclose(out, [[3.0, -3.0]] * 2)
    softmax = Sequential([Dense(2, activation="softmax", input_shape=(1,))])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        softmax.predict_proba(np.ones((2, 1), "float32"))


# ---------------------------------------------------------------------------------- K.cast dtypes

def test_cast_takes_names_numpy_and_torch_dtypes():
    x = torch.tensor([0.2, 0.7, 1.5])
    assert K.cast(x < 0.5, torch.float32).tolist() == [1.0, 0.0, 0.0]  # y_true.dtype inside a loss
    assert K.cast(x, "int64").tolist() == [0, 0, 1]
    assert K.cast(x, np.float64).dtype == torch.float64
    assert K.cast(x, np.dtype("bool")).tolist() == [True, True, True]
    with pytest.raises(ValueError, match="'float' is not a dtype|is not a dtype"):
        K.cast(x, "nope")


def test_cast_inside_a_custom_metric_of_a_trained_model():
    def accuracy(y_true, y_pred):  # mnist_siamese's metric: casts to the targets' dtype
        return K.mean(K.equal(y_true, K.cast(y_pred < 0.5, y_true.dtype)))

    model = Sequential([Dense(1, activation="sigmoid", input_shape=(2,))])
    model.compile("sgd", "binary_crossentropy", metrics=[accuracy])
    model.layers[0].set_weights([np.array([[10.0], [0.0]], "float32"), np.zeros(1, "float32")])
    x = np.array([[1, 0], [-1, 0], [1, 0], [-1, 0]], "float32")
    y = np.array([[0], [1], [1], [0]], "float32")  # the metric counts p < 0.5 as 1: rows 0 and 1 agree
    loss, acc = model.evaluate(x, y, verbose=0)
    assert acc == pytest.approx(0.5)


# ----------------------------------------------------------- stateful RNNs and the memory estimate

def test_memory_probes_leave_the_carried_states_alone():
    rnn = SimpleRNN(3, stateful=True)
    rnn(torch.ones(2, 4, 1))
    before = [s.clone() for s in rnn.states]
    plan_memory(rnn, torch.ones(8, 4, 1), batch=2, available=(1 << 30, "test"))
    assert len(rnn.states) == len(before)
    for now, was in zip(rnn.states, before):
        assert torch.equal(now, was)
    with states_set_aside(rnn) as clear:
        clear()
        assert rnn.states == [None]  # as Keras 2.3.1 shows a layer carrying no states
    assert torch.equal(rnn.states[0], before[0])


def test_stateful_lstm_fits_with_batch_size_one():
    model = Sequential([LSTM(4, input_shape=(1, 1), batch_size=1, stateful=True), Dense(1)])
    model.compile("adam", "mse")
    x = np.random.RandomState(0).rand(12, 1, 1).astype("float32")
    model.fit(x, x[:, 0], batch_size=1, epochs=1, verbose=0, shuffle=False)
    carried = model.layers[0].states[0]
    assert carried.shape == (1, 4) and float(carried.abs().sum()) > 0  # the last batch's state, carried on
    model.reset_states()
    assert float(model.layers[0].states[0].abs().sum()) == 0.0


def test_validation_data_of_another_length_is_refused_by_name():
    _, _, _, _, model = _seq2seq()
    model.compile("rmsprop", "categorical_crossentropy")
    rng = np.random.RandomState(0)
    x1, x2 = rng.rand(4, 6, 3).astype("float32"), rng.rand(4, 2, 4).astype("float32")
    y = np.eye(4, dtype="float32")[rng.randint(0, 4, (4, 2))]
    with pytest.raises(ValueError, match="validation_data: per-sample shapes"):
        model.fit([x1, x2], y, epochs=1, verbose=0, validation_data=([x1[:, :5], x2], y))
    model.fit([x1, x2], y, epochs=1, verbose=0, validation_data=([x1[:2], x2[:2]], y[:2]))


# ------------------------------------------------------------- K.gradients inside a Lambda (swwae)

def _where(x):  # mnist_swwae's trick: d sum(maxpool(y)) / d y marks where each max was
    before, after = x
    return K.gradients(K.sum(after), before)


def test_gradients_on_torch_tensors_match_autograd():
    w = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    x = torch.tensor([[1.0, 2.0, 3.0], [0.5, 0.5, 0.5]])
    y = x * w
    (g,) = K.gradients(K.sum(K.square(y)), [y])
    assert torch.allclose(g, 2 * y)
    assert g.requires_grad  # differentiable: a training step goes through it
    (unused,) = K.gradients(K.sum(y), [torch.ones(2, requires_grad=True)])
    assert unused.tolist() == [0.0, 0.0]
    with torch.no_grad():
        y0 = x * w
    with pytest.raises(ValueError, match="autograd recorded nothing the loss depends on"):
        K.gradients(K.sum(y0), [y0])


def test_lambda_taking_gradients_marks_the_max_positions_in_fit_and_predict():
    from arignote.layers import Lambda, MaxPooling2D

    inp = Input(shape=(4, 4, 1))
    pooled = MaxPooling2D(2)(inp)
    model = Model(inp, Lambda(_where, output_shape=lambda s: s[0])([inp, pooled]))
    x = np.zeros((1, 4, 4, 1), "float32")
    x[0, 0, 1, 0], x[0, 3, 3, 0], x[0, 2, 0, 0], x[0, 1, 2, 0] = 5.0, 4.0, 3.0, 2.0
    want = (x > 0).astype("float32")  # one maximum per 2x2 window
    np.testing.assert_array_equal(model.predict(x), want)  # predict runs under no_grad
    assert model.module.needs_autograd


def test_lambda_unpacks_a_one_tensor_list_as_keras():
    from arignote.layers import Lambda

    inp = Input(shape=(3,))
    out = Lambda(lambda t: [t * 2])(inp)
    assert out.shape == (None, 3)
    np.testing.assert_allclose(Model(inp, out).predict(np.ones((2, 3), "float32")), 2 * np.ones((2, 3)))


def test_a_model_with_a_gradient_lambda_trains_and_validates():
    from arignote.layers import Conv2D, Lambda, MaxPooling2D, UpSampling2D, multiply

    inp = Input(shape=(8, 8, 1))
    y = Conv2D(2, 3, padding="same")(inp)
    pooled = MaxPooling2D(2)(y)
    where = Lambda(_where, output_shape=lambda s: s[0])([y, pooled])
    out = Conv2D(1, 3, padding="same")(multiply([UpSampling2D(2)(pooled), where]))
    model = Model(inp, out)
    model.compile("adam", "mse")
    x = np.random.RandomState(0).rand(8, 8, 8, 1).astype("float32")
    before = [w.copy() for w in model.get_weights()]
    history = model.fit(x, x, batch_size=4, epochs=1, verbose=0, validation_data=(x, x))
    assert np.isfinite(history.history["val_loss"][0])
    assert any(not np.array_equal(a, b) for a, b in zip(before, model.get_weights()))


# ------------------------------------------------- summary() of a compiled multi-output model (acgan)

def test_summary_of_a_compiled_two_output_model_measures_with_its_loss(capsys):
    inp = Input(shape=(4,))
    model = Model(inp, [Dense(1, activation="sigmoid", name="real")(inp), Dense(3, name="aux")(inp)])
    model.compile("adam", ["binary_crossentropy", "mse"])
    model.summary()
    text = capsys.readouterr().out
    assert "Memory plan for batch 32" in text and "activations" in text
    # targets shaped like the packed outputs split per output, each loss on its own part
    y = torch.tensor([[1.0, 0.0, 0.0, 2.0]])
    pred = torch.tensor([[0.5, 0.0, 0.0, 0.0]])
    bce = -np.log(0.5)
    assert float(model.loss_fn(y, pred)) == pytest.approx(bce + 4.0 / 3.0, rel=1e-5)


# ------------------------------------------------ predict: the first input sets the length (Keras 2.3)

def test_predict_takes_the_first_inputs_length_as_keras_2_3():
    a, b = Input(shape=(2,)), Input(shape=(3,))
    model = Model([a, b], Dense(1)(concatenate([a, b])))
    rng = np.random.RandomState(0)
    xa, xb = rng.rand(3, 2).astype("float32"), rng.rand(5, 3).astype("float32")
    with pytest.warns(UserWarning, match=r"have \[3, 5\] samples; predicting for the first input's 3"):
        got = model.predict([xa, xb])
    np.testing.assert_allclose(got, model.predict([xa, xb[:3]]), rtol=1e-6)
    with pytest.raises(ValueError, match="same number of samples"):
        model.predict([xa, xb[:2]])  # shorter than the first: no rows to take
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match="same number of samples"):
        model.evaluate([xa, xb], np.zeros((3, 1)), verbose=0)  # fit/evaluate stay strict


# ------------------------------------------------- trainable is fixed at compile (mnist_acgan's GAN)

def _gan():
    disc = Sequential([Dense(1, activation="sigmoid", input_shape=(2,))])
    disc.compile("sgd", "binary_crossentropy")
    gen = Sequential([Dense(2, input_shape=(3,))])
    disc.trainable = False  # Keras 2's GAN recipe: freeze, then compile the combined model
    z = Input(shape=(3,))
    combined = Model(z, disc(gen(z)))
    combined.compile("sgd", "binary_crossentropy")
    return disc, gen, combined


def test_trainable_changed_after_compile_waits_for_the_next_compile():
    disc, gen, combined = _gan()
    rng = np.random.RandomState(0)
    d0, g0 = disc.get_weights(), gen.get_weights()
    disc.train_on_batch(rng.rand(4, 2).astype("float32"), np.ones((4, 1), "float32"))
    d1 = disc.get_weights()
    assert not np.array_equal(d0[0], d1[0])  # compiled while trainable: it still trains
    assert all(not p.requires_grad for p in disc.module.parameters())  # ... and stays frozen outside
    combined.train_on_batch(rng.rand(4, 3).astype("float32"), np.ones((4, 1), "float32"))
    for a, b in zip(d1, disc.get_weights()):
        np.testing.assert_array_equal(a, b)  # the combined model was compiled with it frozen
    assert not np.array_equal(g0[0], gen.get_weights()[0])
    combined.fit(rng.rand(8, 3).astype("float32"), np.ones((8, 1), "float32"), epochs=1, verbose=0)
    for a, b in zip(d1, disc.get_weights()):
        np.testing.assert_array_equal(a, b)
    disc.fit(rng.rand(8, 2).astype("float32"), np.zeros((8, 1), "float32"), epochs=1, verbose=0)
    assert not np.array_equal(d1[0], disc.get_weights()[0])


# ------------------------------------------- K.variable of a reversed view; Constant(matrix); losses

def test_variable_and_constant_take_reversed_views():
    rgb = np.arange(12, dtype="float32").reshape(1, 2, 2, 3)
    bgr = rgb[..., ::-1]  # what the style-transfer examples' preprocessing hands K.variable
    v = K.variable(bgr)
    np.testing.assert_array_equal(K.get_value(v), bgr)
    assert v.requires_grad
    np.testing.assert_array_equal(K.constant(bgr).numpy(), bgr)


def test_constant_initializer_takes_the_whole_embedding_matrix():
    from arignote.initializers import Constant
    from arignote.layers import Embedding

    matrix = np.random.RandomState(0).rand(5, 3).astype("float32")
    layer = Embedding(5, 3, embeddings_initializer=Constant(matrix), trainable=False)
    out = layer(torch.tensor([[4, 0, 2]]))
    np.testing.assert_allclose(out.detach().numpy()[0], matrix[[4, 0, 2]], rtol=1e-6)
    np.testing.assert_allclose(Constant(2.5)((2,)).numpy(), [2.5, 2.5])
    with pytest.raises(ValueError, match=r"shape \(5, 3\) cannot fill a weight of shape \(4, 3\)"):
        Constant(matrix)((4, 3))


def test_builtin_losses_on_graph_tensors_feed_add_loss():
    from arignote import losses

    inp = Input(shape=(4,))
    out = Dense(4, activation="sigmoid")(inp)
    model = Model(inp, out)
    model.add_loss(K.mean(losses.binary_crossentropy(inp, out) * 4.0))  # the VAE example's recipe
    model.compile("adam")
    x = np.random.RandomState(0).rand(8, 4).astype("float32")
    p = np.clip(model.predict(x), 1e-7, 1 - 1e-7)
    want = 4.0 * np.mean(-(x * np.log(p) + (1 - x) * np.log(1 - p)))
    assert model.evaluate(x, None, verbose=0) == pytest.approx(want, rel=1e-4)
    assert losses.get("binary_crossentropy") is losses.binary_crossentropy  # one object either way
    assert losses.per_sample(losses.binary_crossentropy) is not None  # sample weights still find it


# ------------------------------------------- K.placeholder and the rest of Keras 2.3's backend names

def test_placeholder_feeds_k_function_and_gradients():
    x = K.placeholder(shape=(2, 3))
    assert x.shape == (2, 3) and K.is_placeholder(x) and not K.is_keras_tensor(x)  # as in Keras 2.3.1
    loss = K.sum(K.square(x))
    f = K.function([x], [loss, K.gradients(loss, x)[0]])
    value = np.array([[1.0, 2.0, 3.0], [0.0, -1.0, 0.5]], "float32")
    out, grad = f([value])
    assert float(out) == pytest.approx((value ** 2).sum())
    np.testing.assert_allclose(grad, 2 * value)
    assert K.placeholder(ndim=3).shape == (None, None, None)
    with pytest.raises(ValueError, match="no sparse inputs"):
        K.placeholder(shape=(2,), sparse=True)


def test_an_application_on_a_placeholder_concatenated_with_a_variable():
    from arignote.applications import vgg16

    image = K.variable(np.random.RandomState(0).rand(1, 32, 32, 3).astype("float32"))
    target = K.placeholder((1, 32, 32, 3))
    both = K.concatenate([image, target], axis=0)
    model = vgg16.VGG16(input_tensor=both, weights=None, include_top=False)
    # as Keras 2: a backend tensor is wrapped in Input(tensor=...), the model's first layer (neural_doodle
    # pairs model.layers[1:] with its mask model's layers)
    start = model.inputs[0]._keras_history[0]
    assert type(start).__name__ == "InputLayer" and start._inbound_nodes[0].input_tensors[0] is both
    assert [layer.name for layer in model.layers[:2]] == [start.name, "block1_conv1"]
    features = model.get_layer("block1_conv1").output
    loss = K.sum(K.square(features[0] - features[1]))
    f = K.function([target], [loss])
    assert float(f([K.get_value(image)])[0]) == pytest.approx(0.0, abs=1e-6)  # the same picture twice
    assert float(f([np.zeros((1, 32, 32, 3), "float32")])[0]) > 0


def test_small_backend_functions_against_numpy():
    a = np.arange(24, dtype="float32").reshape(2, 3, 4)
    np.testing.assert_array_equal(K.reverse(torch.from_numpy(a), axes=[1, -1]).numpy(), a[:, ::-1, ::-1])
    np.testing.assert_array_equal(K.identity(torch.from_numpy(a)).numpy(), a)
    assert int(K.size(torch.from_numpy(a))) == 24
    assert K.is_variable(K.variable(a)) and not K.is_variable(torch.from_numpy(a)) and not K.is_sparse(a)
    bias = np.array([1.0, 2.0, 3.0, 4.0], "float32")
    np.testing.assert_array_equal(K.bias_add(torch.from_numpy(a), torch.from_numpy(bias)).numpy(), a + bias)
    img = np.ones((2, 3, 4, 5), "float32")  # channels_first: channels on axis 1
    cf = K.bias_add(torch.from_numpy(img), torch.tensor([1.0, 2.0, 3.0]), data_format="channels_first")
    np.testing.assert_array_equal(cf.numpy()[:, :, 0, 0], [[2.0, 3.0, 4.0]] * 2)


def test_backend_names_of_keras_2_are_all_provided_and_unknown_ones_stay_attribute_errors():
    from arignote.backend import NOT_PROVIDED, NotProvidedError

    # the once left-out ones (conv2d, rnn, ctc_decode ...) are functions now (tests/test_backend_nn_keras2.py,
    # tests/test_backend_control.py); left out on purpose: the TensorFlow backend's session pair
    assert set(NOT_PROVIDED) == {"get_session", "set_session"}
    for name in NOT_PROVIDED:
        with pytest.raises(NotProvidedError, match=f"backend.{name} .*deliberately.*memory.limit=40%"):
            getattr(K, name)
    names = ("conv2d", "rnn", "map_fn", "resize_images", "ctc_decode")
    assert all(callable(getattr(K, name)) for name in names)
    from arignote.backend import ctc_batch_cost  # noqa: F401
    assert NotProvidedError is KerasNameMissing  # one family for every left-out Keras name
    assert not hasattr(K, "no_such_function")  # an unknown name is still a plain AttributeError


def test_keras_2_0_to_2_2s_dim_ordering_pair_sets_the_image_data_format():
    """``K.set_image_dim_ordering('th')`` (Keras 2.0-2.2 exported it from every backend, and 2016-2018
    tutorials call it first) is the same as ``set_image_data_format('channels_first')``."""
    try:
        K.set_image_dim_ordering("th")
        assert K.image_data_format() == "channels_first" and K.image_dim_ordering() == "th"
        assert Conv2D(2, 3).data_format == "channels_first"
        K.set_image_dim_ordering("tf")
        assert K.image_data_format() == "channels_last" and K.image_dim_ordering() == "tf"
        with pytest.raises(ValueError, match="Unknown dim_ordering: 'channels_first'.*'th'"):
            K.set_image_dim_ordering("channels_first")
    finally:
        K.set_image_data_format("channels_last")


def test_backend_operations_keep_a_first_dim_their_inputs_fix():
    image = K.variable(np.zeros((1, 8, 8, 3), "float32"))
    target = K.placeholder((1, 8, 8, 3))
    batch = K.concatenate([image, image, target], axis=0)
    assert batch.shape == (3, 8, 8, 3)  # the style-transfer examples index batch[2]
    assert batch[2].shape == (8, 8, 3)
    x = Input(shape=(4,))
    assert K.sum(x, axis=0).shape == (4,) and K.transpose(x).shape == (4, None)
    assert (x * 2).shape == (None, 4) and K.mean(x, axis=-1).shape == (None,)  # the batch stays unknown
    assert Dense(2)(x).shape == (None, 2)
