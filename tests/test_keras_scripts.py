"""A Keras 2 script in the classic example style runs with only its imports changed to arignote.

The script text below is what a Keras 2 user wrote (Sequential CNN and MLP, ``np_utils.to_categorical``,
``model.summary()``, ``fit(..., validation_data=...)``, ``evaluate``), except that ``keras`` reads
``arignote`` in the imports. It runs in a fresh interpreter on small synthetic data.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest

KERAS2_SCRIPT = textwrap.dedent('''
    from __future__ import print_function
    import numpy as np
    np.random.seed(1337)  # for reproducibility

    from arignote.models import Sequential
    from arignote.layers import Dense, Dropout, Activation, Flatten
    from arignote.layers import Conv2D, MaxPooling2D
    from arignote.optimizers import RMSprop, SGD
    from arignote.utils import np_utils
    from arignote import backend as K
    import torch
    torch.manual_seed(1337)

    nb_classes = 3
    # small synthetic "images": each class lights up a different third of the picture
    def make(n):
        y = np.random.randint(0, nb_classes, n)
        x = np.random.rand(n, 12, 12, 1).astype('float32') * 0.3
        for i, c in enumerate(y):
            x[i, :, 4 * c:4 * c + 4, 0] += 0.7
        return x, y
    X_train, y_train = make(240)
    X_test, y_test = make(60)
    print('X_train shape:', X_train.shape)
    print(X_train.shape[0], 'train samples')
    Y_train = np_utils.to_categorical(y_train, nb_classes)
    Y_test = np_utils.to_categorical(y_test, nb_classes)

    assert K.image_data_format() == 'channels_last'
    model = Sequential()
    model.add(Conv2D(8, (3, 3), padding='same', input_shape=X_train.shape[1:]))
    model.add(Activation('relu'))
    model.add(MaxPooling2D(pool_size=(2, 2)))
    model.add(Dropout(0.25))
    model.add(Flatten())
    model.add(Dense(32))
    model.add(Activation('relu'))
    model.add(Dropout(0.5))
    model.add(Dense(nb_classes))
    model.add(Activation('softmax'))
    model.summary()
    model.compile(loss='categorical_crossentropy', optimizer=RMSprop(lr=0.003), metrics=['accuracy'])
    history = model.fit(X_train, Y_train, batch_size=16, epochs=4, verbose=2,
                        validation_data=(X_test, Y_test))
    score = model.evaluate(X_test, Y_test, verbose=0)
    print('CNN test score:', score[0])
    print('CNN test accuracy:', score[1])

    mlp = Sequential()
    mlp.add(Dense(64, input_shape=(144,)))
    mlp.add(Activation('relu'))
    mlp.add(Dropout(0.2))
    mlp.add(Dense(nb_classes, activation='softmax'))
    mlp.summary()
    mlp.compile(loss='categorical_crossentropy', optimizer=SGD(lr=0.1, momentum=0.9, nesterov=True),
                metrics=['accuracy'])
    mlp.fit(X_train.reshape(240, 144), Y_train, batch_size=32, epochs=5, verbose=1,
            validation_data=(X_test.reshape(60, 144), Y_test))
    score = mlp.evaluate(X_test.reshape(60, 144), Y_test, verbose=0)
    print('MLP test score:', score[0])
    print('MLP test accuracy:', score[1])
    print('history keys:', sorted(history.history.keys()))
''')


@pytest.mark.slow
def test_keras2_script_runs_with_changed_imports(tmp_path):
    script = tmp_path / "keras2_example.py"
    script.write_text(KERAS2_SCRIPT)
    env = dict(os.environ, ARIGNOTE_FLAGS="device=cpu", ARIGNOTERC=str(tmp_path / "none"))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                         timeout=240, check=False)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "X_train shape: (240, 12, 12, 1)" in text
    assert text.count("Total params:") == 2
    assert "Total params: 9,427" in text  # conv 80 + dense 9248 + dense 99 (Keras counts)
    assert re.search(r"^Train on 240 samples, validate on 60 samples$", text, re.M)
    assert re.search(r"^Epoch 4/4\n\d+s - loss: [\d.e+-]+ - accuracy: [\d.e+-]+ - val_loss: [\d.e+-]+ - "
                     r"val_accuracy: [\d.e+-]+ - \d+ samples/s - cpu peak RSS \d+ MiB$", text, re.M)
    assert re.search(r"^240/240 \[={30}\] - \d+s - loss: ", text, re.M)  # verbose=1, not a terminal
    cnn_acc = float(re.search(r"CNN test accuracy: ([\d.e+-]+)", text).group(1))
    mlp_acc = float(re.search(r"MLP test accuracy: ([\d.e+-]+)", text).group(1))
    assert cnn_acc > 0.9 and mlp_acc > 0.9
    assert "history keys: ['accuracy', 'loss', 'val_accuracy', 'val_loss']" in text
