"""Visualizing what a convnet's filters respond to, in the style of the Keras blog post "How
convolutional neural networks see the world" (2016) and Keras 2's examples/conv_filter_visualization.py:
the loss is a layer's mean activation for one filter, K.gradients of it with respect to the input image,
normalized, a K.function([input_img], [loss, grads]) and a gradient ascent loop from a noisy grey image;
deprocess_image turns the result into a uint8 picture. (The blog's ``K.gradients(loss, input_img)[0]``
is the gradient on TensorFlow, and on Theano that of the first image of the batch, as here.)

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py.
"""
import numpy as np

from arignote import backend as K
from arignote.layers import Conv2D, Input, MaxPooling2D
from arignote.models import Model

np.random.seed(0)
img_width = img_height = 24

input_img = Input(shape=(img_width, img_height, 3), name='input')
x = Conv2D(8, (3, 3), activation='relu', padding='same', name='block1_conv1')(input_img)
x = Conv2D(8, (3, 3), activation='relu', padding='same', name='block1_conv2')(x)
x = MaxPooling2D((2, 2), name='block1_pool')(x)
x = Conv2D(16, (3, 3), activation='relu', padding='same', name='block2_conv1')(x)
model = Model(input_img, x)
model.summary()

layer_dict = dict([(layer.name, layer) for layer in model.layers[1:]])
layer_name = 'block2_conv1'


def deprocess_image(x):
    # normalize tensor: center on 0., ensure std is 0.1
    x -= x.mean()
    x /= (x.std() + K.epsilon())
    x *= 0.1
    # clip to [0, 1]
    x += 0.5
    x = np.clip(x, 0, 1)
    # convert to RGB array
    x *= 255
    x = np.clip(x, 0, 255).astype('uint8')
    return x


def normalize(x):
    # utility function to normalize a tensor by its L2 norm
    return x / (K.sqrt(K.mean(K.square(x))) + K.epsilon())


kept_filters = []
for filter_index in range(4):
    layer_output = layer_dict[layer_name].output
    loss = K.mean(layer_output[:, :, :, filter_index])

    # compute the gradient of the input picture wrt this loss
    grads = K.gradients(loss, input_img)[0]
    grads = normalize(grads)

    # this function returns the loss and grads given the input picture
    iterate = K.function([input_img], [loss, grads])

    step = 1.
    input_img_data = np.random.random((1, img_width, img_height, 3))
    input_img_data = (input_img_data - 0.5) * 20 + 128

    start_value = None
    for _ in range(20):
        loss_value, grads_value = iterate([input_img_data])
        # (1, w, h, 3); Keras 2.3.1's Theano backend gives (w, h, 3): its K.gradients(loss, x) is not a list
        assert grads_value.shape[-3:] == (img_width, img_height, 3)
        if start_value is None:
            start_value = loss_value
        input_img_data += grads_value * step
    loss_value, _ = iterate([input_img_data])
    print(f'Filter {filter_index}: loss {start_value:f} -> {loss_value:f}')
    if loss_value > 0:
        img = deprocess_image(input_img_data[0])
        kept_filters.append((img, loss_value, start_value))

assert kept_filters, 'gradient ascent found no input that activates a filter'
for img, loss_value, start_value in kept_filters:
    assert img.shape == (img_width, img_height, 3) and img.dtype == np.uint8
    assert loss_value > start_value, (start_value, loss_value)

# the gradient is the real one: check it against a finite difference of the loss
layer_output = layer_dict[layer_name].output
point = np.random.random((1, img_width, img_height, 3)).astype('float32')
for filter_index in range(K.int_shape(layer_output)[-1]):  # a filter the point activates (not a dead ReLU)
    loss = K.mean(layer_output[:, :, :, filter_index])
    grads = K.gradients(loss, [input_img])[0]
    fn = K.function([input_img], [loss, grads])
    value, grad = fn([point])
    if value > 0 and np.abs(grad).sum() > 0:
        break
eps = 1e-3
numeric, analytic = [], []
for _ in range(8):  # finite differences along random directions (a ReLU kink may spoil one of them)
    direction = np.random.randn(*point.shape).astype('float32')
    up = fn([point + eps * direction])[0]
    down = fn([point - eps * direction])[0]
    numeric.append((up - down) / (2 * eps))
    analytic.append(float((grad * direction).sum()))
print('directional derivatives', np.round(numeric, 5), np.round(analytic, 5))
assert np.corrcoef(numeric, analytic)[0, 1] > 0.95, (numeric, analytic)
np.testing.assert_allclose(np.median(np.abs(numeric)), np.median(np.abs(analytic)), rtol=0.2)

# stitch the kept filters into one picture
margin = 2
n = len(kept_filters)
stitched = np.zeros((img_width, n * img_height + (n - 1) * margin, 3), dtype='uint8')
for i, (img, _, _) in enumerate(kept_filters):
    stitched[:, i * (img_height + margin):i * (img_height + margin) + img_height, :] = img
assert stitched.max() > 0
print('OK filter_visualization', len(kept_filters))
