"""Check that Keras 2.3.1 (and Keras 3's legacy HDF5 loader) read the .h5 files arignote writes.

Three steps, separate venvs (the test suite never needs Keras):

    # 1. arignote's venv: write every case of scripts/keras2_ours_cases.py (seeded weights; compiled
    #    cases trained a step, so their files hold optimizer state) + inputs and arignote's outputs
    PYTHONPATH=src .venv/bin/python scripts/check_keras2_reads_ours.py write /tmp/ours
    #    (per case: NAME.h5 from model.save, NAME_weights.h5 from save_weights, NAME.npz; not
    #    NAME.weights.h5: Keras 3 reads a name ending in .weights.h5 as its own weights format)
    # 2. the Keras 2.3.1 + Theano venv (scripts/setup-keras2-venv.sh): load, predict, compare; with
    #    --json, record what Keras computed as the fixture tests/test_keras2_reads_ours.py checks.
    #    Theano needs a BLAS for Dot and LocallyConnected: scipy's bundled OpenBLAS does, e.g.
    #    SL=/work/k2venv/lib/python3.11/site-packages/scipy.libs LD_LIBRARY_PATH=$SL \
    #    THEANO_FLAGS="floatX=float32,blas.ldflags=-L$SL -l:$(basename $SL/libopenblas*.so)" \
    /work/k2venv/bin/python scripts/check_keras2_reads_ours.py check /tmp/ours \
        --json tests/fixtures/keras2/keras2_reads_ours.json
    #    the SWEEP_CASES the same way: `write --sweep /tmp/sweep`, then `check /tmp/sweep --json
    #    tests/fixtures/keras2/keras2_reads_ours_sweep.json`
    # 3. a venv with Keras 3 (KERAS_BACKEND=torch): its legacy HDF5 loader (scripts/setup-keras3-venv.sh
    #    builds it; torch comes from the project's venv through a .pth file)
    KERAS_BACKEND=torch /work/k3venv/bin/python scripts/check_keras2_reads_ours.py check3 /tmp/ours

Per case, Keras is given three ways in: ``load_model(case.h5)`` (architecture, weights, optimizer
state), ``load_weights(case_weights.h5)`` into a fresh model with the file's architecture (other
weights until loaded), and the same ``by_name=True``. Each prediction is compared with
arignote's on the same input; a compiled case then takes one more training step in Keras from the
file's optimizer state and lands on arignote's weights after the same step. One line per check; the
exit status is 1 when any difference exceeds 1e-5 or any load fails. What Keras 3 refuses is listed in
the README's "Keras 2 HDF5 files" section.

Keras 2.3.1 with the Theano backend, the only one that installs on Python 3.11, has two limits
that are not about the file: its loader does not convert ``Conv3DTranspose`` kernels of a
TensorFlow-backend file to Theano's convolution (``preprocess_weights_for_loading`` lists
Conv1D/2D/3D, Conv2DTranspose and ConvLSTM2D only; arignote's files say ``backend="tensorflow"``),
so this script flips them after loading and says so; and it never flips optimizer slots when it
flips kernels, so this script does that too before the training step.
"""

import argparse
import json
import os
import sys
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOL = 1e-5
STEP_RTOL = 2e-5


# ------------------------------------------------------------------------------------------ write


def write(out, sweep=False):
    sys.path.insert(0, HERE)
    import keras2_ours_cases as cases  # why: needs arignote, which the Keras venvs do not have

    os.makedirs(out, exist_ok=True)
    built, cudnn = cases.build_all(sweep)
    table = cases.SWEEP_CASES if sweep else cases.CASES
    for name, (model, xs) in built.items():
        extra = {}
        if table[name][2] is not None:
            cases.compile_and_step(model, name, xs)
        ys = _as_list(model.predict(cases.feed(xs), verbose=0))
        model.save(os.path.join(out, name + ".h5"))
        model.save_weights(os.path.join(out, name + "_weights.h5"))
        if model.compiled:  # one more step here; Keras must land on the same weights from the file's state
            model.train_on_batch(cases.feed(xs), cases.feed([y + 0.2 for y in ys]))
            extra = {f"after_{i}": w for i, w in enumerate(model.get_weights())}
        _save_npz(out, name, xs, ys, extra)
        print("wrote", name)
    for name, (source, twin, xs) in cudnn.items():
        source.save_weights(os.path.join(out, name + "_weights.h5"))
        twin.load_weights(os.path.join(out, name + "_weights.h5"))
        twin.save(os.path.join(out, name + ".h5"))  # the architecture Keras rebuilds (plain layers)
        _save_npz(out, name, xs, _as_list(twin.predict(cases.feed(xs), verbose=0)), {"cudnn": np.array(1)})
        print("wrote", name)


def _as_list(y):
    return list(y) if isinstance(y, (list, tuple)) else [y]


def _save_npz(out, name, xs, ys, extra):
    arrays = {f"x_{i}": x for i, x in enumerate(xs)}
    arrays.update({f"y_{i}": y for i, y in enumerate(ys)})
    np.savez(os.path.join(out, name + ".npz"), **arrays, **extra)


def _numbered(data, prefix):
    out = []
    while f"{prefix}_{len(out)}" in data:
        out.append(data[f"{prefix}_{len(out)}"])
    return out


# ------------------------------------------------------------------------------------------ check


def _text(value):
    if isinstance(value, (bytes, np.bytes_)):
        return bytes(value).decode("utf8")
    return str(value)


def file_structure(path):
    """What the file holds, as h5py sees it: root attributes and groups, the model_weights group's
    layer_names, each layer's weight_names with dtype and shape, the optimizer weights' names."""
    import h5py  # why: the Keras venvs import it here, after keras2_shim patched it

    with h5py.File(path, "r") as f:
        group = f["model_weights"] if "model_weights" in f else f
        layers = []
        for lname in [_text(n) for n in group.attrs["layer_names"]]:
            g = group[lname]
            weights = [[_text(w), str(g[_text(w)].dtype), list(g[_text(w)].shape)]
                       for w in g.attrs["weight_names"]]
            layers.append([lname, weights])
        doc = {
            "root_attrs": sorted(f.attrs.keys()),
            "root_groups": sorted(f.keys()),
            "weights_attrs": sorted(group.attrs.keys()),
            "backend": _text(group.attrs["backend"]),
            "keras_version": _text(group.attrs["keras_version"]),
            "layers": layers,
        }
        if "optimizer_weights" in f:
            og = f["optimizer_weights"]
            doc["optimizer_weights"] = [[_text(w), str(og[_text(w)].dtype), list(og[_text(w)].shape)]
                                        for w in og.attrs["weight_names"]]
        if "training_config" in f.attrs:
            doc["training_config"] = json.loads(_text(f.attrs["training_config"]))
        return doc


def _fix_theano(keras, model, notes):
    """Flip the Conv3DTranspose kernels Keras 2.3.1's Theano loader leaves unflipped (see the docstring)."""
    if keras.backend.backend() != "theano":
        return
    for layer in _all_layers(model):
        if type(layer).__name__ == "Conv3DTranspose":
            ws = layer.get_weights()
            ws[0] = keras.utils.conv_utils.convert_kernel(ws[0])
            layer.set_weights(ws)
            notes.add("Conv3DTranspose kernel flipped after loading (Keras 2.3.1's Theano loader does not)")


def _all_layers(model):
    for layer in model.layers:
        if hasattr(layer, "layers"):
            yield from _all_layers(layer)
        else:
            yield layer


def _predict(model, xs, keras3):
    x = xs if len(xs) > 1 else xs[0]
    y = model.predict(x, verbose=0) if keras3 else model.predict(x)
    return [np.asarray(v) for v in _as_list(y)]


def _diff(got, want):
    if len(got) != len(want):
        return float("inf")
    return max(float(np.abs(np.asarray(g, np.float64) - np.asarray(w, np.float64)).max())
               for g, w in zip(got, want))


def _keras_layers(keras, model):
    from keras import backend as K  # why: keras is imported by check() after the shim

    return [[type(layer).__name__, layer.name, [[w.name, list(K.int_shape(w))] for w in layer.weights]]
            for layer in model.layers]


def _step_and_compare(keras, model, xs, ys, after, keras3, notes):
    """One training step in Keras from the file's optimizer state; Keras's weights afterwards."""
    theano = not keras3 and keras.backend.backend() == "theano"
    if theano:  # Keras flips conv kernels between backends but never their optimizer slots
        trainable = model._collected_trainable_weights
        slots = model.optimizer.get_weights()
        n = len(trainable)
        for j, w in enumerate(trainable):
            if "conv" in w.name and "kernel" in w.name:
                for k in range((len(slots) - 1) // n):
                    if slots[1 + k * n + j].ndim > 2:
                        slots[1 + k * n + j] = keras.utils.conv_utils.convert_kernel(slots[1 + k * n + j])
        model.optimizer.set_weights(slots)
    x = xs if len(xs) > 1 else xs[0]
    targets = [y + 0.2 for y in ys]
    model.train_on_batch(x, targets if len(targets) > 1 else targets[0])
    got = []
    for layer in model.layers:  # back in arignote's (correlation) orientation
        ws = layer.get_weights()
        if theano and type(layer).__name__.startswith("Conv"):
            ws[0] = keras.utils.conv_utils.convert_kernel(ws[0])
        got += ws
    return got, _diff(got, after)


def check(out, keras3=False, record=None):
    if not keras3:
        sys.path.insert(0, HERE)
        import keras2_shim  # why: must run before keras is imported (Python 3.11 and h5py 3 fixes)
    import keras  # why: whichever Keras this venv holds, imported after the shim

    if not keras3:
        keras2_shim.force_unroll()
    print("Keras", keras.__version__, "backend", keras.backend.backend())
    failures = 0
    doc = {"keras": keras.__version__, "backend": keras.backend.backend(), "tolerance": TOL, "cases": {}}
    for fname in sorted(os.listdir(out)):
        if not fname.endswith(".npz"):
            continue
        name = fname[:-4]
        data = np.load(os.path.join(out, fname))
        xs, ys, after = _numbered(data, "x"), _numbered(data, "y"), _numbered(data, "after")
        path, wpath = os.path.join(out, name + ".h5"), os.path.join(out, name + "_weights.h5")
        notes, results, entry = set(), {}, {}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                model = keras.models.load_model(path)
                _fix_theano(keras, model, notes)
                results["load_model"] = _predict(model, xs, keras3)
            except Exception as err:  # a survey: report and go on
                print(f"{name:24s} load_model FAILED {type(err).__name__}: {str(err)[:300]}")
                failures += 1
                model = None
            for how, kwargs in (("load_weights", {}), ("load_weights_by_name", {"by_name": True})):
                try:
                    fresh = _fresh_model(keras, path, keras3)
                    fresh.load_weights(wpath, **kwargs)
                    _fix_theano(keras, fresh, notes)
                    results[how] = _predict(fresh, xs, keras3)
                except Exception as err:
                    print(f"{name:24s} {how} FAILED {type(err).__name__}: {str(err)[:300]}")
                    failures += 1
        warned = sorted({str(w.message)[:160] for w in caught if "optimizer" in str(w.message).lower()
                         or "weight" in str(w.message).lower()})
        line = []
        for how, got in results.items():
            d = _diff(got, ys)
            failures += d > TOL
            line.append(f"{how} {d:.1e}")
            entry[how] = [np.round(g.astype(np.float64), 7).tolist() for g in got]
            if how != "load_model" and entry[how] == entry.get("load_model"):
                del entry[how]  # kept small: a reader takes load_model's (tests/test_keras2_reads_ours.py)
        state = ""
        if model is not None and getattr(model, "optimizer", None) is not None and "cudnn" not in data:
            weights = model.optimizer.variables if keras3 else model.optimizer.get_weights()
            state = f" | optimizer {type(model.optimizer).__name__}, {len(weights)} state arrays"
        print(f"{name:24s} max |keras - arignote|: {', '.join(line)}{state}"
              f"{' | warnings: ' + '; '.join(warned) if warned else ''}")
        if after and model is not None:
            try:
                got, d = _step_and_compare(keras, model, xs, ys, after, keras3, notes)
                # BatchNormalization's batch statistics round differently in Theano and torch: a model
                # with one passes within 1e-5 + 2e-5 relative (tests/test_keras2_reads_ours.py: STEP_RTOL)
                rtol = STEP_RTOL if any("moving_variance" in w.name for w in model.weights) else 0.0
                failures += any(np.any(np.abs(np.asarray(g, np.float64) - a) > TOL + rtol * np.abs(a))
                                for g, a in zip(got, after))
                entry["after_step"] = [np.round(g.astype(np.float64), 7).tolist() for g in got]
                print(f"{'':24s} one more training step from the file's optimizer state: max diff {d:.1e}")
            except Exception as err:  # Keras 3's own limits: report, go on
                print(f"{'':24s} training step FAILED in Keras: {type(err).__name__}: {str(err)[:200]}")
                failures += 1
        for note in sorted(notes):
            print(f"{'':24s} note: {note}")
        if record is not None:
            entry["inputs"] = [x.tolist() for x in xs]
            entry["file"] = file_structure(path)
            entry["weights_file"] = file_structure(wpath)
            entry["keras_layers"] = _keras_layers(keras, model) if model is not None else None
            entry["notes"] = sorted(notes)
            doc["cases"][name] = entry
    if record is not None:
        if os.path.exists(record):  # a partial run (a directory with some cases) updates those cases
            with open(record, encoding="utf-8") as f:
                old = json.load(f)
            if (old.get("keras"), old.get("backend")) == (doc["keras"], doc["backend"]):
                doc["cases"] = {**old.get("cases", {}), **doc["cases"]}
        with open(record, "w") as f:
            json.dump(doc, f, separators=(",", ":"), sort_keys=True)
            f.write("\n")
        print("recorded", record)
    print("FAILURES:", failures)
    return failures


def _fresh_model(keras, path, keras3):
    """The file's architecture with other weights: Keras 2 rebuilds it from ``model_config`` with
    ``model_from_json`` (fresh initial weights); Keras 3 reads no Keras 2 JSON there, so its legacy
    ``load_model`` builds it and every weight is then overwritten with noise."""
    if not keras3:
        return keras.models.model_from_json(_text(_h5_attr(path, "model_config")))
    model = keras.models.load_model(path, compile=False)
    rng = np.random.RandomState(0)
    model.set_weights([rng.uniform(-2, 2, np.shape(w)).astype(np.asarray(w).dtype)
                       for w in model.get_weights()])
    return model


def _h5_attr(path, name):
    import h5py  # why: see file_structure

    with h5py.File(path, "r") as f:
        return f.attrs[name]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["write", "check", "check3"])
    parser.add_argument("directory")
    parser.add_argument("--sweep", action="store_true", help="write: the SWEEP_CASES of keras2_ours_cases.py "
                        "(recorded in tests/fixtures/keras2/keras2_reads_ours_sweep.json)")
    parser.add_argument("--json", help="check: record Keras's results as a fixture file (an existing one "
                        "from the same Keras keeps the cases this run did not check)")
    args = parser.parse_args()
    if args.mode == "write":
        write(args.directory, args.sweep)
    else:
        sys.exit(1 if check(args.directory, keras3=args.mode == "check3", record=args.json) else 0)
