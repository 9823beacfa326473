"""``arignote demo`` (``make demo``): a small CNN learns the real 8x8 digits on the best device.

Prints the startup banner, a Keras-format log (``verbose=2``) and the final validation accuracy;
exits 1 if it is under the target (95% by default), so the demo doubles as an end-to-end check.
About 10-20 seconds on 2 CPU cores.

Example::

    $ arignote demo
    arignote 0.1.0 on torch 2.13.0 (CPU build) · device cpu: ...
    Train on 1437 samples, validate on 360 samples
    Epoch 1/12
    1s - loss: 1.6710 - acc: 0.5220 - val_loss: 0.7101 - val_acc: 0.8028 - 2901 samples/s
    ...
    validation accuracy: 0.9778 (target 0.95) on cpu
"""

from __future__ import annotations

import time

HELP = "train a small CNN on the real 8x8 digits data on the best device (>= 95% accuracy)"


def add_arguments(parser) -> None:
    parser.add_argument("--epochs", type=int, default=12, help="training epochs (default 12)")
    parser.add_argument("--batch-size", type=int, default=32, help="batch size (default 32)")
    parser.add_argument("--target", type=float, default=0.95,
                        help="minimum validation accuracy for exit code 0 (default 0.95)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (weights, shuffling, split)")
    parser.add_argument("--verbose", type=int, default=2, choices=(0, 1, 2), help="Keras verbose level")


def build_model():
    """The demo network: two 3x3 convolutions, max pooling, dropout, a dense layer, softmax."""
    # layers and models import torch: kept off `arignote --help`
    from arignote.layers import Conv2D, Dense, Dropout, Flatten, MaxPooling2D
    from arignote.models import Sequential  # (torch)

    model = Sequential()
    model.add(Conv2D(32, (3, 3), padding="same", activation="relu", input_shape=(8, 8, 1)))
    model.add(Conv2D(32, (3, 3), padding="same", activation="relu"))
    model.add(MaxPooling2D(pool_size=(2, 2)))
    model.add(Dropout(0.25))
    model.add(Flatten())
    model.add(Dense(128, activation="relu"))
    model.add(Dropout(0.5))
    model.add(Dense(10, activation="softmax"))
    return model


def run(args) -> int:
    for name in ("epochs", "batch_size"):
        if getattr(args, name) <= 0:
            print(f"arignote demo: --{name.replace('_', '-')} must be positive, got {getattr(args, name)}")
            return 2
    if not 0.0 <= args.target <= 1.0:
        print(f"arignote demo: --target must be in [0, 1], got {args.target}")
        return 2
    # torch and numpy: kept off `arignote --help`
    import torch

    from arignote.datasets import digits
    from arignote.optimizers import Adam
    from arignote.utils import to_categorical

    torch.manual_seed(args.seed)
    (x_train, y_train), (x_test, y_test) = digits.load_data(test_split=0.2, seed=args.seed)
    y_train, y_test = to_categorical(y_train, 10), to_categorical(y_test, 10)
    model = build_model()
    model.compile(optimizer=Adam(lr=0.002), loss="categorical_crossentropy", metrics=["acc"])
    start = time.perf_counter()
    model.fit(x_train, y_train, batch_size=args.batch_size, epochs=args.epochs, verbose=args.verbose,
              validation_data=(x_test, y_test))
    loss, acc = model.evaluate(x_test, y_test, verbose=0)
    elapsed = time.perf_counter() - start
    print(f"validation accuracy: {acc:.4f} (target {args.target:.2f}) on {model.device}, "
          f"loss {loss:.4f}, {elapsed:.1f}s")
    if acc < args.target:
        print(f"arignote demo: accuracy {acc:.4f} is under the target {args.target:.2f}")
        return 1
    return 0
