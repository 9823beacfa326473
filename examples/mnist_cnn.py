'''Trains a simple convnet on the MNIST dataset.

The classic Keras 2 example (keras/examples/mnist_cnn.py) with only the imports changed from keras
to arignote. Gets to 99.25% test accuracy after 12 epochs.

    python examples/mnist_cnn.py                 # real MNIST (ARIGNOTE_DATA, ~/.keras/datasets, download)
    python examples/mnist_cnn.py --synthetic --epochs 1
'''


import argparse

import arignote
from arignote import backend as K
from arignote.datasets import mnist
from arignote.layers import Conv2D, Dense, Dropout, Flatten, MaxPooling2D
from arignote.models import Sequential

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument('--epochs', type=int, default=12)
parser.add_argument('--samples', type=int, default=None, help='use only the first N training samples')
parser.add_argument('--synthetic', action='store_true', help='random MNIST-shaped data (offline)')
args = parser.parse_args()

batch_size = 128
num_classes = 10
epochs = args.epochs

# input image dimensions
img_rows, img_cols = 28, 28

# the data, shuffled and split between train and test sets
if args.synthetic:
    from arignote.datasets import synthetic
    n_train = args.samples or 6000
    x, y = synthetic(shape=(28, 28), classes=num_classes, samples=n_train + 1000, seed=0)
    x = (x * 255).round().astype('uint8')
    (x_train, y_train), (x_test, y_test) = (x[:n_train], y[:n_train]), (x[n_train:], y[n_train:])
else:
    (x_train, y_train), (x_test, y_test) = mnist.load_data()
if args.samples:
    x_train, y_train = x_train[:args.samples], y_train[:args.samples]

if K.image_data_format() == 'channels_first':
    x_train = x_train.reshape(x_train.shape[0], 1, img_rows, img_cols)
    x_test = x_test.reshape(x_test.shape[0], 1, img_rows, img_cols)
    input_shape = (1, img_rows, img_cols)
else:
    x_train = x_train.reshape(x_train.shape[0], img_rows, img_cols, 1)
    x_test = x_test.reshape(x_test.shape[0], img_rows, img_cols, 1)
    input_shape = (img_rows, img_cols, 1)

x_train = x_train.astype('float32')
x_test = x_test.astype('float32')
x_train /= 255
x_test /= 255
print('x_train shape:', x_train.shape)
print(x_train.shape[0], 'train samples')
print(x_test.shape[0], 'test samples')

# convert class vectors to binary class matrices
y_train = arignote.utils.to_categorical(y_train, num_classes)
y_test = arignote.utils.to_categorical(y_test, num_classes)

model = Sequential()
model.add(Conv2D(32, kernel_size=(3, 3),
                 activation='relu',
                 input_shape=input_shape))
model.add(Conv2D(64, (3, 3), activation='relu'))
model.add(MaxPooling2D(pool_size=(2, 2)))
model.add(Dropout(0.25))
model.add(Flatten())
model.add(Dense(128, activation='relu'))
model.add(Dropout(0.5))
model.add(Dense(num_classes, activation='softmax'))

model.compile(loss=arignote.losses.categorical_crossentropy,
              optimizer=arignote.optimizers.Adadelta(),
              metrics=['accuracy'])

model.fit(x_train, y_train,
          batch_size=batch_size,
          epochs=epochs,
          verbose=1,
          validation_data=(x_test, y_test))
score = model.evaluate(x_test, y_test, verbose=0)
print('Test loss:', score[0])
print('Test accuracy:', score[1])
