"""A custom layer the way the Keras 2 docs write one ("Writing your own Keras layers"), used in
Sequential and functional models, saved and reloaded with custom_objects.

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py.
"""
import os
import tempfile

import numpy as np

from arignote import backend as K
from arignote.engine.topology import Layer
from arignote.layers import Dense, Input
from arignote.models import Model, Sequential, load_model


class MyLayer(Layer):

    def __init__(self, output_dim, **kwargs):
        self.output_dim = output_dim
        super().__init__(**kwargs)

    def build(self, input_shape):
        assert len(input_shape) == 2 and input_shape[0] is None
        # Create a trainable weight variable for this layer.
        self.kernel = self.add_weight(name='kernel',
                                      shape=(input_shape[1], self.output_dim),
                                      initializer='uniform',
                                      trainable=True)
        super().build(input_shape)  # Be sure to call this at the end

    def call(self, x):
        return K.dot(x, self.kernel)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.output_dim)

    def get_config(self):
        config = {'output_dim': self.output_dim}
        base_config = super().get_config()
        return dict(list(base_config.items()) + list(config.items()))


np.random.seed(0)
w = np.random.randn(6, 1)
x = np.random.randn(512, 6).astype('float32')
y = x @ w

model = Sequential([MyLayer(8, input_shape=(6,)), Dense(1)])
model.compile('adam', 'mse')
before = model.evaluate(x, y, verbose=0)
model.fit(x, y, epochs=40, batch_size=32, verbose=0)
after = model.evaluate(x, y, verbose=0)
assert after < before * 0.2, (before, after)

inp = Input(shape=(6,))
out = Dense(1)(MyLayer(4, name='mine')(inp))
functional = Model(inputs=inp, outputs=out)
assert functional.get_layer('mine').output_shape == (None, 4)
assert K.int_shape(functional.get_layer('mine').kernel) == (6, 4)

path = os.path.join(tempfile.mkdtemp(), 'custom.h5')
model.save(path)
again = load_model(path, custom_objects={'MyLayer': MyLayer})
np.testing.assert_allclose(again.predict(x[:8]), model.predict(x[:8]), rtol=1e-5, atol=1e-6)
print('OK custom_layer', before, after)
