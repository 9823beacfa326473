"""Run Keras 2's own published examples on arignote and write docs/keras2_examples.md.

    python scripts/run_keras2_examples.py --keras-repo /work/.mirror/keras-team+keras/repo \
        --tag 2.3.1 [--only NAME[,NAME...]] [--timeout S] [--out docs/keras2_examples.md]

The examples are Keras's code, not ours: each is read from the Keras git repository at run time
(``git show <tag>:examples/<name>.py``) into a temporary directory and never stored in this repo.
What the harness changes, and only for the run:

* **Imports, and only imports.** A line ``from keras... import`` or ``import keras...`` is rewritten
  to the same import from ``arignote`` (``import keras`` -> ``import arignote as keras``,
  ``import keras.backend as K`` -> ``import arignote.backend as K``, ``import keras.layers`` ->
  ``import arignote.layers, arignote as keras``). Every rewritten line is printed.
* **Data.** ``HOME`` points at a temporary home whose ``~/.keras/datasets`` holds small synthetic
  files in the official formats (``mnist.npz``, ``imdb.npz`` + ``imdb_word_index.json``,
  ``reuters.npz`` + ``reuters_word_index.json``, ``cifar-10-batches-py.tar.gz``, the bAbI tasks
  archive, ``nietzsche.txt``), and the working directory gets the local files some examples read
  (``fra-eng/fra.txt``). Synthetic files cannot match the official hashes, so the hash checks are
  switched off (``_files.verify`` and ``validate_file``); the network is cut off (a download attempt
  prints ``HARNESS-NETWORK <url>`` and fails, which classifies the example as out of scope).
* **Work.** A boot module (written next to the example, imported before it runs) wraps
  ``Model.fit`` (which ``fit_generator`` goes through): ``epochs`` is capped to one epoch past
  ``initial_epoch``, array inputs and ``validation_data`` are cut to their first
  ``HARNESS_SAMPLES`` (256) samples and ``steps_per_epoch`` / ``validation_steps`` to 3;
  ``Model.evaluate`` scores the first 256 samples or 3 ``steps`` (``predict`` is never cut: its
  output is used). Examples that train in their own loop are stopped cleanly (exit 0,
  ``HARNESS-BUDGET`` on stderr) after 12 ``fit`` calls, 10 ``train_on_batch`` calls or 30 calls of
  ``K.function`` callables (the gradient ascent and L-BFGS loops of the image examples): they ran
  their steps and the classification says "runs (stopped by the work budget)". matplotlib draws
  to the Agg backend.
* **Pretrained weights.** ``weights='imagenet'`` finds no file offline; the harness saves the
  freshly built network's own random weights in Keras's HDF5 layout under Keras's file name in
  ``~/.keras/models`` and lets the application load them (``stand-in weights`` in the result): the
  example runs end to end, on meaningless weights.
* **Run.** One subprocess per example, ``ARIGNOTE_FLAGS=device=cpu``, ``OMP_NUM_THREADS=1``, this
  checkout's ``src`` first on ``PYTHONPATH``, a timeout (``--timeout``, default 120 s).

The examples themselves import six, numpy, scipy, pandas, matplotlib, Pillow and scikit-learn,
and plot_model needs Graphviz's ``dot`` (a Keras 2 user had them); install those to measure.

Classification: ``runs`` (exit 0), ``fails`` (the exception line and the innermost arignote frame of
the traceback), ``out of scope`` (a download was attempted, or a module that is not arignote's to
provide is missing: TensorFlow, cairocffi), ``timeout``.

Example::

    python scripts/run_keras2_examples.py --keras-repo /work/.mirror/keras-team+keras/repo --only mnist_mlp
"""

from __future__ import annotations

import argparse
import io
import json
import os
import pickle
import re
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"

# --------------------------------------------------------------------------------- import rewriting

_FROM = re.compile(r"^(\s*)from\s+keras(\.[\w.]+)?\s+import\b")
_IMPORT = re.compile(r"^(\s*)import\s+keras(\.[\w.]+)?(\s+as\s+(\w+))?\s*(#.*)?$")


def rewrite_imports(source: str) -> tuple[str, list[tuple[int, str, str]]]:
    """Rename the ``keras`` imports of ``source`` to ``arignote``; returns the text and the changes.

    Only import statements change; a name like ``keras.layers.Dense`` in the code keeps working
    because ``keras`` is then bound to ``arignote``. Each change is ``(line number, old, new)``.

        >>> rewrite_imports("import keras\\nfrom keras.layers import Dense\\n")[0]
        'import arignote as keras\\nfrom arignote.layers import Dense\\n'
    """
    out, changes = [], []
    for number, line in enumerate(source.splitlines(keepends=True), 1):
        body = line.rstrip("\r\n")
        end = line[len(body):]
        new = body
        m = _FROM.match(body)
        if m:
            new = f"{m.group(1)}from arignote{m.group(2) or ''} import" + body[m.end():]
        else:
            m = _IMPORT.match(body)
            if m:
                indent, sub, alias, comment = m.group(1), m.group(2) or "", m.group(4), m.group(5)
                if alias:
                    new = f"{indent}import arignote{sub} as {alias}"
                elif sub:
                    new = f"{indent}import arignote{sub}, arignote as keras"
                else:
                    new = f"{indent}import arignote as keras"
                if comment:
                    new += "  " + comment
        if new != body:
            changes.append((number, body, new))
        out.append(new + end)
    return "".join(out), changes


# ------------------------------------------------------------------------------ dataset fixtures

def _objects(rows: list) -> np.ndarray:
    out = np.empty(len(rows), dtype=object)
    for i, row in enumerate(rows):
        out[i] = list(row)
    return out


def _word_ids(rng: np.random.RandomState, n: int, vocab: int, lo: int, hi: int) -> list[list[int]]:
    # Zipf-like ids (frequent words have small ids, as in Keras's files), ids from 1, offset by Keras's
    # index_from=3 the loaders add, so ids here stay below ``vocab``.
    return [list(np.minimum(rng.zipf(1.3, size=rng.randint(lo, hi)), vocab - 1).astype(int))
            for _ in range(n)]


def write_mnist(directory: Path, rng: np.random.RandomState, n_train: int = 60000,
                n_test: int = 10000) -> Path:
    """``mnist.npz`` as Keras's: uint8 ``x_*`` (N, 28, 28), uint8 ``y_*`` (N,), every digit present.

    Full size by default: examples hard-code 60000 / 10000 (``x_train.reshape(60000, 784)``)."""
    path = directory / "mnist.npz"
    np.savez(
        path, x_train=rng.randint(0, 256, (n_train, 28, 28)).astype("uint8"),
        y_train=(np.arange(n_train) % 10).astype("uint8"),
        x_test=rng.randint(0, 256, (n_test, 28, 28)).astype("uint8"),
        y_test=(np.arange(n_test) % 10).astype("uint8"))
    return path


def write_imdb(directory: Path, rng: np.random.RandomState, n_train: int = 200,
               n_test: int = 100) -> list[Path]:
    """``imdb.npz`` (object arrays of word-id lists, int labels 0/1) and ``imdb_word_index.json``."""
    vocab = 25000
    np.savez(directory / "imdb.npz", x_train=_objects(_word_ids(rng, n_train, vocab, 20, 300)),
             y_train=(np.arange(n_train) % 2).astype("int64"),
             x_test=_objects(_word_ids(rng, n_test, vocab, 20, 300)),
             y_test=(np.arange(n_test) % 2).astype("int64"))
    index = {f"word{i}": i for i in range(1, vocab)}
    (directory / "imdb_word_index.json").write_text(json.dumps(index))
    return [directory / "imdb.npz", directory / "imdb_word_index.json"]


def write_reuters(directory: Path, rng: np.random.RandomState, n: int = 300) -> list[Path]:
    """``reuters.npz`` (``x``: object array of word-id lists, ``y``: 46 topics, all present) and
    ``reuters_word_index.json``."""
    vocab = 30000
    np.savez(directory / "reuters.npz", x=_objects(_word_ids(rng, n, vocab, 10, 200)),
             y=(np.arange(n) % 46).astype("int64"))
    (directory / "reuters_word_index.json").write_text(json.dumps({f"word{i}": i for i in range(1, vocab)}))
    return [directory / "reuters.npz", directory / "reuters_word_index.json"]


def write_cifar10(directory: Path, rng: np.random.RandomState, per_batch: int = 100) -> Path:
    """``cifar-10-batches-py.tar.gz`` (Keras's name): ``cifar-10-batches-py/data_batch_1..5`` and
    ``test_batch``, pickles of ``{b'data': uint8 (N, 3072) R,G,B planes, b'labels': [int]}``."""
    path = directory / "cifar-10-batches-py.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
            batch = {b"batch_label": name.encode(),
                     b"data": rng.randint(0, 256, (per_batch, 3072)).astype("uint8"),
                     b"labels": [int(v) for v in np.arange(per_batch) % 10],
                     b"filenames": [f"{name}_{i}.png".encode() for i in range(per_batch)]}
            blob = pickle.dumps(batch, protocol=2)
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    return path


_NAMES = ["Mary", "John", "Sandra", "Daniel"]
_PLACES = ["bathroom", "hallway", "kitchen", "garden", "office", "bedroom"]
_THINGS = ["apple", "football", "milk"]


def _babi_task(rng: np.random.RandomState, stories: int, two_facts: bool) -> str:
    """bAbI's text format: numbered lines, a story restarts at 1, a question line is
    ``<n> Where is X? \\t<answer>\\t<supporting line numbers>``."""
    lines = []
    for _ in range(stories):
        where: dict[str, tuple[str, int]] = {}
        n = 0
        for _ in range(3):
            for _ in range(2):
                n += 1
                who, place = _NAMES[rng.randint(4)], _PLACES[rng.randint(6)]
                lines.append(f"{n} {who} went to the {place}.")
                where[who] = (place, n)
            n += 1
            who = sorted(where)[rng.randint(len(where))]
            if two_facts:
                thing = _THINGS[rng.randint(3)]
                lines.append(f"{n} {who} got the {thing} there.")
                n += 1
                lines.append(f"{n} Where is the {thing}? \t{where[who][0]}\t{where[who][1]} {n - 1}")
            else:
                lines.append(f"{n} Where is {who}? \t{where[who][0]}\t{where[who][1]}")
    return "\n".join(lines) + "\n"


def write_babi(directory: Path, rng: np.random.RandomState, stories: int = 30) -> Path:
    """``babi-tasks-v1-2.tar.gz`` (the name the examples cache it under) with ``tasks_1-20_v1-2/en*/``
    qa1 (single supporting fact) and qa2 (two supporting facts) train and test files."""
    path = directory / "babi-tasks-v1-2.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for sub in ("en", "en-10k"):
            for task, two in (("qa1_single-supporting-fact", False), ("qa2_two-supporting-facts", True)):
                for split in ("train", "test"):
                    blob = _babi_task(rng, stories, two).encode()
                    info = tarfile.TarInfo(f"tasks_1-20_v1-2/{sub}/{task}_{split}.txt")
                    info.size = len(blob)
                    tar.addfile(info, io.BytesIO(blob))
    return path


def write_text_corpus(path: Path, rng: np.random.RandomState, words: int = 1500) -> Path:
    """A plain-text corpus (stands for ``nietzsche.txt``): lowercase words and punctuation."""
    vocab = ["the", "will", "to", "power", "truth", "is", "a", "woman", "and", "what", "then", "of", "we",
             "philosophers", "have", "been", "good", "evil", "beyond"]
    text = " ".join(vocab[i] + ("." if rng.rand() < 0.1 else "") for i in rng.randint(0, len(vocab), words))
    path.write_text(text + "\n", encoding="utf-8")
    return path


def write_fra_eng(directory: Path, rng: np.random.RandomState, pairs: int = 120) -> Path:
    """``fra-eng/fra.txt`` (manythings.org's format: ``english<TAB>french`` per line)."""
    en = ["go", "run", "stop", "wait", "hello", "i see", "we won", "help"]
    fr = ["va", "cours", "arrete", "attends", "bonjour", "je vois", "nous avons gagne", "aide"]
    folder = directory / "fra-eng"
    folder.mkdir(parents=True, exist_ok=True)
    rows = [f"{en[i].capitalize()}.\t{fr[i].capitalize()} !" for i in rng.randint(0, len(en), pairs)]
    (folder / "fra.txt").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return folder / "fra.txt"


def write_images(workdir: Path, rng: np.random.RandomState, size: tuple[int, int] = (48, 64)) -> list[Path]:
    """Small RGB pictures (``base.jpg``, ``style.jpg``, ``style.png``) and two-colour masks
    (``style_mask.png``, ``target_mask.png``) for the image examples' command-line arguments."""


    out = []
    # base.jpg is larger: deep_dream shrinks it twice by 1.4 and InceptionV3 needs 75 pixels
    for name, shape in (("base.jpg", (160, 224)), ("style.jpg", size), ("style.png", size)):
        Image.fromarray(rng.randint(0, 256, (*shape, 3)).astype("uint8")).save(workdir / name)
        out.append(workdir / name)
    for name in ("style_mask.png", "target_mask.png"):
        mask = np.zeros((*size, 3), "uint8")
        mask[:, size[1] // 2:] = (255, 0, 0)
        mask[:, : size[1] // 2] = (0, 0, 255)
        Image.fromarray(mask).save(workdir / name)
        out.append(workdir / name)
    return out


def write_glove_and_newsgroups(workdir: Path, rng: np.random.RandomState, docs: int = 8) -> list[Path]:
    """``glove.6B/glove.6B.100d.txt`` (``word v1 .. v100`` per line) and ``20_newsgroup/<group>/<id>``
    text files, the layout pretrained_word_embeddings.py reads from its working directory."""
    words = [f"word{i}" for i in range(200)]
    glove = workdir / "glove.6B"
    glove.mkdir(parents=True, exist_ok=True)
    rows = [w + " " + " ".join(f"{v:.4f}" for v in rng.randn(100)) for w in words]
    (glove / "glove.6B.100d.txt").write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = [glove / "glove.6B.100d.txt"]
    for group in ("alt.atheism", "comp.graphics", "sci.space"):
        folder = workdir / "20_newsgroup" / group
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(docs):
            text = "From: someone\nSubject: test\n\n" + " ".join(words[j] for j in rng.randint(0, 200, 80))
            (folder / str(50000 + i)).write_text(text, encoding="latin-1")
            out.append(folder / str(50000 + i))
    return out


def write_datasets(keras_datasets: Path, seed: int = 0) -> list[Path]:
    """The Keras cache files every dataset-reading example needs, in ``keras_datasets``."""
    rng = np.random.RandomState(seed)
    keras_datasets.mkdir(parents=True, exist_ok=True)
    files = [write_mnist(keras_datasets, rng), *write_imdb(keras_datasets, rng),
             *write_reuters(keras_datasets, rng),
             write_cifar10(keras_datasets, rng), write_babi(keras_datasets, rng),
             write_text_corpus(keras_datasets / "nietzsche.txt", rng)]
    return files


def write_local_files(workdir: Path, seed: int = 1) -> list[Path]:
    """The files examples read from their working directory (or take as arguments)."""
    rng = np.random.RandomState(seed)
    workdir.mkdir(parents=True, exist_ok=True)
    return [write_fra_eng(workdir, rng), *write_images(workdir, rng),
            *write_glove_and_newsgroups(workdir, rng)]


# ------------------------------------------------------------------------------------ boot module

BOOT_SETUP = textwrap.dedent('''
    """Harness only (scripts/run_keras2_examples.py): hash checks off, network off, work capped."""
    import functools
    import inspect
    import os
    import runpy
    import sys
    import urllib.error

    import numpy as np

    from arignote import backend as K
    from arignote.applications import _weights
    from arignote.datasets import _files, _get_file
    from arignote.models import model as _model

    SAMPLES, STEPS, FIT_BUDGET, BATCH_BUDGET, FUNCTION_BUDGET = 256, 3, 12, 10, 30
    _files.verify = lambda path, hashes: None
    _get_file.validate_file = lambda *a, **k: True


    def _no_network(url, timeout=None):
        print("HARNESS-NETWORK " + str(getattr(url, "full_url", url)), file=sys.stderr, flush=True)
        raise urllib.error.URLError("network disabled by the examples harness")


    _files._urlopen = _no_network
    _calls = {"fit": 0, "train_on_batch": 0, "K.function": 0}


    def _budget(kind, limit):
        _calls[kind] += 1
        if _calls[kind] > limit:
            print(f"HARNESS-BUDGET stopped after {limit} {kind} calls", file=sys.stderr, flush=True)
            sys.stdout.flush()
            os._exit(0)


    def _cut(data):
        if isinstance(data, np.ndarray) and data.ndim and len(data) > SAMPLES:
            return data[:SAMPLES]
        if isinstance(data, (list, tuple)) and data and all(isinstance(d, np.ndarray) for d in data):
            return type(data)(_cut(d) for d in data)
        if isinstance(data, dict):
            return {k: _cut(v) for k, v in data.items()}
        return data


    _fit = _model.Model.fit


    @functools.wraps(_fit)  # the signature stays fit's (the scikit-learn wrapper checks parameters on it)
    def fit(self, *args, **kwargs):
        _budget("fit", FIT_BUDGET)
        bound = inspect.signature(_fit).bind(self, *args, **kwargs)
        kwargs = dict(bound.arguments)
        kwargs.pop("self")
        kwargs.update(kwargs.pop("kwargs", {}))
        x, y = kwargs.pop("x", None), kwargs.pop("y", None)
        if not os.environ.get("HARNESS_KEEP_EPOCHS"):
            kwargs["epochs"] = min(kwargs.get("epochs", 1), kwargs.get("initial_epoch", 0) + 1)
        for key in ("steps_per_epoch", "validation_steps"):
            if kwargs.get(key):
                kwargs[key] = min(kwargs[key], STEPS)
        if kwargs.get("sample_weight") is not None:
            kwargs["sample_weight"] = _cut(kwargs["sample_weight"])
        vd = kwargs.get("validation_data")
        if isinstance(vd, (list, tuple)):
            kwargs["validation_data"] = tuple(_cut(v) for v in vd)
        return _fit(self, _cut(x), _cut(y), **kwargs)


    _model.Model.fit = fit
    _train_on_batch = _model.Model.train_on_batch


    @functools.wraps(_train_on_batch)
    def train_on_batch(self, *args, **kwargs):
        _budget("train_on_batch", BATCH_BUDGET)
        return _train_on_batch(self, *args, **kwargs)


    _model.Model.train_on_batch = train_on_batch
    _evaluate = _model.Model.evaluate


    @functools.wraps(_evaluate)  # a score only: x, y (and weights) are cut alike
    def evaluate(self, *args, **kwargs):
        bound = inspect.signature(_evaluate).bind(self, *args, **kwargs)
        kwargs = dict(bound.arguments)
        kwargs.pop("self")
        kwargs.update(kwargs.pop("kwargs", {}))
        for key in ("x", "y", "sample_weight"):
            if kwargs.get(key) is not None:
                kwargs[key] = _cut(kwargs[key])
        if kwargs.get("steps"):  # evaluate_generator(gen, steps=50) scores STEPS batches
            kwargs["steps"] = min(kwargs["steps"], STEPS)
        return _evaluate(self, **kwargs)


    _model.Model.evaluate = evaluate
    _function = K.function


    @functools.wraps(_function)  # K.function's callables drive the hand-written optimisation loops
    def function(*args, **kwargs):
        run = _function(*args, **kwargs)

        def counted(*a, **k):
            _budget("K.function", FUNCTION_BUDGET)
            return run(*a, **k)

        return counted


    K.function = function
    _load = _weights.load


    @functools.wraps(_load)
    def load(model, weights, imagenet):
        # No ImageNet weights offline: the network's own random initial weights, saved in Keras's
        # HDF5 layout under Keras's file name, stand in for them (and are read back by the loader).
        if weights == "imagenet" and imagenet is not None:
            cache = os.path.join(os.path.expanduser("~"), ".keras", "models")
            path = os.path.join(cache, imagenet.fname)
            if not os.path.exists(path):
                os.makedirs(cache, exist_ok=True)
                model.save_weights(path)
                print("HARNESS-WEIGHTS " + imagenet.fname, file=sys.stderr, flush=True)
        return _load(model, weights, imagenet)


    _weights.load = load
''')

# The boot module's last part: run the script named on the command line as ``__main__``. Another
# harness (scripts/run_keras2_book.py) puts its own patches between BOOT_SETUP and BOOT_RUN.
BOOT_RUN = textwrap.dedent('''
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
''')
BOOT = BOOT_SETUP + BOOT_RUN

# ---------------------------------------------------------------------------------- per-example

# Command-line arguments some examples require (their argparse arguments); the files are write_local_files's.
ARGS: dict[str, list[str]] = {
    "class_activation_maps": ["base.jpg"],
    "deep_dream": ["base.jpg", "dream"],
    "neural_style_transfer": ["base.jpg", "style.jpg", "styled", "--iter", "1"],
    "neural_doodle": ["--nlabels", "2", "--style-image", "style.png", "--style-mask", "style_mask.png",
                      "--target-mask", "target_mask.png", "--target-image-prefix", "doodle"],
}

# Examples whose later code depends on the number of epochs trained (they plot history against
# range(epochs)): their epochs are kept (the samples are still cut).
KEEP_EPOCHS = {"reuters_mlp_relu_vs_selu"}

# Examples that continue another one's work in its directory (lstm_seq2seq_restore loads s2s.h5).
WORKDIR = {"lstm_seq2seq_restore": "lstm_seq2seq"}

# Failures that are not arignote's, each found by reading its log: what they come from.
OUTSIDE = {
    "babi_memnn": "the example's tokenize() uses re.split(r'(\\W+)?'), whose empty optional group gives None "
                  "on Python >= 3.7 (the example was written for 3.6)",
    "conv_lstm": "the example uses np.float, removed in numpy 1.24",
    "variational_autoencoder_deconv": "after training, the example's plot gives 31 tick positions for 30 "
                                      "labels (its end_range is one digit too far), which matplotlib >= 3.5 "
                                      "refuses",
}

# Modules that are not arignote's to provide: an example that needs them is out of scope.
FOREIGN = {"tensorflow": "TensorFlow-only API", "cairocffi": "cairocffi (Cairo text rendering)",
           "cv2": "OpenCV (cv2)"}


def list_examples(repo: str, tag: str) -> list[str]:
    out = subprocess.run(["git", "-C", repo, "ls-tree", "--name-only", tag, "examples/"], check=True,
                         capture_output=True, text=True).stdout.split()
    return sorted(Path(p).stem for p in out if p.endswith(".py"))


def example_source(repo: str, tag: str, name: str) -> str:
    return subprocess.run(["git", "-C", repo, "show", f"{tag}:examples/{name}.py"], check=True,
                          capture_output=True, text=True).stdout


def classify(returncode: int | None, stderr: str) -> tuple[str, str]:
    """``(result, detail)`` from a run's exit code and stderr (see the module docstring)."""
    network = re.findall(r"HARNESS-NETWORK (\S+)", stderr)
    if returncode is None:
        return "timeout", ""
    if returncode == 0:
        budget = re.search(r"HARNESS-BUDGET (.*)", stderr)
        notes = [f"stopped by the work budget ({budget.group(1)})"] if budget else []
        notes += [f"stand-in weights for {w}" for w in re.findall(r"HARNESS-WEIGHTS (\S+)", stderr)]
        return "runs", "; ".join(notes)
    if network:
        return "out of scope", f"needs the network: {network[0]}"
    missing = re.search(r"ModuleNotFoundError: No module named '([\w.]+)'", stderr)
    if missing and missing.group(1).split(".")[0] in FOREIGN:
        return "out of scope", f"needs {FOREIGN[missing.group(1).split('.')[0]]}"
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    error = next((ln for ln in reversed(lines) if re.match(r"^[\w.]+(Error|Exception|Exit|Interrupt)\b", ln)),
                 lines[-1] if lines else f"exit code {returncode}")
    frames = re.findall(r'File "([^"]*/arignote/[^"]*)", line (\d+), in (\w+)', stderr)
    if not frames:
        return "fails", error.strip()
    path, line, func = frames[-1]
    return "fails", f"{error.strip()} [{path.split('/arignote/', 1)[1]}:{line} in {func}]"


def run_logged(command: list[str], cwd: Path, env: dict, timeout: float,
               log: Path) -> tuple[int | None, str, float]:
    """Run ``command``; its stdout and stderr go to ``log``. Returns the exit code (None: timed out),
    the stderr and the seconds taken."""
    start = time.monotonic()
    try:
        proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                              check=False)
        code, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        code = None
        stdout = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        stderr = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
    log.write_text(f"--- stdout\n{stdout}\n--- stderr\n{stderr}", encoding="utf-8")
    return code, stderr, time.monotonic() - start


def run_one(name: str, source: str, tmp: Path, timeout: float, src: Path = SRC) -> dict:
    home = tmp / "home"
    work = tmp / WORKDIR.get(name, name)
    work.mkdir(parents=True, exist_ok=True)
    new, changes = rewrite_imports(source)
    for number, old, line in changes:
        print(f"  {name}.py:{number}: {old.strip()}  ->  {line.strip()}")
    (work / f"{name}.py").write_text(new, encoding="utf-8")
    (work / "_harness_boot.py").write_text(BOOT, encoding="utf-8")
    write_local_files(work)
    env = {k: v for k, v in os.environ.items() if k not in ("KERAS_HOME", "ARIGNOTE_DATA", "THEANO_FLAGS")}
    if name in KEEP_EPOCHS:
        env["HARNESS_KEEP_EPOCHS"] = "1"
    env.update(HOME=str(home), ARIGNOTE_FLAGS="device=cpu", ARIGNOTERC="", OMP_NUM_THREADS="1",
               MPLBACKEND="Agg", PYTHONPATH=str(src) + os.pathsep + env.get("PYTHONPATH", ""))
    command = [sys.executable, "_harness_boot.py", f"{name}.py", *ARGS.get(name, [])]
    code, stderr, seconds = run_logged(command, work, env, timeout, tmp / f"{name}.log")
    result, detail = classify(code, stderr)
    if result == "fails" and name in OUTSIDE:
        result, detail = "fails outside arignote", f"{detail} ({OUTSIDE[name]})"
    return {"name": name, "result": result, "detail": detail, "seconds": round(seconds, 1)}


def write_report(rows: list[dict], path: Path, tag: str, note: str, before: list[dict] | None = None) -> None:
    """The markdown table of ``rows``; with ``before`` (an earlier run's rows), a column and a count
    of how each example did then."""
    runs = sum(r["result"] == "runs" for r in rows)
    scope = sum(r["result"] == "out of scope" for r in rows)
    outside = sum(r["result"] == "fails outside arignote" for r in rows)
    then = {r["name"]: r for r in before or []}
    lines = [
        f"# Keras {tag}'s own examples on arignote",
        "",
        "Measured by `scripts/run_keras2_examples.py` (its docstring says exactly what it changes: the",
        "import lines only; synthetic data files in Keras's formats; one epoch and at most 256 samples per",
        "`fit`/`evaluate`; a work budget for hand-written training and optimisation loops; stand-in",
        "ImageNet weight files; no network). The examples' code is read from Keras's git repository at",
        "run time and is not stored here.",
        "",
    ]
    rest = (f"{scope} out of scope, {outside} fail outside arignote, "
            f"{len(rows) - runs - scope - outside} fail in arignote or time out.")
    if before is not None:
        then_runs = sum(r["result"] == "runs" for r in before)
        lines += [f"**Before: {then_runs}/{len(before)} ran. After: {runs}/{len(rows)} run**; {rest}", ""]
    else:
        lines += [f"**{runs}/{len(rows)} run**; {rest}", ""]
    if note:
        lines += [note, ""]
    head = "| example | before | result | detail | seconds |" if before is not None else \
        "| example | result | detail | seconds |"
    lines += [head, "|" + " --- |" * (head.count("|") - 1)]
    for r in rows:
        detail = r["detail"].replace("|", "\\|")
        was = [then[r["name"]]["result"] if r["name"] in then else "-"] if before is not None else []
        lines.append("| " + " | ".join([r["name"], *was, r["result"], detail, str(r["seconds"])]) + " |")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keras-repo", required=True, help="a git clone of keras-team/keras")
    parser.add_argument("--tag", default="2.3.1")
    parser.add_argument("--only", default="", help="comma-separated example names (no .py)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per example")
    parser.add_argument("--out", default=str(ROOT / "docs" / "keras2_examples.md"),
                        help="the report to write ('' for none)")
    parser.add_argument("--note", default="", help="a paragraph to put above the table")
    parser.add_argument("--src", default=str(SRC),
                        help="the arignote sources to run (default: this checkout's)")
    parser.add_argument("--json", default="", help="also write the rows as JSON here")
    parser.add_argument("--before", default="", help="an earlier run's --json, shown beside this one")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (logs)")
    args = parser.parse_args(argv)
    names = list_examples(args.keras_repo, args.tag)
    if args.only:
        wanted = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = sorted(set(wanted) - set(names))
        if unknown:
            parser.error(f"no example named {', '.join(unknown)} at {args.tag}")
        names = wanted
    tmp = Path(tempfile.mkdtemp(prefix="keras2-examples-"))
    write_datasets(tmp / "home" / ".keras" / "datasets")
    rows = []
    for name in names:
        print(f"{name}:", flush=True)
        row = run_one(name, example_source(args.keras_repo, args.tag, name), tmp, args.timeout,
                      Path(args.src))
        print(f"  -> {row['result']} {row['detail']} ({row['seconds']} s)", flush=True)
        rows.append(row)
    runs = sum(r["result"] == "runs" for r in rows)
    print(f"{runs}/{len(rows)} run; logs in {tmp}" if args.keep else f"{runs}/{len(rows)} run")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    if args.out and not args.only:
        before = json.loads(Path(args.before).read_text(encoding="utf-8")) if args.before else None
        write_report(rows, Path(args.out), args.tag, args.note, before)
    if not args.keep:
        subprocess.run(["rm", "-rf", str(tmp)], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
