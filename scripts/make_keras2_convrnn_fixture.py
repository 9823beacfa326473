"""Regenerate tests/fixtures/keras2/convrnn/convlstm2d_*.h5 and convlstm2d.npz: Keras 2.3.1 (Theano
backend) models of ``ConvLSTM2D`` layers (a ``ConvRNN2D`` around ``ConvLSTM2DCell`` in Keras 2.3.1) with fixed
weights, saved by Keras's own ``model.save``; the .npz keeps the inputs and Keras's predictions, for
tests/test_conv_rnn2d.py.

* ``convlstm2d_branches.h5``: one input, seven ConvLSTM2D branches (``return_sequences`` on and off,
  ``go_backwards``, ``padding`` same/valid, dilation, no bias, even kernels).
* ``convlstm2d_first.h5``: a ``channels_first`` model (the same input transposed), two branches
  (strides; ``go_backwards`` with 'same' padding).
* ``convlstm2d_masked.h5``: a ``Lambda`` masking frames of zeros, then ConvLSTM2D (sequence;
  ``go_backwards``). Keras 2.3.1 does not save a Lambda's ``mask``: the test builds the same model
  and loads the file's weights.
* ``convlstm2d_state.h5``: ``return_state=True`` (outputs ``[sequence, h, c]``), ``go_backwards``.
* ``convlstm2d_stateful.h5``: ``stateful=True`` with a fixed batch; the .npz holds two consecutive
  predictions and one after ``reset_states()``.

Strided convolutions use ``valid`` padding: with strides, Theano's 'same' may pad another side than
TensorFlow's (a difference of the backends, not of the layer).

Run in the side venv (scripts/setup-keras2-venv.sh), from the repository root::

    /work/k2venv/bin/python scripts/make_keras2_convrnn_fixture.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras2_shim  # noqa: E402,F401,I001  (before keras)
import numpy as np  # noqa: E402
from keras import backend as K  # noqa: E402
from keras.layers import ConvLSTM2D, Input, Lambda  # noqa: E402
from keras.models import Model, Sequential  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# a folder of their own: tests/test_keras2_h5_files.py pairs every <name>.npz in keras2/ with a one-output .h5
HERE = os.path.join(ROOT, "tests", "fixtures", "keras2", "convrnn")
SEQ = (4, 7, 6, 3)  # time, rows, cols, channels


def _force_unrolled_rnn():
    """Theano's scan needs a C extension that does not build on Python 3.11; ConvRNN2D refuses
    ``unroll=True`` and calls ``K.rnn`` without it, so unroll there (same results, known length)."""
    rnn = K.rnn

    def unrolled(*args, **kwargs):
        kwargs["unroll"] = True
        return rnn(*args, **kwargs)

    K.rnn = unrolled


def branches():
    x = Input(SEQ)
    outs = [
        ConvLSTM2D(2, 3, padding="same", return_sequences=True, name="seq_same")(x),
        ConvLSTM2D(3, (3, 1), name="last_valid")(x),
        ConvLSTM2D(2, 3, padding="same", go_backwards=True, return_sequences=True, activation="relu",
                   recurrent_activation="sigmoid", name="back_seq")(x),
        ConvLSTM2D(2, 3, dilation_rate=2, return_sequences=True, name="dilated")(x),
        ConvLSTM2D(2, 3, padding="same", use_bias=False, unit_forget_bias=False, name="no_bias")(x),
        # even kernels: Theano's 'same' pads the odd row/column before the image (the recurrent
        # convolution is always 'same')
        ConvLSTM2D(2, 2, padding="same", return_sequences=True, name="even_same")(x),
        ConvLSTM2D(2, (2, 3), name="even_valid")(x),
    ]
    return Model(x, outs)


def channels_first():
    x = Input((SEQ[0], SEQ[3], SEQ[1], SEQ[2]))  # time, channels, rows, cols
    outs = [
        ConvLSTM2D(2, 3, strides=2, data_format="channels_first", return_sequences=True,
                   name="first_strided")(x),
        ConvLSTM2D(2, (1, 3), padding="same", data_format="channels_first", go_backwards=True,
                   name="first_back")(x),
    ]
    return Model(x, outs)


def masked():
    # Keras 2.3.1's K.rnn wants a (samples, time) mask (Masking on images gives one per pixel and
    # fails there): a Lambda says which frames are all padding
    x = Input(SEQ)
    m = Lambda(lambda t: t, mask=lambda t, mask: K.any(K.not_equal(t, 0.0), axis=[2, 3, 4]), name="frames")(x)
    outs = [
        ConvLSTM2D(2, 3, padding="same", return_sequences=True, name="masked_seq")(m),
        ConvLSTM2D(2, 3, padding="same", go_backwards=True, name="masked_back")(m),
    ]
    return Model(x, outs)


def with_state():
    # Keras 2.3.1 cannot take initial_state as Keras tensors here: ConvRNN2D.__call__ hands RNN.__call__
    # both the full input list and initial_state=, which _standardize_args refuses (AssertionError)
    x = Input((4, 5, 5, 2))
    outs = ConvLSTM2D(2, 3, padding="same", go_backwards=True, return_sequences=True, return_state=True,
                      name="conv_state")(x)
    return Model(x, outs)


def stateful():
    return Sequential([ConvLSTM2D(2, 3, padding="same", stateful=True, batch_input_shape=(2, 3, 5, 5, 2),
                                  name="conv_stateful")])


def fix_weights(model, rng):
    model.set_weights([rng.uniform(-0.5, 0.5, w.shape).astype("float32") for w in model.get_weights()])


def main():
    _force_unrolled_rnn()
    rng = np.random.RandomState(7)
    out = {}

    model = branches()
    fix_weights(model, rng)
    x = rng.uniform(-1, 1, (2, *SEQ)).astype("float32")
    model.save(os.path.join(HERE, "convlstm2d_branches.h5"))
    out["branches_x"] = x
    for layer_name, y in zip(model.output_names, model.predict(x)):
        out["branches_" + layer_name] = y

    model = channels_first()
    fix_weights(model, rng)
    x = np.ascontiguousarray(x.transpose(0, 1, 4, 2, 3))
    model.save(os.path.join(HERE, "convlstm2d_first.h5"))
    out["first_x"] = x
    for layer_name, y in zip(model.output_names, model.predict(x)):
        out["first_" + layer_name] = y

    model = masked()
    fix_weights(model, rng)
    x = rng.uniform(-1, 1, (3, *SEQ)).astype("float32")
    x[0, 2] = x[1, 0] = x[1, 3] = x[2, 1:3] = 0.0  # padding frames: a middle one, first, last, two
    model.save(os.path.join(HERE, "convlstm2d_masked.h5"))
    out["masked_x"] = x
    for layer_name, y in zip(model.output_names, model.predict(x)):
        out["masked_" + layer_name] = y

    model = with_state()
    fix_weights(model, rng)
    x = rng.uniform(-1, 1, (2, 4, 5, 5, 2)).astype("float32")
    model.save(os.path.join(HERE, "convlstm2d_state.h5"))
    out["state_x"] = x
    for i, y in enumerate(model.predict(x)):
        out[f"state_y{i}"] = y

    model = stateful()
    fix_weights(model, rng)
    model.save(os.path.join(HERE, "convlstm2d_stateful.h5"))
    x1, x2 = (rng.uniform(-1, 1, (2, 3, 5, 5, 2)).astype("float32") for _ in range(2))
    out.update(stateful_x1=x1, stateful_x2=x2)
    out["stateful_y1"] = model.predict(x1, batch_size=2)
    out["stateful_y2"] = model.predict(x2, batch_size=2)
    model.reset_states()
    out["stateful_y2_reset"] = model.predict(x2, batch_size=2)

    np.savez_compressed(os.path.join(HERE, "convlstm2d.npz"), **out)
    for k, v in sorted(out.items()):
        print(k, v.shape)


if __name__ == "__main__":
    main()
