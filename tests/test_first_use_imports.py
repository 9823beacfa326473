"""First use of the Keras API loads what building a model needs, not h5py, NVML or every callback
and dataset (issue 32; the time itself is measured by benchmarks/import_time.py, never here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")
FIRST_USE = "from arignote.models import Sequential; from arignote.layers import Dense, Conv2D"
HEAVY = ["h5py", "arignote.devices.nvml", "arignote.devices.snapshot", "arignote.saving.hdf5",
         "arignote.callbacks.status", "arignote.callbacks.backup", "arignote.share",
         "arignote.datasets.mnist", "arignote.utils.vis_utils"]
# what only compile/fit/save use (issue 32 item 4): the training loop and its inputs, the callbacks,
# the device set-up and the memory plan, rich (the monitor's tables), losses, metrics, optimizers and
# their kernels, the loaders and savers, and the layer families the first use does not name
LATER = ["rich", "arignote.training.loop", "arignote.training.inputs", "arignote.training.data",
         "arignote.callbacks.base", "arignote.runtime.setup", "arignote.diagnostics.memory_plan",
         "arignote.losses", "arignote.metrics", "arignote.optimizers", "arignote.optimizers.kernels",
         "arignote.models.loading", "arignote.models.saving", "arignote.saving.keras_config",
         "arignote.layers.recurrent", "arignote.layers.merge", "arignote.layers.wrappers"]

# every arignote module the first use loads (after `import torch`), and nothing else new: session 12
# took out the INI parser (rc files only), the machine check's device-spec parser (the first flag
# read), sizes (size flags), legacy.interfaces (custom Keras 2 layers), the dropout, Lambda, padding,
# cropping and pooling families; a module added to the first use fails here until it is pinned
# (session 15: layers.layer_nodes and layers.layer_weights, mixins split out of layers.base;
# models.compiling and models.fit_evaluate_predict, out of models.model; models.sequential_config
# and models.sequential_predictions, out of models.sequential; session 16: graph.topology,
# graph.packing and graph.forward_slots, out of graph.network; config.sources,
# config.theano_spellings and config.machine_checks, out of config)
FIRST_USE_MODULES = sorted(["arignote", *(f"arignote.{m}" for m in (
    "_keras_objects _lazy _moved _version activations backend backend.common backend.names "
    "backend.variables config config.machine_checks config.safe_mode config.sources config.theano_spellings "
    "config.types constraints devices devices.order errors "
    "graph graph.forward_slots graph.network graph.node graph.packing graph.state graph.tensor "
    "graph.topology initializers layers layers._left_out "
    "layers._trainable layers._util layers.activations layers.base layers.bookkeeping layers.conditional "
    "layers.convolutional layers.convolutional.conv layers.convolutional.separable layers.core "
    "layers.derived_weights layers.input_layer layers.input_spec layers.layer_args layers.layer_nodes "
    "layers.layer_tensors layers.layer_weights "
    "layers.op_layer layers.serialization layers.value_semantics legacy legacy.conversions models "
    "models.batch_methods models.compiled_state models.compiling models.construction models.fit_data "
    "models.fit_evaluate_predict models.functional "
    "models.functional_config models.generators models.model models.output_losses models.sequential "
    "models.sequential_config models.sequential_predictions "
    "models.trainer_setup models.weights_and_saving random_state regularizers runtime runtime.precision"
).split())])
DEFERRED = ["configparser", "arignote.devices.machine_check", "arignote.devices.spec", "arignote.sizes",
            "arignote.legacy.interfaces", "arignote.layers.core.dropout", "arignote.layers.core.lambda_layer",
            "arignote.layers.convolutional.reshaping", "arignote.layers.pooling"]


def _loaded(code: str, watched: list[str] = HEAVY) -> list[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in {watched!r} if m in sys.modules)))"
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_first_use_does_not_load_h5py_nvml_or_rare_parts():
    assert _loaded(FIRST_USE) == []


def test_the_probe_sees_them_once_used():
    # the same probe after using the lazily loaded names: each loads on first use, under its old name
    code = (FIRST_USE + "\nimport arignote.callbacks as cb, arignote.utils as u, arignote.saving as s, "
            "arignote.datasets as d\ncb.RunStatus, cb.BackupAndRestore, u.plot_model, s.save_model, "
            "d.mnist.load_data\nfrom arignote.devices import nvml")
    assert _loaded(code) == sorted(HEAVY)


def test_lazy_namespaces_keep_names_dir_and_star_import():
    import arignote.callbacks as cb
    import arignote.utils as u
    from arignote.callbacks.model_checkpoint import ModelCheckpoint
    from arignote.utils.np_utils import to_categorical

    assert cb.ModelCheckpoint is ModelCheckpoint and u.to_categorical is to_categorical
    assert set(cb.__all__) <= set(dir(cb)) and "np_utils" in dir(u)
    namespace: dict = {}
    exec("from arignote.callbacks import *", namespace)
    assert namespace["EarlyStopping"].__name__ == "EarlyStopping" and "RunStatus" in namespace
    with pytest.raises(AttributeError, match="NoSuchCallback"):
        _ = cb.NoSuchCallback


def test_first_use_does_not_load_the_training_loop_or_what_only_fit_and_save_use():
    assert _loaded("import torch\n" + FIRST_USE, LATER) == []


def test_the_probe_sees_the_training_loop_once_a_model_is_fitted_and_saved():
    # the same watch list after a Keras 2 script's build, compile, fit, save and load: each loads then
    code = (FIRST_USE + "\nimport os, tempfile, numpy as np\nfrom arignote.models import load_model\n"
            "from arignote.layers import LSTM, Add, TimeDistributed\n"
            "m = Sequential([Dense(3, input_shape=(4,), activation='softmax')])\n"
            "m.compile('adam', 'categorical_crossentropy', metrics=['accuracy'])\n"
            "m.fit(np.zeros((8, 4), 'float32'), np.eye(3)[[0] * 8], epochs=1, verbose=0)\n"
            "path = os.path.join(tempfile.mkdtemp(), 'm.h5'); m.save(path)\n"
            "assert load_model(path).predict(np.zeros((1, 4), 'float32')).shape == (1, 3)")
    assert _loaded(code, LATER) == sorted(set(LATER) - {"rich"})  # rich: only `arignote smi`/monitor


def test_a_layer_class_met_by_name_loads_its_family_first():
    # arignote.layers loads its families on first use; a config naming a class of one not loaded yet
    # (GRU here: only Dense was imported) still finds it, and a misspelt one still gets the hint
    code = ("from arignote.layers import Dense, deserialize\n"
            "import sys; assert 'arignote.layers.recurrent' not in sys.modules\n"
            "gru = deserialize({'class_name': 'GRU', 'config': {'units': 2}})\n"
            "print(type(gru).__module__, gru.units)\n"
            "try:\n    deserialize({'class_name': 'Bidirectionl', 'config': {}})\n"
            "except ValueError as e:\n    print(e)")
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.splitlines() == ["arignote.layers.recurrent 2",
                                       "unknown layer class 'Bidirectionl'. Did you mean 'Bidirectional'?"]


def test_first_use_loads_exactly_the_pinned_modules():
    # the modules new in sys.modules after `import torch`: the pinned set, nothing heavier, nothing else
    code = ("import sys, torch, json\nbefore = set(sys.modules)\n" + FIRST_USE
            + "\nprint(json.dumps(sorted(set(sys.modules) - before)))")
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    new = json.loads(out.stdout.strip().splitlines()[-1])
    assert [m for m in new if m not in FIRST_USE_MODULES] == []  # a module came back or was added
    assert new == FIRST_USE_MODULES  # one went away: pin the smaller set


def test_the_deferred_modules_load_when_their_feature_is_used():
    # each deferred module loads with the feature that needs it (the probe can see them)
    code = (FIRST_USE + "\nimport os, tempfile\nfrom arignote.layers import Dropout, Lambda, Cropping2D\n"
            "from arignote.layers.convolutional import MaxPooling2D\nfrom arignote.legacy import interfaces\n"
            "rc = os.path.join(tempfile.mkdtemp(), 'rc')\nopen(rc, 'w').write('[memory]\\nlimit = 1GiB\\n')\n"
            "os.environ['ARIGNOTERC'] = rc\nos.environ['ARIGNOTE_FLAGS'] = 'device=cpu'\n"
            "import arignote\nassert arignote.config.get('device') == 'cpu'")
    assert _loaded(code, DEFERRED) == sorted(DEFERRED)
    assert _loaded(FIRST_USE, DEFERRED) == []
