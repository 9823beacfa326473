"""The docs site as `make docs` builds it and as a person sees it (issue 34).

The site is built with ``mkdocs build --strict`` (mkdocs.yml: a broken link or API reference fails),
its search index holds the configuration page's flags, and in headless Chromium
(scripts/docs_browser.py) the search box finds "preallocate" on the configuration page, whose flag
table lists every flag of the registry. Screenshots go to build/test-artifacts/ for reviewers.
Chromium's part skips only when no Chromium is installed (Debian: apt-get install chromium); the
build needs the ``docs`` extra (part of ``dev``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from arignote import config

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "build" / "test-artifacts"
pytestmark = pytest.mark.slow


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def mkdocs(*args: str, config_file: Path = ROOT / "mkdocs.yml") -> subprocess.CompletedProcess:
    pytest.importorskip("mkdocs", reason="the docs extra is not installed: pip install -e '.[docs]'")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", PYTHONPATH=os.pathsep.join(sys.path))
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config_file), *args]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    proc = mkdocs("-d", str(out))
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


def test_strict_build_has_every_page_and_the_api_reference(site):
    for page in ("index.html", "configuration.html", "gpu-memory.html", "coming-from/theano.html",
                 "keras2_conformance.html", "reference/models.html", "reference/config.html"):
        assert (site / page).is_file(), page
    models = (site / "reference" / "models.html").read_text()
    assert 'id="arignote.models.Sequential"' in models and 'id="arignote.models.Model"' in models
    callbacks = (site / "reference" / "callbacks.html").read_text()  # a lazy namespace, seen by docs_griffe
    assert 'id="arignote.callbacks.EarlyStopping"' in callbacks


def test_search_index_has_preallocate_on_the_configuration_page(site):
    index = json.loads((site / "search" / "search_index.json").read_text())
    pages = {doc["location"].split("#")[0] for doc in index["docs"] if "preallocate" in doc["text"]}
    assert "configuration.html" in pages


def test_a_broken_link_fails_the_build(tmp_path):
    """mkdocs.yml's strict settings, shown on a one-page site that inherits them."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [the flags](no-such-page.md).\n")
    yml = tmp_path / "mkdocs.yml"
    yml.write_text(f"INHERIT: {ROOT / 'mkdocs.yml'}\ndocs_dir: {docs}\nsite_dir: {tmp_path / 'site'}\n"
                   "nav:\n  - Home: index.md\n")
    proc = mkdocs(config_file=yml)
    assert proc.returncode != 0
    said = proc.stdout + proc.stderr
    assert "contains a link 'no-such-page.md'" in said and "strict mode" in said, said


def test_site_in_chromium_search_finds_preallocate(site):
    browser_tools = _load("docs_browser")
    if browser_tools.CHROMIUM is None:
        pytest.skip("no chromium found on PATH (Debian: apt-get install chromium)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with browser_tools.serve(site) as base, browser_tools.Chromium() as browser:
        found = browser_tools.search(browser, base, "preallocate")
        hits = [hit["href"].removeprefix(base).split("?")[0] for hit in found]
        assert "configuration.html" in hits, found
        browser.open(base + "configuration.html")
        first_cells = "[...document.querySelectorAll('td:first-child code')]"
        listed = browser.evaluate(f"{first_cells}.map(e => e.innerText)")
        assert set(config.FLAGS) <= set(listed)
        shots = browser_tools.screenshots(browser, base, ARTIFACTS)
    for shot in shots:
        data = shot.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000, shot
