"""Shared test setup: the ``gpu`` marker skips without CUDA, and every test gets a clean config.

No test reads the developer's ``~/.arignoterc`` or ``ARIGNOTE_FLAGS``: the autouse fixture points
``ARIGNOTERC`` at no file (the empty list: a missing file would be warned about), unsets
``THEANO_FLAGS`` and reloads the registry before and after the test.
"""

from __future__ import annotations

import pytest

from arignote import config

GPU_SKIP_REASON = "needs a CUDA GPU: torch.cuda.is_available() is False"


def _cuda_available() -> bool:
    # Imported here so collecting CPU-only test files does not pay for torch.
    from arignote.devices import cuda

    return cuda.is_available()


def pytest_collection_modifyitems(config, items):  # noqa: ARG001 - pytest hook signature
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items or _cuda_available():
        return
    skip = pytest.mark.skip(reason=GPU_SKIP_REASON)
    for item in gpu_items:
        item.add_marker(skip)


def _forget_prepared_devices() -> None:
    # Cheap (no torch import): the banner prints again and memory plans are forgotten per test.
    from arignote.runtime import memory, setup

    setup.reset()
    memory._applied.clear()


@pytest.fixture(autouse=True)
def isolated_config(monkeypatch, tmp_path):
    """A fresh flag registry per test, blind to the developer's rc files, keras.json and ARIGNOTE_FLAGS, and a
    fresh ``prepare()`` state (banner not yet printed)."""
    monkeypatch.setenv("ARIGNOTERC", "")
    # blind to ~/.keras/keras.json; a folder of this test's own, as a Keras 3 a test runs (export) writes
    # its keras.json into KERAS_HOME, which must not reach the next tests
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras-home"))
    monkeypatch.delenv("ARIGNOTE_FLAGS", raising=False)
    monkeypatch.delenv("THEANO_FLAGS", raising=False)
    config.reload()
    _forget_prepared_devices()
    yield
    config.reload()
    _forget_prepared_devices()


@pytest.fixture
def one_thread():
    """One torch thread for the test (gradchecks of thousands of tiny products: on a loaded machine
    threads only wait on each other); the previous count afterwards."""
    import torch  # why: only the tests that ask for this fixture need torch loaded here

    was = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(was)
