"""scripts/run_keras2_book.py, the parts that run without the book's repository: a notebook's JSON
to one script (cells numbered, IPython lines dropped, sketches skipped), the data-directory and
shrink rewrites, and the synthetic data files read back as the notebooks read them. The notebooks
themselves are not stored here, so the harness's runs are not repeated in CI."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from arignote import config
from arignote.datasets import _files, _get_file, boston_housing
from arignote.preprocessing.image import ImageDataGenerator

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


@pytest.fixture(scope="module")
def harness():
    sys.path.insert(0, str(SCRIPTS))
    try:
        spec = importlib.util.spec_from_file_location("run_keras2_book", SCRIPTS / "run_keras2_book.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(SCRIPTS))
    return module


def _notebook(*cells):
    return {"cells": [{"cell_type": kind, "source": source} for kind, source in cells], "nbformat": 4}


def test_code_cells_become_one_numbered_script(harness):
    nb = _notebook(("markdown", ["# Title\n"]),
                   ("code", ["%matplotlib inline\n", "import keras\n", "x = 1"]),
                   ("code", "y = x + 1\n!ls data"),  # a source may be one string
                   ("code", []))
    script, starts, dropped = harness.notebook_script(nb)
    assert script.splitlines() == ["# cell 1", "import keras", "x = 1", "# cell 2", "y = x + 1", "# cell 3"]
    assert starts == [1, 4, 6] and dropped == ["%matplotlib inline", "!ls data"]
    assert [harness.cell_of(line, starts) for line in (1, 3, 4, 5, 6)] == [1, 1, 2, 2, 3]
    scope: dict = {}
    exec(compile(script.replace("import keras\n", ""), "<nb>", "exec"), scope)
    assert scope["y"] == 2


def test_skipped_cells_are_named_in_the_script(harness):
    nb = _notebook(("code", "a = 1"), ("code", "layer_output *= 0.5"), ("code", "b = a"))
    script, starts, _ = harness.notebook_script(nb, {2: "a sketch"})
    assert "layer_output" not in script and "# skipped by the harness: a sketch" in script
    assert len(starts) == 3


def test_data_directories_and_shrinks_are_rewritten(harness, tmp_path):
    source = ("base_dir = '/Users/fchollet/Downloads/cats_and_dogs_small'\n"
              'fname = os.path.join("/home/ubuntu/data/", "jena.csv")\n'
              "save_dir = '/home/ubuntu/gan_images/'\niterations = 10000\n")
    new, notes = harness.prepare("8.5-introduction-to-gans", source, tmp_path)
    assert f"'{tmp_path}/cats_and_dogs_small'" in new and f'"{tmp_path}/"' in new
    assert f"'{tmp_path}/gan_images/'" in new and "iterations = 2\n" in new
    assert len(notes) == 4
    with pytest.raises(ValueError, match="no longer matches the notebook"):
        harness.prepare("8.5-introduction-to-gans", "iterations = 20\n", tmp_path)


def test_every_shrink_and_skip_names_a_known_notebook(harness):
    # names as in first_edition/ (a typo would silently do nothing)
    known = {"2.1-a-first-look-at-a-neural-network", "3.5-classifying-movie-reviews",
             "3.6-classifying-newswires", "3.7-predicting-house-prices", "4.4-overfitting-and-underfitting",
             "5.1-introduction-to-convnets", "5.2-using-convnets-with-small-datasets",
             "5.3-using-a-pretrained-convnet", "5.4-visualizing-what-convnets-learn",
             "6.1-one-hot-encoding-of-words-or-characters", "6.1-using-word-embeddings",
             "6.2-understanding-recurrent-neural-networks", "6.3-advanced-usage-of-recurrent-neural-networks",
             "6.4-sequence-processing-with-convnets", "8.1-text-generation-with-lstm", "8.2-deep-dream",
             "8.3-neural-style-transfer", "8.4-generating-images-with-vaes", "8.5-introduction-to-gans"}
    for table in (harness.SHRINK, harness.SKIP_CELLS, harness.DATA, harness.OUTSIDE, harness.WORKDIR):
        assert set(table) <= known
    assert harness.KEEP_EPOCHS <= known


@pytest.fixture
def keras_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("KERAS_HOME", raising=False)
    monkeypatch.delenv("ARIGNOTE_DATA", raising=False)
    monkeypatch.setattr(_files, "_urlopen", lambda *a, **k: pytest.fail("no download expected"))
    monkeypatch.setattr(_get_file, "validate_file", lambda *a, **k: True)  # synthetic: not the official hash
    config.reload()
    (home / ".keras" / "datasets").mkdir(parents=True)
    yield home / ".keras" / "datasets"
    config.reload()


def test_boston_housing_file_reads_through_keras_loader(harness, keras_home):
    harness.write_boston_housing(keras_home, np.random.RandomState(0))
    (x, y), (xt, yt) = boston_housing.load_data()
    assert x.shape == (404, 13) and xt.shape == (102, 13) and y.shape == (404,)  # Keras's 80/20 split


def test_jena_csv_parses_as_the_notebook_parses_it(harness, tmp_path):
    harness.write_jena(tmp_path, np.random.RandomState(0), rows=50)
    lines = (tmp_path / "jena_climate_2009_2016.csv").read_text().split("\n")
    header = lines[0].split(",")
    assert len(header) == 15 and header[2] == '"T (degC)"'
    values = np.array([[float(v) for v in line.split(",")[1:]] for line in lines[1:]])
    assert values.shape == (50, 14)


def test_cats_and_dogs_folders_read_through_flow_from_directory(harness, tmp_path):
    harness.write_cats_dogs_small(tmp_path, np.random.RandomState(0), per_class=3)
    gen = ImageDataGenerator(rescale=1 / 255).flow_from_directory(
        str(tmp_path / "cats_and_dogs_small" / "train"), target_size=(20, 20), batch_size=6,
        class_mode="binary")
    x, y = next(gen)
    assert x.shape == (6, 20, 20, 3) and sorted(y.tolist()) == [0, 0, 0, 1, 1, 1]
    assert gen.class_indices == {"cats": 0, "dogs": 1}
    with Image.open(tmp_path / "cats_and_dogs_small" / "test" / "dogs" / "dog.1500.jpg") as img:
        assert img.size == (32, 24)


def test_class_index_has_keras_layout(harness, tmp_path):
    index = json.loads(harness.write_class_index(tmp_path).read_text())
    assert len(index) == 1000 and index["386"] == ["n00000386", "class_386"]
