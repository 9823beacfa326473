'''Train a simple deep CNN on the CIFAR10 small images dataset.

The classic Keras 2 example (keras/examples/cifar10_cnn.py, the network of the seeds), with only the
imports changed from keras to arignote. It trains on the device the configuration names
(``ARIGNOTE_FLAGS=device=cuda0``, ``~/.arignoterc``), channels-last images as in Keras.

    python examples/cifar10_cnn.py                       # 25 epochs on the real CIFAR-10 data
    python examples/cifar10_cnn.py --synthetic --epochs 1 --samples 2000   # no data needed
    python examples/cifar10_cnn.py --augment             # Keras 2's data_augmentation = True

Without --synthetic the data is looked up in ARIGNOTE_DATA, ~/.arignote/datasets and
~/.keras/datasets (cifar-10-python.tar.gz or the extracted cifar-10-batches-py), then downloaded.
'''


import argparse

import arignote
from arignote.datasets import cifar10
from arignote.layers import Activation, Conv2D, Dense, Dropout, Flatten, MaxPooling2D
from arignote.models import Sequential
from arignote.preprocessing.image import ImageDataGenerator
from arignote.utils import np_utils

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument('--epochs', type=int, default=25)
parser.add_argument('--batch-size', type=int, default=32)
parser.add_argument('--samples', type=int, default=None, help='use only the first N training samples')
parser.add_argument('--synthetic', action='store_true', help='random CIFAR-shaped data (offline)')
parser.add_argument('--verbose', type=int, default=2, choices=(0, 1, 2))
parser.add_argument('--augment', action='store_true',
                    help="real-time data augmentation (Keras 2's data_augmentation = True)")
args = parser.parse_args()

batch_size = args.batch_size
num_classes = 10
epochs = args.epochs
data_augmentation = args.augment

# The data, shuffled and split between train and test sets:
if args.synthetic:
    from arignote.datasets import synthetic
    n_train = args.samples or 5000
    x, y = synthetic(shape=(32, 32, 3), classes=num_classes, samples=n_train + 1000, seed=0)
    x = (x * 255).round().astype('uint8')  # pixel values as in the real data
    (x_train, y_train), (x_test, y_test) = (x[:n_train], y[:n_train]), (x[n_train:], y[n_train:])
else:
    (x_train, y_train), (x_test, y_test) = cifar10.load_data()
if args.samples:
    x_train, y_train = x_train[:args.samples], y_train[:args.samples]
print('x_train shape:', x_train.shape)
print(x_train.shape[0], 'train samples')
print(x_test.shape[0], 'test samples')

# Convert class vectors to binary class matrices.
y_train = np_utils.to_categorical(y_train, num_classes)
y_test = np_utils.to_categorical(y_test, num_classes)

model = Sequential()

model.add(Conv2D(32, (3, 3), padding='same',
                 input_shape=x_train.shape[1:]))
model.add(Activation('relu'))
model.add(Conv2D(32, (3, 3)))
model.add(Activation('relu'))
model.add(MaxPooling2D(pool_size=(2, 2)))
model.add(Dropout(0.25))

model.add(Conv2D(64, (3, 3), padding='same'))
model.add(Activation('relu'))
model.add(Conv2D(64, (3, 3)))
model.add(Activation('relu'))
model.add(MaxPooling2D(pool_size=(2, 2)))
model.add(Dropout(0.25))

model.add(Flatten())
model.add(Dense(512))
model.add(Activation('relu'))
model.add(Dropout(0.5))
model.add(Dense(num_classes))
model.add(Activation('softmax'))

# initiate RMSprop optimizer
opt = arignote.optimizers.rmsprop(lr=0.0001, decay=1e-6)

# Let's train the model using RMSprop
model.compile(loss='categorical_crossentropy',
              optimizer=opt,
              metrics=['accuracy'])

x_train = x_train.astype('float32')
x_test = x_test.astype('float32')
x_train /= 255
x_test /= 255

model.summary()
if not data_augmentation:
    print('Not using data augmentation.')
    model.fit(x_train, y_train,
              batch_size=batch_size,
              epochs=epochs,
              verbose=args.verbose,
              validation_split=0.1,
              shuffle=True)
else:
    print('Using real-time data augmentation.')
    # This will do preprocessing and realtime data augmentation:
    datagen = ImageDataGenerator(
        featurewise_center=False,  # set input mean to 0 over the dataset
        samplewise_center=False,  # set each sample mean to 0
        featurewise_std_normalization=False,  # divide inputs by std of the dataset
        samplewise_std_normalization=False,  # divide each input by its std
        zca_whitening=False,  # apply ZCA whitening
        zca_epsilon=1e-06,  # epsilon for ZCA whitening
        rotation_range=0,  # randomly rotate images in the range (degrees, 0 to 180)
        # randomly shift images horizontally (fraction of total width)
        width_shift_range=0.1,
        # randomly shift images vertically (fraction of total height)
        height_shift_range=0.1,
        shear_range=0.,  # set range for random shear
        zoom_range=0.,  # set range for random zoom
        channel_shift_range=0.,  # set range for random channel shifts
        # set mode for filling points outside the input boundaries
        fill_mode='nearest',
        cval=0.,  # value used for fill_mode = "constant"
        horizontal_flip=True,  # randomly flip images
        vertical_flip=False,  # randomly flip images
        # set rescaling factor (applied before any other transformation)
        rescale=None,
        # set function that will be applied on each input
        preprocessing_function=None,
        # image data format, either "channels_first" or "channels_last"
        data_format=None,
        # fraction of images reserved for validation (strictly between 0 and 1)
        validation_split=0.0)

    # Compute quantities required for feature-wise normalization
    # (std, mean, and principal components if ZCA whitening is applied).
    datagen.fit(x_train)

    # Fit the model on the batches generated by datagen.flow().
    model.fit(datagen.flow(x_train, y_train, batch_size=batch_size),
              epochs=epochs,
              verbose=args.verbose,
              validation_data=(x_test, y_test),
              workers=4)

# Score trained model.
scores = model.evaluate(x_test, y_test, verbose=0)
print('Test loss:', scores[0])
print('Test accuracy:', scores[1])
