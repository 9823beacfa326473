"""``arignote dash`` as a person sees it (issue 19): headless Chromium loads the page of a fake 4-GPU
server with two real fits in progress, a leased GPU, a queued ``run --wait`` and bad files.

The page's DOM is checked and a screenshot is kept in ``build/test-artifacts/dash.png`` for
reviewers. Skips only when no Chromium is installed (Debian: ``apt-get install chromium``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from html.parser import HTMLParser
from pathlib import Path

import psutil
import pytest

from share_helpers import FOUR_GPUS, holder_result, start_holder
from status_helpers import env_for, kill, record_of, start_fit, wait_for

ARTIFACTS = Path(__file__).resolve().parent.parent / "build" / "test-artifacts"
CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
pytestmark = [
    pytest.mark.skipif(CHROMIUM is None,
                       reason="no chromium found on PATH (Debian: apt-get install chromium)"),
    pytest.mark.slow,
]


def chromium(url: str, *extra: str, timeout: float = 90) -> str:
    """Run headless Chromium on ``url`` with the flags this machine's closed network needs."""
    with tempfile.TemporaryDirectory(prefix="dash-chromium-") as profile:
        out = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--virtual-time-budget=3000",
             *extra, url],
            capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


class Page(HTMLParser):
    """The dumped DOM as text per element of interest: rows, cards, problems (by data-* attribute)."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.items: dict[str, dict[str, str]] = {}
        self.attrs_of: dict[str, dict[str, str]] = {}
        self.ids: dict[str, str] = {}
        self.hidden: set[str] = set()
        self.polylines: dict[str, int] = {}
        self._open: list[tuple[str, str, int]] = []
        self._depth = 0
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self._depth += 1
        for key in ("data-gpu", "data-run", "data-problem", "data-lease", "data-queued"):
            if key in a:
                kind = key[5:]
                self.items.setdefault(kind, {})[a[key]] = ""
                self.attrs_of[f"{kind}:{a[key]}"] = a
                self._open.append((kind, a[key], self._depth))
        if "id" in a:
            self._open.append(("id", a["id"], self._depth))
            self.ids[a["id"]] = ""
            if "hidden" in a:
                self.hidden.add(a["id"])
        if tag == "polyline":
            for kind, key, _ in self._open:
                if kind == "run":
                    self.polylines[key] = self.polylines.get(key, 0) + 1
        if tag in ("meta", "link", "br", "img", "input", "hr"):  # HTML void elements: no end tag
            self.handle_endtag(tag)

    def handle_endtag(self, tag):
        self._open = [o for o in self._open if o[2] < self._depth]
        self._depth -= 1

    def handle_data(self, data):
        for kind, key, _ in self._open:
            if kind == "id":
                self.ids[key] += data + " "
            else:
                self.items[kind][key] += data + " "


def _text(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip()


def _inventory(path: Path, jobs: dict[int, int]) -> Path:
    """The 4-GPU fixture with our fit processes added on the given GPUs (gpu index -> pid)."""
    data = json.loads(FOUR_GPUS.read_text())
    for index, pid in jobs.items():
        data["gpus"][index]["processes"].append({"pid": pid, "user": psutil.Process(pid).username(),
                                                 "gpu_memory": 3 << 30, "command": "python train",
                                                 "kind": "C"})
    path.write_text(json.dumps(data))
    return path


def _vanished_record(runs_dir: Path) -> str:
    """A 'running' record of a process that has exited (as a kill -9 leaves it)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    start = psutil.Process(proc.pid).create_time() + 0.2 if proc.poll() is None else time.time() - 5
    proc.wait()
    name = f"run-{os.getuid()}-{proc.pid}-{int(start * 1000)}.json"
    rec = {"format": "arignote-run/1", "pid": proc.pid, "start": start, "updated": start + 4,
           "state": "running",
           "user": "carol", "host": os.uname().nodename, "script": "vanished.py", "epoch": 1, "epochs": 5,
           "step": 3, "steps": 10, "history": {"loss": [0.9]}, "command": "python vanished.py",
           "devices": ["cpu"]}
    (runs_dir / name).write_text(json.dumps(rec))
    return name


def _stale_record(runs_dir: Path) -> str:
    """A 'running' record of a live process (this one) last written 10 minutes ago."""
    start = psutil.Process().create_time() + 0.5
    name = f"run-{os.getuid()}-{os.getpid()}-{int(start * 1000)}.json"
    rec = {"format": "arignote-run/1", "pid": os.getpid(), "start": start, "updated": time.time() - 600,
           "state": "running", "user": "dave", "host": os.uname().nodename, "script": "stuck.py", "epoch": 0,
           "epochs": 2, "step": 1, "steps": 10, "history": {}, "command": "python stuck.py",
           "devices": ["cpu"]}
    (runs_dir / name).write_text(json.dumps(rec))
    return name


def _start_dash(env: dict[str, str], *args: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "arignote", "dash", "--port", "0", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    m = re.search(r"serving (http://\S+)", line)
    assert m, (line, proc.stderr.read() if proc.poll() is not None else "")
    return proc, m.group(1)


def test_dash_page_in_chromium(tmp_path):
    lease_dir = tmp_path / "leases"
    env = env_for(lease_dir)
    procs: list[subprocess.Popen] = []
    try:
        fits = [start_fit(env, epochs=400, pause=0.1, name=name, tmp=tmp_path)
                for name in ("train_alpha.py", "train_beta.py")]
        procs += fits
        for fit in fits:  # caught mid-run with a few epochs of curve
            def epochs(f=fit):
                rec = record_of(lease_dir, f.pid)
                return rec is not None and len(rec["history"].get("loss", [])) >= 3

            wait_for(epochs, timeout=120, what="3 epochs in the run's record")
        inv = _inventory(tmp_path / "inv.json", {1: fits[0].pid, 3: fits[1].pid})
        holder = start_holder(lease_dir, inv)  # leases the freest GPU
        procs.append(holder)
        leased = holder_result(holder)["indices"]
        waiter = subprocess.Popen([sys.executable, "-m", "arignote", "run", "--wait", "--gpus", "4",
                                   "--poll", "1", "--inventory", str(inv), "--", "python", "train_big.py"],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(waiter)
        runs_dir = lease_dir / "runs"
        (runs_dir / f"run-{os.getuid()}-1-1.json").write_text('{"format": "arignote-run/1", "pid": 1, ')
        vanished = _vanished_record(runs_dir)
        stale = _stale_record(runs_dir)
        (lease_dir / f"gpu-gpu-box-broken.{os.getuid()}.{os.getpid()}.json").mkdir()  # unreadable lease
        wait_for(lambda: list(lease_dir.glob("queue-*.json")), what="the waiter in the queue")
        dash, url = _start_dash(env, "--inventory", str(inv), "--interval", "1")
        procs.append(dash)

        page = Page(chromium(url, "--dump-dom"))
        gpus = {k: _text(v) for k, v in page.items["gpu"].items()}
        assert sorted(gpus) == ["0", "1", "2", "3"]
        assert "NVIDIA A100-SXM4-40GB" in gpus["0"] and "98%" in gpus["0"] and "61°C" in gpus["0"]
        assert "alice · pid 41203" in gpus["0"] and "python train_gpt.py --bs 64" in gpus["0"]
        assert re.search(rf"pid {fits[0].pid} .*→ train_alpha\.py epoch \d+/400 ETA ", gpus["1"])
        assert re.search(rf"pid {fits[1].pid} .*→ train_beta\.py epoch \d+/400 ETA ", gpus["3"])
        assert f"(pid {holder.pid}," in gpus[str(leased[0])]
        assert "n/a" in gpus["3"]  # GPU 3 reports no temperature/utilization: shown as n/a
        leases = {k: _text(v) for k, v in page.items["lease"].items()}
        assert list(leases) == [str(holder.pid)] and leases[str(holder.pid)].startswith(f"{leased[0]} ")
        queue = {k: _text(v) for k, v in page.items["queued"].items()}
        assert list(queue) == [str(waiter.pid)]
        assert re.fullmatch(rf"1 \S+ {waiter.pid} 4 \d+s – python train_big\.py", queue[str(waiter.pid)])
        runs = {k: _text(v) for k, v in page.items["run"].items()}
        alpha = next(k for k, v in runs.items() if v.startswith("train_alpha.py running"))
        beta = next(k for k, v in runs.items() if v.startswith("train_beta.py running"))
        assert "GPU 1" in runs[alpha] and "GPU 3" in runs[beta]
        assert re.search(r"epoch \d+/400 · step \d/3 · \d+%", runs[alpha]) and "samples/s" in runs[alpha]
        assert page.polylines[alpha] >= 2 and page.polylines[beta] >= 2  # loss and accuracy curves
        assert "loss per epoch" in runs[alpha] and "accuracy per epoch" in runs[alpha]
        assert runs[vanished].startswith("vanished.py gone")
        assert "is gone without writing its end" in runs[vanished]
        assert runs[stale].startswith("stuck.py running") and "no update for 10m" in runs[stale]
        problems = {k: _text(v) for k, v in page.items["problem"].items()}
        assert "not valid JSON" in problems[f"run-{os.getuid()}-1-1.json"]
        broken = f"gpu-gpu-box-broken.{os.getuid()}.{os.getpid()}.json"
        assert "lease record cannot be read" in problems[broken]
        assert "nogpu" in page.hidden and "problems-section" not in page.hidden

        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / "dash.png"
        shot.unlink(missing_ok=True)
        chromium(url, f"--screenshot={shot}", "--window-size=1360,1500", "--hide-scrollbars")
        assert shot.stat().st_size > 20_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert dash.poll() is None  # bad files did not bring the server down
    finally:
        for p in reversed(procs):
            if p is not None and p.stdin:
                p.stdin.close()
            kill(p)


def test_dash_without_gpu_shows_cpu_runs_and_says_so(tmp_path):
    lease_dir = tmp_path / "leases"
    env = env_for(lease_dir)
    inv = tmp_path / "none.json"
    reason = "no NVIDIA driver found: libnvidia-ml.so.1 could not be loaded"
    inv.write_text(json.dumps({"gpus": [], "nvml_error": reason}))
    fit = start_fit(env, epochs=1, name="cpu_job.py", tmp=tmp_path)
    procs = [fit]
    try:
        fit.wait(timeout=120)
        assert record_of(lease_dir, fit.pid)["state"] == "finished", fit.stderr.read()
        dash, url = _start_dash(env, "--inventory", str(inv))
        procs.append(dash)
        page = Page(chromium(url, "--dump-dom"))
        assert "nogpu" not in page.hidden
        assert _text(page.ids["nogpu"]).startswith("No GPU present on this machine (no NVIDIA driver found")
        assert page.items.get("gpu", {}) == {}
        (card,) = page.items["run"].values()
        assert _text(card).startswith("cpu_job.py finished") and " CPU " in _text(card)
    finally:
        for p in procs:
            kill(p)
