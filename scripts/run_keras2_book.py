"""Run the notebooks of "Deep Learning with Python" (1st edition, Keras 2.0.x) on arignote and write
docs/keras2_book.md.

    python scripts/run_keras2_book.py \
        --repo /work/.mirror/fchollet+deep-learning-with-python-notebooks/repo \
        [--only 3.5-classifying-movie-reviews,...] [--timeout S] [--out docs/keras2_book.md]

The notebooks are the book's code, not ours: each ``first_edition/*.ipynb`` is read from the git
repository of fchollet/deep-learning-with-python-notebooks at run time; its code cells (the
notebook's JSON, ``cell_type == "code"``) are joined into one script in a temporary directory and
never stored in this repository. The machinery is scripts/run_keras2_examples.py's (imported, not
copied): the same import rewriting, the same Keras dataset cache files, the same boot module (one
epoch, 256 samples, 3 steps per ``fit``/``evaluate``, work budgets, stand-in ImageNet weights, no
network), the same classification. What this harness adds, and only for the run:

* **Notebook to script.** IPython lines (``%matplotlib inline``, ``!ls``) are dropped; each cell
  is preceded by a ``# cell N`` line so a failure names the cell it stopped in. A few cells are the
  text's illustrative sketches, using names no cell defines (``layer_output *= ...`` in 4.4, the
  VAE outline ``encoder(input_img)`` in 8.4): they are left out (:data:`SKIP_CELLS`, named in the
  report), so that the runnable cells after them are measured.
* **Data.** The book's Keras datasets come from the examples harness's writers, sized for the
  notebooks' hard-coded splits (IMDB 10,512 + 512 reviews: the notebooks hold out the first 10,000
  for validation; Reuters 1,600 newswires: 1,000 held out), plus ``boston_housing.npz``. The local
  files the notebooks read are small synthetic files in the same layout (:data:`DATA`): the Kaggle
  cats-and-dogs folder (JPEGs ``cat.N.jpg`` / ``dog.N.jpg``), the ``cats_and_dogs_small`` split,
  ``aclImdb/{train,test}/{neg,pos}/*.txt``, ``glove.6B.100d.txt``, ``jena_climate_2009_2016.csv``
  (the real header, 310,000 ten-minute rows) and the pictures of chapters 5 and 8; ``decode_predictions``
  reads a synthetic ``~/.keras/models/imagenet_class_index.json``. The notebooks'
  absolute directories (``/home/ubuntu/data/``, ``/Users/fchollet/Downloads/``, ``/home/ubuntu/``)
  are rewritten to the run's data directory (every rewrite is printed).
* **Work.** Beyond the boot module's caps, a notebook's own loop sizes and sample counts that no
  ``fit`` argument controls are shrunk by exact text substitutions (:data:`SHRINK`, printed; a
  substitution that no longer matches is an error): e.g. 5.3 extracts VGG16 features for 40/20/20
  images instead of 2,000/1,000/1,000, 8.1 trains 2 epochs and samples 20 characters per
  temperature. Notebooks that index their history by a hard-coded epoch count keep their epochs
  (:data:`KEEP_EPOCHS`, after shrinking that count).
* **A missing notebook.** The mirror lacks the blob of ``5.4-visualizing-what-convnets-learn``
  (its largest file); the newest readable version of that file name anywhere in the repository's
  history is used instead and its commit is shown in the report (a contributor's copy, not the
  book's own text).

Example::

    python scripts/run_keras2_book.py --repo /work/.mirror/fchollet+deep-learning-with-python-notebooks/repo \
        --only 2.1-a-first-look-at-a-neural-network
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_keras2_examples as ex  # noqa: E402  (the examples harness: imports, datasets, boot, classify)

ROOT = ex.ROOT
SRC = ex.SRC
FOLDER = "first_edition"

# ------------------------------------------------------------------------------ notebook to script

_MAGIC = re.compile(r"^\s*[%!]")


def notebook_script(notebook: dict, skip: dict[int, str] | None = None) -> tuple[str, list[int], list[str]]:
    """The code cells of a notebook's JSON as one script: ``(text, first line of each cell, dropped
    IPython lines)``. A cell's ``source`` is a list of lines or one string (both are valid nbformat).
    ``skip``: cell number -> why that cell is left out (the book's illustrative sketches).

        >>> nb = {"cells": [{"cell_type": "markdown", "source": ["# title"]},
        ...                 {"cell_type": "code", "source": ["%matplotlib inline\\n", "x = 1"]}]}
        >>> notebook_script(nb)
        ('# cell 1\\nx = 1\\n', [1], ['%matplotlib inline'])
    """
    lines: list[str] = []
    starts, dropped = [], []
    code = [c for c in notebook.get("cells", []) if c.get("cell_type") == "code"]
    for number, cell in enumerate(code, 1):
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else source
        starts.append(len(lines) + 1)
        lines.append(f"# cell {number}")
        if skip and number in skip:
            lines.append(f"# skipped by the harness: {skip[number]}")
            continue
        for line in text.splitlines():
            if _MAGIC.match(line):
                dropped.append(line.strip())
                continue
            lines.append(line)
    return "\n".join(lines) + "\n", starts, dropped


def cell_of(line: int, starts: list[int]) -> int:
    """The number (from 1) of the cell holding script line ``line``."""
    return sum(1 for s in starts if s <= line)


# ----------------------------------------------------------------------------- reading the repo

def _git(repo: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, check=False)


def list_notebooks(repo: str, ref: str) -> list[str]:
    out = _git(repo, "ls-tree", "--name-only", f"{ref}:{FOLDER}/").stdout.split()
    return sorted(Path(p).stem for p in out if p.endswith(".ipynb"))


def notebook_json(repo: str, ref: str, name: str) -> tuple[dict, str]:
    """The notebook ``name`` at ``ref``, or (its blob absent from the mirror) the newest readable
    version of a file with that name anywhere in the history; returns ``(json, where it came from)``."""
    proc = _git(repo, "show", f"{ref}:{FOLDER}/{name}.ipynb")
    if proc.returncode == 0:
        return json.loads(proc.stdout), f"{ref}:{FOLDER}/{name}.ipynb"
    commits = _git(repo, "log", "--all", "--format=%H", "--", f"*{name}.ipynb").stdout.split()
    for commit in commits:
        paths = _git(repo, "ls-tree", "-r", "--name-only", commit).stdout.splitlines()
        for path in paths:
            if path.endswith(f"{name}.ipynb") and ".ipynb_checkpoints" not in path:
                blob = _git(repo, "show", f"{commit}:{path}")
                if blob.returncode == 0:
                    return json.loads(blob.stdout), f"{commit[:7]}:{path}"
    raise FileNotFoundError(f"{name}.ipynb: no readable version in {repo}")


# --------------------------------------------------------------------------------- data files

def _jpeg(path: Path, rng: np.random.RandomState, size: tuple[int, int] = (40, 48)) -> Path:
    Image.fromarray(rng.randint(0, 256, (*size, 3)).astype("uint8")).save(path)
    return path


def write_boston_housing(directory: Path, rng: np.random.RandomState) -> Path:
    """``boston_housing.npz`` as Keras's: float64 ``x`` (506, 13), float64 ``y`` (506,) (prices)."""
    path = directory / "boston_housing.npz"
    np.savez(path, x=rng.rand(506, 13) * 100, y=5 + rng.rand(506) * 45)
    return path


def write_book_datasets(keras_datasets: Path, seed: int = 0) -> list[Path]:
    """The Keras cache files of the book's datasets, sized for its hard-coded splits."""
    rng = np.random.RandomState(seed)
    keras_datasets.mkdir(parents=True, exist_ok=True)
    return [ex.write_mnist(keras_datasets, rng), *ex.write_imdb(keras_datasets, rng, 10512, 512),
            *ex.write_reuters(keras_datasets, rng, 1600), ex.write_cifar10(keras_datasets, rng),
            write_boston_housing(keras_datasets, rng),
            ex.write_text_corpus(keras_datasets / "nietzsche.txt", rng, words=3000)]


def write_class_index(keras_models: Path) -> Path:
    """``imagenet_class_index.json`` as Keras's (``{"0": ["n01440764", "tench"], ...}``, 1000
    classes; synthetic ids and names) in ``~/.keras/models``, for ``decode_predictions``."""
    keras_models.mkdir(parents=True, exist_ok=True)
    path = keras_models / "imagenet_class_index.json"
    path.write_text(json.dumps({str(i): [f"n{i:08d}", f"class_{i}"] for i in range(1000)}), encoding="utf-8")
    return path


def write_kaggle_cats_dogs(data: Path, rng: np.random.RandomState) -> None:
    """``kaggle_original_data/{cat,dog}.{0..1999}.jpg``: the files 5.2 copies into its split."""
    folder = data / "kaggle_original_data"
    folder.mkdir(parents=True, exist_ok=True)
    for animal in ("cat", "dog"):
        for i in range(2000):
            _jpeg(folder / f"{animal}.{i}.jpg", rng, (24, 32))


def write_cats_dogs_small(data: Path, rng: np.random.RandomState, per_class: int = 30) -> None:
    """``cats_and_dogs_small/{train,validation,test}/{cats,dogs}/`` as 5.2 leaves it (fewer files)."""
    if (data / "cats_and_dogs_small").exists():
        return
    for split, first in (("train", 0), ("validation", 1000), ("test", 1500)):
        for animal in ("cat", "dog"):
            folder = data / "cats_and_dogs_small" / split / f"{animal}s"
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(first, first + per_class):
                _jpeg(folder / f"{animal}.{i}.jpg", rng, (24, 32))


_WORDS = [f"word{i}" for i in range(300)]


def write_glove(data: Path, rng: np.random.RandomState) -> None:
    """``glove.6B.100d.txt``: ``word v1 .. v100`` per line."""
    rows = [w + " " + " ".join(f"{v:.4f}" for v in rng.randn(100)) for w in _WORDS[:250]]
    (data / "glove.6B.100d.txt").write_text("\n".join(rows) + "\n", encoding="utf-8")


def write_aclimdb(data: Path, rng: np.random.RandomState, per_label: int = 150) -> None:
    """``aclImdb/{train,test}/{neg,pos}/<id>_<stars>.txt``: one review of plain words per file."""
    for split in ("train", "test"):
        for label in ("neg", "pos"):
            folder = data / "aclImdb" / split / label
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(per_label):
                text = " ".join(_WORDS[j] for j in rng.randint(0, len(_WORDS), rng.randint(20, 150)))
                (folder / f"{i}_{7 if label == 'pos' else 2}.txt").write_text(text, encoding="utf-8")


JENA_HEADER = ('"Date Time","p (mbar)","T (degC)","Tpot (K)","Tdew (degC)","rh (%)","VPmax (mbar)",'
               '"VPact (mbar)","VPdef (mbar)","sh (g/kg)","H2OC (mmol/mol)","rho (g/m**3)","wv (m/s)",'
               '"max. wv (m/s)","wd (deg)"')


def write_jena(data: Path, rng: np.random.RandomState, rows: int = 310000) -> None:
    """``jena_climate_2009_2016.csv``: the real header, ``rows`` ten-minute records of 14 values (no
    trailing newline, as the real file: the notebook turns every line after the header into floats).
    6.3's generators read rows 300,001 onwards for testing, so the file needs more than that."""
    t = np.arange(rows)
    values = rng.randn(rows, 14).astype("float32")
    values[:, 1] = 10 + 10 * np.sin(2 * np.pi * t / 52560) + 5 * np.sin(2 * np.pi * t / 144)
    body = "\n".join(
        f"01.01.2009 00:{i % 60:02d}:00," + ",".join(f"{v:.2f}" for v in row) for i, row in enumerate(values))
    (data / "jena_climate_2009_2016.csv").write_text(JENA_HEADER + "\n" + body, encoding="utf-8")


def write_pictures(data: Path, rng: np.random.RandomState) -> None:
    """The pictures of chapters 5 and 8 (deep dream's is large enough for InceptionV3's octaves)."""
    for name, size in (("original_photo_deep_dream.jpg", (180, 240)), ("portrait.png", (60, 48)),
                       ("popova.jpg", (60, 48)), ("creative_commons_elephant.jpg", (60, 80))):
        _jpeg(data / name, rng, size)


def make_gan_images(data: Path, rng: np.random.RandomState) -> None:
    """The folder 8.5 saves its generated frogs into (the notebook expects it to exist)."""
    (data / "gan_images").mkdir(parents=True, exist_ok=True)


def write_workdir_pictures(work: Path, rng: np.random.RandomState) -> None:
    """Pictures a notebook names relative to its own directory (5.4's contributor copy)."""
    for name in ("5.4 cat.jpg", "5.4 creative_commons_elephant1.jpg", "5.4 creative_commons_elephant2.jpg"):
        _jpeg(work / name, rng, (60, 80))


Writer = Callable[[Path, np.random.RandomState], None]

# Local files each notebook reads (in its data directory); the rest come from the Keras cache.
DATA: dict[str, list[Writer]] = {
    "5.2-using-convnets-with-small-datasets": [write_kaggle_cats_dogs],
    "5.3-using-a-pretrained-convnet": [write_cats_dogs_small],
    "5.4-visualizing-what-convnets-learn": [write_cats_dogs_small, write_pictures],
    "6.1-using-word-embeddings": [write_aclimdb, write_glove],
    "6.3-advanced-usage-of-recurrent-neural-networks": [write_jena],
    "6.4-sequence-processing-with-convnets": [write_jena],
    "8.2-deep-dream": [write_pictures],
    "8.3-neural-style-transfer": [write_pictures],
    "8.5-introduction-to-gans": [make_gan_images],
}

# Notebooks that continue another one's work in its directory (5.4 loads 5.2's saved model).
WORKDIR = {"5.4-visualizing-what-convnets-learn": "5.2-using-convnets-with-small-datasets"}

# The notebooks' absolute directories, rewritten to the run's data directory.
PREFIXES = ("/home/ubuntu/data/", "/Users/fchollet/Downloads/", "/home/ubuntu/")

# Loop sizes and sample counts no fit argument controls: (old text, new text), exact.
SHRINK: dict[str, list[tuple[str, str]]] = {
    "3.7-predicting-house-prices": [("num_epochs = 100", "num_epochs = 2"),
                                    ("num_epochs = 500", "num_epochs = 3")],
    "5.3-using-a-pretrained-convnet": [
        ("extract_features(train_dir, 2000)", "extract_features(train_dir, 40)"),
        ("extract_features(validation_dir, 1000)", "extract_features(validation_dir, 20)"),
        ("extract_features(test_dir, 1000)", "extract_features(test_dir, 20)"),
        ("(train_features, (2000, 4 * 4 * 512))", "(train_features, (40, 4 * 4 * 512))"),
        ("(validation_features, (1000, 4 * 4 * 512))", "(validation_features, (20, 4 * 4 * 512))"),
        ("(test_features, (1000, 4 * 4 * 512))", "(test_features, (20, 4 * 4 * 512))")],
    "5.4-visualizing-what-convnets-learn": [
        ("for i in range(40):", "for i in range(2):"), ("for i in range(8):", "for i in range(2):"),
        ("for j in range(8):", "for j in range(2):"),
        ("for layer_name in ['block1_conv1', 'block2_conv1', 'block3_conv1', 'block4_conv1']:",
         "for layer_name in ['block1_conv1', 'block4_conv1']:")],
    "8.1-text-generation-with-lstm": [("for epoch in range(1, 60):", "for epoch in range(1, 3):"),
                                      ("for i in range(400):", "for i in range(20):")],
    "8.2-deep-dream": [("iterations = 20", "iterations = 2")],
    "8.3-neural-style-transfer": [("img_height = 400", "img_height = 48"),
                                  ("iterations = 20", "iterations = 1")],
    "8.4-generating-images-with-vaes": [("n = 15", "n = 3")],
    "8.5-introduction-to-gans": [("iterations = 10000", "iterations = 2")],
}

# Notebooks that index their history by a hard-coded epoch count: their epochs are kept.
KEEP_EPOCHS = {"3.7-predicting-house-prices", "4.4-overfitting-and-underfitting"}

# Cells that are the book's illustrative sketches, not runnable code (they use names no earlier cell
# defines): cell number -> what it is. They are left out; the report names them.
_SKETCH = "an illustrative sketch in the text, using names no cell defines"
SKIP_CELLS: dict[str, dict[int, str]] = {
    "4.4-overfitting-and-underfitting": {18: _SKETCH + " (layer_output, np.randint)", 19: _SKETCH,
                                         20: _SKETCH, 21: _SKETCH + " (model)"},
    "6.3-advanced-usage-of-recurrent-neural-networks": {9: _SKETCH + " (preds, targets)"},
    "8.4-generating-images-with-vaes": {3: _SKETCH + " (encoder, exp, epsilon, decoder)"},
}

# Failures that are not arignote's, each found by reading its log: what they come from.
OUTSIDE: dict[str, str] = {
    "3.5-classifying-movie-reviews":
        "run top to bottom, the last compile before fit is metrics=[metrics.binary_accuracy], which Keras 2 "
        "logs as binary_accuracy, so history.history['acc'] is a KeyError in Keras 2 too (the notebook's "
        "saved output shows it was run with an earlier compile cell)",
    "8.2-deep-dream": "the notebook calls scipy.ndimage after a bare `import scipy` and scipy.misc.imsave, "
                      "removed in SciPy 1.2",
    "8.3-neural-style-transfer": "the notebook imports scipy.misc.imsave, removed in SciPy 1.2",
}


def prepare(name: str, source: str, data: Path) -> tuple[str, list[str]]:
    """``source`` with the data directories rewritten and :data:`SHRINK` applied; returns the text
    and one line per change. A shrink that does not match the notebook is an error."""
    notes = []
    for prefix in PREFIXES:
        for quote in ("'", '"'):
            old = quote + prefix
            if old in source:
                source = source.replace(old, quote + str(data) + "/")
                notes.append(f"{old}...  ->  {quote}{data}/...")
    for old, new in SHRINK.get(name, []):
        if old not in source:
            raise ValueError(f"{name}: the shrink {old!r} no longer matches the notebook")
        source = source.replace(old, new)
        notes.append(f"{old}  ->  {new}")
    return source, notes


# -------------------------------------------------------------------------------- running one

def run_one(name: str, notebook: dict, where: str, tmp: Path, timeout: float, src: Path = SRC) -> dict:
    home = tmp / "home"
    work = tmp / WORKDIR.get(name, name)
    data = work / "data"
    data.mkdir(parents=True, exist_ok=True)
    rng = np.random.RandomState(zlib.crc32(name.encode()))
    for writer in DATA.get(name, []):
        writer(data, rng)
    write_workdir_pictures(work, rng)
    skip = SKIP_CELLS.get(name, {})
    script, starts, dropped = notebook_script(notebook, skip)
    for line in dropped:
        print(f"  dropped IPython line: {line}")
    script, notes = prepare(name, script, data)
    for note in notes:
        print(f"  {note}")
    script, changes = ex.rewrite_imports(script)
    for number, old, line in changes:
        print(f"  {name}.py:{number}: {old.strip()}  ->  {line.strip()}")
    (work / f"{name}.py").write_text(script, encoding="utf-8")
    (work / "_harness_boot.py").write_text(ex.BOOT, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("KERAS_HOME", "ARIGNOTE_DATA", "THEANO_FLAGS")}
    if name in KEEP_EPOCHS:
        env["HARNESS_KEEP_EPOCHS"] = "1"
    env.update(HOME=str(home), ARIGNOTE_FLAGS="device=cpu", ARIGNOTERC="", OMP_NUM_THREADS="1",
               MPLBACKEND="Agg", PYTHONPATH=str(src) + os.pathsep + env.get("PYTHONPATH", ""))
    start = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "_harness_boot.py", f"{name}.py"], cwd=work, env=env,
                              capture_output=True, text=True, timeout=timeout, check=False)
        code, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        code, stdout = None, exc.stdout or ""
        stdout = stdout.decode() if isinstance(stdout, bytes) else stdout
        stderr = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
    seconds = time.monotonic() - start
    (tmp / f"{name}.log").write_text(f"--- stdout\n{stdout}\n--- stderr\n{stderr}", encoding="utf-8")
    result, detail = ex.classify(code, stderr)
    lines = [int(n) for n in re.findall(rf'File "[^"]*{re.escape(name)}\.py", line (\d+)', stderr)]
    if result != "runs" and lines:
        detail = f"cell {cell_of(lines[-1], starts)}/{len(starts)}: {detail}"
    if result == "fails" and name in OUTSIDE:
        result, detail = "fails outside arignote", f"{detail} ({OUTSIDE[name]})"
    if skip:
        detail = f"{detail}; cells {', '.join(map(str, skip))} skipped (sketches)".lstrip("; ")
    if not where.startswith("HEAD:"):
        detail = f"{detail}; read from {where}".lstrip("; ")
    return {"name": name, "result": result, "detail": detail, "seconds": round(seconds, 1)}


def write_report(rows: list[dict], path: Path, note: str, before: list[dict] | None = None) -> None:
    """The markdown table of ``rows`` (with ``before``: an earlier run's rows beside them)."""
    runs = sum(r["result"] == "runs" for r in rows)
    scope = sum(r["result"] == "out of scope" for r in rows)
    outside = sum(r["result"] == "fails outside arignote" for r in rows)
    then = {r["name"]: r for r in before or []}
    rest = (f"{scope} out of scope, {outside} fail outside arignote, "
            f"{len(rows) - runs - scope - outside} fail in arignote or time out.")
    lines = [
        '# "Deep Learning with Python" (1st edition) notebooks on arignote',
        "",
        "Measured by `scripts/run_keras2_book.py` (its docstring says exactly what it changes: the",
        "import lines; the notebooks' data directories and a few loop sizes; synthetic data files in",
        "the layouts the notebooks read; one epoch and at most 256 samples per `fit`/`evaluate`; a work",
        "budget for hand-written loops; stand-in ImageNet weight files; no network). The notebooks are",
        "read from fchollet/deep-learning-with-python-notebooks at run time and are not stored here.",
        "",
        "    python scripts/run_keras2_book.py \\",
        "        --repo /work/.mirror/fchollet+deep-learning-with-python-notebooks/repo --timeout 400",
        "",
    ]
    if before is not None:
        then_runs = sum(r["result"] == "runs" for r in before)
        lines += [f"**Before: {then_runs}/{len(before)} ran. After: {runs}/{len(rows)} run**; {rest}", ""]
    else:
        lines += [f"**{runs}/{len(rows)} run**; {rest}", ""]
    if note:
        lines += [note, ""]
    head = "| notebook | before | result | detail | seconds |" if before is not None else \
        "| notebook | result | detail | seconds |"
    lines += [head, "|" + " --- |" * (head.count("|") - 1)]
    for r in rows:
        detail = r["detail"].replace("|", "\\|")
        was = [then[r["name"]]["result"] if r["name"] in then else "-"] if before is not None else []
        lines.append("| " + " | ".join([r["name"], *was, r["result"], detail, str(r["seconds"])]) + " |")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", required=True,
                        help="a git clone of fchollet/deep-learning-with-python-notebooks")
    parser.add_argument("--ref", default="HEAD")
    parser.add_argument("--only", default="", help="comma-separated notebook names (no .ipynb)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per notebook")
    parser.add_argument("--out", default=str(ROOT / "docs" / "keras2_book.md"),
                        help="the report ('' for none)")
    parser.add_argument("--note", default="", help="a paragraph to put above the table")
    parser.add_argument("--src", default=str(SRC),
                        help="the arignote sources to run (default: this checkout's)")
    parser.add_argument("--json", default="", help="also write the rows as JSON here")
    parser.add_argument("--before", default="", help="an earlier run's --json, shown beside this one")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (logs)")
    args = parser.parse_args(argv)
    names = list_notebooks(args.repo, args.ref)
    if args.only:
        wanted = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = sorted(set(wanted) - set(names))
        if unknown:
            parser.error(f"no notebook named {', '.join(unknown)} in {FOLDER}/ at {args.ref}")
        names = wanted
    tmp = Path(tempfile.mkdtemp(prefix="keras2-book-"))
    write_book_datasets(tmp / "home" / ".keras" / "datasets")
    write_class_index(tmp / "home" / ".keras" / "models")
    rows = []
    for name in names:
        print(f"{name}:", flush=True)
        notebook, where = notebook_json(args.repo, args.ref, name)
        row = run_one(name, notebook, where, tmp, args.timeout, Path(args.src))
        print(f"  -> {row['result']} {row['detail']} ({row['seconds']} s)", flush=True)
        rows.append(row)
    runs = sum(r["result"] == "runs" for r in rows)
    print(f"{runs}/{len(rows)} run; logs in {tmp}" if args.keep else f"{runs}/{len(rows)} run")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    if args.out and not args.only:
        before = json.loads(Path(args.before).read_text(encoding="utf-8")) if args.before else None
        write_report(rows, Path(args.out), args.note, before)
    if not args.keep:
        subprocess.run(["rm", "-rf", str(tmp)], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
