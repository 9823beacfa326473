"""The "building powerful image classification models using very little data" workflow (Keras blog, 2016,
updated for Keras 2): a train/ and validation/ directory tree with one folder per class,
ImageDataGenerator(rescale, shear_range, zoom_range, horizontal_flip).flow_from_directory(class_mode=
'binary'), a small convnet trained with fit_generator(workers=2, use_multiprocessing=True) and
save_weights('first_try.h5'); then bottleneck features of VGG16(include_top=False) from
predict_generator and a small top model trained on them; then fine-tuning: the top model on VGG16,
the first 15 layers frozen, SGD(lr=1e-4, momentum=0.9). The pictures are written here with Pillow
(bright squares vs dark circles, 64x64), and VGG16 has weights=None (no download; the bottleneck
features of a random VGG16 still separate these two classes).

NOT checked on real Keras 2.3.1: the side venv with Keras 2.3.1 (scripts/setup-keras2-venv.sh) has no
Pillow, which flow_from_directory needs (a reason outside the script).
"""
import os

import numpy as np
from PIL import Image, ImageDraw

from arignote import applications, optimizers
from arignote import backend as K
from arignote.layers import Activation, Conv2D, Dense, Dropout, Flatten, MaxPooling2D
from arignote.models import Model, Sequential
from arignote.preprocessing.image import ImageDataGenerator

np.random.seed(0)


def write_pictures(root, n_per_class):
    for label in ('cats', 'dogs'):
        os.makedirs(os.path.join(root, label), exist_ok=True)
        for i in range(n_per_class):
            img = Image.new('RGB', (64, 64), tuple(int(v) for v in np.random.randint(0, 60, 3)))
            draw = ImageDraw.Draw(img)
            x, y = np.random.randint(4, 28, 2)
            size = np.random.randint(20, 32)
            if label == 'cats':
                draw.rectangle([x, y, x + size, y + size], fill=(230, 230, 200))
            else:
                draw.ellipse([x, y, x + size, y + size], fill=(90, 60, 200))
            img.save(os.path.join(root, label, f'{label[:-1]}.{i}.png'))


train_data_dir = 'data/train'
validation_data_dir = 'data/validation'
write_pictures(train_data_dir, 20)
write_pictures(validation_data_dir, 8)
nb_train_samples = 40
nb_validation_samples = 16
epochs = 8
batch_size = 8
img_width, img_height = 48, 48

if K.image_data_format() == 'channels_first':
    input_shape = (3, img_width, img_height)
else:
    input_shape = (img_width, img_height, 3)

# --- 1. a small convnet from scratch, with data augmentation
model = Sequential()
model.add(Conv2D(8, (3, 3), input_shape=input_shape))
model.add(Activation('relu'))
model.add(MaxPooling2D(pool_size=(2, 2)))
model.add(Conv2D(8, (3, 3)))
model.add(Activation('relu'))
model.add(MaxPooling2D(pool_size=(2, 2)))
model.add(Flatten())
model.add(Dense(16))
model.add(Activation('relu'))
model.add(Dropout(0.5))
model.add(Dense(1))
model.add(Activation('sigmoid'))
model.compile(loss='binary_crossentropy', optimizer='rmsprop', metrics=['accuracy'])

train_datagen = ImageDataGenerator(rescale=1. / 255, shear_range=0.2, zoom_range=0.2, horizontal_flip=True)
test_datagen = ImageDataGenerator(rescale=1. / 255)
train_generator = train_datagen.flow_from_directory(train_data_dir, target_size=(img_width, img_height),
                                                    batch_size=batch_size, class_mode='binary')
validation_generator = test_datagen.flow_from_directory(validation_data_dir,
                                                        target_size=(img_width, img_height),
                                                        batch_size=batch_size, class_mode='binary')
assert train_generator.class_indices == {'cats': 0, 'dogs': 1}
assert train_generator.samples == nb_train_samples
x_batch, y_batch = next(train_generator)
assert x_batch.shape == (batch_size, img_width, img_height, 3) and 0 <= x_batch.min() and x_batch.max() <= 1

hist = model.fit_generator(train_generator, steps_per_epoch=nb_train_samples // batch_size, epochs=epochs,
                           validation_data=validation_generator,
                           validation_steps=nb_validation_samples // batch_size,
                           workers=2, use_multiprocessing=True, verbose=0)
model.save_weights('first_try.h5')
assert os.path.exists('first_try.h5') and len(hist.history['loss']) == epochs
acc_key = 'val_accuracy' if 'val_accuracy' in hist.history else 'val_acc'
print('from scratch: val acc', hist.history[acc_key])
assert max(hist.history[acc_key]) >= 0.75, hist.history

# --- 2. bottleneck features of VGG16 and a small top model trained on them
model = applications.VGG16(include_top=False, weights=None, input_shape=input_shape)
datagen = ImageDataGenerator(rescale=1. / 255)
generator = datagen.flow_from_directory(train_data_dir, target_size=(img_width, img_height),
                                        batch_size=batch_size, class_mode=None, shuffle=False)
bottleneck_features_train = model.predict_generator(generator, nb_train_samples // batch_size)
np.save('bottleneck_features_train.npy', bottleneck_features_train)
generator = datagen.flow_from_directory(validation_data_dir, target_size=(img_width, img_height),
                                        batch_size=batch_size, class_mode=None, shuffle=False)
bottleneck_features_validation = model.predict_generator(generator, nb_validation_samples // batch_size)
np.save('bottleneck_features_validation.npy', bottleneck_features_validation)

train_data = np.load('bottleneck_features_train.npy')
train_labels = np.array([0] * (nb_train_samples // 2) + [1] * (nb_train_samples // 2))
validation_data = np.load('bottleneck_features_validation.npy')
validation_labels = np.array([0] * (nb_validation_samples // 2) + [1] * (nb_validation_samples // 2))
assert train_data.shape == (nb_train_samples, 1, 1, 512), train_data.shape
# a random VGG16 scales its inputs down by orders of magnitude: standardize (the real one needs not)
mean, std = train_data.mean(axis=0), train_data.std(axis=0) + 1e-6
train_data, validation_data = (train_data - mean) / std, (validation_data - mean) / std

top_model = Sequential()
top_model.add(Flatten(input_shape=train_data.shape[1:]))
top_model.add(Dense(32, activation='relu'))
top_model.add(Dropout(0.5))
top_model.add(Dense(1, activation='sigmoid'))
top_model.compile(optimizer='rmsprop', loss='binary_crossentropy', metrics=['accuracy'])
hist = top_model.fit(train_data, train_labels, epochs=20, batch_size=batch_size, verbose=0,
                     validation_data=(validation_data, validation_labels))
top_model_weights_path = 'bottleneck_fc_model.h5'
top_model.save_weights(top_model_weights_path)
print('bottleneck: val acc', hist.history[acc_key][-1])
assert hist.history[acc_key][-1] >= 0.75, hist.history

# --- 3. fine-tuning: the top model on the convolutional base, the first blocks frozen
base_model = applications.VGG16(weights=None, include_top=False, input_shape=input_shape)
top_model = Sequential()
top_model.add(Flatten(input_shape=base_model.output_shape[1:]))
top_model.add(Dense(32, activation='relu'))
top_model.add(Dropout(0.5))
top_model.add(Dense(1, activation='sigmoid'))
top_model.load_weights(top_model_weights_path)
model = Model(inputs=base_model.input, outputs=top_model(base_model.output))
assert len(model.layers) == 20

frozen = [w.copy() for w in base_model.layers[1].get_weights()]
for layer in model.layers[:15]:
    layer.trainable = False
model.compile(loss='binary_crossentropy', optimizer=optimizers.SGD(lr=1e-4, momentum=0.9),
              metrics=['accuracy'])
n_trainable = len(model.trainable_weights)
assert n_trainable == 2 * 3 + 4, n_trainable  # block5's three convolutions and the top model's two Dense

train_generator = train_datagen.flow_from_directory(train_data_dir, target_size=(img_height, img_width),
                                                    batch_size=batch_size, class_mode='binary')
validation_generator = test_datagen.flow_from_directory(validation_data_dir,
                                                        target_size=(img_height, img_width),
                                                        batch_size=batch_size, class_mode='binary')
tuned = [w.copy() for w in model.layers[15].get_weights()]
model.fit_generator(train_generator, steps_per_epoch=nb_train_samples // batch_size, epochs=1,
                    validation_data=validation_generator,
                    validation_steps=nb_validation_samples // batch_size, verbose=0)
for before, after in zip(frozen, base_model.layers[1].get_weights()):
    np.testing.assert_array_equal(before, after)  # frozen
assert any(not np.array_equal(b, a) for b, a in zip(tuned, model.layers[15].get_weights()))  # trained
print('OK little_data')
