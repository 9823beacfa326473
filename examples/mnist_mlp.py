'''Trains a simple deep NN on the MNIST dataset.

The classic Keras 2 example (keras/examples/mnist_mlp.py) with only the imports changed from keras
to arignote. Gets to 98.40% test accuracy after 20 epochs.

    python examples/mnist_mlp.py                 # real MNIST (ARIGNOTE_DATA, ~/.keras/datasets, download)
    python examples/mnist_mlp.py --synthetic --epochs 2
'''


import argparse

import arignote
from arignote.datasets import mnist
from arignote.layers import Dense, Dropout
from arignote.models import Sequential
from arignote.optimizers import RMSprop

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument('--epochs', type=int, default=20)
parser.add_argument('--samples', type=int, default=None, help='use only the first N training samples')
parser.add_argument('--synthetic', action='store_true', help='random MNIST-shaped data (offline)')
args = parser.parse_args()

batch_size = 128
num_classes = 10
epochs = args.epochs

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

x_train = x_train.reshape(len(x_train), 784)
x_test = x_test.reshape(len(x_test), 784)
x_train = x_train.astype('float32')
x_test = x_test.astype('float32')
x_train /= 255
x_test /= 255
print(x_train.shape[0], 'train samples')
print(x_test.shape[0], 'test samples')

# convert class vectors to binary class matrices
y_train = arignote.utils.to_categorical(y_train, num_classes)
y_test = arignote.utils.to_categorical(y_test, num_classes)

model = Sequential()
model.add(Dense(512, activation='relu', input_shape=(784,)))
model.add(Dropout(0.2))
model.add(Dense(512, activation='relu'))
model.add(Dropout(0.2))
model.add(Dense(num_classes, activation='softmax'))

model.summary()

model.compile(loss='categorical_crossentropy',
              optimizer=RMSprop(),
              metrics=['accuracy'])

history = model.fit(x_train, y_train,
                    batch_size=batch_size,
                    epochs=epochs,
                    verbose=1,
                    validation_data=(x_test, y_test))
score = model.evaluate(x_test, y_test, verbose=0)
print('Test loss:', score[0])
print('Test accuracy:', score[1])
