"""Old module names of the house move (issue 33) still load pickles: ``arignote._moved`` aliases each
old name to its new module, lazily, for one release; and no arignote code uses an old name."""

from __future__ import annotations

import importlib
import importlib.util
import pickle
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from arignote._moved import MOVED

SRC = Path(__file__).resolve().parents[1] / "src"


def _old_path_pickle(obj, new: str, old: str) -> bytes:
    # protocol 2 names a global as text ("c<module>\n<name>\n"), so the module can be renamed in place
    data = pickle.dumps(obj, protocol=2)
    assert new.encode() + b"\n" in data
    return data.replace(new.encode() + b"\n", old.encode() + b"\n")


def test_a_layer_pickled_under_its_old_module_name_loads():
    from arignote.layers import Conv2D

    layer = Conv2D(2, 3, name="c")
    layer.build((None, 5, 5, 1))
    data = _old_path_pickle(layer, "arignote.layers.convolutional.conv", "arignote.layers._conv")
    assert b"arignote.layers._conv\n" in data and b"convolutional" not in data
    with pytest.warns(DeprecationWarning, match=r"layers._conv is now arignote.layers.convolutional.conv"):
        back = pickle.loads(data)
    assert type(back) is Conv2D and back.name == "c"
    np.testing.assert_array_equal(back.get_weights()[0], layer.get_weights()[0])


def test_a_function_pickled_under_its_old_module_name_loads():
    from arignote.losses.functions import mean_squared_error

    data = _old_path_pickle(mean_squared_error, "arignote.losses.functions", "arignote.loss_functions")
    with pytest.warns(DeprecationWarning):
        assert pickle.loads(data) is mean_squared_error


def test_an_old_name_is_the_same_module_object_and_keeps_its_own_spec():
    code = ("import importlib, sys, warnings; warnings.simplefilter('error'); import arignote\n"
            "assert 'arignote.metrics.names' not in sys.modules\n"  # aliased lazily: nothing loaded yet
            "warnings.simplefilter('ignore')\n"
            "old = importlib.import_module('arignote.metric_names')\n"
            "new = importlib.import_module('arignote.metrics.names')\n"
            "assert old is new and new.__spec__.name == 'arignote.metrics.names', new.__spec__\n"
            "assert sys.modules['arignote.metric_names'] is new\n"
            "import arignote.memory as m; assert m.__name__ == 'arignote.runtime.memory'\n"
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_a_name_that_never_existed_is_still_not_found():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("arignote.metric_nonexistent")


def test_every_new_name_exists_and_no_old_name_is_a_file_again():
    for old, new in MOVED.items():
        assert importlib.util.find_spec(new) is not None, new
        rel = Path(*old.split("."))
        assert not (SRC / rel.with_suffix(".py")).exists() and not (SRC / rel / "__init__.py").exists(), old


OLD = re.compile(r"(?<![\w.])(" + "|".join(re.escape(o) for o in sorted(MOVED, key=len, reverse=True))
                 + r")(?![\w])")
FROM = re.compile(r"\bfrom\s+(arignote[\w.]*)\s+import\s+([\w ,]+)")


def _old_names(line: str) -> bool:
    if OLD.search(line):
        return True
    return any(f"{m.group(1)}.{n.split()[0]}" in MOVED for m in FROM.finditer(line)
               for n in m.group(2).split(",") if n.strip())


def test_the_old_name_check_sees_both_spellings():
    assert _old_names("from arignote import memory, config") and _old_names("x = 'arignote.metric_base'")
    assert not _old_names("from arignote.runtime import memory") and not _old_names("arignote.memory_plan")


def test_no_arignote_code_uses_an_old_module_name():
    """A branch merged after the move with an old import fails here (rerun the move's rewrite)."""
    found = []
    for path in [*(SRC / "arignote").rglob("*.py"), *SRC.parent.joinpath("tests").glob("*.py")]:
        if path.name in ("_moved.py", "test_moved_modules.py"):
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _old_names(line):
                found.append(f"{path.relative_to(SRC.parent)}:{i}: {line.strip()}")
    assert not found, "old module names (arignote._moved.MOVED has the new ones):\n" + "\n".join(found[:30])
