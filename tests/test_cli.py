"""The ``arignote`` command line: help renders everywhere, --version, closed pipes, "did you mean"."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from arignote import __version__, cli


def run_cli(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_top_level_help_lists_every_command_with_its_help(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0
    for name in cli.COMMANDS:
        assert f"    {name}" in out
    assert "(>= 95% accuracy)" in out  # a literal % in a command's HELP is not an argparse format
    assert "{'" not in out and "%(" not in out


@pytest.mark.parametrize("command", list(cli.COMMANDS))
def test_every_command_help_renders(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main([command, "--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0
    assert out.startswith(f"usage: arignote {command}")
    assert cli._load(command).HELP.split()[0] in out
    assert "%(" not in out and "%%" not in out


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0 and out.startswith(f"arignote {__version__} (torch ")


def test_no_command_prints_help_exit_2(capsys):
    code, out, _ = run_cli(capsys)
    assert code == 2 and out.startswith("usage: arignote")


def test_unknown_command_did_you_mean(capsys):
    code, _, err = run_cli(capsys, "confg")
    assert code == 2 and "unknown command 'confg'; did you mean 'config'?" in err
    code, _, err = run_cli(capsys, "xyzzy")
    assert code == 2 and "did you mean" not in err and "commands: config, devices" in err


def test_unknown_option_did_you_mean(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["config", "--jsno"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert err.startswith("usage: arignote config")  # the command's own usage, not the top level's
    assert "--jsno; did you mean '--json'?" in err


def test_closed_pipe_exits_quietly(tmp_path):
    # `arignote config | head -1`: the reader goes away; no BrokenPipeError traceback
    env = dict(os.environ, ARIGNOTERC="", ARIGNOTE_FLAGS="device=cpu")
    env.pop("THEANO_FLAGS", None)
    proc = subprocess.run(f"{sys.executable} -m arignote config | head -1", shell=True, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.stdout.startswith("device")
    assert proc.stderr == ""


def test_broken_pipe_in_a_command_returns_141(monkeypatch):
    def explode(args):
        raise BrokenPipeError

    monkeypatch.setattr("arignote.commands.config_cmd.run", explode)
    r, w = os.pipe()
    saved = os.dup(1)
    try:
        os.dup2(w, 1)
        assert cli.main(["config"]) == 141
    finally:
        os.dup2(saved, 1)
        for fd in (r, w, saved):
            os.close(fd)
