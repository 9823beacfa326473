"""Custom objects the way Keras 2 users registered them (2017-2019 blog posts and Stack Overflow
answers): a custom activation added to get_custom_objects(), a custom metric and a custom loss
function, a Layer subclass with get_config; model.save / load_model(custom_objects=...) and
to_json / model_from_json + save_weights / load_weights.

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py.
"""
import numpy as np

from arignote import backend as K
from arignote.engine.topology import Layer
from arignote.layers import Activation, Dense
from arignote.models import Sequential, load_model, model_from_json
from arignote.utils.generic_utils import get_custom_objects


def swish(x):
    return x * K.sigmoid(x)


# (the other spelling, {'swish': Activation(swish)}, trains but Keras 2.3.1's model.save then fails:
# AttributeError: 'Activation' object has no attribute '__name__')
get_custom_objects().update({'swish': swish})


def rmse(y_true, y_pred):
    return K.sqrt(K.mean(K.square(y_pred - y_true), axis=-1))


def huber_loss(y_true, y_pred, clip_delta=1.0):
    error = y_true - y_pred
    cond = K.abs(error) < clip_delta
    squared_loss = 0.5 * K.square(error)
    linear_loss = clip_delta * (K.abs(error) - 0.5 * clip_delta)
    return K.mean(K.switch(cond, squared_loss, linear_loss), axis=-1)


class Scale(Layer):
    """Multiplies its input by a learned per-feature scale, then adds a fixed offset."""

    def __init__(self, offset=0.0, **kwargs):
        self.offset = offset
        super().__init__(**kwargs)

    def build(self, input_shape):
        self.scale = self.add_weight(name='scale', shape=(input_shape[-1],), initializer='ones',
                                     trainable=True)
        super().build(input_shape)

    def call(self, x):
        return x * self.scale + self.offset

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = {'offset': self.offset}
        base_config = super().get_config()
        return dict(list(base_config.items()) + list(config.items()))


np.random.seed(3)
x = np.random.randn(400, 5).astype('float32')
y = (np.sin(x[:, :1]) + 0.5 * x[:, 1:2] ** 2).astype('float32')

model = Sequential()
model.add(Dense(16, input_shape=(5,)))
model.add(Activation('swish'))
model.add(Dense(16, activation='swish'))
model.add(Dense(1))
model.add(Scale(offset=0.25, name='scale'))
model.compile(loss=huber_loss, optimizer='adam', metrics=[rmse, 'mae'])
before = model.evaluate(x, y, verbose=0)
hist = model.fit(x, y, epochs=40, batch_size=32, verbose=0)
after = model.evaluate(x, y, verbose=0)
print(model.metrics_names, before, after)
assert model.metrics_names == ['loss', 'rmse', 'mae']
assert 'rmse' in hist.history
assert after[0] < before[0] * 0.5, (before, after)
# the metric is what the function computes, averaged over the samples
pred = model.predict(x)
np.testing.assert_allclose(after[1], np.abs(pred - y).mean(), rtol=1e-3)  # one output: rmse per sample == |e|
np.testing.assert_allclose(after[2], np.abs(pred - y).mean(), rtol=1e-3)

model.save('m.h5')
custom = {'swish': swish, 'rmse': rmse, 'huber_loss': huber_loss, 'Scale': Scale}
again = load_model('m.h5', custom_objects=custom)
np.testing.assert_allclose(again.predict(x[:16]), pred[:16], rtol=1e-5, atol=1e-6)
assert again.get_layer('scale').offset == 0.25
np.testing.assert_allclose(again.evaluate(x, y, verbose=0), after, rtol=1e-4)
again.fit(x, y, epochs=1, batch_size=32, verbose=0)  # the optimizer state came back too

json_string = model.to_json()
model.save_weights('w.h5')
rebuilt = model_from_json(json_string, custom_objects={'Scale': Scale})
rebuilt.load_weights('w.h5')
np.testing.assert_allclose(rebuilt.predict(x[:16]), pred[:16], rtol=1e-5, atol=1e-6)
assert rebuilt.layers[-1].get_config()['offset'] == 0.25
try:
    model_from_json(json_string)
except ValueError as e:
    assert 'Scale' in str(e), e
else:
    raise AssertionError('an unknown layer class must be refused')
print('OK custom_objects', after)
