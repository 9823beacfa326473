"""Print what numpy's global RNG gives after Keras 2.3.1 (Theano backend) builds models under
``numpy.random.seed(7)``: the figures in tests/test_random_state.py (Keras draws one
``np.random.randint(1, 10e6)`` per random initializer and noise layer with ``seed=None``; arignote
draws the same).

Run in the side venv (scripts/setup-keras2-venv.sh), from the repository root::

    THEANO_FLAGS=base_compiledir=/tmp/kl_theano,blas.ldflags=,floatX=float32 \\
        /work/k2venv/bin/python scripts/keras2_numpy_stream.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras2_shim  # noqa: E402,F401,I001  (before keras)
import numpy as np  # noqa: E402
from keras.layers import AlphaDropout, Conv2D, Dense, Dropout, Flatten, GaussianDropout, GaussianNoise  # noqa: E402
from keras.models import Sequential  # noqa: E402

np.random.seed(7)
Sequential([Dense(3, input_dim=2), Dense(1)])
print("dense", repr(float(np.random.rand())))
np.random.seed(7)
Sequential([Conv2D(4, (3, 3), input_shape=(8, 8, 1)), Flatten(), Dense(2, kernel_initializer="he_normal",
                                                                      bias_initializer="random_normal")])
print("conv", repr(float(np.random.rand())))
np.random.seed(7)  # a draw per noise layer too (its seed, taken when the layer is called)
Sequential([Dense(4, input_dim=3), Dropout(0.5), GaussianNoise(0.1), Dropout(0.2, seed=1), Dropout(0.0),
            GaussianDropout(0.3), AlphaDropout(0.1), Dense(1)])
print("noise", repr(float(np.random.rand())))
