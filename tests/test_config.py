"""The flag registry: sources and precedence, provenance, Theano spellings, bad input, ``arignote config``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from arignote import cli, config
from arignote.config import ConfigError


@pytest.fixture(autouse=True)
def four_gpus(monkeypatch):
    """The registry's own tests name GPUs as examples: let the machine check see 4 (the check itself is
    tested in tests/test_config_device_check.py)."""
    from arignote.devices import inventory

    monkeypatch.setattr(inventory, "gpu_count", lambda: (4, None))


def write_rc(path, text):
    path.write_text(text)
    return path


@pytest.fixture
def rc(tmp_path, monkeypatch):
    """An rc file that ARIGNOTERC points at; returns a writer."""
    path = tmp_path / "arignoterc"

    def write(text):
        write_rc(path, text)
        monkeypatch.setenv("ARIGNOTERC", str(path))
        config.reload()
        return path

    return write


def run_cli(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------- defaults and sources


def test_defaults_and_default_source():
    assert config.get("device") == "auto"
    assert config.get("floatX") == "float32"
    assert config.get("memory.preallocate") == 0.0
    assert config.get("print_active_device") is True
    assert config.source("device") == "default"
    assert all(f.source == "default" for f in config.flags())


def test_every_issue_flag_is_declared_with_doc():
    wanted = {"device", "floatX", "precision", "memory.preallocate", "memory.limit", "dnn.enabled",
              "dnn.benchmark", "dnn.deterministic", "cpu.threads", "print_active_device", "contexts"}
    assert wanted <= set(config.FLAGS)
    assert all(config.FLAGS[n].doc for n in wanted)
    assert config.FLAGS["precision"].kind == "fp32|mixed-fp16|mixed-bf16"


def test_rc_sections_give_values_and_file_line_sources(rc):
    path = rc("[global]\ndevice = cuda1\nfloatX = float16\n\n[memory]\npreallocate = 0.8\n"
              "[dnn]\nbenchmark = yes\n")
    assert config.get("device") == "cuda1"
    assert config.source("device") == f"{path}:2"
    assert config.get("floatX") == "float16"
    assert config.source("floatX") == f"{path}:3"
    assert config.get("memory.preallocate") == 0.8
    assert config.source("memory.preallocate") == f"{path}:6"
    assert config.get("dnn.benchmark") is True


def test_default_rc_is_home_arignoterc_shown_with_tilde(tmp_path, monkeypatch):
    monkeypatch.delenv("ARIGNOTERC")
    monkeypatch.setenv("HOME", str(tmp_path))
    write_rc(tmp_path / ".arignoterc", "# comment\n[global]\ndevice = cpu\n")
    config.reload()
    assert config.get("device") == "cpu"
    assert config.source("device") == "~/.arignoterc:3"


def test_arignoterc_list_later_file_wins(tmp_path, monkeypatch):
    a = write_rc(tmp_path / "a", "[global]\ndevice = cpu\nfloatX = float64\n")
    b = write_rc(tmp_path / "b", "[global]\ndevice = cuda0\n")
    monkeypatch.setenv("ARIGNOTERC", f"{a}{os.pathsep}{tmp_path / 'missing'}{os.pathsep}{b}")
    config.reload()
    assert (config.get("device"), config.source("device")) == ("cuda0", f"{b}:2")
    assert (config.get("floatX"), config.source("floatX")) == ("float64", f"{a}:3")


def test_precedence_rc_env_code_override(rc, monkeypatch):
    rc("[global]\ndevice = cpu\nfloatX = float64\n[memory]\npreallocate = 0.5\n")
    monkeypatch.setenv("ARIGNOTE_FLAGS", "device=cuda1,memory.preallocate=0.8")
    config.reload()
    assert (config.get("device"), config.source("device")) == ("cuda1", "ARIGNOTE_FLAGS")
    assert config.source("floatX").endswith(":3")  # rc value not touched by the env
    config.configure(device="cuda0")
    assert (config.get("device"), config.source("device")) == ("cuda0", "code")
    assert config.get("memory.preallocate") == 0.8
    with config.override(device="cpu", memory_preallocate=0.25):
        assert config.get("device") == "cpu" and config.get("memory.preallocate") == 0.25
        with config.override(device="cuda2"):
            assert config.get("device") == "cuda2"
        assert config.get("device") == "cpu"
    assert (config.get("device"), config.get("memory.preallocate")) == ("cuda0", 0.8)
    config.reload()
    assert config.get("device") == "cuda1"  # reload forgets configure()


def test_arignote_flags_comma_list_keeps_device_lists_together(monkeypatch):
    monkeypatch.setenv("ARIGNOTE_FLAGS", "device=cuda0,cuda2,floatX=float32,memory.limit=4096")
    assert config.get("device") == "cuda0,cuda2"
    assert config.get("floatX") == "float32"
    assert config.get("memory.limit") == 4096.0


def test_underscore_and_case_spellings_from_code():
    config.configure(memory_preallocate=0.3, dnn_benchmark=True, floatx="float64", cpu_threads=3)
    assert config.get("memory.preallocate") == 0.3
    assert config.get("dnn.benchmark") is True
    assert config.get("floatX") == "float64"
    assert config.get("cpu.threads") == 3
    assert config.get("memory_preallocate") == 0.3


def test_dedicated_env_variable_is_a_source(monkeypatch, tmp_path):
    monkeypatch.setenv("ARIGNOTE_DATA", str(tmp_path))
    config.reload()
    assert (config.get("datasets.dir"), config.source("datasets.dir")) == (str(tmp_path), "ARIGNOTE_DATA")


def test_environ_is_the_door_to_os_environ(monkeypatch):
    monkeypatch.setenv("ARIGNOTE_TEST_X", "1")
    assert config.environ("ARIGNOTE_TEST_X") == "1"
    assert config.environ("ARIGNOTE_TEST_UNSET_X", "d") == "d"


# --------------------------------------------------------------------------- Theano spellings


def test_theano_sections_aliases_and_notices(rc, capsys):
    path = rc("[global]\ndevice = gpu\nfloatX = float32\nmode = FAST_RUN\n[gpuarray]\npreallocate = 0.9\n"
              "[nvcc]\nfastmath = True\n")
    assert config.get("device") == "cuda"
    assert config.get("memory.preallocate") == 0.9
    assert config.source("memory.preallocate") == f"{path}:6"
    notes = config.notices()
    assert f"note: device=gpu (from {path}:2) is the Theano spelling; read as device=cuda" in notes
    assert any("'mode'" in n and "ignored" in n for n in notes)
    assert any("'nvcc.fastmath'" in n for n in notes)
    assert "read as device=cuda" in capsys.readouterr().err  # printed once when read


def test_theano_gpu_numbers_and_lib_cnmem(monkeypatch):
    monkeypatch.setenv("ARIGNOTE_FLAGS", "device=gpu0,gpu1,lib.cnmem=0.4")
    assert config.get("device") == "cuda0,cuda1"
    assert config.get("memory.preallocate") == 0.4
    assert sum("Theano spelling" in n for n in config.notices()) == 2


# --------------------------------------------------------------------------- bad input


def test_unknown_flag_has_did_you_mean(monkeypatch):
    monkeypatch.setenv("ARIGNOTE_FLAGS", "devcie=cpu")
    want = r"unknown flag 'devcie' \(from ARIGNOTE_FLAGS\)\. Did you mean 'device'"
    with pytest.raises(ConfigError, match=want):
        config.get("device")
    with pytest.raises(ConfigError, match="Did you mean 'memory.preallocate'"):
        config.configure(memory_prealocate=0.5)


@pytest.mark.parametrize("bad", ["float33", "FLOAT32"])
def test_bad_floatx_from_code_names_flag_and_choices(bad):
    with pytest.raises(ConfigError, match=rf"bad value '{bad}' for flag 'floatX' \(from code\).*float32"):
        config.configure(floatX=bad)


@pytest.mark.parametrize("flag,value", [("memory.limit", "-1"), ("cpu.threads", "-2"), ("cpu.threads", "1.5"),
                                        ("dnn.benchmark", "maybe"), ("device", ""), ("precision", "fp8"),
                                        ("cpu.processes", "0"), ("parallel.timeout", "-1"),
                                        ("memory.host_cache", "50%"), ("memory.limit", "1MiB")])
def test_bad_values_raise(monkeypatch, flag, value):
    monkeypatch.setenv("ARIGNOTE_FLAGS", f"{flag}={value}")
    with pytest.raises(ConfigError, match=rf"flag '{flag}' \(from ARIGNOTE_FLAGS\)"):
        config.get(flag)


def test_code_override_of_ignored_theano_flag_is_an_error():
    with pytest.raises(ConfigError, match="Theano flag with no meaning"):
        config.configure(mode="FAST_RUN")


def test_unknown_name_in_get_is_an_error():
    with pytest.raises(ConfigError, match="unknown flag 'no_such_flag'"):
        config.get("no_such_flag")


@pytest.mark.parametrize("env,needles", [
    ("memory.preallocate=1.5x", ["'1.5x'", "memory.preallocate", "ARIGNOTE_FLAGS"]),
    ("floatX=float33", ["'float33'", "floatX", "ARIGNOTE_FLAGS"]),
    ("devcie=cpu", ["devcie", "Did you mean 'device'", "ARIGNOTE_FLAGS"]),
    ("device", ["'device'", "not name=value"]),
])
def test_cli_exits_2_for_bad_env(monkeypatch, capsys, env, needles):
    monkeypatch.setenv("ARIGNOTE_FLAGS", env)
    code, out, err = run_cli(capsys, "config")
    assert code == 2
    assert out == ""
    for needle in needles:
        assert needle in err


def test_cli_exits_2_for_bad_rc_value_with_file_line(rc, capsys):
    path = rc("[global]\ndevice = cpu\n\n[memory]\npreallocate = 1.5x\n")
    code, _, err = run_cli(capsys, "config")
    assert code == 2
    assert f"bad value '1.5x' for flag 'memory.preallocate' (from {path}:5)" in err


def test_cli_exits_2_for_unknown_rc_flag(rc, capsys):
    path = rc("[global]\nfloatX = float32\n[dnn]\nbenchmrk = true\n")
    code, _, err = run_cli(capsys, "config")
    assert code == 2
    assert f"unknown flag 'dnn.benchmrk' (from {path}:4). Did you mean 'dnn.benchmark'?" in err


@pytest.mark.parametrize("text,line,why", [
    ("device = cpu\n", 1, "no section headers"),
    ("[global]\ndevice = cpu\ndevice = cuda\n", 3, "already exists"),
    ("[global]\ndevice = cpu\nno equals sign here\n", 3, "'no equals sign here' is neither a [section]"),
])
def test_cli_exits_2_for_invalid_ini(rc, capsys, text, line, why):
    path = rc(text)
    code, _, err = run_cli(capsys, "config")
    assert code == 2
    assert f"rc file {path}:{line} is not valid INI" in err
    assert why in err


def test_cli_exits_2_for_unreadable_rc(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ARIGNOTERC", str(tmp_path))  # a directory
    config.reload()
    code, _, err = run_cli(capsys, "config")
    assert code == 2
    assert f"rc file {tmp_path} cannot be read" in err


@pytest.mark.parametrize("spec,why", [("cdua", "'cdua' is not a device"), ("cuda0,cuda0", "listed twice"),
                                      ("cpu,cuda0", "cpu cannot be mixed"), ("free:0", "N >= 1")])
def test_bad_device_spec_is_a_config_error_naming_source(monkeypatch, capsys, spec, why):
    monkeypatch.setenv("ARIGNOTE_FLAGS", f"device={spec}")
    code, _, err = run_cli(capsys, "config")
    assert code == 2
    assert f"bad value '{spec}' for flag 'device' (from ARIGNOTE_FLAGS)" in err and why in err


def test_rc_continuation_line_cannot_smuggle_a_device(rc, capsys):
    path = rc("[global]\ndevice = cpu\n  cuda1\n")
    code, _, err = run_cli(capsys, "config")
    assert code == 2
    assert f"flag 'device' (from {path}:2)" in err


def test_real_cli_process_exits_2(tmp_path):
    env = {**os.environ, "ARIGNOTE_FLAGS": "floatX=float33", "ARIGNOTERC": ""}
    proc = subprocess.run([sys.executable, "-m", "arignote", "config"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    assert "floatX" in proc.stderr and "ARIGNOTE_FLAGS" in proc.stderr


# --------------------------------------------------------------------------- arignote config


def test_config_command_table_shows_values_sources_and_docs(rc, monkeypatch, capsys):
    path = rc("[memory]\npreallocate = 0.8\n")
    monkeypatch.setenv("ARIGNOTE_FLAGS", "device=cpu,floatX=float32")
    config.reload()
    code, out, _ = run_cli(capsys, "config")
    assert code == 0
    rows = [line for line in out.splitlines() if not line.startswith(("    ", "note:"))]
    lines = {line.split()[0]: line.split() for line in rows}
    assert lines["device"][1:] == ["'cpu'", "ARIGNOTE_FLAGS"]
    assert lines["memory.preallocate"][1:] == ["0.8", f"{path}:2"]
    assert lines["precision"][1:] == ["'fp32'", "default"]
    assert len(lines) == len(config.FLAGS)
    # each flag's doc on the line under it
    text = out.splitlines()
    for name, flag in config.FLAGS.items():
        row = next(i for i, line in enumerate(text) if line.split()[0] == name)
        assert text[row + 1] == f"    {flag.doc}"


def test_config_json(rc, monkeypatch, capsys):
    path = rc("[global]\ndevice = gpu63\n")
    monkeypatch.setenv("ARIGNOTE_FLAGS", "memory.limit=0.5")
    config.reload()
    code, out, err = run_cli(capsys, "config", "--json")
    assert code == 2 and "cuda63" in err  # no such GPU here: what fit would refuse, exit 2
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["device"]["value"] == "cuda63" and rows["device"]["source"] == f"{path}:2"
    assert rows["memory.limit"] == {"name": "memory.limit", "value": 0.5, "source": "ARIGNOTE_FLAGS",
                                    "type": "size", "default": 0.0, "doc": config.FLAGS["memory.limit"].doc}
    assert rows["dnn.enabled"]["type"] == "auto|true|false"


# --------------------------------------------------------------------------- rc comments, sizes, non-finite


def test_rc_inline_comments_are_stripped(rc):
    rc("[global]\ndevice = cpu   ; the laptop\nfloatX = float32 # as Theano\n"
       "[memory]\npreallocate = 0.8      # a Theano user's [gpuarray] preallocate = 0.8 works too\n"
       "[share]\nlease_dir = /tmp/a#b\n")
    assert config.get("device") == "cpu" and config.get("floatX") == "float32"
    assert config.get("memory.preallocate") == 0.8
    assert config.get("share.lease_dir") == "/tmp/a#b"  # a '#' not after a space is part of the value


@pytest.mark.parametrize("text, expected", [
    ("0.5", 0.5), ("50%", 0.5), ("10GiB", 10240.0), ("8192MiB", 8192.0), ("8192", 8192.0),
    ("1.5 GB", 1430.51), ("0", 0.0),
])
def test_memory_limit_reads_every_size_form(monkeypatch, text, expected):
    monkeypatch.setenv("ARIGNOTE_FLAGS", f"memory.limit={text}")
    assert config.get("memory.limit") == pytest.approx(expected, abs=0.01)


def test_memory_flags_share_one_size_grammar():
    with config.override(memory_preallocate="80%", memory_host_cache="2GiB"):
        assert config.get("memory.preallocate") == 0.8 and config.get("memory.host_cache") == 2048
    with config.override(memory_preallocate=-1):  # negative: caching off, as Theano
        assert config.get("memory.preallocate") == -1.0
    with config.override(memory_host_cache="512MiB"):
        assert config.get("memory.host_cache") == 512


def test_bare_small_size_is_read_as_mib_with_a_warning(monkeypatch, capsys):
    monkeypatch.setenv("ARIGNOTE_FLAGS", "memory.limit=8")
    assert config.get("memory.limit") == 8.0
    err = capsys.readouterr().err
    assert "memory.limit=8 (from ARIGNOTE_FLAGS) is read as 8 MiB; write 8GiB" in err
    monkeypatch.setenv("ARIGNOTE_FLAGS", "memory.limit=8MiB")
    config.reload()
    config.get("memory.limit")
    assert "read as" not in capsys.readouterr().err


@pytest.mark.parametrize("flag", [name for name, f in config.FLAGS.items()
                                  if f.kind in ("int", "float", "size")])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", float("nan"), float("inf")])
def test_non_finite_numbers_rejected_for_every_numeric_flag(flag, value):
    with pytest.raises(ConfigError, match=rf"flag '{flag}'"):
        with config.override(**{flag: value}):
            pass


def test_numeric_flags_found():  # the parametrization above covers them all
    numeric = {n for n, f in config.FLAGS.items() if f.kind in ("int", "float", "size")}
    assert {"memory.preallocate", "memory.limit", "memory.host_cache", "parallel.timeout",
            "cpu.processes", "cpu.threads", "parallel.restarts"} <= numeric


# --------------------------------------------------------------------------- warnings about sources


def test_missing_file_in_arignoterc_is_a_warning(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ARIGNOTERC", str(tmp_path / "typo-arignoterc"))
    config.reload()
    assert config.get("device") == "auto"
    assert capsys.readouterr().err.count("ARIGNOTERC names") == 1
    assert any("typo-arignoterc" in n for n in config.notices())
    monkeypatch.setenv("ARIGNOTERC", "")  # explicitly no rc file: silent
    config.reload()
    config.get("device")
    assert capsys.readouterr().err == ""


def test_default_rc_missing_is_silent(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("ARIGNOTERC")
    monkeypatch.setenv("HOME", str(tmp_path))
    config.reload()
    config.get("device")
    assert capsys.readouterr().err == ""


def test_theano_flags_set_and_unused_is_one_warning(monkeypatch, capsys):
    monkeypatch.setenv("THEANO_FLAGS", "device=cuda0,floatX=float32")
    config.reload()
    for _ in range(3):
        config.get("device")
    err = capsys.readouterr().err
    assert err.count("THEANO_FLAGS is set") == 1 and "arignote config --from-theano" in err
    assert config.get("device") == "auto"  # not read


# --------------------------------------------------------------------------- arignote config checks


def test_config_applies_fits_checks_exit_2(monkeypatch, capsys):
    monkeypatch.setenv("ARIGNOTE_FLAGS", "device=cpu,floatX=float64,precision=mixed-bf16")
    config.reload()
    code, _, err = run_cli(capsys, "config")
    assert code == 2
    assert "precision=mixed-bf16 (from ARIGNOTE_FLAGS)" in err and "set floatX=float32" in err
    monkeypatch.setenv("ARIGNOTE_FLAGS", "device=cpu,cpu.processes=0")
    config.reload()
    code, _, err = run_cli(capsys, "config")
    assert code == 2 and "flag 'cpu.processes'" in err and "must be > 0" in err


def test_config_check_uses_the_strategy_layout_rules(monkeypatch):
    from arignote.commands import config_cmd
    from arignote.devices import Device

    monkeypatch.setattr("arignote.runtime.setup.configured_devices",
                        lambda lease=True: [Device("cuda", 0), Device("cuda", 1)])
    monkeypatch.setattr("arignote.runtime.memory.plan_for", lambda d: None)
    monkeypatch.setattr("arignote.runtime.precision.Precision.from_config", classmethod(lambda cls, d: None))
    with config.override(cpu_processes=2):
        errors, notes = config_cmd.check()
    assert len(errors) == 1 and "cpu.processes=2 (code) applies to device=cpu" in errors[0]
    assert notes == []  # GPUs: no machine notes


def test_settings_without_effect_on_cpu_get_one_note(monkeypatch, capsys):
    monkeypatch.setenv("ARIGNOTE_FLAGS", "device=cpu,precision=mixed-fp16,memory.limit=0.5")
    config.reload()
    code, out, _ = run_cli(capsys, "config")
    assert code == 0
    assert out.count("note: precision=mixed-fp16 on cpu") == 1
    assert out.count("memory.preallocate and memory.limit apply to GPUs only") == 1


# --------------------------------------------------------------------------- arignote config --from-theano

THEANORC = """[global]
device = cuda1
floatX = float32
mode = FAST_RUN
optimizer_including = cudnn

[gpuarray]
preallocate = 0.8   # the seed's setting

[dnn]
enabled = True

[dnn.conv]
algo_fwd = time_once
algo_bwd_filter = deterministic

[nvcc]
fastmath = True
"""


def test_from_theano_writes_an_equivalent_arignoterc(tmp_path, monkeypatch, capsys):
    theanorc = tmp_path / "theanorc"
    theanorc.write_text(THEANORC)
    monkeypatch.setenv("THEANORC", str(theanorc))
    monkeypatch.setenv("THEANO_FLAGS", "device=gpu0,lib.cnmem=0.5,contexts=dev0->cuda0;dev1->cuda1")
    out_path = tmp_path / "arignoterc"
    code, out, _ = run_cli(capsys, "config", "--from-theano", "--output", str(out_path))
    assert code == 0 and f"wrote {out_path}" in out
    for key in ("mode", "optimizer_including", "nvcc.fastmath"):  # listed with a reason
        assert f"no equivalent: {key} = " in out
    # the file reads back (inline comments and all) as the settings Theano would have used
    monkeypatch.setenv("ARIGNOTERC", str(out_path))
    monkeypatch.delenv("THEANO_FLAGS")
    config.reload()
    assert config.get("device") == "cuda0"  # THEANO_FLAGS wins over .theanorc, gpu0 read as cuda0
    assert config.get("floatX") == "float32"
    assert config.get("memory.preallocate") == 0.5  # lib.cnmem from THEANO_FLAGS came last
    assert config.get("dnn.enabled") == "true" and config.get("dnn.benchmark") is True
    assert config.get("dnn.deterministic") is True
    assert config.get("contexts") == "dev0->cuda0;dev1->cuda1"
    text = out_path.read_text()
    assert "# no equivalent in arignote" in text and "#   mode = FAST_RUN" in text
    # an existing file is not replaced without --force
    code, _, err = run_cli(capsys, "config", "--from-theano", "--output", str(out_path))
    assert code == 2 and "--force" in err


def test_from_theano_force_replaces_whole_or_not_at_all(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("THEANORC", str(tmp_path / "none"))
    monkeypatch.setenv("THEANO_FLAGS", "floatX=float32")
    out_path = tmp_path / "arignoterc"
    out_path.write_text("[global]\ndevice = cpu\n")

    def broken_replace(src, dst):  # the disk fails at the last moment
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    code, _, err = run_cli(capsys, "config", "--from-theano", "--force", "--output", str(out_path))
    assert code == 1 and f"could not write {out_path}: No space left on device" in err
    assert out_path.read_text() == "[global]\ndevice = cpu\n"  # the old file is intact
    assert sorted(p.name for p in tmp_path.iterdir()) == ["arignoterc"]  # no temporary left
    monkeypatch.undo()
    monkeypatch.setenv("THEANORC", str(tmp_path / "none"))
    monkeypatch.setenv("THEANO_FLAGS", "floatX=float32")
    code, out, _ = run_cli(capsys, "config", "--from-theano", "--force", "--output", str(out_path))
    assert code == 0 and "floatX = float32" in out_path.read_text()


def test_from_theano_lists_bad_values_and_prints_to_stdout(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("THEANORC", str(tmp_path / "none"))
    monkeypatch.setenv("THEANO_FLAGS", "floatX=float8,device=opencl0:0,dnn.conv.algo_fwd=small")
    code, out, _ = run_cli(capsys, "config", "--from-theano", "--output", "-")
    assert code == 0
    assert "#   floatX = float8 (THEANO_FLAGS): not a valid floatX" in out
    assert "#   device = opencl0:0 (THEANO_FLAGS): OpenCL devices are not supported" in out
    assert "#   dnn.conv.algo_fwd = small" in out
    assert "\n[global]" not in out  # nothing convertible


def test_from_theano_without_theano_settings(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("THEANORC", str(tmp_path / "none"))
    code, _, err = run_cli(capsys, "config", "--from-theano", "--output", "-")
    assert code == 1 and "no Theano settings found" in err


def test_bad_flag_in_a_script_is_one_error_at_the_first_config_read(tmp_path):
    # the first call that reads the config (here Dense's floatX) raises; the last line says it all
    script = tmp_path / "train.py"
    script.write_text("from arignote.layers import Dense\nfrom arignote.models import Sequential\n"
                      "model = Sequential()\nmodel.add(Dense(2, input_shape=(3,)))\nprint('not reached')\n")
    env = {**os.environ, "ARIGNOTE_FLAGS": "memory.limit=lots", "ARIGNOTERC": ""}
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "not reached" not in proc.stdout
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("arignote.errors.ConfigError: bad value 'lots' for flag 'memory.limit' "
                           "(from ARIGNOTE_FLAGS)")
    assert "write e.g. 10GiB" in last  # the fix
    frames = [line for line in proc.stderr.splitlines() if line.strip().startswith("File ")]
    assert 'train.py", line 4' in frames[0]
    assert sum("config.py" in f for f in frames) <= 2  # the registry's parsing frames are cut
