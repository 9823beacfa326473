"""Run published Keras 2 GAN scripts (eriklindernoren/Keras-GAN style) on arignote, or on Keras 2.3.1.

    python scripts/run_published_gans.py SRC_DIR [NAME ...] [--keras2] [--epochs N] [--timeout S]
        [--compiledir DIR] [--contrib DIR] [--arignote-src DIR] [--json OUT] [--keep]

``SRC_DIR`` holds one directory per GAN, each with its script ``<name>/<name>.py`` and whatever files
the script imports from its own folder (``data_loader.py``); nothing of theirs is stored in this
repository. Each GAN runs in a fresh temporary directory, in its own subprocess. What the harness
changes, and only for the run:

* **Imports.** Every ``keras`` module name becomes ``arignote`` (the rename of
  scripts/run_published_keras2.py: ``from keras.layers.merge import _Merge``, ``import keras.backend
  as K``...). ``keras_contrib`` (InstanceNormalization) is a dependency of some scripts: with
  ``--contrib DIR`` (a checkout of keras-team/keras-contrib) its ``keras_contrib`` package is copied
  next to the script, renamed the same way on the arignote side, as it is on Keras's side.
* **Data.** A boot module replaces ``load_data`` of the ``mnist``, ``fashion_mnist``, ``cifar10``
  and ``cifar100`` dataset modules with small random arrays in Keras's formats (uint8 images
  ``(250, 28, 28)`` / ``(250, 32, 32, 3)``, uint8 labels ``(250,)`` / ``(250, 1)``, every class
  as often; 50 test samples); sockets refuse to connect (a download attempt fails).
* **Image folders.** A GAN whose folder has a ``data_loader.py`` and whose script names a
  ``dataset_name`` gets ``datasets/<name>/{trainA,trainB,testA,testB,valA,valB,train,val,test}/``
  with three random 64x128 RGB JPEGs each. The loaders call ``scipy.misc.imread`` /
  ``imresize`` (gone since SciPy 1.2/1.3, in both venvs) and ``np.float`` (gone since NumPy 1.24):
  the boot module puts Pillow-based stand-ins and the aliases back where they are missing.
* **Work.** In the script's ``if __name__ == '__main__':`` block, ``epochs=<n>`` becomes
  ``epochs=N`` (``--epochs``, default 2); batch sizes and sample intervals stay (the scripts save
  images when ``epoch % interval == 0``, so epoch 0 saves them).
* **Plots.** matplotlib is not installed in the Keras 2.3.1 venv: on both sides a stand-in
  ``matplotlib.pyplot`` (written next to the script, so it shadows any installed one) records what
  ``imshow`` is given and ``savefig`` writes the images side by side as a PNG with Pillow (it
  refuses non-finite pixels). The result line counts the PNG files a run wrote.
* **Run.** ``OMP_NUM_THREADS=1``, ``ARIGNOTE_FLAGS=device=cpu``, this checkout's ``src`` (or
  ``--arignote-src``) on ``PYTHONPATH``; with ``--keras2`` the unrenamed script runs on real Keras
  2.3.1 + Theano (/work/k2venv, scripts/keras2_shim.py), Theano compiling into ``--compiledir``.

Prints one line per script: ``ok`` / ``FAIL`` (the error line, and the innermost arignote frame) /
``timeout``, the seconds taken, the PNG files written and, per model in the order it first trains,
what ``train_on_batch`` returned (how many numbers, and ``metrics_names`` without layer counters):
the two sides should print the same.

Example::

    python scripts/run_published_gans.py /tmp/kgan gan dcgan --epochs 2
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_keras2_examples import classify, run_logged  # noqa: E402
from run_published_keras2 import K2PYTHON, rename  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"

# ------------------------------------------------------------------------------------ the boot module

BOOT = textwrap.dedent('''
    """Harness only (scripts/run_published_gans.py): synthetic datasets, no network, then the script."""
    import atexit
    import os
    import re
    import runpy
    import socket
    import sys

    import numpy as np

    if os.environ["GAN_SIDE"] == "keras":
        sys.path.insert(0, os.environ["GAN_SHIM_DIR"])
        import keras2_shim
        keras2_shim.force_unroll()
        from keras.datasets import cifar10, cifar100, fashion_mnist, mnist
        from keras.models import Model
    else:
        from arignote.datasets import cifar10, cifar100, fashion_mnist, mnist
        from arignote.models import Model

    # What each model's train_on_batch returns (how many numbers, and metrics_names with the layer
    # counters taken out), in the order the models first train: the two sides should agree.
    _returns = {}
    _train_on_batch = Model.train_on_batch


    def _recording_train_on_batch(self, *args, **kwargs):
        out = _train_on_batch(self, *args, **kwargs)
        if id(self) not in _returns:
            names = [re.sub(r"_\\d+", "", n) for n in getattr(self, "metrics_names", None) or []]
            _returns[id(self)] = f"{len(out) if isinstance(out, (list, tuple)) else 1}[{','.join(names)}]"
        return out


    Model.train_on_batch = _recording_train_on_batch
    atexit.register(lambda: print("HARNESS-RETURNS " + " ".join(_returns.values()), file=sys.stderr,
                                  flush=True))

    N, N_TEST = 250, 50  # every class as often (ccgan stacks the cat and dog labels as rows)
    _rng = np.random.RandomState(0)


    def _gray(n, classes=10):
        return _rng.randint(0, 256, (n, 28, 28)).astype("uint8"), (np.arange(n) % classes).astype("uint8")


    def _colour(n, classes):
        return (_rng.randint(0, 256, (n, 32, 32, 3)).astype("uint8"),
                (np.arange(n) % classes).astype("uint8").reshape(-1, 1))


    mnist.load_data = lambda *a, **k: (_gray(N), _gray(N_TEST))
    fashion_mnist.load_data = lambda *a, **k: (_gray(N), _gray(N_TEST))
    cifar10.load_data = lambda *a, **k: (_colour(N, 10), _colour(N_TEST, 10))
    cifar100.load_data = lambda *a, **k: (_colour(N, 100), _colour(N_TEST, 100))


    import scipy.misc
    from PIL import Image

    if not hasattr(scipy.misc, "imread"):  # gone since SciPy 1.2/1.3; the image-folder loaders call them
        def _imread(path, mode="RGB", **kwargs):
            return np.asarray(Image.open(path).convert(mode))

        def _imresize(image, size, **kwargs):
            image = Image.fromarray(np.asarray(image).astype("uint8"))
            return np.asarray(image.resize((size[1], size[0]), Image.BICUBIC))

        scipy.misc.imread, scipy.misc.imresize = _imread, _imresize
    for _alias, _type in (("float", float), ("int", int), ("bool", bool)):
        if _alias not in np.__dict__:  # NumPy 1.24 removed the aliases the loaders use (np.float)
            setattr(np, _alias, _type)


    def _refuse(*args, **kwargs):
        raise OSError("network disabled by the GAN harness")


    socket.create_connection = _refuse
    socket.socket.connect = _refuse

    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
''')

# A stand-in for the few pyplot calls the scripts make: imshow records, savefig writes a PNG.
PYPLOT = textwrap.dedent('''
    """Harness stand-in for matplotlib.pyplot (scripts/run_published_gans.py)."""
    import numpy as np
    from PIL import Image

    _shown = []


    class _Axes:
        def imshow(self, image, *args, **kwargs):
            image = np.asarray(image, dtype="float64")
            if not np.isfinite(image).all():
                raise ValueError("imshow got non-finite pixels")
            _shown.append(image)

        def __getattr__(self, name):  # axis, set_title, ...
            return lambda *args, **kwargs: None


    class _Grid:
        def __init__(self, rows, cols):
            self.cells = [[_Axes() for _ in range(cols)] for _ in range(rows)]

        def __getitem__(self, key):
            if isinstance(key, tuple):
                return self.cells[key[0]][key[1]]
            if len(self.cells) == 1:
                return self.cells[0][key]
            return self.cells[key][0] if len(self.cells[0]) == 1 else self.cells[key]


    class _Figure:
        def savefig(self, path, *args, **kwargs):
            if not _shown:
                raise ValueError("savefig with nothing shown")
            tiles = [np.clip(t if t.ndim == 3 else t[..., None].repeat(3, -1), 0, 1) for t in _shown]
            height = max(t.shape[0] for t in tiles)
            tiles = [np.pad(t, ((0, height - t.shape[0]), (0, 0), (0, 0))) for t in tiles]
            Image.fromarray((np.concatenate(tiles, axis=1) * 255).astype("uint8")).save(path)
            _shown.clear()

        def __getattr__(self, name):  # suptitle, ...
            return lambda *args, **kwargs: None


    def subplots(rows=1, cols=1, *args, **kwargs):
        grid = _Grid(rows, cols)
        return _Figure(), (grid if rows * cols > 1 else grid.cells[0][0])


    def figure(*args, **kwargs):
        return _Figure()


    def close(*args, **kwargs):
        _shown.clear()


    def __getattr__(name):  # show, title, ...
        return lambda *args, **kwargs: None
''')

# ------------------------------------------------------------------------------------------ per script

# Failures that are not arignote's, each found by reading its log and checked on Keras 2.3.1's side.
OUTSIDE = {
    "cgan": "its sample_images formats a (1,)-array with '%d', which NumPy 2 refuses (the Keras venv's "
            "NumPy 1.23 takes it)",
}

_MAIN = re.compile(r"""^if\s+__name__\s*==\s*['"]__main__['"]\s*:""", re.M)
_EPOCHS = re.compile(r"\bepochs\s*=\s*\d+")


def cap_epochs(source: str, epochs: int) -> tuple[str, int]:
    """``epochs=<n>`` in the ``__main__`` block becomes ``epochs=<epochs>``; returns the text and the
    number of replacements (0: nothing to cap, the run may be long).

        >>> cap_epochs("x = 1\\nif __name__ == '__main__':\\n    g.train(epochs=30000, batch_size=32)\\n", 2)
        ("x = 1\\nif __name__ == '__main__':\\n    g.train(epochs=2, batch_size=32)\\n", 1)
    """
    main = _MAIN.search(source)
    if not main:
        return source, 0
    tail, count = _EPOCHS.subn(f"epochs={epochs}", source[main.start():])
    return source[:main.start()] + tail, count


def write_image_folders(root: Path, count: int = 3, size: tuple[int, int] = (64, 128)) -> None:
    """``count`` random RGB JPEGs of ``size`` (height, width: a pix2pix pair side by side) in each of
    the folders the Keras-GAN data loaders glob: ``trainA``... (CycleGAN's domains) and ``train``...
    (pix2pix's pairs)."""
    from PIL import Image  # why: only the image-folder GANs need Pillow

    rng = np.random.RandomState(0)
    for folder in ("trainA", "trainB", "testA", "testB", "valA", "valB", "train", "val", "test"):
        (root / folder).mkdir(parents=True, exist_ok=True)
        for i in range(count):
            pixels = rng.randint(0, 256, (*size, 3)).astype("uint8")
            Image.fromarray(pixels).save(root / folder / f"{i}.jpg")


def prepare(src: Path, work: Path, keras2: bool, epochs: int, contrib: Path | None) -> tuple[Path, str]:
    """Copy the GAN's folder into ``work``, rename and cap its scripts; returns the main script and a
    note ('' when all is as the harness expects)."""
    shutil.copytree(src, work, ignore=shutil.ignore_patterns("images", "saved_model", "*.png", "*.jpg",
                                                             "__pycache__", "*.pyc", ".git"))
    note = ""
    main = work / f"{src.name}.py"
    for path in work.rglob("*.py"):
        text = path.read_text(errors="replace")
        if not keras2:
            text = rename(text)
        if path == main:
            text, count = cap_epochs(text, epochs)
            note = "" if count else "no epochs= in __main__ to cap"
        path.write_text(text)
    if contrib is not None:
        dest = work / "keras_contrib"
        shutil.copytree(contrib / "keras_contrib", dest,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        if not keras2:
            for path in dest.rglob("*.py"):
                path.write_text(rename(path.read_text(errors="replace")))
    dataset = re.search(r"""dataset_name\s*=\s*['"](\w+)['"]""", main.read_text())
    if dataset and (work / "data_loader.py").is_file():
        write_image_folders(work / "datasets" / dataset.group(1))
    (work / "matplotlib").mkdir(exist_ok=True)
    (work / "matplotlib" / "__init__.py").write_text('"""Harness stand-in (run_published_gans.py)."""\n')
    (work / "matplotlib" / "pyplot.py").write_text(PYPLOT)
    (work / "_gan_boot.py").write_text(BOOT)
    for folder in ("images", "saved_model", f"{src.name}/images", f"{src.name}/saved_model"):
        (work / folder).mkdir(parents=True, exist_ok=True)
    return main, note


def run_one(src: Path, tmp: Path, keras2: bool, epochs: int, timeout: float, compiledir: str,
            contrib: Path | None, ours: Path = ROOT / "src") -> dict:
    work = tmp / src.name
    main, note = prepare(src, work, keras2, epochs, contrib)
    env = {k: v for k, v in os.environ.items() if k not in ("KERAS_HOME", "ARIGNOTE_DATA", "THEANO_FLAGS")}
    env.update(OMP_NUM_THREADS="1", HOME=str(tmp / "home"), GAN_SHIM_DIR=str(SCRIPTS),
               GAN_SIDE="keras" if keras2 else "arignote")
    if keras2:
        python = K2PYTHON
        env.update(KERAS_BACKEND="theano", PYTHONPATH="",
                   THEANO_FLAGS=f"blas.ldflags=,floatX=float32,base_compiledir={compiledir}")
    else:
        python = sys.executable
        env.update(ARIGNOTE_FLAGS="device=cpu", ARIGNOTERC="", PYTHONPATH=str(ours))
    code, stderr, seconds = run_logged([python, "_gan_boot.py", main.name], work, env, timeout,
                                       tmp / f"{src.name}.log")
    result, detail = classify(code, stderr)
    status = {"runs": "ok", "timeout": "timeout"}.get(result, "FAIL")
    if status == "FAIL" and src.name in OUTSIDE:
        detail += f" (outside arignote: {OUTSIDE[src.name]})"
    pngs = len(list(work.rglob("*.png")))
    returns = re.findall(r"HARNESS-RETURNS ?(.*)", stderr)
    return {"name": src.name, "status": status, "detail": detail, "note": note,
            "seconds": round(seconds, 1), "pngs": pngs, "returns": returns[-1] if returns else ""}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src", type=Path, help="directory with one folder per GAN (<name>/<name>.py)")
    parser.add_argument("names", nargs="*", help="GAN folder names (default: all)")
    parser.add_argument("--keras2", action="store_true", help="run on Keras 2.3.1 (/work/k2venv) instead")
    parser.add_argument("--epochs", type=int, default=2, help="epochs each script trains (default 2)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per script")
    parser.add_argument("--compiledir", default="/tmp/gans-theano",
                        help="Theano's base_compiledir (--keras2)")
    parser.add_argument("--contrib", type=Path, help="a keras-contrib checkout (keras_contrib/ inside)")
    parser.add_argument("--arignote-src", type=Path, default=ROOT / "src",
                        help="the arignote sources to run (default: this checkout's)")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (logs)")
    args = parser.parse_intermixed_args()
    folders = sorted(p for p in args.src.resolve().iterdir() if (p / f"{p.name}.py").is_file())
    chosen = [p for p in folders if not args.names or p.name in args.names]
    unknown = sorted(set(args.names) - {p.name for p in folders})
    if unknown or not chosen:
        print(f"no GAN script <name>/<name>.py for {unknown or 'any name'} in {args.src}", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="published-gans-"))
    rows = []
    for src in chosen:
        row = run_one(src, tmp, args.keras2, args.epochs, args.timeout, args.compiledir, args.contrib,
                      args.arignote_src.resolve())
        rows.append(row)
        extra = f" ({row['note']})" if row["note"] else ""
        print(f"{row['name']:18s} {row['status']:7s} {row['seconds']:7.1f} s  png {row['pngs']:2d}  "
              f"{row['detail']}{extra}  returns {row['returns']}", flush=True)
    ok = sum(r["status"] == "ok" for r in rows)
    side = "Keras 2.3.1" if args.keras2 else "arignote"
    print(f"{ok}/{len(rows)} ok on {side}" + (f"; logs in {tmp}" if args.keep else ""))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
