"""The first use of the Keras API freezes the objects alive after torch's import out of the cyclic
collector (``_lazy.freeze_torch_import``, issue 32 item 4): what it freezes, that the program's own
garbage is still collected, that frozen objects are handed back at exit, and when it stays out.

Each case runs in a fresh interpreter (the freeze is once per process)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")
FIRST_USE = "from arignote.models import Sequential\nfrom arignote.layers import Dense, Conv2D\n"
# a cycle whose finalizer prints, and a weak reference to tell when the collector freed it
CYCLE = ("import gc, weakref\nclass Cycle:\n    def __del__(self):\n"
         "        print('finalized', self.name, flush=True)\n"
         "def cycle(name):\n    c = Cycle(); c.name, c.me = name, c\n    return c\n")


def _run(code: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return out.stdout.splitlines()


@pytest.mark.parametrize("order", ["torch first", "models first", "layers first"])
def test_first_use_freezes_torchs_objects_and_no_full_collection_walks_them(order):
    # torch's objects (a module, a class, a function) are frozen whichever face the script reads first,
    # and the full collection torch's import left due does not run during the first use
    layers_first = "from arignote.layers import Dense, Conv2D\nfrom arignote.models import Sequential\n"
    first = {"torch first": "import torch\n" + FIRST_USE, "models first": FIRST_USE,
             "layers first": layers_first}
    code = ("import gc\nfull = []\ngc.callbacks.append(lambda phase, info: phase == 'stop' and "
            "info['generation'] == 2 and full.append(1))\n" + first[order]
            + "import torch, sys\nafter_torch = len(full)\n"
            "live = {id(o) for o in gc.get_objects()}\n"
            "print(gc.get_freeze_count() > 100_000, [id(o) in live for o in (torch.nn, torch.nn.Linear, "
            "torch.nn.functional.relu, sys.modules)])")
    assert _run(code) == ["True [False, False, False, False]"]


def test_a_full_collection_during_the_first_use_is_gone():
    # with torch imported first, its import's own full collections ran; the first use adds none over
    # torch's objects (without the freeze one runs there: session 12 measured it, 0.06-0.1 s CPU)
    code = ("import gc, torch\nfull = []\ngc.callbacks.append(lambda phase, info: phase == 'stop' and "
            "info['generation'] == 2 and full.append(1))\n" + FIRST_USE
            + "from arignote.layers import Dropout\nx = [{} for _ in range(6000)]\nprint(len(full))")
    assert _run(code) == ["0"]


def test_the_programs_own_cycles_made_after_the_first_use_are_collected():
    # nothing made after the freeze is frozen: a dropped cycle is freed by the collector at once
    code = (FIRST_USE + CYCLE + "c = cycle('after'); ref = weakref.ref(c); del c\n"
            "print(ref() is not None); gc.collect(); print(ref() is None)")
    assert _run(code) == ["True", "finalized after", "True"]


def test_a_cycle_alive_at_the_first_use_is_freed_at_unfreeze_and_at_exit():
    # the documented cost: a cycle alive at the freeze and dropped later waits for gc.unfreeze() (here)
    # or for the exit, where the atexit handler hands it back and the teardown finalizes it
    made_before = CYCLE + "c = cycle('before')\nref = weakref.ref(c)\n" + FIRST_USE + "del c\n"
    code = made_before + ("gc.collect(); print('alive after collect', ref() is not None)\n"
                          "gc.unfreeze(); gc.collect(); print('alive after unfreeze', ref() is not None)")
    assert _run(code) == ["alive after collect True", "finalized before", "alive after unfreeze False"]
    at_exit = made_before + "gc.collect(); print('alive at the end', ref() is not None)"
    assert _run(at_exit) == ["alive at the end True", "finalized before"]


def test_frozen_objects_are_handed_back_at_exit():
    # the atexit handler unfreezes: the interpreter's teardown sees the same objects as without arignote
    code = ("import atexit, gc\n" + FIRST_USE
            + "atexit.register(lambda: print('at exit, frozen:', gc.get_freeze_count()))\n"
            "print('frozen', gc.get_freeze_count() > 0)")
    # atexit runs last-registered first: the probe, then arignote's unfreeze, so probe again after it
    code2 = ("import atexit, gc\natexit.register(lambda: print('last, frozen:', gc.get_freeze_count()))\n"
             + FIRST_USE)
    assert _run(code)[0] == "frozen True"
    assert _run(code2) == ["last, frozen: 0"]


@pytest.mark.parametrize("setup", ["import gc\ngc.disable()\n", "import gc\ngc.freeze()\n"])
def test_a_program_that_manages_its_collector_is_left_alone(setup):
    # collector off, or objects already frozen by the program: the first use freezes nothing more
    code = setup + "import torch\nn = gc.get_freeze_count()\n" + FIRST_USE
    code += "print(gc.get_freeze_count() == n)"
    assert _run(code) == ["True"]
