"""scripts/run_published_gans.py on a GAN script of our own in the Keras-GAN layout: the epoch cap,
the prepared folder (renamed imports, pyplot stand-in, image folders) and one run on arignote."""

from __future__ import annotations

import importlib.util
import types
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "run_published_gans.py"

# A GAN of our own written the way the published ones are (Keras 2 imports, a train() loop saving
# images through pyplot at epoch % interval == 0, 30000 epochs asked for).
TINY_GAN = '''
from keras.datasets import mnist
from keras.layers import Input, Dense, Reshape, Flatten
from keras.models import Model
import matplotlib.pyplot as plt
import numpy as np


class Tiny():
    def __init__(self):
        d_in = Input(shape=(28, 28, 1))
        self.discriminator = Model(d_in, Dense(1, activation="sigmoid")(Flatten()(d_in)))
        self.discriminator.compile(loss="binary_crossentropy", optimizer="adam")
        z = Input(shape=(4,))
        self.generator = Model(z, Reshape((28, 28, 1))(Dense(784, activation="tanh")(z)))
        self.discriminator.trainable = False
        self.combined = Model(z, self.discriminator(self.generator(z)))
        self.combined.compile(loss="binary_crossentropy", optimizer="adam")

    def train(self, epochs, batch_size=8, sample_interval=50):
        (x, _), (_, _) = mnist.load_data()
        x = np.expand_dims(x / 127.5 - 1., axis=3)
        for epoch in range(epochs):
            noise = np.random.normal(0, 1, (batch_size, 4))
            self.discriminator.train_on_batch(x[:batch_size], np.ones((batch_size, 1)))
            self.combined.train_on_batch(noise, np.ones((batch_size, 1)))
            if epoch % sample_interval == 0:
                fig, axs = plt.subplots(2, 2)
                for i in range(2):
                    for j in range(2):
                        axs[i, j].imshow(self.generator.predict(noise)[0, :, :, 0], cmap="gray")
                        axs[i, j].axis("off")
                fig.savefig("images/%d.png" % epoch)
                plt.close()
        print("EPOCHS", epochs)


if __name__ == '__main__':
    Tiny().train(epochs=30000, batch_size=8, sample_interval=200)
'''


@pytest.fixture(scope="module")
def harness():
    spec = importlib.util.spec_from_file_location("run_published_gans", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cap_epochs_changes_the_main_block_only(harness):
    source = "def train(epochs=5):\n    pass\nif __name__ == '__main__':\n    g.train(epochs=30000, x=1)\n"
    capped, count = harness.cap_epochs(source, 3)
    assert count == 1
    assert capped == source.replace("epochs=30000", "epochs=3")
    assert harness.cap_epochs("train(epochs=9)\n", 3) == ("train(epochs=9)\n", 0)


def test_prepare_renames_caps_and_writes_the_stand_ins(harness, tmp_path):
    src = tmp_path / "src" / "tiny"
    src.mkdir(parents=True)
    (src / "tiny.py").write_text(TINY_GAN.replace(
        "def __init__(self):", "def __init__(self):\n        self.dataset_name = 'apples'"))
    (src / "data_loader.py").write_text("import keras.backend as K\n")
    main, note = harness.prepare(src, tmp_path / "work", keras2=False, epochs=2, contrib=None)
    text = main.read_text()
    assert note == ""
    assert "from arignote.layers import Input" in text and "keras" not in text
    assert "Tiny().train(epochs=2, batch_size=8" in text
    assert (tmp_path / "work" / "data_loader.py").read_text() == "import arignote.backend as K\n"
    assert (tmp_path / "work" / "matplotlib" / "pyplot.py").is_file()
    jpegs = sorted((tmp_path / "work" / "datasets" / "apples" / "trainA").glob("*.jpg"))
    assert len(jpegs) == 3 and Image.open(jpegs[0]).size == (128, 64)
    kept, _ = harness.prepare(src, tmp_path / "kept", keras2=True, epochs=2, contrib=None)
    assert "from keras.layers import Input" in kept.read_text()


def test_pyplot_stand_in_writes_the_shown_images_and_refuses_nan(harness, tmp_path):
    pyplot = types.ModuleType("pyplot_stand_in")
    exec(harness.PYPLOT, pyplot.__dict__)
    fig, axs = pyplot.subplots(2, 3)
    for i in range(2):
        for j in range(3):
            axs[i, j].imshow(np.full((4, 5), 0.5), cmap="gray")
            axs[i, j].set_title("t")
    fig.savefig(tmp_path / "grid.png")
    image = np.asarray(Image.open(tmp_path / "grid.png"))
    assert image.shape == (4, 30, 3) and (image == 127).all()
    fig, ax = pyplot.subplots(1, 2)
    with pytest.raises(ValueError, match="non-finite"):
        ax[0].imshow(np.array([[np.nan]]))


def test_runs_a_gan_on_arignote_with_synthetic_mnist(harness, tmp_path):
    src = tmp_path / "gans" / "tiny"
    src.mkdir(parents=True)
    (src / "tiny.py").write_text(TINY_GAN)
    row = harness.run_one(src, tmp_path / "runs", keras2=False, epochs=2, timeout=300,
                          compiledir="", contrib=None)
    log = (tmp_path / "runs" / "tiny.log").read_text()
    assert row["status"] == "ok", log[-2000:]
    assert row["pngs"] == 1 and "EPOCHS 2" in log


def test_a_failing_script_is_reported_with_its_error(harness, tmp_path):
    src = tmp_path / "gans" / "broken"
    src.mkdir(parents=True)
    (src / "broken.py").write_text("from keras.layers import Dense\nraise ValueError('broken on purpose')\n")
    row = harness.run_one(src, tmp_path / "runs", keras2=False, epochs=2, timeout=300,
                          compiledir="", contrib=None)
    assert row["status"] == "FAIL" and row["pngs"] == 0
    assert row["detail"] == "ValueError: broken on purpose", row
