"""Check by hand that Keras 2.3.1 (and Keras 3's legacy HDF5 loader) read the .h5 files arignote writes.

Two steps, two venvs (the test suite never needs Keras):

    # 1. with arignote's venv: write models (random weights, compiled ones trained a step) + inputs/outputs
    .venv/bin/python scripts/check_keras2_reads_ours.py write /tmp/ours
    # 2. with the Keras 2.3.1 side venv (scripts/setup-keras2-venv.sh): load, predict, compare
    /work/k2venv/bin/python scripts/check_keras2_reads_ours.py check /tmp/ours
    # 3. optionally with a venv holding Keras 3 (any backend, e.g. KERAS_BACKEND=numpy)
    KERAS_BACKEND=numpy /tmp/k3venv/bin/python scripts/check_keras2_reads_ours.py check3 /tmp/ours

Prints one line per file: the largest difference between Keras's prediction and arignote's, and
whether the optimizer state and weights loaded without a warning.
"""

import os
import sys
import warnings

import numpy as np


def write(out):
    from arignote.layers import (GRU, LSTM, BatchNormalization, Conv1D, Conv2D, Dense, Dropout, Embedding, Flatten,
                                 GlobalAveragePooling1D, MaxPooling2D)
    from arignote.models import Sequential

    rng = np.random.RandomState(3)
    models = {
        "dense_adam": (Sequential([Dense(5, activation="relu", input_shape=(4,)), Dropout(0.0),
                                   Dense(3, activation="softmax")]), (4,), "adam"),
        "conv2d_bn_sgd": (Sequential([Conv2D(3, (3, 2), padding="same", input_shape=(6, 5, 2)), BatchNormalization(),
                                      MaxPooling2D(), Flatten(), Dense(2)]), (6, 5, 2), "sgd_momentum"),
        "conv2d_odd_sgd": (Sequential([Conv2D(3, 3, padding="same", input_shape=(6, 5, 2)), BatchNormalization(),
                                       MaxPooling2D(), Flatten(), Dense(2)]), (6, 5, 2), "sgd_momentum"),
        "conv1d_rmsprop": (Sequential([Conv1D(3, 2, input_shape=(6, 2)), GlobalAveragePooling1D(), Dense(2)]),
                           (6, 2), "rmsprop"),
        "embedding_lstm": (Sequential([Embedding(9, 3, input_length=4), LSTM(3), Dense(2)]), "int", None),
        "gru_reset_after": (Sequential([GRU(3, return_sequences=True, input_shape=(4, 2)), GRU(2)]), (4, 2), None),
    }
    # plus one model per layer type of tests/test_keras2_h5_layers.py (random weights, not compiled)
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests",
                        "test_keras2_h5_layers.py")
    spec = importlib.util.spec_from_file_location("h5_layer_cases", path)
    cases = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cases)
    for lname in sorted(cases.CASES):
        model, x = cases._build(lname)
        models["layer_" + lname] = (model, x, None)
    os.makedirs(out, exist_ok=True)
    for name, (model, shape, opt) in models.items():
        for layer in model.layers:
            ws = layer.get_weights()
            if ws:
                layer.set_weights([rng.uniform(0.5, 1.5, w.shape).astype(w.dtype) if "normalization" in layer.name
                                   and i == 3 else rng.uniform(-0.5, 0.5, w.shape).astype(w.dtype)
                                   for i, w in enumerate(ws)])
        if isinstance(shape, np.ndarray):
            x = shape
        else:
            x = rng.randint(0, 9, (3, 4)) if shape == "int" else rng.uniform(-1, 1, (3, *shape)).astype("float32")
        if opt is not None:
            from arignote.optimizers import SGD

            model.compile(SGD(lr=0.05, momentum=0.9) if opt == "sgd_momentum" else opt, "mse")
            y0 = model.predict(x, verbose=0)
            model.train_on_batch(x, y0 + 0.1)
        y = model.predict(x, verbose=0)
        model.save(os.path.join(out, name + ".h5"))
        model.save_weights(os.path.join(out, name + ".weights.h5"))
        after = {}
        if opt is not None:  # one more step here; Keras must land on the same weights from the file's state
            model.train_on_batch(x, y + 0.2)
            after = {f"after_{i}": w for i, w in enumerate(model.get_weights())}
        np.savez(os.path.join(out, name + ".npz"), x=x, y=y, **after)
        print("wrote", name)


def check(out, keras3=False):
    if not keras3:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import keras2_shim
    import keras

    if not keras3:
        keras2_shim.force_unroll()

    print("Keras", keras.__version__, "backend", keras.backend.backend())
    for fname in sorted(os.listdir(out)):
        if not fname.endswith(".npz"):
            continue
        name = fname[:-4]
        data = np.load(os.path.join(out, fname))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                model = keras.models.load_model(os.path.join(out, name + ".h5"))
            except Exception as err:  # report, do not stop: this is a survey
                print(f"{name:18s} LOAD FAILED {type(err).__name__}: {str(err)[:300]}")
                continue
        try:
            y = model.predict(data["x"], verbose=0) if keras3 else model.predict(data["x"])
        except Exception as err:  # e.g. Theano ops that need a BLAS library this venv does not link
            print(f"{name:18s} PREDICT FAILED {type(err).__name__}: {str(err).splitlines()[-1][:200]}")
            continue
        diff = float(np.abs(y - data["y"]).max())
        opt = getattr(model, "optimizer", None)
        state = ""
        if opt is not None:
            weights = opt.variables if keras3 else opt.get_weights()
            state = f"optimizer {type(opt).__name__} with {len(weights)} state arrays"
        warned = [str(w.message)[:120] for w in caught if "optimizer" in str(w.message).lower()
                  or "weight" in str(w.message).lower()]
        print(f"{name:18s} max |keras - arignote| = {diff:.2e}  {state}  warnings: {warned or 'none'}")
        if "after_0" in data:
            if not keras3 and keras.backend.backend() == "theano":
                # Keras 2 flips conv kernels between backends but never their optimizer slots; do it here
                # so the comparison checks our slot layout, not that Keras limitation
                trainable = model._collected_trainable_weights
                slots = model.optimizer.get_weights()
                n = len(trainable)
                for j, w in enumerate(trainable):
                    if "conv" in w.name and "kernel" in w.name:
                        for k in range((len(slots) - 1) // n):
                            if slots[1 + k * n + j].ndim > 2:
                                slots[1 + k * n + j] = keras.utils.conv_utils.convert_kernel(slots[1 + k * n + j])
                model.optimizer.set_weights(slots)
            try:
                model.train_on_batch(data["x"], data["y"] + 0.2)
            except Exception as err:  # Keras 3's own limits: report, go on
                print(f"{'':18s} one more training step FAILED in Keras: {type(err).__name__}: {str(err)[:160]}")
                continue
            got = []
            for layer in model.layers:  # Keras-Theano flipped our (correlation) kernels on load: flip back
                ws = layer.get_weights()
                if not keras3 and keras.backend.backend() == "theano" and type(layer).__name__.startswith("Conv"):
                    ws[0] = keras.utils.conv_utils.convert_kernel(ws[0])
                got += ws
            steps = [float(np.abs(g - data[f"after_{i}"]).max()) for i, g in enumerate(got)]
            print(f"{'':18s} one more training step from the file's optimizer state: max diff {max(steps):.2e} "
                  f"(per weight: {', '.join(f'{v:.1e}' for v in steps)})")
        if not keras3:  # the weights-only file into the loaded architecture
            model.load_weights(os.path.join(out, name + ".weights.h5"))
            diff2 = float(np.abs(model.predict(data["x"]) - data["y"]).max())
            print(f"{'':18s} load_weights: max diff {diff2:.2e}")


if __name__ == "__main__":
    mode, directory = sys.argv[1], sys.argv[2]
    if mode == "write":
        write(directory)
    elif mode == "check":
        check(directory)
    elif mode == "check3":
        check(directory, keras3=True)
    else:
        raise SystemExit("usage: check_keras2_reads_ours.py write|check|check3 DIR")
