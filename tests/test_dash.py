"""``arignote dash`` without a browser (issue 19): the state it serves, the server's rules, the command."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from importlib import resources

import psutil
import pytest

from arignote import cli, config
from arignote.dash import collect, is_loopback, make_server
from arignote.share import acquire, queue
from share_helpers import FOUR_GPUS, child_env


@pytest.fixture
def lease_dir(tmp_path, monkeypatch):
    path = tmp_path / "leases"
    monkeypatch.setenv("ARIGNOTE_LEASE_DIR", str(path))
    config.reload()
    yield path
    monkeypatch.delenv("ARIGNOTE_LEASE_DIR")
    config.reload()


def _record(runs_dir, pid=None, state="running", later=0.0, **kw):
    pid = os.getpid() if pid is None else pid
    start = psutil.Process().create_time() + 0.5 + later
    rec = {"format": "arignote-run/1", "pid": pid, "start": start, "updated": time.time(), "state": state,
           "user": "me", "host": os.uname().nodename, "script": "train.py", "epoch": 1, "epochs": 4,
           "step": 2, "steps": 10, "eta": 30.0, "history": {"loss": [0.5]}, "command": "python train.py",
           "devices": ["cuda:0"], "gpu_uuids": ["GPU-0a1b2c3d-0000-0000-0000-000000000002"]}
    rec.update(kw)
    runs_dir.mkdir(parents=True, exist_ok=True)
    name = f"run-{os.getuid()}-{pid}-{int(start * 1000)}.json"
    (runs_dir / name).write_text(json.dumps(rec))
    return name


# --------------------------------------------------------------------------- the state


def test_state_joins_gpus_leases_queue_and_runs(lease_dir):
    now = time.time()
    name = _record(lease_dir / "runs")
    _record(lease_dir / "runs", state="failed", ended=now - 60, error="ValueError: x", later=1)
    with acquire(1, snapshot=str(FOUR_GPUS)) as lease, queue.waiting(3, "python big.py"):
        state = collect(inventory=FOUR_GPUS, hours=2, now=now + 5)
    assert state["format"] == "arignote-dash/1" and state["no_gpu"] is False and state["problems"] == []
    assert [g["index"] for g in state["gpus"]] == [0, 1, 2, 3]
    (held,) = state["leases"]
    assert held["gpu"] == lease.indices[0] == 1 and held["pid"] == os.getpid() and 4 < held["held_for"] <= 5
    assert state["gpus"][1]["leases"] == [held] and state["gpus"][0]["leases"] == []
    (waiting,) = state["queue"]
    assert waiting["gpus"] == 3 and waiting["command"] == "python big.py" and 4 < waiting["waiting"] <= 5
    (run,) = state["runs"]
    assert run["file"] == name and run["gpus"] == [2]  # matched by the GPU's UUID
    assert [r["state"] for r in state["recent"]] == ["failed"]
    assert state["gpus"][0]["processes"][0]["job"] is None
    json.dumps(state, allow_nan=False)


def test_state_matches_gpu_processes_to_runs_by_pid(lease_dir, tmp_path):
    data = json.loads(FOUR_GPUS.read_text())
    data["gpus"][3]["processes"] = [{"pid": os.getpid(), "user": "me", "gpu_memory": 1 << 30, "command": "x"}]
    inv = tmp_path / "inv.json"
    inv.write_text(json.dumps(data))
    name = _record(lease_dir / "runs", gpu_uuids=[])
    state = collect(inventory=inv)
    job = state["gpus"][3]["processes"][0]["job"]
    assert job == {"text": "train.py epoch 2/4 ETA 30s", "file": name}
    assert state["runs"][0]["gpus"] == [3]


def test_bad_input_becomes_problems_not_errors(lease_dir, tmp_path):
    runs = lease_dir / "runs"
    _record(runs)
    (runs / "run-0-1-2.json").write_text("{oops")
    (lease_dir / f"gpu-box-k.{os.getuid()}.{os.getpid()}.json").mkdir()
    (lease_dir / f"queue-{os.getuid()}-{os.getpid()}.json").write_text("[]")
    state = collect(inventory=tmp_path / "missing.json")
    assert state["no_gpu"] is True and "cannot be read" in state["nvml_error"]
    files = sorted(p["file"] for p in state["problems"])
    me = f"{os.getuid()}.{os.getpid()}"
    assert files == sorted([str(tmp_path / "missing.json"), "run-0-1-2.json", f"gpu-box-k.{me}.json",
                            f"queue-{os.getuid()}-{os.getpid()}.json"])
    assert len(state["runs"]) == 1  # the good record still shows


# --------------------------------------------------------------------------- the server


@pytest.fixture
def serve():
    servers = []

    def start(read, host="127.0.0.1", token=None, interval=2.0):
        server = make_server(host, 0, read, token=token, interval=interval)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _get(url, method="GET"):
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=10) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read().decode()


def test_page_embeds_the_state_and_escapes_it(serve):
    evil = "</script><script>alert(1)</script>"
    base = serve(lambda: {"gpus": [], "runs": [{"command": evil}], "hours": 3})
    code, headers, page = _get(base + "/")
    assert code == 200 and headers["Content-Type"].startswith("text/html")
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert headers["Cache-Control"] == "no-store"
    assert evil not in page and "\\u003c/script>\\u003cscript>alert(1)" in page
    embedded = re.search(r'<script id="state" type="application/json">(.*?)</script>', page, re.S).group(1)
    assert json.loads(embedded)["runs"][0]["command"] == evil
    assert 'data-interval="2"' in page


def test_assets_are_served_from_the_package_without_any_cdn(serve):
    base = serve(lambda: {})
    for path, kind in (("/dash.js", "text/javascript"), ("/dash.css", "text/css")):
        code, headers, body = _get(base + path)
        assert code == 200 and headers["Content-Type"].startswith(kind) and len(body) > 1000
    static = resources.files("arignote.dash").joinpath("static")
    for name in ("index.html", "dash.js", "dash.css"):
        text = static.joinpath(name).read_text()
        assert set(re.findall(r"https?://[^\s\"')]+", text)) <= {"http://www.w3.org/2000/svg"}, name
        assert "@import" not in text and "//cdn" not in text


def test_api_state_is_cached_for_a_second(serve):
    calls = []
    base = serve(lambda: calls.append(1) or {"n": len(calls)}, interval=2.0)
    answers = [json.loads(_get(base + "/api/state")[2])["n"] for _ in range(3)]
    assert answers == [1, 1, 1] and len(calls) == 1
    time.sleep(1.05)
    assert json.loads(_get(base + "/api/state")[2])["n"] == 2


def test_a_failing_read_is_shown_not_raised(serve):
    def read():
        raise PermissionError("lease dir unreadable")

    code, _, body = _get(serve(read) + "/api/state")
    state = json.loads(body)
    assert code == 200 and state["problems"][0]["problem"] == (
        "reading the machine failed: PermissionError: lease dir unreadable")


def test_read_only_and_unknown_paths(serve):
    base = serve(lambda: {})
    assert _get(base + "/api/state", method="POST")[0] == 405
    assert _get(base + "/api/state", method="DELETE")[0] == 405
    assert _get(base + "/nope")[0] == 404
    assert _get(base + "/api/state", method="HEAD")[0] == 200


def test_token_is_required_beyond_localhost(serve):
    with pytest.raises(ValueError, match="needs a token"):
        make_server("0.0.0.0", 0, lambda: {})
    base = serve(lambda: {"ok": 1}, host="0.0.0.0", token="s3cret")
    code, _, body = _get(base + "/api/state")
    assert code == 403 and "token is required" in body
    assert _get(base + "/api/state?token=wrong")[0] == 403
    assert _get(base + "/?token=s3cret")[0] == 200
    assert json.loads(_get(base + "/api/state?token=s3cret")[2]) == {"ok": 1}
    assert [is_loopback(h) for h in ("127.0.0.1", "::1", "localhost", "0.0.0.0", "10.1.2.3", "gpu-box")] == [
        True, True, True, False, False, False]


# --------------------------------------------------------------------------- the command


def test_dash_json_prints_the_state(lease_dir, capsys):
    assert cli.main(["dash", "--json", "--inventory", str(FOUR_GPUS), "--hours", "1"]) == 0
    state = json.loads(capsys.readouterr().out)
    assert state["hours"] == 1 and len(state["gpus"]) == 4 and state["hostname"] == "gpu-box"


@pytest.mark.parametrize("args, message", [
    (["--interval", "0"], "--interval 0: give seconds > 0"),
    (["--hours", "-1"], "--hours -1: give hours >= 0"),
    (["--port", "70000"], "--port 70000: give a port from 0 to 65535"),
])
def test_dash_bad_arguments_exit_2(args, message, capsys):
    assert cli.main(["dash", *args]) == 2
    assert message in capsys.readouterr().err


def test_dash_beyond_localhost_prints_a_url_with_a_token(lease_dir):
    proc = subprocess.Popen([sys.executable, "-m", "arignote", "dash", "--host", "0.0.0.0", "--port", "0",
                             "--inventory", str(FOUR_GPUS)], env=child_env(lease_dir), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        m = re.search(r"serving http://0\.0\.0\.0:(\d+)/\?token=(\S+) \(read-only", line)
        assert m, line + proc.stderr.read() if proc.poll() is not None else line
        port, token = m.groups()
        assert len(token) >= 16
        assert _get(f"http://127.0.0.1:{port}/api/state")[0] == 403
        code, _, body = _get(f"http://127.0.0.1:{port}/api/state?token={token}")
        assert code == 200 and len(json.loads(body)["gpus"]) == 4
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def test_dash_does_not_import_torch(lease_dir):
    code = ("import sys; from arignote.dash import collect; collect(inventory=sys.argv[1]); "
            "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))")
    out = subprocess.run([sys.executable, "-c", code, str(FOUR_GPUS)], capture_output=True, text=True,
                         env=child_env(lease_dir), timeout=60)
    assert out.stdout.strip() == "[]", out.stderr
