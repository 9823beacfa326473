"""The README holds as written: its config blocks parse verbatim, its commands run where a CPU
machine can run them (every other one is listed here with the reason), its flag table is the
registry."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from arignote import config

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)

# README command lines that cannot run in a test on a CPU machine, and why. A new command line in
# the README must be either runnable here or added to this table.
NOT_RUN = {
    "make demo": "reinstalls .venv; tests/test_demo.py runs `arignote demo`",
    "make test": "is this test suite",
    'ARIGNOTE_FLAGS="device=cuda1,floatX=float32,memory.preallocate=0.8" python train.py': "names a GPU",
    "ARIGNOTE_FLAGS=device=all python train.py": "needs GPUs (on a CPU it is device=cpu: the line below)",
    "ARIGNOTE_FLAGS=device=free:2 python train.py": "needs 2 GPUs",
    "ARIGNOTE_FLAGS=device=cuda0,cuda2 python train.py": "needs GPUs 0 and 2",
    "arignote run --gpus 2 --wait -- python train.py": "waits for 2 GPUs; tests/test_run_cmd.py",
    "arignote run --gpus 2 --min-free-memory 10GiB --max-utilization 20 --wait -- python train.py":
        "waits for 2 GPUs; tests/test_run_cmd.py",
    "arignote bench --quick --out bench-out": "minutes of training; tests/test_bench.py",
    "arignote bench": "the full benchmark (hours on a CPU)",
    "arignote bench --batch-size 32,128 --vs torch,keras,lightning --out bench-out": "the full benchmark",
    "arignote bench --zoo --out zoo-out": "the whole zoo: minutes; tests/test_bench_zoo.py runs --quick",
    "arignote selftest": "exercises GPUs; tests/test_bench.py runs it on the CPU",
    "arignote dash": "serves a web page until stopped; tests/test_dash*.py",
    "pip install 'arignote[export]'": "installs packages; the dev extra has them",
    "arignote convert old_theano_model.h5 model.onnx": "needs the user's file; tests/test_convert_cmd.py "
                                                        "converts the Keras 2 fixtures",
    "torchrun --nnodes=2 --nproc-per-node=4 --rdzv-backend=c10d "
    "--rdzv-endpoint=node0.example.org:29400 --rdzv-id=cifar-job train.py": "two machines with 4 GPUs each",
}
PYTHON_NOT_RUN = {
    "from arignote.models import Sequential": "downloads CIFAR-10 (170 MB); tests/test_keras_scripts.py",
    'arignote.configure(contexts="dev0->cuda0;dev1->cuda1")': "names cuda0 and cuda1",
}

# The train.py the README's `python train.py` lines run: a Keras-style script, unchanged per device.
TRAIN_PY = """
import numpy as np
from arignote.layers import Dense
from arignote.models import Sequential

x = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
y = (x.sum(axis=1) > 0).astype("float32")
model = Sequential()
model.add(Dense(1, activation="sigmoid", input_shape=(4,)))
model.compile(optimizer="sgd", loss="binary_crossentropy")
model.fit(x, y, batch_size=16, epochs=1, verbose=2)
"""


def blocks(kind: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(README) if lang == kind]


def command_lines() -> list[str]:
    """Each command of the README's sh blocks: comments dropped, continuation lines joined."""
    out = []
    for body in blocks("sh"):
        text = re.sub(r"\\\n\s*", "", body)
        for line in text.splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line and not line.startswith("#"):
                out.append(line)
    return out


# --------------------------------------------------------------------------- config blocks


@pytest.mark.parametrize("text", blocks("ini"))
def test_every_readme_config_block_parses_verbatim(text, tmp_path, monkeypatch):
    rc = tmp_path / "arignoterc"
    rc.write_text(text)
    monkeypatch.setenv("ARIGNOTERC", str(rc))
    config.reload()
    with config.unchecked():  # the file's syntax and values; a GPU it names may be missing here
        values = {v.name: v for v in config.flags()}  # every flag readable: no ConfigError
    assert config.notices() == []
    section = "global"
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("["):
            section = stripped.strip("[]")
        elif stripped and not stripped.startswith(("#", ";")):
            key, value = (part.strip() for part in stripped.split("=", 1))
            name = key if section == "global" else f"{section}.{key}"
            assert values[name].source == f"{rc}:{number}", line
            shown = re.split(r"\s+[#;]", value)[0]
            parsed = str(config.FLAGS[name].parse(shown)).lower()
            assert str(values[name].value).lower() in (shown.lower(), parsed)


def test_readme_config_example_values():
    rc_text = blocks("ini")[0]
    assert "preallocate = 0.8      # a Theano user's" in rc_text  # the line that once broke every command


# --------------------------------------------------------------------------- the flag table


def table_flags() -> list[str]:
    section = README[README.index("| flag | default | meaning |"):]
    rows = []
    for line in section.splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append(re.findall(r"`([^`]+)`", line.split("|")[1]))
    return [name for names in rows for name in names]


def test_every_registry_flag_is_in_the_readme_table_and_nothing_else():
    listed = table_flags()
    assert sorted(listed) == sorted(config.FLAGS), "README flag table and config.FLAGS differ"


def test_readme_table_defaults_match_the_registry():
    section = README[README.index("| flag | default | meaning |"):]
    for line in section.splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.split("|")[1:-1]]
        name, default = cells[0].strip("`"), cells[1].strip("`")
        expected = config.FLAGS[name].default
        shown = str(expected).lower() if isinstance(expected, bool) else f"{expected:g}" if isinstance(
            expected, float) else str(expected)
        assert default == shown, name


# --------------------------------------------------------------------------- command blocks


def test_every_readme_command_is_run_or_has_a_reason():
    unknown = [line for line in command_lines() if line not in NOT_RUN and not runnable(line)]
    assert unknown == [], "README commands neither run by test_readme_commands_run nor listed in NOT_RUN"
    stale = [line for line in NOT_RUN if line not in command_lines()]
    assert stale == [], "NOT_RUN lists commands the README no longer has"


def runnable(line: str) -> bool:
    return line.startswith(("arignote ", "ARIGNOTE_FLAGS=device=cpu"))


@pytest.mark.slow
def test_readme_commands_run(tmp_path):
    """Each runnable README command, verbatim, in a shell whose `arignote` and `python` are this
    interpreter's, from a home and directory of its own (so ~/.arignoterc is the test's)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name, target in (("arignote", f'exec "{sys.executable}" -m arignote "$@"'),
                         ("python", f'exec "{sys.executable}" "$@"')):
        (bindir / name).write_text(f"#!/bin/sh\n{target}\n")
        (bindir / name).chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.py").write_text(TRAIN_PY)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ARIGNOTE", "THEANO"))}
    env.update(HOME=str(tmp_path), PATH=f"{bindir}{os.pathsep}{env['PATH']}", OMP_NUM_THREADS="1",
               THEANO_FLAGS="device=cpu,floatX=float32", PYTHONPATH=os.pathsep.join(sys.path))
    ran = []
    for line in command_lines():
        if line in NOT_RUN:
            continue
        assert runnable(line), line
        proc = subprocess.run(["bash", "-c", line], cwd=work, env=env, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, f"{line}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        assert "Traceback" not in proc.stderr, line
        ran.append(line)
    assert "arignote config --from-theano" in ran and (tmp_path / ".arignoterc").exists()
    assert any("cpu.processes=2" in line for line in ran)
    assert (work / "snap.json").stat().st_size > 0


# --------------------------------------------------------------------------- python blocks


def test_every_readme_python_block_is_run_or_has_a_reason(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ARIGNOTE", "THEANO"))}
    env.update(ARIGNOTERC="", PYTHONPATH=os.pathsep.join(sys.path))
    for body in blocks("python"):
        first = body.splitlines()[0].split("  #")[0].strip()
        if first in PYTHON_NOT_RUN:
            continue
        proc = subprocess.run([sys.executable, "-c", body], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)
        last = proc.stderr.rstrip().splitlines()[-1] if proc.stderr.strip() else ""
        refused = last.startswith("arignote.errors.DeviceError: device=") and "(from code)" in last
        if proc.returncode and refused:
            continue  # it names GPUs this machine lacks: configure() refuses them at the call, as documented
        assert proc.returncode == 0, f"{body}\n{proc.stderr[-2000:]}"
