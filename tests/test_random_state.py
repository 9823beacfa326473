"""``numpy.random.seed(7)`` fixes a run as on Keras 2 + Theano; ``torch.manual_seed`` keeps torch's semantics.

The end-to-end tests run the same tutorial-style script in fresh processes (torch's own start seed
is random per process, so only a fresh process shows what a user sees) and compare weights and
History. The torch-seeded figures below were computed with this script on main before
``arignote.random_state`` existed: a torch-seeded run must not change because of it.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from arignote import initializers, random_state
from arignote.layers import AlphaDropout, Conv2D, Dense, Dropout, Flatten, GaussianDropout, GaussianNoise
from arignote.models import Sequential
from arignote.ops import tensor as backend_ops

SCRIPT = """
import json, sys
import numpy
import torch
np_seed, torch_seed, procs, when = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
if torch_seed != "-" and when == "early":
    torch.manual_seed(int(torch_seed))  # before arignote's first torch import
import arignote
from arignote.layers import Dense, Dropout, GaussianNoise
from arignote.models import Sequential

arignote.configure(device="cpu", cpu_processes=procs)
if torch_seed != "-" and when == "late":
    torch.manual_seed(int(torch_seed))
if np_seed != "-":
    numpy.random.seed(int(np_seed))  # after the imports, as the tutorials do
rng = numpy.random.RandomState(0)  # the same data in every run
x = rng.normal(size=(96, 6)).astype("float32")
y = (x[:, :1] - x[:, 1:2] > 0).astype("float32")
model = Sequential([Dense(12, activation="relu", input_dim=6), GaussianNoise(0.1), Dropout(0.3),
                    Dense(1, activation="sigmoid")])
model.compile("sgd", "binary_crossentropy")
hist = model.fit(x, y, batch_size=16, epochs=2, shuffle=True, verbose=0, validation_split=0.25)
if hist is not None:
    print(json.dumps({"loss": [float(v) for v in hist.history["loss"]],
                      "val_loss": [float(v) for v in hist.history["val_loss"]],
                      "weights": [float(numpy.asarray(w, "float64").sum()) for w in model.get_weights()]}))
"""

# computed on main (91320b0) before random_state existed, `torch.manual_seed(0)` after the imports;
# recomputed in session 13 (stepcost) when the CPU Dropout's masks came to be drawn as 64-bit words
# (layers/core/dropout.py: cpu_dropout), the only change to these runs' draws
TORCH0 = {"loss": [0.8165635731485155, 0.699226180712382],
          "val_loss": [0.7955747842788696, 0.780572791894277],
          "weights": [-1.5207172929076478, -0.017247133582714014, 0.972296305000782, -0.007228210102766752]}
TORCH0_TWO_PROCESSES = {
    "loss": [0.7662015590402815, 0.7363897330231137], "val_loss": [0.7998067736625671, 0.7851969401041666],
    "weights": [-1.5184094653232023, -0.008842822746373713, 0.9693408384919167, -0.005931797903031111]}


def run(tmp_path, np_seed="-", torch_seed="-", procs=1, when="late") -> dict:
    script = tmp_path / "tutorial.py"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script), np_seed, torch_seed, str(procs), when],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def close(a: dict, b: dict) -> bool:
    return all(np.allclose(a[k], b[k], rtol=1e-6, atol=1e-9) for k in ("loss", "val_loss", "weights"))


def test_numpy_seed_makes_a_run_reproducible_and_the_seed_matters(tmp_path):
    first, second, other = run(tmp_path, "7"), run(tmp_path, "7"), run(tmp_path, "8")
    assert first == second
    assert not close(first, other)


def test_no_seed_at_all_stays_random(tmp_path):
    assert not close(run(tmp_path), run(tmp_path))


def test_torch_manual_seed_keeps_its_runs_exactly(tmp_path):
    assert close(run(tmp_path, torch_seed="0"), TORCH0)
    assert close(run(tmp_path, "7", "0"), TORCH0)  # numpy's seed does not matter then
    assert close(run(tmp_path, "8", "0", when="early"), TORCH0)  # seeded before arignote imported torch


GAN_STYLE = """
import numpy
import arignote
from arignote.layers import Dense, Dropout
from arignote.models import Sequential
arignote.configure(device="cpu", print_active_device=False)
numpy.random.seed(7)
x, y = numpy.ones((8, 4), "float32"), numpy.zeros((8, 1), "float32")
model = Sequential([Dense(8, input_dim=4), Dropout(0.5), Dense(1)])
model.compile("sgd", "mse")
print([float(model.train_on_batch(x, y)) for _ in range(3)])
"""


def test_train_on_batch_loops_follow_the_numpy_seed_too(tmp_path):
    # no fit: Dropout's masks follow torch's RNG as seeded from numpy when the model was built
    script = tmp_path / "gan_style.py"
    script.write_text(GAN_STYLE)
    outs = [subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=240)
            for _ in range(2)]
    assert all(o.returncode == 0 for o in outs), outs[0].stderr[-3000:]
    assert outs[0].stdout == outs[1].stdout and outs[0].stdout.startswith("[")


@pytest.mark.multiproc
def test_data_parallel_ranks_follow_the_numpy_seed(tmp_path):
    first = run(tmp_path, "7", procs=2)
    assert first == run(tmp_path, "7", procs=2)
    assert not close(first, run(tmp_path, "8", procs=2))
    assert close(run(tmp_path, "7", "0", procs=2), TORCH0_TWO_PROCESSES)


@pytest.fixture
def numpy_mode(monkeypatch):
    """This process as if nobody seeded torch: the current seed is torch's own start."""
    monkeypatch.setattr(random_state, "_start", torch.initial_seed())
    monkeypatch.setattr(random_state, "_own", None)
    assert not random_state.torch_mode()


def _np_state() -> tuple:
    _, keys, pos, *_ = np.random.get_state()
    return tuple(keys.tolist()), pos


def _next_draw(seed: int, between) -> float:
    np.random.seed(seed)
    between()
    return float(np.random.rand())


# np.random.rand() after numpy.random.seed(7) and building these models, in Keras 2.3.1 + Theano itself
# (scripts/keras2_numpy_stream.py): Keras drew np.random.randint(1, 10e6) per random initializer and noise
# layer without a seed, so numpy's stream moves on by as much here.
KERAS2_NEXT_DRAW = {"dense": 0.7799187922401146, "conv": 0.9782228970785825, "noise": 0.30801276518773935}


def test_building_a_model_consumes_numpy_stream_as_keras_did(numpy_mode):
    builds = {
        "dense": lambda: Sequential([Dense(3, input_dim=2), Dense(1)]),
        "conv": lambda: Sequential([
            Conv2D(4, (3, 3), input_shape=(8, 8, 1)), Flatten(),
            Dense(2, kernel_initializer="he_normal", bias_initializer="random_normal")]),
        "noise": lambda: Sequential([
            Dense(4, input_dim=3), Dropout(0.5), GaussianNoise(0.1), Dropout(0.2, seed=1), Dropout(0.0),
            GaussianDropout(0.3), AlphaDropout(0.1), Dense(1)]),
    }
    untouched = _next_draw(7, lambda: None)
    for name, build in builds.items():
        assert _next_draw(7, build) == KERAS2_NEXT_DRAW[name] != untouched, name


def test_numpy_mode_weights_follow_numpy_seed(numpy_mode):
    np.random.seed(3)
    a = Sequential([Dense(4, input_dim=3)]).get_weights()[0]
    torch.rand(100)  # torch's stream moved on: the numpy seed still decides
    np.random.seed(3)
    b = Sequential([Dense(4, input_dim=3)]).get_weights()[0]
    np.random.seed(4)
    c = Sequential([Dense(4, input_dim=3)]).get_weights()[0]
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_seeded_initializers_and_backend_ops_leave_numpy_alone(numpy_mode):
    state = _np_state()
    initializers.glorot_uniform(seed=1)((3, 4))
    backend_ops.random_normal((2, 2), seed=5)
    assert _np_state() == state
    a, b = (backend_ops.truncated_normal((50,), seed=5) for _ in range(2))  # its seed now counts
    assert torch.equal(a, b)
    initializers.glorot_uniform()((3, 4))
    assert not _np_state() == state


def test_backend_random_ops_without_seed_follow_numpy(numpy_mode):
    np.random.seed(1)
    a = backend_ops.random_uniform((5,))
    np.random.seed(1)
    assert torch.equal(a, backend_ops.random_uniform((5,)))


@pytest.mark.parametrize("seed_torch", [lambda: torch.manual_seed(1234), torch.seed])
def test_a_users_torch_seed_switches_numpy_off(numpy_mode, seed_torch):
    seed_torch()
    assert random_state.torch_mode()
    seed = torch.initial_seed()
    state = _np_state()
    Sequential([Dense(3, input_dim=2)])
    random_state.follow_numpy()
    assert _np_state() == state
    assert torch.initial_seed() == seed


def test_a_compiled_step_keeps_torchs_stream(numpy_mode, monkeypatch):
    # Dynamo tracing a Lambda's K.random_normal: no reseeding (and no numpy call) inside the graph
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    state, seed = _np_state(), torch.initial_seed()
    random_state.follow_numpy()
    assert _np_state() == state and torch.initial_seed() == seed
