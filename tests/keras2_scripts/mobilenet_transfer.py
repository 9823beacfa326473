"""Transfer learning and fine-tuning with a pretrained-application base, in the style of the Keras 2
applications docs ("Fine-tune InceptionV3 on a new set of classes") and the 2018-2019 blog posts
("Transfer Learning using Mobilenet and Keras"): base_model = MobileNet(weights=..., include_top=False),
x = base_model.output, GlobalAveragePooling2D()(x), Dense(.., activation='relu'), a softmax
Dense, model = Model(inputs=base_model.input, outputs=preds); every base layer set
layer.trainable = False, compile('rmsprop', 'categorical_crossentropy') and train the head; then
for layer in model.layers[:N]: layer.trainable = False / for layer in model.layers[N:]:
layer.trainable = True, recompile with SGD(lr=0.0001, momentum=0.9) ("we need to recompile the model
for these modifications to take effect") and train again; preprocess_input from
keras.applications.mobilenet.

MobileNet has weights=None here (no download), alpha=0.25 and 32x32 pictures (made up: a bright
red square or a blue ring). What Keras 2.3.1 does and the script asserts: with the base frozen, fit
leaves every base weight bit-for-bit unchanged, the BatchNormalization moving statistics included
(Keras 2.3.1 collects no updates from a layer with trainable=False); the trainable-weight counts
follow the flags after each compile; after unfreezing, the top layers change and the frozen bottom
does not; and the fine-tuning SGD runs at the lr it was given. (A random base gives no useful features, so
what the model learned is only printed.)

Checked on real Keras 2.3.1 (Theano backend) with scripts/run_keras2_scripts_on_keras.py.
"""
import numpy as np

from arignote import backend as K
from arignote.applications.mobilenet import MobileNet, preprocess_input
from arignote.layers import Dense, GlobalAveragePooling2D
from arignote.models import Model
from arignote.optimizers import SGD
from arignote.utils import to_categorical

np.random.seed(6)


def make_pictures(n):
    x = np.random.uniform(0, 80, (n, 32, 32, 3)).astype('float32')
    y = np.random.randint(0, 2, n)
    yy, xx = np.mgrid[:32, :32]
    for i in range(n):
        cy, cx = np.random.randint(10, 22, 2)
        if y[i] == 0:
            x[i, cy - 5:cy + 5, cx - 5:cx + 5, 0] += 170
        else:
            r = np.sqrt((yy - cy) ** 2 + (xx - cx) ** 2)
            x[i, (r > 4) & (r < 7), 2] += 170
    return preprocess_input(x), to_categorical(y, 2)


x_train, y_train = make_pictures(160)
x_val, y_val = make_pictures(64)
assert -1.0 <= x_train.min() and x_train.max() <= 1.0  # preprocess_input: x / 127.5 - 1

# create the base pre-trained model
base_model = MobileNet(input_shape=(32, 32, 3), alpha=0.25, weights=None, include_top=False)
n_base = len(base_model.layers)

# add a global spatial average pooling layer
x = base_model.output
x = GlobalAveragePooling2D()(x)
# let's add a fully-connected layer
x = Dense(64, activation='relu')(x)
# and a logistic layer -- let's say we have 2 classes
predictions = Dense(2, activation='softmax')(x)

# this is the model we will train
model = Model(inputs=base_model.input, outputs=predictions)

# first: train only the top layers (which were randomly initialized)
# i.e. freeze all convolutional MobileNet layers
for layer in base_model.layers:
    layer.trainable = False

# compile the model (should be done *after* setting layers to non-trainable)
model.compile(optimizer='rmsprop', loss='categorical_crossentropy', metrics=['accuracy'])
assert len(model.trainable_weights) == 4, len(model.trainable_weights)
n_all = len(model.weights)

base_before = [w.copy() for w in base_model.get_weights()]
head_before = [w.copy() for w in model.layers[-1].get_weights()]
# train the model on the new data for a few epochs
model.fit(x_train, y_train, batch_size=32, epochs=4, verbose=0)
for a, b in zip(base_before, base_model.get_weights()):
    np.testing.assert_array_equal(a, b)  # kernels and BatchNormalization moving statistics alike
assert any(not np.array_equal(a, b) for a, b in zip(head_before, model.layers[-1].get_weights()))

# at this point, the top layers are well trained and we can start fine-tuning
# convolutional layers from MobileNet. Let's visualize layer names and layer indices
# to see how many layers we should freeze:
for i, layer in enumerate(base_model.layers[-6:]):
    print(n_base - 6 + i, layer.name)

# we chose to train the top depthwise-separable block (the last 6 layers of the base)
N = n_base - 6
for layer in model.layers[:N]:
    layer.trainable = False
for layer in model.layers[N:]:
    layer.trainable = True
assert type(model.layers[N]).__name__ == 'DepthwiseConv2D', type(model.layers[N]).__name__

# we need to recompile the model for these modifications to take effect
# we use SGD with a low learning rate
model.compile(optimizer=SGD(lr=0.0001, momentum=0.9), loss='categorical_crossentropy', metrics=['accuracy'])
# DepthwiseConv2D (1 kernel), BN (gamma, beta), Conv2D (1 kernel), BN (gamma, beta), the head (4)
assert len(model.trainable_weights) == 10, [K.int_shape(w) for w in model.trainable_weights]
assert len(model.weights) == n_all
np.testing.assert_allclose(K.get_value(model.optimizer.lr), 0.0001, rtol=1e-6)

bottom_before = [w.copy() for layer in model.layers[:N] for w in layer.get_weights()]
top_before = [w.copy() for layer in model.layers[N:n_base] for w in layer.get_weights()]
history = model.fit(x_train, y_train, batch_size=32, epochs=6, validation_data=(x_val, y_val), verbose=0)
bottom_after = [w for layer in model.layers[:N] for w in layer.get_weights()]
top_after = [w for layer in model.layers[N:n_base] for w in layer.get_weights()]
for a, b in zip(bottom_before, bottom_after):
    np.testing.assert_array_equal(a, b)
changed = [not np.array_equal(a, b) for a, b in zip(top_before, top_after)]
assert all(changed), changed  # kernels, gamma/beta and the unfrozen BN's moving statistics
print(history.history['val_accuracy'])

# With weights=None the base is random and its frozen layers' moving statistics are still their
# initial zeros and ones (Keras 2.3.1 never updates a frozen BatchNormalization), so accuracies say
# little here (no ImageNet features) and are only printed; K.function with the learning phase gives
# the output under the batch statistics the model trained with.
loss, acc = model.evaluate(x_val, y_val, verbose=0)
print('val accuracy (inference mode) %.3f' % acc)
get_output = K.function([model.input, K.learning_phase()], [model.output])
proba = get_output([x_val, 1])[0]
print('val accuracy (batch statistics) %.3f' % (proba.argmax(1) == y_val.argmax(1)).mean())
assert np.isfinite(history.history['loss']).all() and np.isfinite(loss)
np.testing.assert_allclose(proba.sum(1), 1, rtol=1e-5)
print('OK mobilenet_transfer')
