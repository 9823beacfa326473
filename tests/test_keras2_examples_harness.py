"""scripts/run_keras2_examples.py, the parts that run without Keras's repository: the import
rewriter, the synthetic dataset files (read back by arignote's loaders in Keras's formats) and the
classification of a run. The harness itself needs the Keras mirror, so it does not run here."""

from __future__ import annotations

import importlib.util
import json
import tarfile
from pathlib import Path

import numpy as np
import pytest

from arignote import config
from arignote.datasets import _files, _get_file, cifar10, imdb, mnist, reuters

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "run_keras2_examples.py"


@pytest.fixture(scope="module")
def harness():
    spec = importlib.util.spec_from_file_location("run_keras2_examples", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ----------------------------------------------------------------------------- import rewriting

def test_rewrites_each_import_form(harness):
    source = (
        "import keras\n"
        "import keras.backend as K\n"
        "import keras.applications.resnet50 as resnet\n"
        "from keras.layers import Dense, LSTM\n"
        "from keras import backend as K  # the backend\n"
        "    from keras.models import Model\n"
        "import keras.layers\n"
    )
    new, changes = harness.rewrite_imports(source)
    assert new.splitlines() == [
        "import arignote as keras",
        "import arignote.backend as K",
        "import arignote.applications.resnet50 as resnet",
        "from arignote.layers import Dense, LSTM",
        "from arignote import backend as K  # the backend",
        "    from arignote.models import Model",
        "import arignote.layers, arignote as keras",
    ]
    assert [number for number, _, _ in changes] == [1, 2, 3, 4, 5, 6, 7]
    assert changes[0][1:] == ("import keras", "import arignote as keras")


def test_leaves_everything_else_alone(harness):
    source = ("import numpy as np\n"
              "import keras_preprocessing\n"              # another package whose name starts with keras
              "from kerastuner import Hyperband\n"
              "x = keras.layers.Dense(3)  # keras stays bound to arignote\n"
              "s = 'from keras.layers import Dense'\n"
              "from keras.layers import (Dense,\n"
              "                          LSTM)\r\n")
    new, changes = harness.rewrite_imports(source)
    assert [c[0] for c in changes] == [6]
    assert new.splitlines()[:5] == source.splitlines()[:5]
    assert new.splitlines()[5] == "from arignote.layers import (Dense,"
    assert new.endswith("LSTM)\r\n")  # line endings kept


def test_rewritten_names_import_from_arignote(harness):
    new, _ = harness.rewrite_imports("import keras\nfrom keras.layers import Dense\n"
                                     "import keras.backend as K\n")
    scope: dict = {}
    exec(compile(new, "<example>", "exec"), scope)
    assert scope["keras"].__name__ == "arignote"
    assert scope["Dense"].__module__.startswith("arignote.layers")
    assert scope["K"].__name__ == "arignote.backend"


# --------------------------------------------------------------------------------- dataset files

@pytest.fixture
def keras_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("KERAS_HOME", raising=False)
    monkeypatch.delenv("ARIGNOTE_DATA", raising=False)
    monkeypatch.setattr(_files, "_urlopen", lambda *a, **k: pytest.fail("no download expected"))
    config.reload()
    (home / ".keras" / "datasets").mkdir(parents=True)
    yield home / ".keras" / "datasets"
    config.reload()


def test_mnist_file_reads_as_keras_mnist(harness, keras_home):
    harness.write_mnist(keras_home, np.random.RandomState(0), n_train=50, n_test=20)
    (x, y), (xt, yt) = mnist.load_data(verify=False)
    assert x.shape == (50, 28, 28) and x.dtype == np.uint8 and xt.shape == (20, 28, 28)
    assert y.dtype == np.uint8 and sorted(set(y.tolist())) == list(range(10))
    assert (yt == np.arange(20) % 10).all()


def test_mnist_default_size_is_keras(harness):
    # examples hard-code MNIST's sizes (x_train.reshape(60000, 784))
    defaults = harness.write_mnist.__defaults__
    assert defaults == (60000, 10000)


def test_imdb_and_reuters_files_read_through_keras_loaders(harness, keras_home, monkeypatch):
    rng = np.random.RandomState(0)
    harness.write_imdb(keras_home, rng, n_train=30, n_test=10)
    harness.write_reuters(keras_home, rng, n=92)
    monkeypatch.setattr(_get_file, "validate_file", lambda *a, **k: True)  # synthetic: not the official hash
    (x, y), (xt, yt) = imdb.load_data(num_words=100)
    assert len(x) == 30 and len(xt) == 10 and set(y.tolist()) == {0, 1}
    assert all(seq[0] == 1 and max(seq) < 100 for seq in x)  # start_char, then ids below num_words
    index = imdb.get_word_index()
    assert index["word1"] == 1 and len(index) == 24999
    (rx, ry), (rxt, ryt) = reuters.load_data(num_words=1000, test_split=0.5)
    assert len(rx) + len(rxt) == 92 and int(max(ry.max(), ryt.max())) == 45  # 46 topics
    assert json.loads((keras_home / "reuters_word_index.json").read_text())["word7"] == 7


def test_cifar10_archive_has_keras_layout(harness, keras_home):
    path = harness.write_cifar10(keras_home, np.random.RandomState(0), per_batch=10)
    with tarfile.open(path) as tar:
        names = sorted(tar.getnames())
    assert names == ["cifar-10-batches-py/data_batch_1", "cifar-10-batches-py/data_batch_2",
                     "cifar-10-batches-py/data_batch_3", "cifar-10-batches-py/data_batch_4",
                     "cifar-10-batches-py/data_batch_5", "cifar-10-batches-py/test_batch"]
    (x, y), (xt, yt) = cifar10.load_data(verify=False)
    assert x.shape == (50, 32, 32, 3) and xt.shape == (10, 32, 32, 3) and y.shape == (50, 1)
    assert (yt[:, 0] == np.arange(10)).all()


def test_babi_archive_parses_as_stories(harness, tmp_path):
    path = harness.write_babi(tmp_path, np.random.RandomState(0), stories=2)
    with tarfile.open(path) as tar:
        lines = tar.extractfile("tasks_1-20_v1-2/en-10k/qa1_single-supporting-fact_train.txt").read().decode()
        two = tar.extractfile("tasks_1-20_v1-2/en/qa2_two-supporting-facts_test.txt").read().decode()
    rows = lines.splitlines()
    assert rows[0].startswith("1 ") and len(rows) == 2 * 9
    question = rows[2]
    number, text = question.split(" ", 1)
    q, answer, support = text.split("\t")
    assert q.startswith("Where is") and answer in harness._PLACES
    # the supporting line says the person went to the answer
    person = q.split()[2].rstrip("?")
    fact = rows[int(support) - 1]
    assert person in fact and fact.endswith(f"the {answer}.")
    assert all(len(r.split("\t")[2].split()) == 2 for r in two.splitlines() if "\t" in r)


def test_local_files(harness, tmp_path):
    harness.write_local_files(tmp_path)
    pairs = (tmp_path / "fra-eng" / "fra.txt").read_text(encoding="utf-8").splitlines()
    assert all(len(p.split("\t")) == 2 for p in pairs)
    glove = (tmp_path / "glove.6B" / "glove.6B.100d.txt").read_text().splitlines()
    assert len(glove[0].split()) == 101
    assert len(list((tmp_path / "20_newsgroup").iterdir())) == 3
    for name in ("base.jpg", "style.jpg", "style_mask.png", "target_mask.png"):
        assert (tmp_path / name).stat().st_size > 0


# -------------------------------------------------------------------------------- classification

def test_classify(harness):
    tb = ('Traceback (most recent call last):\n  File "ex.py", line 3, in <module>\n'
          '  File "/x/src/arignote/graph/network.py", line 127, in __init__\n'
          "    sizes = ...\nTypeError: unsupported operand\n")
    assert harness.classify(1, tb) == ("fails",
                                       "TypeError: unsupported operand [graph/network.py:127 in __init__]")
    assert harness.classify(0, "") == ("runs", "")
    assert harness.classify(0, "HARNESS-BUDGET stopped after 10 train_on_batch calls\n")[1].startswith(
        "stopped by the work budget")
    assert harness.classify(1, "HARNESS-NETWORK https://x/w.h5\nTraceback...\nDatasetError: no\n") == (
        "out of scope", "needs the network: https://x/w.h5")
    assert harness.classify(1, "ModuleNotFoundError: No module named 'tensorflow'\n")[0] == "out of scope"
    assert harness.classify(None, "") == ("timeout", "")
